// ibverbs as an NCCL net (ABI v11, name "IB"): RC queue pairs, every message an RDMA write with
// immediate into the buffer the receiver posted, one chunk per queue pair
// (NCCL_IB_QPS_PER_CONNECTION), receives announced to the sender through a FIFO the receiver
// RDMA-writes (ib_flow.h), a registration cache per protection domain, dma-buf registration for
// device memory. Devices are the active ports NCCL_IB_HCA selects (ib_hca_list.h); queue pairs
// honour NCCL_IB_GID_INDEX, NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT, NCCL_IB_TC and NCCL_IB_SL.
//
// Connecting: a handle holds a TCP address and nonce (as the UCX net's); over that connection the
// ends swap their queue pairs' addressing (ib_wire.h) and keep it open as a liveness watch. Built
// only as libnccl-net-atoll-ib.so (libibverbs loads into a process only when NCCL_NET=IB asks).
//
// What ran where: on a machine without an RDMA device (ours, CI) the net reports no device and is
// skipped with one INFO line; its wire format, HCA list and credit/chunk state are unit-tested
// (tests/net/test_ib_parts.cc). The verbs data path has not run on a device yet.
#pragma once

#include "transports/net/net_abi.h"

namespace atl::net {

extern const abi::Net11 kIbNet;

}  // namespace atl::net
