// A Plan is one collective (or one group's point-to-point batch) bound to real buffers, ready for
// the executor: the schedule from the generator plus the buffer table and the element semantics.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "base/status.h"
#include "engine/connections.h"
#include "kernels/host/reduce.h"
#include "nccl.h"

namespace atl::engine {

/// Per-call work around a plan whose user buffers the host cannot address (GPU memory,
/// core/device_staging.h): `in` runs before the prologue (wait for the user's stream, copy the
/// input to host memory), `out` after the epilogue (copy the results back). An error fails the
/// plan's queue like a broken link.
class CallStaging {
 public:
  virtual Status in() = 0;
  virtual Status out() = 0;

 protected:
  ~CallStaging() = default;
};

/// A number no other plan of the process has had (the executor's key for a plan it started
/// before; an address may come back for another plan once the first is freed).
uint64_t nextPlanSerial();

struct Plan {
  algo::Schedule schedule;  // set once, before the plan first runs
  ncclDataType_t dtype = ncclInt8;
  size_t elemSize = 1;
  kernels::RedOp op = kernels::RedOp::Sum;
  std::vector<std::byte*> buffers;           // indexed by algo::BufId; kScratchBuf filled by the executor
  std::unique_ptr<std::byte[]> ownedScratch;  // allocated when the plan first starts
  size_t scratchCapacity = 0;
  std::unique_ptr<std::byte[]> ownedInput;    // e.g. the pre-scaled input of PreMulSum
  size_t ownedInputBytes = 0;
  std::function<void(Plan&)> prologue;        // runs when the plan starts (reads user input then)
  std::function<void(Plan&)> epilogue;        // runs after every program finished (e.g. Avg division)
  CallStaging* staging = nullptr;             // this call's, or null; set before every run of a cached plan
  std::string what;                           // "AllReduce 1024 x float" for logs and errors
  // How the plan was made, for the per-call report (core/call_report.h); set by the plan builder.
  algo::Algo algo = algo::Algo::Ring;         // the generator that built `schedule`, after any fallback
  const char* proto = "Simple";               // static name; this engine's one protocol (tuning/algo_env.h)
  int nchannels = 0;                          // distinct channels of this rank's programs
  std::vector<LinkKey> links;                 // what the schedule uses (core/connect.h), once known
  bool linksKnown = false;
  uint64_t linksPresentAt = 0;                // the ConnTable generation at which all of them existed
  const uint64_t serial = nextPlanSerial();
};

}  // namespace atl::engine
