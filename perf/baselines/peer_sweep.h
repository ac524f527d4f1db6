// The sweep shared by the peer-library all-reduce benchmarks (Open MPI, Gloo). It reuses the
// options, verification pattern, table and JSON writer of our *_perf tools and copies the way
// all_reduce_perf times (perf/common/driver.cc), so the numbers differ only by the library called.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nccl.h"
#include "perf/common/options.h"

namespace atl::perf::baseline {

enum class Place { OutOfPlace, InPlace };

/// One peer library: float-sum all-reduce plus the small collectives the sweep needs.
class Peer {
 public:
  virtual ~Peer() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Binds the next allreduce() calls to these buffers; called before each timed loop, never inside one.
  virtual void prepare(Place place, const float* send, float* recv, size_t count) = 0;
  /// One all-reduce of the prepared buffers (in place: recv only).
  virtual void allreduce() = 0;
  /// Element-wise reduction of n (<= 4) doubles across ranks, result everywhere; also the barrier.
  /// op is ncclSum, ncclMin or ncclMax.
  virtual void reduceDoubles(double* values, int n, ncclRedOp_t op) = 0;
  /// Every rank's line in rank order (used on rank 0 only).
  virtual std::vector<std::string> gatherLines(const std::string& mine) = 0;
};

struct PeerTool {
  const char* tool;                // program name, as in "# Collective test starting: <tool>"
  const char* launcher;            // "mpi", "atollrun" or "env" (the JSON "launcher" field)
  std::vector<std::string> notes;  // extra "# ..." preamble lines (library, algorithm)
};

/// Parses nccl-tests flags with perf/common's parser and rejects those the peers do not support
/// (only float sum, one rank per process). Returns -1 to run, otherwise the exit status.
int parsePeerOptions(int argc, char** argv, const char* tool, bool printErrors, Options* out);

/// Runs the sweep, prints the table on rank 0 (and writes -J). Exit status: 0 ok, 1 wrong results.
int runPeerSweep(const Options& options, const PeerTool& info, Peer& peer);

}  // namespace atl::perf::baseline
