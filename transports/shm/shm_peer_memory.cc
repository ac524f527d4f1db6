#include "transports/shm/shm_peer_memory.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "transports/shm/shm_ring.h"

namespace atl::transport::shm {

PeerMemory probePeerMemory(int pid, uint64_t token, uint64_t tokenAddr, std::string* why) {
  if (token == Ring::processToken()) return PeerMemory::SameProcess;
  if (pid <= 0 || token == 0 || tokenAddr == 0) {
    *why = "the peer published no process identity";
    return PeerMemory::Unreadable;
  }
  uint64_t seen = 0;
  iovec local{&seen, sizeof seen};
  iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(tokenAddr)), sizeof seen};
  const ssize_t got = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (got != static_cast<ssize_t>(sizeof seen)) {
    *why = std::string("process_vm_readv: ") + (got < 0 ? std::strerror(errno) : "short read") +
           (got < 0 && errno == EPERM ? " (Yama ptrace_scope, or a seccomp filter)" : "");
    return PeerMemory::Unreadable;
  }
  if (seen != token) {
    *why = "pid " + std::to_string(pid) + " is another process here (the peer is in another pid namespace)";
    return PeerMemory::Unreadable;
  }
  return PeerMemory::Readable;
}

Status readPeerMemory(int pid, int peerRank, const void* remote, void* dst, size_t n) {
  auto* to = static_cast<std::byte*>(dst);
  auto* from = static_cast<const std::byte*>(remote);
  while (n > 0) {
    iovec local{to, n};
    iovec far{const_cast<std::byte*>(from), n};
    const ssize_t got = ::process_vm_readv(pid, &local, 1, &far, 1, 0);
    if (got <= 0) {
      const int err = got < 0 ? errno : EFAULT;
      if (err == EINTR) continue;
      // ESRCH: the process is gone (or a zombie, whose memory is gone too); EFAULT: its buffer
      // was unmapped under us, which only an exiting or misbehaving peer does.
      return ATOLL_ERROR(ncclRemoteError, "shm: reading peer rank %d's buffer in place (pid %d) failed: %s%s", peerRank,
                         pid, std::strerror(err), err == ESRCH ? " (the peer exited)" : "");
    }
    to += got, from += got, n -= static_cast<size_t>(got);
  }
  return Status::Ok();
}

}  // namespace atl::transport::shm
