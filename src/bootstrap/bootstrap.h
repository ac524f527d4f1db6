// Rendezvous and out-of-band exchange between the ranks of one communicator.
//
// ncclUniqueId carries a root's address plus a random secret. ncclGetUniqueId starts the root in
// the calling process (which need not be a rank). Each rank joins its root with an HMAC proof over
// the secret; the root answers with the listen addresses of the rank's log-depth partners only,
// and the ranks then gather every rank's info among themselves in ceil(log2 n) rounds (Bruck), so
// neither the root nor any rank does O(n) sequential work. With several ids
// (ncclCommInitRankScalable) each root serves one contiguous block of ranks and answers lookups
// for its block from the others. With NCCL_COMM_ID set, rank 0 serves the root at that address
// and the secret is derived from NCCL_COMM_ID (+ ATOLL_BOOTSTRAP_SECRET).
// After the rendezvous ranks talk directly: every rank listens, and send/recv open an authenticated
// connection per message (NCCL's bootstrap does the same), matched by (peer, tag).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/deadline.h"
#include "base/hmac.h"
#include "base/socket.h"
#include "base/status.h"
#include "nccl.h"

namespace atl::bootstrap {

/// Creates a unique id. Unless NCCL_COMM_ID is set (and `ignoreCommIdEnv` is false), this starts a
/// root server thread in this process, listening on the NCCL_SOCKET_IFNAME interface.
Result<ncclUniqueId> generateUniqueId(bool ignoreCommIdEnv = false);

/// True if the bytes look like an id produced by generateUniqueId (magic and version match).
bool isValidUniqueId(const ncclUniqueId& id);

class Bootstrap {
 public:
  /// Joins the rendezvous as `rank` of `nranks`, publishing `myInfo` (every rank must pass the same
  /// size, at most 4 KiB). Fails with ncclInvalidUsage if ranks disagree on nranks or two ranks
  /// claim the same rank, ncclSystemError on timeout (ATOLL_BOOTSTRAP_TIMEOUT_MS) or abort.
  static Result<std::unique_ptr<Bootstrap>> create(const ncclUniqueId& id, int rank, int nranks,
                                                   std::span<const std::byte> myInfo, const AbortFlag* abort);
  /// The same over several roots, one per id (ncclCommInitRankScalable): every rank passes the
  /// same ids in the same order; rank r joins the root of its block (wire::rootOfRank).
  static Result<std::unique_ptr<Bootstrap>> create(std::span<const ncclUniqueId> ids, int rank, int nranks,
                                                   std::span<const std::byte> myInfo, const AbortFlag* abort);
  virtual ~Bootstrap() = default;

  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  /// The info blob rank `r` published at rendezvous.
  virtual std::span<const std::byte> peerInfo(int r) const = 0;
  /// The id's secret (for transport handshakes) and a 64-bit hash of the id, equal on all ranks.
  virtual const Secret& secret() const = 0;
  virtual uint64_t commHash() const = 0;

  /// Point-to-point messages, matched by (peer, tag); recv requires the exact length. Messages of one
  /// (peer, tag) arrive in send order; send returns once the peer has queued the message (it need not
  /// be in recv yet). Tags >= 0xFFFFFF00 are reserved for allGather/barrier; at most 64 MiB each.
  virtual Status send(int peer, uint32_t tag, std::span<const std::byte> data) = 0;
  virtual Status recv(int peer, uint32_t tag, std::span<std::byte> data) = 0;
  /// `data` holds nranks slots of `perRank` bytes with this rank's slot filled; on return all are.
  virtual Status allGather(std::span<std::byte> data, size_t perRank) = 0;
  /// send() under `deadline` instead of the bootstrap timeout, even once the communicator's abort
  /// flag is set: the last words of a failing communicator (core/fault_notice.h) must neither wait
  /// long on a dead peer nor be cut off by the abort they are part of.
  virtual Status sendWithin(int peer, uint32_t tag, std::span<const std::byte> data, Deadline deadline) = 0;
  /// send() under `deadline`, stopped by the abort flag, and without retrying a refused connect (a
  /// rank's listener lives as long as its communicator, so a refusal means it is gone).
  virtual Status sendUntil(int peer, uint32_t tag, std::span<const std::byte> data, Deadline deadline) = 0;
  /// A message from (peer, tag) of any length if one is queued or arrives within `waitMs`; peer
  /// -1 takes one from any rank. `from` (if given) receives the sender's rank.
  virtual std::optional<std::vector<std::byte>> tryRecv(int peer, uint32_t tag, int64_t waitMs,
                                                        int* from = nullptr) = 0;
  virtual Status barrier() = 0;
  /// Where this rank accepts bootstrap messages (tests talk to it by hand).
  virtual net::SockAddr listenAddress() const = 0;
  /// Messages this rank has sent so far: to roots (join, lookups) and to peers (perf/scale).
  virtual uint64_t messagesSent() const = 0;
};

}  // namespace atl::bootstrap
