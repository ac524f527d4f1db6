// ATOLL_CHECK=1: before a batch's collectives run, every rank sends every peer a fixed-size
// fingerprint of what it is about to launch (call sequence number, collectives, counts, types,
// operators, roots) and receives theirs, over the same connections the data will use. All ranks
// see all fingerprints, so a mismatch (a different count or type, a different collective, a rank a
// call behind) becomes ncclInvalidUsage on every rank, with the same message, before any data
// moves: nothing is corrupted, nothing hangs, and the communicator stays usable. Point-to-point
// batches exchange a fingerprint per peer pair: the bytes each side sends must be what the other
// receives. A point-to-point launch against a collective one cannot be seen by every rank, so it
// also breaks the communicator: the ranks that see it break their links, and the others' wait for
// a print ends with an error naming it (core/fault_notice.h), not at ATOLL_TIMEOUT_MS.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/group.h"
#include "core/status.h"
#include "engine/plan.h"

struct ncclComm;

namespace atl {

/// On the wire: explicit version and size, so a peer built differently is an error, not garbage.
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

/// One check of one communicator: its buffers and the exchange plan, alive until compared.
struct CallCheck {
  ncclComm* comm = nullptr;
  std::vector<CallPrint> out;  // collectives: one per rank (the same print); p2p: one per peer
  std::vector<CallPrint> in;
  std::vector<int> peers;      // the rank of out[i] / in[i] (collectives: every rank, in order)
  bool collective = false;     // a collective print (else point-to-point)
  // Set by compareCallPrints when a peer launched point-to-point work against a collective (or
  // the reverse): ranks that never exchange with this one still wait for its collective print, so
  // the communicator cannot stay usable; its links are broken to end their wait (core/group.cc).
  bool desync = false;
  std::unique_ptr<engine::Plan> plan;
};

/// The exchange for `comm`'s part of a batch; `colls` in call order, `p2p` the batch's sends and
/// receives. Null plan when there is nothing to check. Advances the communicator's sequence.
Result<std::unique_ptr<CallCheck>> prepareCallCheck(ncclComm* comm, std::span<const OpDesc* const> colls,
                                                    std::span<const OpDesc* const> p2p);

/// After the exchange ran: ncclInvalidUsage naming the first difference, else Ok.
Status compareCallPrints(CallCheck& check);

}  // namespace atl
