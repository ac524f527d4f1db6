// Atoll's TCP network as an NCCL net (ABI v11, name "Socket"): what the plugin host serves in
// process, and what libnccl-net-atoll.so exports as ncclNetPlugin_v11 so NVIDIA's NCCL (or any
// other host of the ABI) can load it.
//
// One device, the interface NCCL_SOCKET_IFNAME picks (as the socket transport). A link is one TCP
// connection; connect() dials without blocking and proves it holds the listener's handle with the
// handle's random nonce, so a stray connection to the port is dropped. Each message is a 16-byte
// frame (tag, size) and its bytes; receives are filled in the order they were posted, which is the
// order NCCL's hosts post them in, and a message is read only once a receive waits for it, so the
// kernel's socket buffers are the flow control. All progress happens inside isend, irecv and test,
// on the caller's thread: no thread of its own. Up to 32 requests per comm, 8 buffers per grouped
// receive, host memory only.
#pragma once

#include "transports/net/net_abi.h"

namespace atl::net {

extern const abi::Net11 kSocketNet;

}  // namespace atl::net
