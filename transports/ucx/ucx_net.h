// UCX as an NCCL net (ABI v11, name "UCX"): UCP tag messages over whatever transports UCX_TLS
// selects (tcp, shared memory, cma, verbs where present). Built when libucx-dev is found, only as
// libnccl-net-atoll-ucx.so (exporting ncclNetPlugin_v11), which the host loads by itself when
// NCCL_NET=UCX: UCX's libraries install signal handlers and allocator hooks, which a process that
// does not use UCX should not get.
//
// One UCP context and one worker per process, every call into them under one lock (the worker is
// created UCS_THREAD_MODE_SERIALIZED): plugin calls come from each communicator's proxy thread,
// and UCX workers are heavy (each opens its transports' listeners). One device.
//
// Connecting: UCP worker addresses are larger than a net handle (128 bytes), so the handle holds
// a TCP address and a nonce instead. connect() dials it without blocking and sends the nonce, a
// fresh 64-bit connection tag and its worker address; accept() checks the nonce, creates an
// endpoint back (whose error callback sees a peer that dies) and answers with its own worker
// address; then connect() creates its endpoint. Messages of a connection carry its tag, so one
// worker serves every connection. The TCP connection stays open as a liveness watch: a peer
// process that dies closes it, which fails the receives that wait on it (after a grace period
// for data still in UCX's transports). Closing a send comm flushes its endpoint first, so every
// message sent before the close is delivered.
//
// Endpoints use UCX's peer-failure mode (a peer that dies fails the sends to it instead of aborting
// the process), which UCX 1.13 offers on tcp only; ATOLL_UCX_PEER_FAILURE=0 lets UCX_TLS pick
// shared memory and cma too, at the price of UCX aborting the process when a peer dies mid-copy.
#pragma once

#include "transports/net/net_abi.h"

namespace atl::net {

extern const abi::Net11 kUcxNet;

}  // namespace atl::net
