// Host cost per collective call when a workload's shapes do or do not fit the plan cache
// (core/plan_cache.h, ATOLL_PLAN_CACHE_SIZE), through real ncclAllReduce calls on a communicator
// of 1 rank or of 4 ranks as one thread's group (ncclCommInitAll). Messages are small (16-1024
// floats) so the time is the library's per-call work, of which building a plan is most on a miss.
//
//   repeat/ranks:R/shapes:1/cache:C  one shape over and over: the floor of a call's cost
//   cycle/ranks:R/shapes:N/cache:C   N distinct shapes issued in turn, over and over
//   random/ranks:R/shapes:N/cache:C  N distinct shapes drawn at random (fixed seed)
//   shift/ranks:R/shapes:N/cache:C   64 other shapes first (untimed: warm-up, an earlier phase of
//                                    the job), then N shapes in turn
//
// cache:0 builds every call; cache:64 is the default. The hit_rate counter is the share of calls
// that found their plan cached.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/params.h"
#include "core/comm.h"
#include "nccl.h"

namespace {

enum class Pattern { Cycle, Random, Shift };

constexpr size_t kFirstCount = 16;
constexpr size_t kEarlierShapes = 64;

struct Job {
  std::vector<ncclComm_t> comms;
  std::vector<std::vector<float>> bufs;

  Job(int nranks, size_t maxCount) : comms(static_cast<size_t>(nranks)) {
    if (ncclCommInitAll(comms.data(), nranks, nullptr) != ncclSuccess) std::abort();
    for (int r = 0; r < nranks; ++r) bufs.emplace_back(maxCount, 1.0f);
  }
  ~Job() {
    for (ncclComm_t c : comms) ncclCommDestroy(c);
  }
  void call(size_t count) {
    const bool grouped = comms.size() > 1;
    if (grouped) ncclGroupStart();
    for (size_t r = 0; r < comms.size(); ++r) {
      float* b = bufs[r].data();
      if (ncclAllReduce(b, b, count, ncclFloat, ncclSum, comms[r], nullptr) != ncclSuccess) std::abort();
    }
    if (grouped && ncclGroupEnd() != ncclSuccess) std::abort();
  }
};

void setCacheSize(int64_t size) {
  setenv("ATOLL_PLAN_CACHE_SIZE", std::to_string(size).c_str(), 1);
  atl::params::reloadForTesting();
}

// Args: {ranks, shapes, cache}.
void BM_Calls(benchmark::State& state, Pattern pattern) {
  const int nranks = static_cast<int>(state.range(0));
  const size_t shapes = static_cast<size_t>(state.range(1));
  setCacheSize(state.range(2));
  // Shape i is an all-reduce of kFirstCount + i floats; the earlier phase uses counts above them.
  const size_t earlierFirst = kFirstCount + shapes;
  Job job(nranks, earlierFirst + kEarlierShapes);
  std::vector<size_t> order(shapes);
  for (size_t i = 0; i < shapes; ++i) order[i] = kFirstCount + i;
  if (pattern == Pattern::Random) {
    std::mt19937 rng(12345);
    std::uniform_int_distribution<size_t> pick(0, shapes - 1);
    order.resize(4096);
    for (size_t& c : order) c = kFirstCount + pick(rng);
  }
  if (pattern == Pattern::Shift)
    for (size_t i = 0; i < kEarlierShapes; ++i) job.call(earlierFirst + i);
  // One pass untimed, so cache:64 with a working set that fits starts warm (as in a training loop).
  for (size_t c : order) job.call(c);
  const atl::PlanCache::Stats before = job.comms[0]->plans.stats();
  size_t i = 0;
  for (auto _ : state) {
    job.call(order[i]);
    if (++i == order.size()) i = 0;
  }
  const atl::PlanCache::Stats& after = job.comms[0]->plans.stats();
  const double calls = static_cast<double>((after.hits - before.hits) + (after.misses - before.misses));
  state.counters["hit_rate"] = calls > 0 ? static_cast<double>(after.hits - before.hits) / calls : 0.0;
  state.SetItemsProcessed(state.iterations());
  setCacheSize(64);
}

void registerAll() {
  const struct {
    const char* name;
    Pattern pattern;
    std::vector<int64_t> shapes;
  } families[] = {
      {"repeat", Pattern::Cycle, {1}},
      {"cycle", Pattern::Cycle, {48, 96, 200}},
      {"random", Pattern::Random, {96}},
      {"shift", Pattern::Shift, {48}},
  };
  for (const auto& f : families) {
    benchmark::RegisterBenchmark(f.name, BM_Calls, f.pattern)
        ->ArgsProduct({{1, 4}, f.shapes, {64, 0}})
        ->ArgNames({"ranks", "shapes", "cache"});
  }
}

}  // namespace

int main(int argc, char** argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
