#include "perf/sim/programs.h"

namespace atl::sim {

namespace {

bool countsClose(size_t a, size_t b) { return (a == 0) == (b == 0) && (a > b ? a - b : b - a) <= 1; }

uint64_t absDiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

}  // namespace

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

bool mergeable(const StepShape& first, const StepShape& next) {
  return first.kind == next.kind && first.sendPeer == next.sendPeer && first.recvPeer == next.recvPeer &&
         first.reduce == next.reduce && countsClose(first.sendCount, next.sendCount) &&
         countsClose(first.recvCount, next.recvCount);
}

std::vector<CompressedProgram> compress(const algo::Schedule& s) {
  std::vector<CompressedProgram> out;
  out.reserve(s.programs.size());
  for (const algo::Program& p : s.programs) {
    CompressedProgram c;
    c.channel = p.channel;
    for (const algo::Step& step : p.steps) {
      const StepShape shape = shapeOf(step);
      if (c.runs.empty() || !mergeable(c.runs.back().shape, shape) || c.runs.back().repeat == UINT32_MAX)
        c.runs.push_back(Run{shape, 0, 0, 0});
      Run& r = c.runs.back();
      ++r.repeat;
      r.sendTotal += shape.sendCount;
      r.recvTotal += shape.recvCount;
    }
    out.push_back(std::move(c));
  }
  return out;
}

CompressedProgram relabel(const CompressedProgram& p, int shift, int n) {
  CompressedProgram out = p;
  const auto move = [&](int& peer) {
    if (peer >= 0) peer = static_cast<int>((static_cast<int64_t>(peer) + shift) % n);
  };
  for (Run& r : out.runs) {
    move(r.shape.sendPeer);
    move(r.shape.recvPeer);
  }
  return out;
}

bool equivalent(const CompressedProgram& a, const CompressedProgram& b) {
  if (a.channel != b.channel || a.runs.size() != b.runs.size()) return false;
  for (size_t i = 0; i < a.runs.size(); ++i) {
    const Run &x = a.runs[i], &y = b.runs[i];
    if (x.repeat != y.repeat || !mergeable(x.shape, y.shape) || absDiff(x.sendTotal, y.sendTotal) > x.repeat ||
        absDiff(x.recvTotal, y.recvTotal) > x.repeat)
      return false;
  }
  return true;
}

}  // namespace atl::sim
