// The one place every environment variable is declared: ATOLL_PARAM(id, name, type, default, doc).
// Included by params.h (enum), params.cc (table) and atoll-info/docs generation. Add new ones here.
// NOLINT(build/header_guard): X-macro file, included several times on purpose.

// Logging
ATOLL_PARAM(Debug, "NCCL_DEBUG", String, "WARN", "Log level: VERSION, WARN, INFO, ABORT or TRACE.")
ATOLL_PARAM(DebugSubsys, "NCCL_DEBUG_SUBSYS", String, "INIT,BOOTSTRAP,ENV",
            "Comma-separated subsystems logged at INFO (INIT, COLL, P2P, SHM, NET, GRAPH, TUNING, ENV, ALLOC, "
            "CALL, PROXY, BOOTSTRAP, ALL); a leading ^ inverts the list.")
ATOLL_PARAM(DebugFile, "NCCL_DEBUG_FILE", String, "",
            "Write logs to this file instead of stdout; %h is replaced by the host name, %p by the pid.")

// Configuration
ATOLL_PARAM(ConfFile, "NCCL_CONF_FILE", String, "",
            "Read NAME=VALUE lines from this file instead of ~/.nccl.conf; /etc/nccl.conf is read after it. "
            "The environment wins over both, the user file over the system one.")

// Bootstrap
ATOLL_PARAM(CommId, "NCCL_COMM_ID", String, "",
            "host:port of the bootstrap root. When set, rank 0 serves the rendezvous there and every rank may "
            "call ncclGetUniqueId locally; the secret is derived from this value and ATOLL_BOOTSTRAP_SECRET.")
ATOLL_PARAM(BootstrapSecret, "ATOLL_BOOTSTRAP_SECRET", String, "",
            "Extra secret mixed into the unique id when NCCL_COMM_ID is used (all ranks must agree). Without it "
            "(or ATOLL_BOOTSTRAP_SECRET_FILE) the key derives from the public host:port alone, so anyone who can "
            "reach that port can join the job: Atoll warns once.")
ATOLL_PARAM(BootstrapSecretFile, "ATOLL_BOOTSTRAP_SECRET_FILE", String, "",
            "File whose contents (a trailing newline dropped) are the NCCL_COMM_ID secret, instead of "
            "ATOLL_BOOTSTRAP_SECRET (which keeps it out of /proc/PID/environ). Setting both is an error.")
ATOLL_PARAM(SocketIfname, "NCCL_SOCKET_IFNAME", String, "",
            "Interfaces for bootstrap and socket traffic: prefixes, '^' to exclude, '=' for exact names "
            "(e.g. eth0, ^docker,lo, =ens1f0). Default: the first non-loopback interface, else loopback.")
ATOLL_PARAM(BootstrapTimeoutMs, "ATOLL_BOOTSTRAP_TIMEOUT_MS", Int, "120000",
            "Deadline for the rendezvous and every bootstrap exchange at init.")
ATOLL_PARAM(HostId, "NCCL_HOSTID", String, "",
            "Override the host identity used to decide which peers share a host (and so shared memory); also the "
            "host name looked up in ATOLL_FABRIC_FILE.")

// Transports
ATOLL_PARAM(ShmDisable, "NCCL_SHM_DISABLE", Bool, "0", "Disable the shared-memory transport (use sockets).")
ATOLL_PARAM(Net, "NCCL_NET", String, "",
            "Network for links to peers on other hosts (not shared memory): the name of a plugin net found through "
            "NCCL_NET_PLUGIN, a net built into Atoll ('UCX' when built with UCX), or 'Socket' for the built-in TCP "
            "transport; unset, the first plugin net found, else Socket.")
ATOLL_PARAM(NetPlugin, "NCCL_NET_PLUGIN", String, "",
            "External network plugins to look for, as NCCL: a comma list of paths or names (NAME also tries "
            "libnccl-net-NAME.so), 'none' for none; unset tries libnccl-net.so. atoll-info --net shows what was found; "
            "NCCL_NET picks among them.")
ATOLL_PARAM(UcxPeerFailure, "ATOLL_UCX_PEER_FAILURE", Bool, "1",
            "The UCX net (NCCL_NET=UCX) makes endpoints in UCX's peer-failure mode, so a dead peer is an error; "
            "UCX 1.13 then uses only transports that support it (tcp). 0 allows every transport UCX_TLS selects "
            "(shared memory, cma), where UCX aborts the process if a peer dies mid-transfer.")
ATOLL_PARAM(IbHca, "NCCL_IB_HCA", String, "",
            "ibverbs net (NCCL_NET=IB): the HCAs and ports to use, as NCCL: 'mlx5_0:1,mlx5_1' (prefix match), "
            "'=mlx5_0' (exact), '^mlx5_2' (all but); empty, every active port.")
ATOLL_PARAM(IbGidIndex, "NCCL_IB_GID_INDEX", Int, "-1",
            "ibverbs net, RoCE: the GID table index to address the port by; -1 picks a RoCE v2 GID (else index 0).")
ATOLL_PARAM(IbTimeout, "NCCL_IB_TIMEOUT", Int, "20",
            "ibverbs net: the queue pairs' local ACK timeout, 4.096 us * 2^value (1 to 31).")
ATOLL_PARAM(IbRetryCnt, "NCCL_IB_RETRY_CNT", Int, "7", "ibverbs net: transport retries before a send fails (0 to 7).")
ATOLL_PARAM(IbTc, "NCCL_IB_TC", Int, "0", "ibverbs net: traffic class of the queue pairs (RoCE: the DSCP/ECN byte).")
ATOLL_PARAM(IbSl, "NCCL_IB_SL", Int, "0", "ibverbs net: InfiniBand service level of the queue pairs (0 to 15).")
ATOLL_PARAM(IbQpsPerConnection, "NCCL_IB_QPS_PER_CONNECTION", Int, "1",
            "ibverbs net: queue pairs per connection; each message is split across them (1 to 16).")
ATOLL_PARAM(BuffSize, "NCCL_BUFFSIZE", Size, "1048576",
            "Bytes of buffering per connection and direction (shared-memory ring, socket staging). Smaller than "
            "NCCL's 4 MiB: host rings stay cache-resident (perf/baselines: +25% shm busbw at 64 MiB).")
ATOLL_PARAM(ShmDirectMin, "ATOLL_SHM_DIRECT_MIN", Size, "65536",
            "Shared-memory links: messages of at least this many bytes go in a single copy when the receiver can "
            "read the sender's buffer with plain loads: any buffer between thread-ranks of one process, "
            "ncclMemAlloc memory (a shared pool the peer maps) between processes. 0 turns it off. Where the peer "
            "cannot map the pool (another pid namespace, no /proc) the ring is used; NCCL_DEBUG_SUBSYS=SHM says so.")
ATOLL_PARAM(ShmCmaMin, "ATOLL_SHM_CMA_MIN", Size, "0",
            "Shared-memory links between processes: messages of at least this many bytes from memory that is not "
            "ncclMemAlloc's go in a single copy through process_vm_readv (CMA), where the kernel allows it. 0 "
            "(default) keeps them on the ring: a CMA read ran at 0.46-0.51x memcpy on the development VM, about "
            "the cost of the two ring copies (perf/baselines/README.md).")

// Algorithms and engine
ATOLL_PARAM(RuntimeConnect, "NCCL_RUNTIME_CONNECT", Bool, "1",
            "1: a rank connects to a peer on a channel when a call first needs that link (ring neighbours, "
            "tree parent and children, island leaders, point-to-point peers), so links, memory and fds grow "
            "with the peers used, not with the rank count. 0: connect every peer on channels 0 and 1 and the "
            "ring neighbours on the others during init.")
ATOLL_PARAM(MinNChannels, "NCCL_MIN_NCHANNELS", Int, "1", "Minimum number of channels (parallel rings).")
ATOLL_PARAM(MaxNChannels, "NCCL_MAX_NCHANNELS", Int, "2", "Maximum number of channels (parallel rings).")
ATOLL_PARAM(ChunkBytes, "ATOLL_CHUNK_BYTES", Size, "131072",
            "Pipelining granularity of chain algorithms (broadcast, reduce) and the minimum per-channel share.")
ATOLL_PARAM(RingSliceBytes, "ATOLL_RING_SLICE_BYTES", Size, "262144",
            "Ring all-reduce on a communicator inside one host: rounds of nranks slices of this many bytes per "
            "channel, each reduce-scattered and all-gathered before the next, so a reduced chunk is forwarded "
            "while still in cache (perf/baselines/README.md: 1.1-1.4x at 16-64 MiB). 0: one round per channel.")
ATOLL_PARAM(RdMaxBytes, "ATOLL_RD_MAX_BYTES", Size, "262144",
            "On one island that spans hosts, all-reduces up to this size use recursive doubling (log2 n hops) when "
            "the rank count is a power of two; the cost model decides above it. 0 = the model decides everywhere.")
ATOLL_PARAM(HostRdMaxBytes, "ATOLL_HOST_RD_MAX_BYTES", Size, "16384",
            "The same on one island inside one host (shared memory), where above it recursive doubling and one-shot "
            "are not candidates: they fold the whole buffer at every step, as costly as the copy there.")
ATOLL_PARAM(PlanCacheSize, "ATOLL_PLAN_CACHE_SIZE", Int, "64",
            "Collective plans kept per communicator for reuse by identical calls (0 = build every call).")
ATOLL_PARAM(TimeoutMs, "ATOLL_TIMEOUT_MS", Int, "300000",
            "A collective that makes no progress for this long fails with ncclSystemError (0 = wait forever). "
            "The survivors then spend up to this long again (clamped to 0.3-5 s) finding which rank went silent.")
ATOLL_PARAM(HeartbeatMs, "ATOLL_HEARTBEAT_MS", Int, "1000",
            "Socket links: after this long without traffic the kernel sends a TCP keepalive probe, and again at this "
            "interval (whole seconds, at least 1 s, as TCP counts them). The peer's kernel answers, so a rank that is "
            "only busy (computing, stopped in a debugger) is never declared dead by it. 0 = no heartbeats at all.")
ATOLL_PARAM(HeartbeatTimeoutMs, "ATOLL_HEARTBEAT_TIMEOUT_MS", Int, "2000",
            "Socket links: a peer host that acknowledges nothing for this long is declared unreachable and the call "
            "fails with ncclRemoteError naming it: an idle link after this many keepalive probes' worth of silence, a "
            "link a call waits on when its data in flight or two window probes went unanswered this long. A host "
            "that vanished without a FIN (power, cable, partition) is found in about this time.")
ATOLL_PARAM(Check, "ATOLL_CHECK", Bool, "0",
            "Before every launch, compare a fingerprint of the call (sequence, collective, count, type, op, root) "
            "over a binomial tree of bootstrap messages (2 ceil(log2 n) hops), or for send/recv the bytes each pair "
            "moves, so mismatched calls fail with ncclInvalidUsage on every "
            "rank instead of corrupting data or hanging (send/recv against a collective also breaks the communicator). "
            "Must be set alike on all ranks (checked at init). Costs latency: about 2 ceil(log2 n) bootstrap messages "
            "(~0.2 ms each on loopback) per launch.")
ATOLL_PARAM(SpinCount, "ATOLL_SPIN_COUNT", Int, "-1",
            "Idle polls before the progress loop yields the CPU; keeps oversubscribed hosts responsive. "
            "-1: 200, or 20 where the communicator has more ranks on this host than the process may use cores.")

// Topology and fabric (topology/)
ATOLL_PARAM(TopoFile, "NCCL_TOPO_FILE", String, "",
            "Read this node's topology from an XML file instead of detecting it (same format as the dump).")
ATOLL_PARAM(TopoDumpFile, "NCCL_TOPO_DUMP_FILE", String, "", "Write the detected node topology to this XML file at init.")
ATOLL_PARAM(FabricFile, "ATOLL_FABRIC_FILE", String, "",
            "Fabric description (which hosts share a leaf, island, Dragonfly+ group; bandwidth, latency and "
            "oversubscription per level), shared by all ranks.")
ATOLL_PARAM(IslandId, "ATOLL_ISLAND_ID", Int, "-1",
            "This rank's island (ranks with equal ids share full bandwidth); -1 = from the fabric file or host.")
ATOLL_PARAM(IslandSize, "ATOLL_ISLAND_SIZE", Int, "0",
            "Consecutive ranks per island (emulates islands on one host); 0 = from ATOLL_ISLAND_ID, the fabric "
            "file or the host.")

// Algorithm selection (src/tuning/)
ATOLL_PARAM(Algo, "NCCL_ALGO", String, "",
            "Restrict algorithms, NCCL syntax: 'ring', '^tree', 'allreduce:tree,ring;broadcast:ring'. Names: ring, "
            "tree, rhd, direct, hierarchical, rd (recursive doubling), binomial (broadcast, reduce), bruck (all-gather).")
ATOLL_PARAM(Proto, "NCCL_PROTO", String, "",
            "Accepted for NCCL compatibility, and changes nothing: the host engine has one protocol, Simple, which "
            "every call runs (NCCL_DEBUG_SUBSYS=TUNING reports it per call). The value is checked with NCCL's syntax "
            "(LL, LL128, Simple; '^' excludes; per-collective lists): a malformed value or unknown name warns, and a "
            "value that leaves out Simple warns once and Simple still runs.")
ATOLL_PARAM(TunerPlugin, "NCCL_TUNER_PLUGIN", String, "",
            "Tuner plugin (NCCL ncclTunerPlugin v3+ ABI): a library path or name (libnccl-tuner-<name>.so).")

// Cost model (src/tuning/cost_model.h). Defaults: the median of three runs of
// `atoll-calibrate --np 4 --max 16M --iters 20` (each the best of 3) on the 2-core development host,
// where 4 ranks oversubscribe the cores (hence microseconds per step). Run it on the target machine
// and name its output in NCCL_CONF_FILE to replace them (docs/TOPOLOGY.md).
ATOLL_PARAM(ModelShmBwMBs, "ATOLL_MODEL_SHM_BW_MBS", Int, "4248",
            "Cost model: ring bus bandwidth over shared memory, MB/s.")
ATOLL_PARAM(ModelShmLatNs, "ATOLL_MODEL_SHM_LAT_NS", Int, "0",
            "Cost model: one shared-memory hop's latency beyond the per-step overhead, ns.")
ATOLL_PARAM(ModelSocketBwMBs, "ATOLL_MODEL_SOCKET_BW_MBS", Int, "788",
            "Cost model: ring bus bandwidth over TCP sockets, MB/s.")
ATOLL_PARAM(ModelSocketLatNs, "ATOLL_MODEL_SOCKET_LAT_NS", Int, "63817",
            "Cost model: one socket hop's latency beyond the per-step overhead, ns.")
ATOLL_PARAM(ModelStepNs, "ATOLL_MODEL_STEP_NS", Int, "3632",
            "Cost model: software overhead of one schedule step (paid per hop, and per peer by one-shot), ns.")
ATOLL_PARAM(ModelTreeBwPct, "ATOLL_MODEL_TREE_BW_PCT", Int, "97",
            "Cost model: double binary tree's bandwidth term relative to the ring's, percent.")
ATOLL_PARAM(ModelRhdBwPct, "ATOLL_MODEL_RHD_BW_PCT", Int, "102",
            "Cost model: recursive halving-doubling's bandwidth term relative to the ring's, percent.")
ATOLL_PARAM(ModelRdBwPct, "ATOLL_MODEL_RD_BW_PCT", Int, "106",
            "Cost model: recursive doubling's bandwidth term relative to a full-buffer hop, percent.")

// Devices
ATOLL_PARAM(Device, "ATOLL_DEVICE", String, "auto",
            "Device backend: auto (cuda where a driver sees a GPU, else host), host, cuda, or emu (an emulated GPU "
            "whose memory the host cannot read and whose streams run on threads; for testing the GPU path).")
ATOLL_PARAM(DeviceIpcMin, "ATOLL_DEVICE_IPC_MIN", Int, "1048576",
            "All-reduces, reduce-scatters, all-gathers, broadcasts and reduces of device memory whose larger buffer "
            "holds at least this many bytes, on communicators whose ranks share one node, read peers' buffers in place "
            "with the device kernels and copies (CUDA IPC) instead of staging them through host memory. -1 turns "
            "the direct path off.")
ATOLL_PARAM(DeviceIpcCache, "ATOLL_DEVICE_IPC_CACHE", Int, "64",
            "Peer device allocations a process keeps mapped (CUDA IPC) after the direct path used them, so "
            "that the next call on the same buffers maps nothing; the least recently used go first. 0 maps and "
            "unmaps on every call.")
