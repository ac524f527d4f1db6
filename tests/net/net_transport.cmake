# Collective data over a plugin net (transports/net/net_transport): with NCCL_SHM_DISABLE=1 every
# link goes through the plugin. Atoll's Socket net (libnccl-net-atoll.so) between processes, the
# in-tree test plugin (connect/accept that need retries, every other isend/irecv refused with a
# null request) between thread-ranks as ABI v8 and v11, a rank killed or stopped mid-collective,
# one-sided puts, and the two ways to get the network wrong.
set(ATOLL_NET_SOCKET_ENV "NCCL_SHM_DISABLE=1;NCCL_NET_PLUGIN=$<TARGET_FILE:nccl_net_atoll>")
atoll_coll_test(coll_procs_net_3 150 --procs 3)
atoll_coll_test(coll_procs_net_5 150 --procs 5 --quick)
set_tests_properties(coll_procs_net_3 coll_procs_net_5 PROPERTIES LABELS "integration;coll;net"
                     ENVIRONMENT "${ATOLL_NET_SOCKET_ENV};ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
foreach(v 8 11)
  atoll_coll_test(coll_threads_net_v${v}_3 150 --threads 3 --quick)
  # NCCL_NET picks the test plugin by name, case-insensitively.
  set_tests_properties(coll_threads_net_v${v}_3 PROPERTIES LABELS "integration;coll;net"
                       ENVIRONMENT "NCCL_SHM_DISABLE=1;NCCL_NET=atolltest;NCCL_NET_PLUGIN=$<TARGET_FILE:atoll_testnet_v${v}>;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
endforeach()

foreach(cfg "net_4;2;;" "stopped_net_4;1;ATOLL_TIMEOUT_MS=1000;--stop" "shrink_net_4;0;;--shrink")
  list(GET cfg 0 name)
  list(GET cfg 1 victim)
  list(GET cfg 2 env)
  list(GET cfg 3 mode)
  set(limit ${ATOLL_FAULT_LIMIT_MS})
  if(mode STREQUAL "--stop")
    math(EXPR limit "${limit} + 1000")
  endif()
  add_test(NAME fault_dead_peer_${name} COMMAND dead_peer --ranks 4 --victim ${victim} --limit-ms ${limit} ${mode})
  set_tests_properties(fault_dead_peer_${name} PROPERTIES TIMEOUT 150 LABELS "fault;net" RUN_SERIAL TRUE
                       ENVIRONMENT "${ATOLL_NET_SOCKET_ENV};${env}")
endforeach()

add_test(NAME one_sided_net_3 COMMAND one_sided --ranks 3 --limit-ms ${ATOLL_ONE_SIDED_LIMIT_MS})
add_test(NAME one_sided_kill_net_3 COMMAND one_sided --ranks 3 --limit-ms ${ATOLL_ONE_SIDED_LIMIT_MS} --kill)
set_tests_properties(one_sided_net_3 one_sided_kill_net_3 PROPERTIES TIMEOUT 120 LABELS "integration;net"
                     ENVIRONMENT "${ATOLL_NET_SOCKET_ENV}")

# A net nobody loaded: init fails on every rank, naming what is there.
add_test(NAME net_unknown_name
         COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh
                 -m "network 'NoSuch' requested .* the nets available are: Socket, AtollTest" -x "passed, 0 failed"
                 1 $<TARGET_FILE:coll_check> --procs 2 --quick --timeout 60)
set_tests_properties(net_unknown_name PROPERTIES TIMEOUT 90 LABELS "net"
                     ENVIRONMENT "NCCL_NET=NoSuch;NCCL_NET_PLUGIN=$<TARGET_FILE:atoll_testnet_v8>")
# Ranks that disagree on the net: a clear error at init on both.
add_test(NAME net_mismatch COMMAND ${CMAKE_CURRENT_LIST_DIR}/net_mismatch.sh $<TARGET_FILE:all_reduce_perf>
                                   $<TARGET_FILE:nccl_net_atoll>)
set_tests_properties(net_mismatch PROPERTIES TIMEOUT 90 LABELS "net")

add_executable(test_net_transport ${CMAKE_CURRENT_LIST_DIR}/test_net_transport.cc)
target_link_libraries(test_net_transport PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_net_transport DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60 LABELS net)

# The UCX net (transports/ucx), built in (NCCL_NET=UCX) and as libnccl-net-atoll-ucx.so: over UCX's
# tcp, over its shared memory (which needs ATOLL_UCX_PEER_FAILURE=0), between thread-ranks, a rank
# killed over tcp, and a UCX_TLS that peer-failure mode cannot use (a clear error, no abort).
# UCX_MEM_EVENTS=no: the net registers no memory, so UCX need not hook the allocator (which would
# fight the sanitizers' hooks).
if(ATOLL_HAVE_UCX)
  set(ATOLL_UCX_ENV "NCCL_SHM_DISABLE=1;NCCL_NET=UCX;UCX_MEM_EVENTS=no;UCX_WARN_UNUSED_ENV_VARS=n")
  add_executable(test_ucx_net ${CMAKE_CURRENT_LIST_DIR}/test_ucx_net.cc)
  target_link_libraries(test_ucx_net PRIVATE atoll_static GTest::gtest_main)
  target_compile_definitions(test_ucx_net PRIVATE ATOLL_UCX_PLUGIN_PATH="$<TARGET_FILE:nccl_net_atoll_ucx>")
  add_dependencies(test_ucx_net nccl_net_atoll_ucx)
  # Serial: both tests bound how long a close takes (1 s, and 6.5 s against the net's 5 s close
  # timeout); with scale_join_1024_threads beside them on 2 cores one bound was missed once.
  gtest_discover_tests(test_ucx_net DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 60 RUN_SERIAL TRUE)
  atoll_coll_test(coll_procs_ucx_tcp_3 150 --procs 3)
  atoll_coll_test(coll_procs_ucx_shm_3 150 --procs 3 --quick)
  atoll_coll_test(coll_threads_ucx_3 150 --threads 3 --quick)
  atoll_coll_test(coll_procs_ucx_plugin_2 150 --procs 2 --quick)
  set_tests_properties(coll_procs_ucx_tcp_3 coll_threads_ucx_3 PROPERTIES LABELS "integration;coll;net;ucx"
                       ENVIRONMENT "${ATOLL_UCX_ENV};UCX_TLS=tcp;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
  set_tests_properties(coll_procs_ucx_shm_3 PROPERTIES LABELS "integration;coll;net;ucx"
                       ENVIRONMENT "${ATOLL_UCX_ENV};UCX_TLS=sm,self;ATOLL_UCX_PEER_FAILURE=0;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
  # The standalone plugin is found first (plugins come before built-in nets) under the same name.
  set_tests_properties(coll_procs_ucx_plugin_2 PROPERTIES LABELS "integration;coll;net;ucx"
                       ENVIRONMENT "${ATOLL_UCX_ENV};UCX_TLS=tcp;NCCL_NET_PLUGIN=$<TARGET_FILE:nccl_net_atoll_ucx>;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
  add_test(NAME fault_dead_peer_ucx_4 COMMAND dead_peer --ranks 4 --victim 2 --limit-ms ${ATOLL_FAULT_LIMIT_MS})
  set_tests_properties(fault_dead_peer_ucx_4 PROPERTIES TIMEOUT 150 LABELS "fault;net;ucx" RUN_SERIAL TRUE
                       ENVIRONMENT "${ATOLL_UCX_ENV};UCX_TLS=tcp")
  add_test(NAME net_ucx_no_peer_failure_transport
           COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh
                   -m "peer-failure mode needs a transport that supports it, such as tcp, or ATOLL_UCX_PEER_FAILURE=0"
                   3 $<TARGET_FILE:atollrun> -np 2 $<TARGET_FILE:all_reduce_perf> -b 8 -e 8)
  set_tests_properties(net_ucx_no_peer_failure_transport PROPERTIES TIMEOUT 90 LABELS "net;ucx"
                       ENVIRONMENT "${ATOLL_UCX_ENV};UCX_TLS=sm,self;ATOLL_BOOTSTRAP_TIMEOUT_MS=10000")
endif()

# Between emulated hosts (network namespaces, root): every collective over each net.
if(ATOLL_SANITIZE STREQUAL "")
  add_test(NAME netns_nets COMMAND ${CMAKE_CURRENT_LIST_DIR}/netns_nets.sh ${CMAKE_BINARY_DIR} ${ATOLL_HAVE_UCX})
  set_tests_properties(netns_nets PROPERTIES TIMEOUT 240 LABELS "integration;netns;net" RUN_SERIAL TRUE
                       SKIP_RETURN_CODE 77)
endif()

# The ibverbs net: its device-free parts, and (no RDMA device here) a clean "no device" at init.
add_executable(test_ib_parts ${CMAKE_CURRENT_LIST_DIR}/test_ib_parts.cc)
target_link_libraries(test_ib_parts PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_ib_parts DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60 LABELS net)
if(ATOLL_HAVE_IBVERBS)
  add_test(NAME net_ib_no_device
           COMMAND sh -c "[ -d /sys/class/infiniband ] && [ -n \"$(ls /sys/class/infiniband)\" ] && exit 77; exec \"$0\" \"$@\""
                   ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh
                   -m "network 'IB' requested .*libnccl-net-atoll-ib.so: IB \\(v11\\) reports no device, skipped"
                   3 $<TARGET_FILE:atollrun> -np 2 $<TARGET_FILE:all_reduce_perf> -b 8 -e 8)
  set_tests_properties(net_ib_no_device PROPERTIES TIMEOUT 60 LABELS "net" SKIP_RETURN_CODE 77
                       ENVIRONMENT "NCCL_NET=IB;NCCL_SHM_DISABLE=1")
endif()

# The net's devices in the topology graph (core/net_placement.h): on the Azure NDv4 layout, the
# test plugin's device 0 (100 Gb/s) sits below a NIC of NUMA node 0 and device 1 (200 Gb/s) below
# one of NUMA node 1. Host-buffer ranks on node 0 (every rank on this one-node machine) all take
# device 0: the nearer path wins over the faster device and over the old "device index mod count".
set(ATOLL_NET_TOPO_ENV "NCCL_TOPO_FILE=${PROJECT_SOURCE_DIR}/tests/unit/topology_fixtures/azure_ndv4_topo.xml"
    "ATOLL_TESTNET_PCI=/sys/devices/pci0103:00/0103:00:00.0,/sys/devices/pci0101:00/0101:00:00.0")
add_test(NAME net_topology_placement
         COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh
                 -m "rank 0: net AtollTest device 0 \\(testnic0\\) from cpu cpu0: PHB path"
                 -m "rank 1: net AtollTest device 0 \\(testnic0\\) from cpu cpu0: PHB path" -m " 0 failed"
                 0 $<TARGET_FILE:coll_check> --threads 2 --quick --timeout 60)
set_tests_properties(net_topology_placement PROPERTIES TIMEOUT 90 LABELS "integration;net"
                     ENVIRONMENT "${ATOLL_NET_TOPO_ENV};NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=NET;NCCL_SHM_DISABLE=1;NCCL_NET=AtollTest;NCCL_NET_PLUGIN=$<TARGET_FILE:atoll_testnet_v11>")
add_test(NAME atoll_info_net_topology
         COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh
                 -m "^    dev 0 in the graph: below nic 0103:00:00.0, from cpu cpu0: PHB 12.5 GB/s"
                 -m "^    dev 1 in the graph: below nic 0101:00:00.0, from cpu cpu0: SYS 24.0 GB/s"
                 -m "^    a rank with host buffers here takes dev 0 \\(1 device\\(s\\) as near\\)"
                 0 $<TARGET_FILE:atoll-info> --net)
set_tests_properties(atoll_info_net_topology PROPERTIES TIMEOUT 30 LABELS "unit;net"
                     ENVIRONMENT "${ATOLL_NET_TOPO_ENV};UCX_MEM_EVENTS=no;NCCL_NET_PLUGIN=$<TARGET_FILE:atoll_testnet_v11>")
