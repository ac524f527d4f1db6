// Reading another process's memory in place (cross-memory attach, process_vm_readv): the single
// copy of the shm transport (shm_direct.h) for ranks that are separate processes.
//
// Why a probe, not a capability check: whether the kernel lets us read a peer depends on Yama's
// ptrace_scope, seccomp (containers), user namespaces and credentials, and none of that is cheaper
// to ask than to try. The probe reads the peer's process token from where the peer says it keeps
// it (RingEnd::tokenAddr) and compares it with the token in the ring header: that proves both
// that reads are allowed and that the pid names the right process, even when the peer's pid was
// taken in another pid namespace (then the pid means some other process, or none, here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace atl::transport::shm {

enum class PeerMemory : uint8_t {
  SameProcess,  // a thread-rank of this process: its pointers are ours
  Readable,     // process_vm_readv reads it
  Unreadable,   // the kernel refuses, or the pid is not the peer here: stream through the ring
};

/// Whether the peer that published (pid, token, tokenAddr) can be read in place; `why` says what
/// refused it when Unreadable.
PeerMemory probePeerMemory(int pid, uint64_t token, uint64_t tokenAddr, std::string* why);

/// Copies n bytes at `remote` in process `pid` into dst. A peer that exited, or whose memory is
/// gone, fails with ncclRemoteError naming `peerRank`.
Status readPeerMemory(int pid, int peerRank, const void* remote, void* dst, size_t n);

}  // namespace atl::transport::shm
