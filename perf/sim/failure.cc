#include "perf/sim/failure.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>

#include "algorithms/binomial.h"
#include "base/params.h"
#include "core/fault_notice.h"
#include "perf/sim/generate.h"

namespace atl::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kUsPerMs = 1e3;

/// Each rank's link peers: every peer its programs send to or receive from, both ways.
std::vector<std::vector<int>> linkGraph(const std::vector<std::vector<CompressedProgram>>& programs) {
  std::vector<std::vector<int>> adj(programs.size());
  for (size_t r = 0; r < programs.size(); ++r)
    for (const CompressedProgram& p : programs[r])
      for (const Run& run : p.runs)
        for (int peer : {run.shape.sendPeer, run.shape.recvPeer})
          if (peer >= 0 && static_cast<size_t>(peer) != r) {
            adj[r].push_back(peer);
            adj[static_cast<size_t>(peer)].push_back(static_cast<int>(r));
          }
  for (auto& a : adj) {
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
  }
  return adj;
}

}  // namespace

bool parseFailureMode(const std::string& s, FailureMode* m) {
  if (s == "kill") *m = FailureMode::Kill;
  else if (s == "vanish") *m = FailureMode::Vanish;
  else if (s == "hang") *m = FailureMode::Hang;
  else return false;
  return true;
}

const char* failureModeName(FailureMode m) {
  switch (m) {
    case FailureMode::Kill: return "kill";
    case FailureMode::Vanish: return "vanish";
    case FailureMode::Hang: return "hang";
  }
  return "?";
}

FailureParams FailureParams::fromRegistry() {
  FailureParams f;
  f.timeoutMs = static_cast<double>(params::getInt(params::Id::TimeoutMs));
  f.heartbeatTimeoutMs = static_cast<double>(params::getInt(params::Id::HeartbeatTimeoutMs));
  f.chainWaitMs = static_cast<double>(fault::chainWaitMs());
  return f;
}

FailureReport simulateFailure(const Setup& setup, algo::Coll coll, algo::Algo a, size_t bytes, const FailureParams& f) {
  FailureReport rep;
  const Network& net = *setup.net;
  const int n = net.gpus();
  if (f.rank < 0 || f.rank >= n) {
    rep.skipped = "the failing rank is not in the cluster";
    return rep;
  }
  const algo::CollSpec spec = collSpec(setup, coll, a, bytes);
  if (spec.count == 0) {
    rep.skipped = "message smaller than one element per rank";
    return rep;
  }
  const Generated g = generatePrograms(spec, generationPeriods(setup), setup.maxRuns);
  if (g.overBudget) {
    rep.skipped = "its programs pass the run budget";
    return rep;
  }
  std::vector<uint8_t> dead(static_cast<size_t>(n), 0);
  if (f.mode == FailureMode::Vanish) {
    const int per = net.gpusPerNode(), node = f.rank / per;
    for (int r = node * per; r < (node + 1) * per && r < n; ++r) rep.failed.push_back(r);
  } else {
    rep.failed.push_back(f.rank);
  }
  for (int r : rep.failed) dead[static_cast<size_t>(r)] = 1;

  CostParams cost = setup.cost;
  cost.failRanks = rep.failed;
  cost.failAtUs = f.atUs;
  cost.fastForward = false;
  const SimResult sim = simulate(net, g.programs, cost);
  if (sim.aborted) {
    rep.skipped = "the simulation passed its step or solve budget";
    return rep;
  }
  const std::vector<std::vector<int>> adj = linkGraph(g.programs);

  // When each stalled survivor's call fails without help from its neighbours.
  const double noticeWaitUs = static_cast<double>(fault::kNoticeWaitMs) * kUsPerMs;
  std::vector<double> err(static_cast<size_t>(n), kInf);
  std::vector<int> hops(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r) {
    const size_t i = static_cast<size_t>(r);
    if (dead[i]) continue;
    ++rep.survivors;
    if (sim.finished[i]) {
      ++rep.finishedCall;
      continue;
    }
    ++rep.stalled;
    // Its own timeout, then the chain of waiting ranks followed to the silent one, whose notice is
    // waited for (chainWaitMs) and never comes; what the relays back add is left out.
    double t = f.timeoutMs > 0 ? sim.lastMoveUs[i] + (f.timeoutMs + f.chainWaitMs) * kUsPerMs : kInf;
    if (f.mode != FailureMode::Hang)
      for (int d : adj[i]) {
        if (!dead[static_cast<size_t>(d)]) continue;
        const double seen = f.mode == FailureMode::Kill ? f.atUs + net.latencyUs(d, r) + f.detectUs
                                                        : f.atUs + f.heartbeatTimeoutMs * kUsPerMs;
        t = std::min(t, seen + noticeWaitUs);
      }
    err[i] = t;
  }

  // The spread: a failed call tells its other link peers, then breaks its links; a stalled peer
  // sees the break at its next poll and finds the notice already there.
  const double perDeadUs = static_cast<double>(fault::kPerPeerMs) * kUsPerMs;
  const double budgetUs = static_cast<double>(fault::kSpreadBudgetMs) * kUsPerMs;
  auto tellUs = [&](int u) {
    int live = 0, gone = 0;
    for (int p : adj[static_cast<size_t>(u)]) (dead[static_cast<size_t>(p)] ? gone : live)++;
    gone = std::max(0, gone - 1);  // the origin is not told
    return std::min(budgetUs, live * f.bootMsgUs + gone * perDeadUs);
  };
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> q;
  for (int r = 0; r < n; ++r)
    if (err[static_cast<size_t>(r)] < kInf) q.push({err[static_cast<size_t>(r)], r});
  std::vector<uint8_t> settled(static_cast<size_t>(n), 0);
  while (!q.empty()) {
    const auto [t, u] = q.top();
    q.pop();
    const size_t ui = static_cast<size_t>(u);
    if (settled[ui] || t > err[ui]) continue;
    settled[ui] = 1;
    const double broken = t + tellUs(u);
    for (int w : adj[ui]) {
      const size_t wi = static_cast<size_t>(w);
      if (dead[wi] || sim.finished[wi] || settled[wi]) continue;
      const double tw = broken + net.latencyUs(u, w) + f.detectUs;
      if (tw < err[wi]) {
        err[wi] = tw;
        hops[wi] = hops[ui] + 1;
        q.push({tw, w});
      }
    }
  }
  std::vector<double> times;
  for (int r = 0; r < n; ++r) {
    const size_t i = static_cast<size_t>(r);
    if (dead[i] || sim.finished[i]) continue;
    if (err[i] == kInf) {
      ++rep.unresolved;
      continue;
    }
    times.push_back(err[i]);
    rep.maxHops = std::max(rep.maxHops, hops[i]);
  }
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    rep.firstErrorUs = times.front();
    rep.medianErrorUs = times[times.size() / 2];
    rep.lastErrorUs = times.back();
  }

  // ncclCommShrink: survivors whose call completed join when their next call fails, with the rest.
  std::vector<int> order;
  for (int r = 0; r < n; ++r)
    if (!dead[static_cast<size_t>(r)]) order.push_back(r);
  const int m = static_cast<int>(order.size());
  if (m == 0) return rep;
  auto enters = [&](int r) {
    const double e = err[static_cast<size_t>(r)];
    return e < kInf ? e : rep.lastErrorUs;
  };
  // The id goes down the broadcast's binomial tree (core/split.cc initChild): a rank forwards it,
  // one message after another, once it has it and has itself entered the shrink. A parent's
  // position is below its children's, so one pass in order sees every parent first.
  std::vector<double> has(static_cast<size_t>(m), 0);
  double started = 0, joined = 0;
  algo::CollSpec tree;
  tree.nranks = m;
  tree.root = 0;
  for (int i = 0; i < m; ++i) {
    const double start = std::max(enters(order[static_cast<size_t>(i)]), has[static_cast<size_t>(i)]);
    tree.rank = i;
    int sent = 0;
    for (int child : algo::binomialNode(tree).children) has[static_cast<size_t>(child)] = start + ++sent * f.bootMsgUs;
    started = std::max(started, start);
    joined = std::max(joined, start + f.bootMsgUs);
  }
  rep.idUs = std::max(0.0, started - rep.lastErrorUs);
  rep.joinUs = joined + m * f.rootReplyUs - std::max(started, rep.lastErrorUs);
  const int rounds = std::bit_width(static_cast<unsigned>(m - 1));  // ceil(log2 m)
  for (int k = 0; k < rounds; ++k) {
    const double entries = std::min<double>(1 << k, m - (1 << k));
    rep.allGatherUs += f.bootMsgUs + entries * f.initEntryBytes / (f.bootGBs * 1e3);
  }
  rep.barrierUs = rounds * f.bootMsgUs;
  return rep;
}

}  // namespace atl::sim
