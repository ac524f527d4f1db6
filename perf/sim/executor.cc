#include "perf/sim/executor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <unordered_map>

#include "perf/sim/max_min.h"

namespace atl::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Microseconds to move `bytes` at `gbs` GB/s (0 GB/s: the cost is not modelled).
double usFor(double bytes, double gbs) { return gbs > 0 ? bytes / (gbs * 1e3) : 0; }

struct Prog {
  int rank = 0;
  const CompressedProgram* p = nullptr;
  size_t run = 0;
  uint32_t rep = 0;
  bool sendDone = true, recvDone = true;
};

// One direction of one channel between two ranks: a byte stream, so flows arrive in order.
struct Conn {
  uint64_t recvPosted = 0, arrived = 0;
  int waiter = -1;  // the program waiting for arrival number waitIndex
  uint64_t waitIndex = 0;
};

struct Flow {
  int prog = 0;
  uint64_t conn = 0;
  double remaining = 0;  // bytes, as of `since`
  double since = 0;      // when remaining was last brought up to date
  double rate = 0;       // bytes per microsecond
  double latUs = 0;
  uint32_t version = 0;  // bumped at each rate change: older finish entries are stale
  std::vector<uint32_t> path;
};

struct Finish {
  double t;
  uint32_t flow, version;
  bool operator>(const Finish& o) const { return t > o.t; }
};

enum class Ev { StepStart, LocalDone, Arrive, Reduced };
struct Timer {
  double t;
  Ev ev;
  int prog;
  uint64_t conn;
  bool operator>(const Timer& o) const { return t > o.t; }
};

class Sim {
 public:
  Sim(const Network& net, const std::vector<std::vector<CompressedProgram>>& programs, const CostParams& cost)
      : net_(net), cost_(cost), n_(static_cast<uint64_t>(programs.size())) {
    for (size_t r = 0; r < programs.size(); ++r)
      for (const CompressedProgram& p : programs[r])
        if (!p.runs.empty()) progs_.push_back(Prog{static_cast<int>(r), &p});
  }

  SimResult run() {
    linkFlows_.resize(net_.capacity().size());
    for (size_t i = 0; i < progs_.size(); ++i) at(cost_.stepOverheadUs, Ev::StepStart, static_cast<int>(i));
    while (true) {
      if (!dirty_.empty()) solve();
      while (!finishes_.empty() && finishes_.top().version != flows_[finishes_.top().flow].version) finishes_.pop();
      const double tFlow = finishes_.empty() ? kInf : finishes_.top().t;
      const double tTimer = timers_.empty() ? kInf : timers_.top().t;
      const double t = std::min(tFlow, tTimer);
      if (t == kInf) break;
      now_ = t;
      // Every flow due now ends (rates only change at events, so its finish time is exact).
      while (!finishes_.empty() && finishes_.top().t <= now_) {
        const Finish f = finishes_.top();
        finishes_.pop();
        if (f.version != flows_[f.flow].version) continue;
        endFlow(f.flow);
      }
      while (!timers_.empty() && timers_.top().t <= now_) {
        const Timer tm = timers_.top();
        timers_.pop();
        handle(tm);
      }
    }
    result_.timeUs = now_;
    result_.complete = result_.programsDone == progs_.size();
    return result_;
  }

  void at(double t, Ev ev, int prog, uint64_t conn = 0) { timers_.push(Timer{t, ev, prog, conn}); }

  uint64_t connKey(int src, int dst, int channel) const {
    return (static_cast<uint64_t>(src) * n_ + static_cast<uint64_t>(dst)) * 64 + static_cast<uint64_t>(channel & 63);
  }

  // Flows whose links changed (a flow came or went), and every flow sharing a link with them,
  // transitively: only that component's rates can move, so only it is solved again.
  void solve() {
    ++result_.solves;
    std::vector<uint32_t> links, comp;
    for (uint32_t l : dirty_)
      if (!linkSeen_[l]) linkSeen_[l] = 1, links.push_back(l);
    dirty_.clear();
    for (size_t i = 0; i < links.size(); ++i)
      for (uint32_t f : linkFlows_[links[i]])
        if (!flowSeen_[f]) {
          flowSeen_[f] = 1;
          comp.push_back(f);
          for (uint32_t l : flows_[f].path)
            if (!linkSeen_[l]) linkSeen_[l] = 1, links.push_back(l);
        }
    // The component's links, renumbered for the solver.
    std::vector<double> cap;
    for (size_t i = 0; i < links.size(); ++i) {
      local_[links[i]] = static_cast<uint32_t>(i);
      cap.push_back(net_.capacity()[links[i]]);
    }
    FlowPaths fp;
    std::vector<uint32_t> path;
    for (uint32_t f : comp) {
      path.clear();
      for (uint32_t l : flows_[f].path) path.push_back(local_[l]);
      fp.add(path);
    }
    const std::vector<double> rates = maxMinRates(cap, fp);
    for (size_t i = 0; i < comp.size(); ++i) {
      Flow& fl = flows_[comp[i]];
      fl.remaining -= fl.rate * (now_ - fl.since);
      fl.since = now_;
      fl.rate = rates[i] * 1e3;  // GB/s -> bytes/us
      finishes_.push(Finish{now_ + std::max(0.0, fl.remaining) / fl.rate, comp[i], ++fl.version});
      flowSeen_[comp[i]] = 0;
    }
    for (uint32_t l : links) linkSeen_[l] = 0;
  }

  uint32_t addFlow(Flow f) {
    uint32_t id;
    if (!freeFlows_.empty()) {
      id = freeFlows_.back();
      freeFlows_.pop_back();
      f.version = flows_[id].version + 1;
      flows_[id] = std::move(f);
    } else {
      id = static_cast<uint32_t>(flows_.size());
      flows_.push_back(std::move(f));
      flowSeen_.push_back(0);
    }
    Flow& fl = flows_[id];
    fl.since = now_;
    fl.rate = 0;
    for (uint32_t l : fl.path) {
      linkFlows_[l].push_back(id);
      dirty_.push_back(l);
    }
    if (linkSeen_.size() < linkFlows_.size()) linkSeen_.resize(linkFlows_.size(), 0), local_.resize(linkFlows_.size(), 0);
    return id;
  }

  void endFlow(uint32_t id) {
    Flow& fl = flows_[id];
    ++fl.version;
    for (uint32_t l : fl.path) {
      std::vector<uint32_t>& on = linkFlows_[l];
      on.erase(std::find(on.begin(), on.end(), id));
      dirty_.push_back(l);
    }
    freeFlows_.push_back(id);
    at(now_ + fl.latUs, Ev::Arrive, fl.prog, fl.conn);
    progs_[static_cast<size_t>(fl.prog)].sendDone = true;
    maybeNext(fl.prog);
  }

  void handle(const Timer& tm) {
    switch (tm.ev) {
      case Ev::StepStart: startStep(tm.prog); break;
      case Ev::LocalDone:
        progs_[static_cast<size_t>(tm.prog)].sendDone = true;
        maybeNext(tm.prog);
        break;
      case Ev::Reduced:
        progs_[static_cast<size_t>(tm.prog)].recvDone = true;
        maybeNext(tm.prog);
        break;
      case Ev::Arrive: {
        Conn& c = conns_[tm.conn];
        ++c.arrived;
        if (c.waiter >= 0 && c.arrived > c.waitIndex) {
          const int w = c.waiter;
          c.waiter = -1;
          received(w);
          maybeNext(w);
        }
        break;
      }
    }
  }

  void startStep(int id) {
    Prog& pg = progs_[static_cast<size_t>(id)];
    const StepShape& s = pg.p->runs[pg.run].shape;
    ++result_.steps;
    const int ch = pg.p->channel;
    if (s.kind != algo::StepKind::Transfer) {
      pg.sendDone = false;
      const double bytes = static_cast<double>(s.sendCount * cost_.elemBytes);
      at(now_ + usFor(bytes, s.kind == algo::StepKind::LocalReduce ? cost_.reduceGBs : cost_.copyGBs), Ev::LocalDone, id);
      return;
    }
    if (s.sendPeer >= 0 && s.sendCount > 0) {
      Flow f;
      f.prog = id;
      f.conn = connKey(pg.rank, s.sendPeer, ch);
      f.remaining = static_cast<double>(s.sendCount * cost_.elemBytes);
      f.latUs = net_.latencyUs(pg.rank, s.sendPeer);
      net_.route(pg.rank, s.sendPeer, &f.path);
      ++result_.flows;
      if (f.path.empty()) {
        at(now_ + f.latUs, Ev::Arrive, id, f.conn);  // nothing to share: arrives at once
      } else {
        pg.sendDone = false;
        addFlow(std::move(f));
      }
    }
    if (s.recvPeer >= 0 && s.recvCount > 0) {
      pg.recvDone = false;
      Conn& c = conns_[connKey(s.recvPeer, pg.rank, ch)];
      const uint64_t index = c.recvPosted++;
      if (c.arrived > index) {
        received(id);
      } else {
        c.waiter = id;
        c.waitIndex = index;
      }
    }
    maybeNext(id);
  }

  // The step's receive has arrived: done now, or after its reduction. Does not advance the program
  // (the caller does, once per event, so a step is never left twice).
  void received(int id) {
    Prog& pg = progs_[static_cast<size_t>(id)];
    const StepShape& s = pg.p->runs[pg.run].shape;
    const double reduceUs = s.reduce ? usFor(static_cast<double>(s.recvCount * cost_.elemBytes), cost_.reduceGBs) : 0;
    if (reduceUs > 0)
      at(now_ + reduceUs, Ev::Reduced, id);
    else
      pg.recvDone = true;
  }

  void maybeNext(int id) {
    Prog& pg = progs_[static_cast<size_t>(id)];
    if (!pg.sendDone || !pg.recvDone) return;
    if (++pg.rep == pg.p->runs[pg.run].repeat) {
      pg.rep = 0;
      if (++pg.run == pg.p->runs.size()) {
        ++result_.programsDone;
        return;
      }
    }
    at(now_ + cost_.stepOverheadUs, Ev::StepStart, id);
  }

  const Network& net_;
  const CostParams cost_;
  const uint64_t n_;
  std::vector<Prog> progs_;
  std::unordered_map<uint64_t, Conn> conns_;
  std::vector<Flow> flows_;  // slots; ended ones are reused (freeFlows_)
  std::vector<uint32_t> freeFlows_;
  std::vector<std::vector<uint32_t>> linkFlows_;  // live flows on each link
  std::vector<uint32_t> dirty_;                   // links whose flows changed since the last solve
  std::vector<uint8_t> linkSeen_, flowSeen_;      // scratch marks for solve()
  std::vector<uint32_t> local_;                   // link -> index within the component solved
  std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finishes_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  double now_ = 0;
  SimResult result_;
};

}  // namespace

SimResult simulate(const Network& net, const std::vector<std::vector<CompressedProgram>>& programs, const CostParams& cost) {
  return Sim(net, programs, cost).run();
}

}  // namespace atl::sim
