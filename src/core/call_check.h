// ATOLL_CHECK=1: before a batch's data moves, the ranks compare fingerprints of what they are about
// to launch (call sequence number, collectives, counts, types, operators, roots), so a mismatch (a
// different count or type, a different collective, a rank a call behind) becomes ncclInvalidUsage
// on every rank, with the same message, before any data moves: nothing is corrupted, nothing hangs,
// and the communicator stays usable.
//
// Why a tree over the bootstrap, not every pair over the data links: a collective's fingerprints
// are reduced up a binomial tree rooted at rank 0 and the verdict comes back down, so a launch costs
// a rank at most ceil(log2 n) + 1 messages and 2 ceil(log2 n) hops, not n, and needs no data links
// (which are made on demand, core/connect.h, only once the check has passed). Each node sends up
// its subtree's lowest rank whose print differs from the subtree root's (a binomial subtree's root
// is its lowest rank), so rank 0 learns the lowest rank that differs from it, and every rank
// reports that same pair.
//
// Point-to-point batches exchange a fingerprint per peer pair: the bytes each side sends must be
// what the other receives. A point-to-point launch against a collective one cannot be seen by every
// rank. It is seen by the pair: a rank in a collective check that finds a point-to-point print from
// q answers q with where it is; q, still before that same collective launch, knows the two can
// never match (the peer passed the point where it would have had to take part). q then poisons the
// check: the poison floods along tree edges and point-to-point pairs, every rank fails at once
// with the same cause, and the communicator is broken (its links too, core/group.cc).
#pragma once

#include <cstdint>
#include <span>
#include <vector>
#include <type_traits>

#include "base/status.h"
#include "core/group.h"

struct ncclComm;

namespace atl {

/// A fingerprint on the wire: explicit version and size, so a peer built differently is an error.
struct CallPrint {
  uint32_t magic = 0;
  uint16_t version = 0;
  uint16_t size = 0;
  uint64_t seq = 0;        // collective launches on this communicator so far (collective prints)
  uint32_t ops = 0;        // collectives in the batch (collective prints)
  uint32_t kind = 0;       // 0: collectives, 1: point-to-point with one peer
  uint64_t hash = 0;       // over every collective's shape, in call order
  // The first collective (or, for p2p, bytes to and from the peer), kept plain for the message.
  int32_t coll = -1;
  int32_t dtype = -1;
  int32_t redop = -1;
  int32_t root = -1;
  uint64_t count = 0;      // p2p: bytes this rank sends to the peer
  uint64_t expect = 0;     // p2p: bytes this rank receives from the peer
};
static_assert(sizeof(CallPrint) == 64);
static_assert(std::has_unique_object_representations_v<CallPrint>, "no padding: sent as its bytes");

/// What the check found for one communicator of the batch.
struct CheckOutcome {
  Status result;
  bool desync = false;    // launches out of step (point-to-point against a collective): break it
  int failedPeer = -1;    // the rank waited on when the check failed on a timeout or a dead peer
  bool timedOut = false;
};

/// Checks every communicator of a batch (`ops` holds all of them), progressing all at once so one
/// thread may drive several ranks. Waits at most `timeoutMs` (0: no limit) for a peer.
std::vector<CheckOutcome> checkBatch(std::span<ncclComm* const> comms, std::span<const OpDesc> ops, int64_t timeoutMs);

}  // namespace atl
