// The symbolic verifier (DESIGN.md): runs every rank's schedule over in-memory FIFOs with symbolic
// values and proves each rank ends with exactly the right combination of contributions.
//
// A value is (sum of 64-bit random weights, number of contributions); reducing adds both. Each
// input element (rank r, index i) has its own random weight, so the final pair identifies the
// exact multiset of contributions with overwhelming probability: a missing, duplicated or
// misplaced contribution changes it. Sends are buffered without bound, so a schedule whose steps
// wait on each other in a cycle shows up as "deadlock".
#pragma once

#include <cstddef>
#include <string>

#include "algorithms/schedule.h"

namespace atl::algo {

struct VerifyResult {
  bool ok = true;
  std::string error;     // first problem found, naming rank, buffer and index
  size_t messages = 0;   // transfers exchanged in total
  size_t elements = 0;   // elements moved in total
};

/// How the verifier delivers messages. Buffered: a send completes when posted (eager, any
/// amount of buffering). Rendezvous: a send completes only once its receiver has taken it, and the
/// receiver reads the sender's memory at that moment, as a single-copy transport does
/// (transports/shm: the peer reads the payload in place); a schedule that needs buffering to make
/// progress, or that overwrites what it still offers, fails.
enum class Delivery : uint8_t { Buffered, Rendezvous };

/// Verifies the schedule buildSchedule(spec) produces for every rank of spec.nranks (spec.rank is
/// ignored). Honours spec.inPlace with NCCL's in-place buffer layouts.
VerifyResult verifySchedule(const CollSpec& spec, Delivery delivery = Delivery::Buffered);

/// Same, for schedules from another generator (tests feed it deliberately broken ones).
using Generator = Schedule (*)(const CollSpec&);
VerifyResult verifySchedule(const CollSpec& spec, Generator generate, Delivery delivery = Delivery::Buffered);

}  // namespace atl::algo
