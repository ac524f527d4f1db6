#include "core/fault_notice.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "core/comm.h"
#include "core/debug.h"

namespace atl::fault {
namespace {

constexpr uint32_t kMagic = 0x544c4641;  // "AFLT"
constexpr uint16_t kVersion = 1;
constexpr uint32_t kTag = 0x00460000u;   // 'F': away from split/shrink tags and the reserved ones
// A dead peer's notice never comes; a live one's is queued before its links break (it waits for
// our listener's acknowledgement first), so this only covers the listener thread's last step.
constexpr int64_t kNoticeWaitMs = 100;
// All notices of one failure share this budget: a peer on a dead host must not hold up the rest
// of the spread (the notified ranks are otherwise still waiting on us, up to their timeouts).
constexpr int64_t kSpreadBudgetMs = 500;

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
    if (comm->bootstrap->sendWithin(peer, kTag, wire, deadline).ok()) ++told;
  }
  ATOLL_INFO(log::kInit, "rank %d: told %d peers that %s failed (seen by rank %d)", comm->rank, told,
             describeRank(comm, cause.origin).c_str(), cause.detector);
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
  if (std::memchr(n.reason, '\0', sizeof n.reason) == nullptr) return fail("reason not terminated");
  return n;
}

void spreadFailure(ncclComm* comm, int failedPeer, Status failure) {
  // After a local abort or revoke this rank is the cause, and its closed links say so.
  if (aborted(&comm->abortFlag) || failure.ok() || failedPeer < 0 || failedPeer >= comm->nranks ||
      failedPeer == comm->rank || !comm->bootstrap)
    return;
  std::string own = lastErrorMessage();  // the failure's message: raised just now on this thread
  // Link errors name the peer and its host already; a timeout names only the rank it waited on.
  const std::string blamed = describeRank(comm, failedPeer);
  bool amended = false;
  if (own.find("rank " + std::to_string(failedPeer) + " (") == std::string::npos) {
    own += "; the rank waited on is " + blamed;
    amended = true;
  }
  Notice cause;
  cause.origin = failedPeer;
  cause.detector = comm->rank;
  std::snprintf(cause.reason, sizeof cause.reason, "%s", own.c_str());
  bool beyond = false, selfReported = false;
  // The failed peer's own notice, else one that reached us from elsewhere before (the failed peer
  // may have run out of its budget before it came to us).
  auto bytes = comm->bootstrap->tryRecv(failedPeer, kTag, kNoticeWaitMs);
  if (!bytes) bytes = comm->bootstrap->tryRecv(-1, kTag, 0);
  if (bytes) {
    const char* why = "";
    if (auto n = decode(*bytes, comm->nranks, &why)) {
      cause = *n;
      beyond = cause.origin != failedPeer;
      // A rank that broke off for a reason of its own (breakOff) reports itself.
      selfReported = !beyond && cause.detector == failedPeer;
    } else {
      ATOLL_WARN("rank %d: ignoring a malformed failure notice: %s", comm->rank, why);
    }
  }
  tell(comm, cause, failedPeer);
  // Raised last, so it is this thread's last error (notice sends may have raised their own).
  if (beyond)
    (void)ATOLL_ERROR(failure.code(), "rank %d: rank %d gave up after %s failed; rank %d saw: %s", comm->rank,
                      failedPeer, describeRank(comm, cause.origin).c_str(), cause.detector, cause.reason);
  else if (selfReported)
    (void)ATOLL_ERROR(failure.code(), "rank %d: %s gave up on the communicator: %s", comm->rank,
                      describeRank(comm, failedPeer).c_str(), cause.reason);
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
