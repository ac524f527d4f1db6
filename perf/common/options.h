// Command line of the nccl-tests-compatible *_perf tools: same flags, same defaults, same meaning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "perf/common/byte_size.h"

namespace atl::perf {

/// How the per-rank times of one measurement are combined into the printed time (nccl-tests -a).
enum class TimeReduce { Min = 0, Avg = 1, Max = 2, Sum = 3 };

struct Options {
  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepBytes = 1u << 20;
  double stepFactor = 1.0;  // > 1 selects multiplicative steps
  int iters = 20;
  int warmupIters = 1;
  int aggIters = 1;
  bool check = true;
  std::vector<ncclRedOp_t> ops{ncclSum};
  std::vector<ncclDataType_t> types{ncclFloat};
  std::string opArg = "sum";
  std::string typeArg = "float";
  int root = 0;
  bool blocking = false;
  bool localRegister = false;  // -R: buffers from ncclMemAlloc, as nccl-tests' -R does
  bool deviceBuffers = false;  // -D: device buffers and a stream per rank (perf/common/device_buffers.h)
  TimeReduce average = TimeReduce::Avg;
  int threads = 1;
  int ranksPerThread = 1;
  int cycles = 1;  // 0 = run until killed, as in nccl-tests
  bool cpuTime = false;
  std::string jsonPath;
  bool verbose = false;
};

enum class ParseOutcome { Run, Help, Error };

/// Parses argv into *out. On Error the message is in *error; the caller prints usage and exits 2.
ParseOutcome parseOptions(int argc, char** argv, Options* out, std::string* error);
void printUsage(const char* prog, bool hasOp, bool hasRoot);
/// The message sizes a sweep visits (-b, -e, -f or -i), shared by every tool so rows line up.
std::vector<size_t> messageSizes(const Options& o);

const char* opName(ncclRedOp_t op);

}  // namespace atl::perf
