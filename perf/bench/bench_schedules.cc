// Cost of turning a collective into its schedule IR, per rank and per call, from 2 to 4096 ranks:
// the engine builds a schedule on every call, so this is host latency added to each collective.
// items_per_second counts generated steps; the "steps" and "programs" counters describe one
// schedule, so time per step can be read off directly. The rank building is n/2 (a relaying rank
// for the chains, not the root), with root 0.
//
// The symbolic verifier runs every rank's schedule, so it is measured on small rank counts only;
// there items are messages simulated. The log-depth generators (binomial broadcast and reduce,
// Bruck all-gather) appear as build/<coll>/<algo> and verify/<coll>/<algo>.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/p2p.h"
#include "algorithms/schedule.h"
#include "algorithms/verify.h"

namespace {

using atl::algo::Algo;
using atl::algo::Coll;
using atl::algo::CollSpec;
using atl::algo::Schedule;

constexpr int64_t kMaxRanks = 4096;
// The engine's defaults (ATOLL_CHUNK_BYTES 128 KiB, float elements).
constexpr size_t kElemBytes = 4;
constexpr size_t kChunkElems = (128 << 10) / kElemBytes;

const Coll kColls[] = {Coll::AllReduce, Coll::AllGather, Coll::ReduceScatter,
                       Coll::Broadcast, Coll::Reduce,    Coll::AlltoAll};

// Message size as nccl-tests counts it (the gathered total for AllGather, the scattered input for
// ReduceScatter and AlltoAll), converted to CollSpec's count, which is per-rank for those.
size_t countFor(Coll coll, size_t totalElems, int nranks) {
  switch (coll) {
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AlltoAll:
      return totalElems / static_cast<size_t>(nranks);
    default:
      return totalElems;
  }
}

CollSpec specFor(Coll coll, int nranks, size_t totalElems, int nchannels, size_t chunkElems, Algo algo = Algo::Ring) {
  CollSpec s;
  s.coll = coll;
  s.algo = algo;
  s.nranks = nranks;
  s.rank = nranks / 2;
  s.root = 0;
  s.count = countFor(coll, totalElems, nranks);
  s.nchannels = nchannels;
  s.chunkElems = chunkElems;
  return s;
}

size_t stepCount(const Schedule& s) {
  size_t n = 0;
  for (const auto& p : s.programs) n += p.steps.size();
  return n;
}

void reportShape(benchmark::State& state, const Schedule& s) {
  const size_t steps = stepCount(s);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(steps));
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["programs"] = static_cast<double>(s.programs.size());
}

// Args: {ranks, bytes, channels}.
void BM_Build(benchmark::State& state, Coll coll, Algo algo) {
  const CollSpec spec =
      specFor(coll, static_cast<int>(state.range(0)), static_cast<size_t>(state.range(1)) / kElemBytes,
              static_cast<int>(state.range(2)), kChunkElems, algo);
  Schedule last;
  for (auto _ : state) {
    Schedule s = atl::algo::buildSchedule(spec);
    benchmark::DoNotOptimize(s.programs.data());
    last = std::move(s);
  }
  reportShape(state, last);
}

// A grouped send and receive with every peer (an all-to-all issued as point-to-point), the largest
// batch a single group typically holds. Args: {ranks}.
void BM_BuildP2P(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int self = n / 2;
  std::vector<atl::algo::P2POp> ops;
  for (int peer = 0; peer < n; ++peer) {
    for (bool isSend : {true, false}) {
      const auto buf = static_cast<atl::algo::BufId>(atl::algo::kFirstUserBuf + ops.size());
      ops.push_back({isSend, peer, 4096, buf});
    }
  }
  Schedule last;
  for (auto _ : state) {
    Schedule s = atl::algo::buildP2P(ops, self);
    benchmark::DoNotOptimize(s.programs.data());
    last = std::move(s);
  }
  reportShape(state, last);
}

// Small chunks so that the chains actually pipeline (16 chunks over 2 channels). Args: {ranks}.
void BM_Verify(benchmark::State& state, Coll coll, Algo algo) {
  constexpr size_t kVerifyElems = 4096;
  const CollSpec spec = specFor(coll, static_cast<int>(state.range(0)), kVerifyElems, 2, kVerifyElems / 32, algo);
  atl::algo::VerifyResult last;
  for (auto _ : state) {
    last = atl::algo::verifySchedule(spec);
    if (!last.ok) {
      state.SkipWithError(last.error.c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(last.messages));
  state.counters["messages"] = static_cast<double>(last.messages);
  state.counters["elements"] = static_cast<double>(last.elements);
}

// 2, 16, 128, 1024, 4096: every generator is linear in the rank count, so a sparse sweep suffices.
std::vector<int64_t> rankCounts() {
  std::vector<int64_t> out;
  for (int64_t n = 2; n < kMaxRanks; n *= 8) out.push_back(n);
  out.push_back(kMaxRanks);
  return out;
}

// The log-depth generators, registered as build/<coll>/<algo> and verify/<coll>/<algo> beside the
// ring and chain ones (which keep their plain names).
struct Variant {
  Coll coll;
  Algo algo;
};
const Variant kLogDepth[] = {{Coll::Broadcast, Algo::Binomial}, {Coll::Reduce, Algo::Binomial},
                             {Coll::AllGather, Algo::Bruck}};

int registerAll() {
  for (Coll coll : kColls) {
    const std::string name = atl::algo::collName(coll);
    benchmark::RegisterBenchmark(("build/" + name).c_str(), BM_Build, coll, Algo::Ring)
        ->ArgsProduct({rankCounts(), {64 << 10, 256 << 20}, {2, 16}})
        ->ArgNames({"ranks", "bytes", "channels"});
  }
  for (Variant v : kLogDepth) {
    const std::string name = std::string(atl::algo::collName(v.coll)) + "/" + atl::algo::algoName(v.algo);
    benchmark::RegisterBenchmark(("build/" + name).c_str(), BM_Build, v.coll, v.algo)
        ->ArgsProduct({rankCounts(), {64 << 10, 256 << 20}, {2}})
        ->ArgNames({"ranks", "bytes", "channels"});
  }
  benchmark::RegisterBenchmark("build_p2p/all_peers", BM_BuildP2P)
      ->RangeMultiplier(8)
      ->Range(2, kMaxRanks)
      ->ArgName("ranks");
  for (Coll coll : kColls) {
    benchmark::RegisterBenchmark(("verify/" + std::string(atl::algo::collName(coll))).c_str(), BM_Verify, coll,
                                 Algo::Ring)
        ->RangeMultiplier(2)
        ->Range(2, 32)
        ->ArgName("ranks");
  }
  for (Variant v : kLogDepth) {
    const std::string name = std::string(atl::algo::collName(v.coll)) + "/" + atl::algo::algoName(v.algo);
    benchmark::RegisterBenchmark(("verify/" + name).c_str(), BM_Verify, v.coll, v.algo)
        ->RangeMultiplier(2)
        ->Range(2, 32)
        ->ArgName("ranks");
  }
  return 0;
}
const int kRegistered = registerAll();

}  // namespace

BENCHMARK_MAIN();
