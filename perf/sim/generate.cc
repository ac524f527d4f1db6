#include "perf/sim/generate.h"

#include <algorithm>
#include <chrono>

namespace atl::sim {

namespace {

std::vector<CompressedProgram> buildRank(algo::CollSpec spec, int rank, int* built) {
  spec.rank = rank;
  ++*built;
  return compress(algo::buildSchedule(spec));
}

std::vector<CompressedProgram> relabelAll(const std::vector<CompressedProgram>& rep, int shift, int n) {
  std::vector<CompressedProgram> out;
  out.reserve(rep.size());
  for (const CompressedProgram& p : rep) out.push_back(relabel(p, shift, n));
  return out;
}

bool allEquivalent(const std::vector<CompressedProgram>& a, const std::vector<CompressedProgram>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equivalent(a[i], b[i])) return false;
  return true;
}

// Ranks outside the first period to check a relabelling on: both ends, the middle, and a spread
// of others, so a pattern broken anywhere (an island edge, the ring's wrap) is likely to show.
std::vector<int> samples(int n, int period) {
  std::vector<int> s = {period, n - 1, n / 2, n / 3 + 1, 2 * n / 3 + 1, n - period + period / 2};
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 6; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s.push_back(static_cast<int>((x >> 33) % static_cast<uint64_t>(n)));
  }
  std::vector<int> out;
  for (int r : s)
    if (r >= period && r < n && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  return out;
}

}  // namespace

uint64_t runsOf(const std::vector<CompressedProgram>& progs) {
  uint64_t n = 0;
  for (const CompressedProgram& p : progs) n += p.runs.size();
  return n;
}

Generated generatePrograms(const algo::CollSpec& spec, const std::vector<int>& periods, uint64_t maxRuns) {
  const auto t0 = std::chrono::steady_clock::now();
  const int n = spec.nranks;
  Generated g;
  std::vector<int> tries;
  for (int p : periods)
    if (p >= 1 && p < n && n % p == 0 && std::find(tries.begin(), tries.end(), p) == tries.end()) tries.push_back(p);
  std::sort(tries.begin(), tries.end());
  std::vector<std::vector<CompressedProgram>> reps;
  for (int p : tries) {
    // Ranks already built for a smaller period are reused.
    uint64_t repRuns = 0;
    while (static_cast<int>(reps.size()) < p) reps.push_back(buildRank(spec, static_cast<int>(reps.size()), &g.built));
    for (const auto& rep : reps) repRuns += runsOf(rep);
    // The first period's runs, n / p times over, is what any period (or none) would hold.
    if (maxRuns > 0 && repRuns * static_cast<uint64_t>(n / p) > maxRuns) {
      g.overBudget = true;
      break;
    }
    bool ok = true;
    for (int r : samples(n, p)) {
      if (!allEquivalent(relabelAll(reps[static_cast<size_t>(r % p)], r - r % p, n), buildRank(spec, r, &g.built))) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    g.period = p;
    g.programs.reserve(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      g.programs.push_back(r < p ? reps[static_cast<size_t>(r)] : relabelAll(reps[static_cast<size_t>(r % p)], r - r % p, n));
    g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return g;
  }
  if (g.overBudget) {
    g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return g;
  }
  g.period = n;
  g.programs = std::move(reps);
  uint64_t runs = 0;
  for (const auto& progs : g.programs) runs += runsOf(progs);
  while (static_cast<int>(g.programs.size()) < n) {
    g.programs.push_back(buildRank(spec, static_cast<int>(g.programs.size()), &g.built));
    runs += runsOf(g.programs.back());
    if (maxRuns > 0 && runs > maxRuns) {
      g.overBudget = true;
      g.programs.clear();
      break;
    }
  }
  g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return g;
}

}  // namespace atl::sim
