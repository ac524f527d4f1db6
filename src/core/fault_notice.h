// Root cause of a failure, spread to the survivors. A dead rank breaks only its own links: its
// neighbours see it die, but every rank further away sees a neighbour that gave up, and would blame
// that neighbour. So before a rank breaks its links (core/group.cc) it tells its link peers over
// the bootstrap which rank it found dead or silent, and why; a rank whose link to a peer broke
// first looks for that peer's notice. Every survivor's error then names the rank that actually
// failed and its host, one hop per link, like the failure itself (NCCL's RAS does this with a
// separate overlay network; the bootstrap listeners already are one).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>
#include <type_traits>

#include "base/status.h"

struct ncclComm;

namespace atl::fault {

/// On the wire (fixed size, versioned; it comes from an authenticated peer and is still checked).
struct Notice {
  uint32_t magic = 0;
  uint16_t version = 0;
  uint16_t size = 0;
  int32_t origin = -1;    // the rank found dead or silent
  int32_t detector = -1;  // the rank that found it (its own link to `origin` failed)
  uint32_t flags = 0;     // kTimedOut
  char reason[236] = {};  // the detector's error message, NUL-terminated
};
static_assert(sizeof(Notice) == 256);
static_assert(std::has_unique_object_representations_v<Notice>, "no padding: sent as its bytes");
/// `origin` is the end of a chain of ranks each waiting on the next, not a rank whose link broke.
inline constexpr uint32_t kTimedOut = 1;
/// The detector has followed its chain to the end: `origin` is where it ends, as far as it knows.
/// Sent after the detector's first (unresolved) notice, so that a rank whose chain runs through
/// ranks it has no link to (links are made on demand) learns the end from its own link peer.
inline constexpr uint32_t kResolved = 2;

// The spread's timing (also what perf/sim's failure model charges).
// A dead peer's notice never comes; a live one's is queued before its links break (it waits for
// our listener's acknowledgement first), so this only covers the listener thread's last step.
inline constexpr int64_t kNoticeWaitMs = 100;
// All notices of one failure share this budget: a peer on a dead host must not hold up the rest
// of the spread (the notified ranks are otherwise still waiting on us, up to their timeouts).
inline constexpr int64_t kSpreadBudgetMs = 500;
// A stopped rank's listener accepts but never answers: one such peer must not use up the budget.
inline constexpr int64_t kPerPeerMs = 100;
// How long a wait-for chain is followed: the silent rank at its end sends nothing, so this is paid
// once per timeout. A live rank on the chain stalled about when we did, so it times out (and sends
// its notice) within about one ATOLL_TIMEOUT_MS of us; on a loaded host not always before us.
inline constexpr int64_t kChainWaitMinMs = 300;
inline constexpr int64_t kChainWaitMaxMs = 5000;
/// How long a timed-out rank waits for a live chain member's notice: ATOLL_TIMEOUT_MS clamped to
/// [kChainWaitMinMs, kChainWaitMaxMs].
int64_t chainWaitMs();

std::vector<std::byte> encode(const Notice& n);
/// The notice in `bytes` if it is well formed for a communicator of `nranks`; why not otherwise.
std::optional<Notice> decode(std::span<const std::byte> bytes, int nranks, const char** why = nullptr);

/// Called on a failed call, before its links are broken. `failedPeer` is the peer whose link broke
/// (or, `timedOut`, that a timeout waited on). Finds the root cause (that peer's notice, else the
/// peer itself), tells the other link peers within a bounded time, and, when the cause lies beyond
/// `failedPeer`, raises an error naming it so ncclGetLastError and the log say which rank failed.
/// The result code is unchanged. Does nothing after a local abort or revoke, or when no peer is to
/// blame.
///
/// Why timeouts follow a chain: a silent rank stalls its neighbours, which stall theirs, so most
/// ranks time out waiting on a rank that is itself waiting. Each tells its link peers at once which
/// rank it waited on; a rank follows those notices from the rank it waited on to the first rank that
/// sent none, which is the silent one. Notices travel only along links (O(links) per rank, not
/// O(n)), so where the chain leaves this rank's link peers, the link peer it came through is asked
/// instead: once that peer has followed the chain to its end it sends a kResolved notice naming it.
/// A notice that is not queued yet is waited for up to ATOLL_TIMEOUT_MS (clamped to 0.3-5 s), which
/// the silent rank at the end of the chain costs once; each relay hop adds what its rank took.
void spreadFailure(ncclComm* comm, int failedPeer, bool timedOut, Status failure);

/// This rank gives up on the communicator for a reason of its own (the error just raised, e.g. an
/// ATOLL_CHECK desync that other ranks cannot see): records it as the asynchronous error, tells the
/// link peers, and breaks the links, so ranks waiting on this one fail at once, naming the reason.
void breakOff(ncclComm* comm, Status reason);

}  // namespace atl::fault
