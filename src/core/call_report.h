// What actually ran for a collective: the algorithm after every fallback, the protocol and the
// channels, as the plan builder made them. One NCCL_DEBUG=INFO line per launched collective in
// the TUNING subsystem (off by default, as in NCCL), and the last report per communicator for
// tests and tools, so a silent fallback (say, to the ring) is visible instead of passing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "algorithms/schedule.h"
#include "nccl.h"

namespace atl::engine {
struct Plan;
}

struct ncclComm;

namespace atl {

struct CallReport {
  algo::Coll coll = algo::Coll::AllReduce;
  size_t count = 0;                       // elements per rank, as passed to the call
  ncclDataType_t dtype = ncclFloat32;
  algo::Algo algo = algo::Algo::Ring;     // the generator that built the schedule
  const char* proto = "Simple";           // static string
  int nchannels = 0;                      // channels this rank's programs use
  bool fromCache = false;                 // the plan came from the plan cache
  uint64_t seq = 0;                       // collectives reported on this communicator so far
};

/// Records (and, with TUNING enabled, logs) the collective `plan` runs for on `comm`. Called by
/// the thread issuing calls on the communicator, once per launched collective.
void reportCall(ncclComm* comm, algo::Coll coll, size_t count, const engine::Plan& plan, bool fromCache);
/// The same for a collective that ran outside the engine's plans (core/device_intranode.h):
/// `proto` names the path (a static string), channels are 0.
void reportPath(ncclComm* comm, algo::Coll coll, size_t count, ncclDataType_t dtype, algo::Algo algo,
                const char* proto);

/// The last collective reported on `comm` (nullopt before the first). Read it from the thread
/// that issues calls on the communicator, as for every other per-call state.
std::optional<CallReport> lastCall(const ncclComm* comm);

}  // namespace atl
