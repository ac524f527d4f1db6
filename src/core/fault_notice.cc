#include "core/fault_notice.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/debug.h"
#include "base/params.h"
#include "core/comm.h"

namespace atl::fault {
namespace {

constexpr uint32_t kMagic = 0x544c4641;  // "AFLT"
constexpr uint16_t kVersion = 2;  // 2: flags
constexpr uint32_t kTag = 0x00460000u;   // 'F': away from split/shrink tags and the reserved ones
}  // namespace

int64_t chainWaitMs() {
  return std::clamp<int64_t>(params::getInt(params::Id::TimeoutMs), kChainWaitMinMs, kChainWaitMaxMs);
}

namespace {

std::string describeRank(const ncclComm* comm, int r) {
  const auto& peers = comm->links.context.peers;
  char buf[128];
  if (r >= 0 && static_cast<size_t>(r) < peers.size()) {
    const transport::PeerInfo& p = peers[static_cast<size_t>(r)];
    std::snprintf(buf, sizeof buf, "rank %d (pid %d on host %.*s)", r, p.pid,
                  static_cast<int>(strnlen(p.hostname, sizeof p.hostname)), p.hostname);
  } else {
    std::snprintf(buf, sizeof buf, "rank %d", r);
  }
  return buf;
}

/// Sends `cause` to every link peer but `skip` and the origin, within the spread budget.
void tell(ncclComm* comm, const Notice& cause, int skip) {
  const std::vector<std::byte> wire = encode(cause);
  const Deadline deadline = Deadline::afterMs(kSpreadBudgetMs);
  int told = 0;
  for (int peer : comm->links.table.peers()) {
    if (peer == comm->rank || peer == skip || peer == cause.origin) continue;
    if (deadline.expired()) break;
    // At least 1 ms: afterMs(0) would mean no deadline at all.
    const Deadline each = Deadline::afterMs(std::max(1, deadline.remainingMs(static_cast<int>(kPerPeerMs))));
    if (comm->bootstrap->sendWithin(peer, kTag, wire, each).ok()) ++told;
  }
  ATOLL_INFO(log::kInit, "rank %d: told %d peers that %s failed (seen by rank %d)", comm->rank, told,
             describeRank(comm, cause.origin).c_str(), cause.detector);
}


/// A received notice, if it decodes (malformed ones are logged and dropped), and who sent it.
std::optional<Notice> takeNotice(ncclComm* comm, int from, int64_t waitMs, int* sender) {
  auto bytes = comm->bootstrap->tryRecv(from, kTag, waitMs, sender);
  if (!bytes) return std::nullopt;
  const char* why = "";
  auto n = decode(*bytes, comm->nranks, &why);
  if (!n) ATOLL_WARN("rank %d: ignoring a malformed failure notice: %s", comm->rank, why);
  return n;
}

/// The notices received so far, by the rank that sent them (one per rank and failure). A rank
/// passes on the cause it found, so its notice may name another detector: what matters for the
/// chain is what each rank said.
class Notices {
 public:
  explicit Notices(ncclComm* comm)
      : comm_(comm),
        bySender_(static_cast<size_t>(comm->nranks)),
        resolved_(static_cast<size_t>(comm->nranks)),
        links_(comm->links.table.peers()) {}
  void drain() {
    int sender = -1;
    while (auto n = takeNotice(comm_, -1, 0, &sender)) keep(sender, *n);
  }
  /// Where `rank` says its chain ends (its kResolved notice), waiting for it until `deadline`.
  const Notice* resolvedFrom(int rank, Deadline deadline) {
    drain();
    auto& slot = resolved_[static_cast<size_t>(rank)];
    int sender = -1;
    while (!slot && !deadline.expired()) {
      auto n = takeNotice(comm_, rank, deadline.remainingMs(static_cast<int>(kChainWaitMaxMs)), &sender);
      if (!n) break;
      keep(sender, *n);
    }
    return slot ? &*slot : nullptr;
  }
  bool linked(int rank) const { return std::binary_search(links_.begin(), links_.end(), rank); }
  /// What `rank` said, waiting for it until `deadline`.
  const Notice* from(int rank, Deadline deadline) {
    drain();
    auto& slot = bySender_[static_cast<size_t>(rank)];
    int sender = -1;
    if (!slot && !deadline.expired())
      if (auto n = takeNotice(comm_, rank, deadline.remainingMs(static_cast<int>(kChainWaitMaxMs)), &sender))
        keep(sender, *n);
    return slot ? &*slot : nullptr;
  }
  size_t size() const { return bySender_.size(); }
  /// Any notice received, for when the failed peer sent none.
  const Notice* any(int* sender) {
    drain();
    for (size_t r = 0; r < bySender_.size(); ++r)
      if (bySender_[r]) {
        *sender = static_cast<int>(r);
        return &*bySender_[r];
      }
    return nullptr;
  }

 private:
  void keep(int sender, const Notice& n) {
    if (sender < 0 || static_cast<size_t>(sender) >= bySender_.size()) return;
    auto& slot = ((n.flags & kResolved) ? resolved_ : bySender_)[static_cast<size_t>(sender)];
    if (!slot) slot = n;
  }
  ncclComm* comm_;
  std::vector<std::optional<Notice>> bySender_;
  std::vector<std::optional<Notice>> resolved_;
  std::vector<int> links_;  // sorted
};

/// Follows the wait-for chain from `notice`, which `sender` sent (fault_notice.h): while the last
/// notice says its detector timed out waiting on a rank, look for that rank's notice (or, when it
/// is no link peer of ours and so sends us nothing, for `sender`'s resolved one), until a rank that
/// sent none (the silent one), a conclusive notice (a link that broke, or a resolved chain), or a
/// cycle of ranks waiting on each other (blamed where it closes). Returns the notice naming the
/// rank to blame.
Notice followChain(Notices& notices, Notice notice, int sender, int self, Deadline deadline, Deadline relayDeadline) {
  std::vector<bool> seen(notices.size(), false);
  seen[static_cast<size_t>(self)] = true;
  while ((notice.flags & kTimedOut) && !(notice.flags & kResolved) && !seen[static_cast<size_t>(notice.origin)]) {
    seen[static_cast<size_t>(notice.origin)] = true;
    const bool direct = sender == self || notices.linked(notice.origin);
    const Notice* next =
        direct ? notices.from(notice.origin, deadline) : notices.resolvedFrom(sender, relayDeadline);
    if (next == nullptr) break;
    // A rank that broke off on its own (breakOff) names itself: it is the end of the chain.
    if (next->origin == next->detector) return *next;
    if ((next->flags & kTimedOut) && !(next->flags & kResolved) && seen[static_cast<size_t>(next->origin)]) break;
    if (direct) sender = notice.origin;
    notice = *next;
  }
  return notice;
}

}  // namespace

std::vector<std::byte> encode(const Notice& n) {
  Notice w = n;
  w.magic = kMagic;
  w.version = kVersion;
  w.size = sizeof(Notice);
  w.reason[sizeof w.reason - 1] = '\0';
  std::vector<std::byte> out(sizeof(Notice));
  std::memcpy(out.data(), &w, sizeof w);
  return out;
}

std::optional<Notice> decode(std::span<const std::byte> bytes, int nranks, const char** why) {
  auto fail = [&](const char* w) -> std::optional<Notice> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (bytes.size() != sizeof(Notice)) return fail("wrong size");
  Notice n;
  std::memcpy(&n, bytes.data(), sizeof n);
  if (n.magic != kMagic) return fail("bad magic");
  if (n.version != kVersion || n.size != sizeof(Notice)) return fail("unknown version");
  if (n.origin < 0 || n.origin >= nranks || n.detector < 0 || n.detector >= nranks) return fail("rank out of range");
  if ((n.flags & ~(kTimedOut | kResolved)) != 0) return fail("unknown flags");
  if (std::memchr(n.reason, '\0', sizeof n.reason) == nullptr) return fail("reason not terminated");
  return n;
}


void spreadFailure(ncclComm* comm, int failedPeer, bool timedOut, Status failure) {
  // After a local abort or revoke this rank is the cause, and its closed links say so.
  if (aborted(&comm->abortFlag) || failure.ok() || failedPeer < 0 || failedPeer >= comm->nranks ||
      failedPeer == comm->rank || !comm->bootstrap)
    return;
  std::string own = lastErrorMessage();  // the failure's message: raised just now on this thread
  // Link errors name the peer and its host already; a timeout names only the rank it waited on.
  bool amended = false;
  if (own.find("rank " + std::to_string(failedPeer) + " (") == std::string::npos) {
    own += "; the rank waited on is " + describeRank(comm, failedPeer);
    amended = true;
  }
  Notice mine;
  mine.origin = failedPeer;
  mine.detector = comm->rank;
  mine.flags = timedOut ? kTimedOut : 0;
  std::snprintf(mine.reason, sizeof mine.reason, "%s", own.c_str());
  // A timeout's notice is only an edge of the wait-for chain: it goes out at once, so the ranks
  // waiting on this one can follow the chain through it without waiting for this rank's search.
  if (timedOut) tell(comm, mine, failedPeer);
  Notices notices(comm);
  Notice cause = mine;
  const Deadline chainDeadline = Deadline::afterMs(chainWaitMs());
  // A relayed end comes after the relaying rank's own search, which may have waited as long.
  const Deadline relayDeadline = Deadline::afterMs(2 * chainWaitMs() + kNoticeWaitMs);
  if (timedOut) {
    // Only the chain from the rank waited on counts: another rank's timeout may blame a rank that
    // is merely waiting, and this rank's own evidence is better than that.
    cause = followChain(notices, mine, comm->rank, comm->rank, chainDeadline, relayDeadline);
  } else {
    // The failed peer's own notice, else one that reached us from elsewhere before (the failed
    // peer may have run out of its budget before it came to us).
    int sender = failedPeer;
    const Notice* first = notices.from(failedPeer, Deadline::afterMs(kNoticeWaitMs));
    if (first == nullptr) first = notices.any(&sender);
    if (first != nullptr) cause = followChain(notices, *first, sender, comm->rank, chainDeadline, relayDeadline);
  }
  cause.flags &= ~kResolved;
  const bool beyond = cause.origin != failedPeer;
  // A rank that broke off for a reason of its own (breakOff) reports itself.
  const bool selfReported = !beyond && cause.detector == failedPeer;
  // Passed on resolved: the rank to blame, who saw it, and whether it was found silent.
  if (!timedOut) tell(comm, cause, failedPeer);
  else {
    Notice end = cause;
    end.flags |= kResolved;
    tell(comm, end, -1);
  }
  // Raised last, so it is this thread's last error (notice sends may have raised their own).
  const std::string culprit = describeRank(comm, cause.origin);
  if (beyond && timedOut)
    (void)ATOLL_ERROR(failure.code(), "rank %d: timed out waiting on rank %d, which waits on %s %s; rank %d saw: %s",
                      comm->rank, failedPeer, (cause.flags & kTimedOut) ? "the silent" : "the failed", culprit.c_str(),
                      cause.detector, cause.reason);
  else if (beyond)
    (void)ATOLL_ERROR(failure.code(), "rank %d: rank %d gave up after %s %s; rank %d saw: %s", comm->rank, failedPeer,
                      culprit.c_str(), (cause.flags & kTimedOut) ? "went silent" : "failed", cause.detector,
                      cause.reason);
  else if (selfReported)
    (void)ATOLL_ERROR(failure.code(), "rank %d: %s gave up on the communicator: %s", comm->rank, culprit.c_str(),
                      cause.reason);
  else if (amended)
    (void)ATOLL_ERROR(failure.code(), "%s", own.c_str());
  else
    restoreLastError(std::move(own));
}

void breakOff(ncclComm* comm, Status reason) {
  if (reason.ok()) return;
  ncclResult_t expected = ncclSuccess;
  comm->asyncError.compare_exchange_strong(expected, reason.code());
  std::string own = lastErrorMessage();
  if (comm->bootstrap && !aborted(&comm->abortFlag)) {
    Notice cause;
    cause.origin = comm->rank;
    cause.detector = comm->rank;
    std::snprintf(cause.reason, sizeof cause.reason, "%s", own.c_str());
    tell(comm, cause, comm->rank);
  }
  comm->links.table.shutdownAll();
  restoreLastError(std::move(own));
}

}  // namespace atl::fault
