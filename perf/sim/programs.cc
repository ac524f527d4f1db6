#include "perf/sim/programs.h"

namespace atl::sim {

uint64_t CompressedProgram::steps() const {
  uint64_t n = 0;
  for (const Run& r : runs) n += r.repeat;
  return n;
}

StepShape shapeOf(const algo::Step& step) {
  StepShape s;
  s.kind = step.kind;
  s.sendPeer = step.sendPeer;
  s.sendCount = step.sendCount;
  s.recvPeer = step.recvPeer;
  s.recvCount = step.recvCount;
  s.reduce = step.reduce;
  return s;
}

std::vector<CompressedProgram> compress(const algo::Schedule& s) {
  std::vector<CompressedProgram> out;
  out.reserve(s.programs.size());
  for (const algo::Program& p : s.programs) {
    CompressedProgram c;
    c.channel = p.channel;
    for (const algo::Step& step : p.steps) {
      const StepShape shape = shapeOf(step);
      if (!c.runs.empty() && c.runs.back().shape == shape && c.runs.back().repeat < UINT32_MAX)
        ++c.runs.back().repeat;
      else
        c.runs.push_back(Run{shape, 1});
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace atl::sim
