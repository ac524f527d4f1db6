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
  int64_t flow = -1;  // the step's send while it is a live flow
  bool done() const { return run == p->runs.size(); }
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

enum class Ev { StepStart, LocalDone, Arrive, Reduced, Fail };
struct Timer {
  double t;
  Ev ev;
  int prog;
  uint64_t conn;
  bool operator>(const Timer& o) const { return t > o.t; }
};

// Equal up to floating-point noise: times and byte counts come out of different sums each period.
bool close(double a, double b, double scale) { return std::fabs(a - b) <= 1e-9 * scale + 1e-6; }

// The state fast-forward compares, relative to the snapshot's time.
struct Snapshot {
  struct P {
    size_t run;
    uint32_t rep;
    bool sendDone, recvDone;
    double left, rate;  // the live flow's bytes left and rate; left < 0: none
  };
  struct T {
    int prog;
    Ev ev;
    uint64_t conn;
    double ahead;
    bool operator<(const T& o) const {
      return prog != o.prog ? prog < o.prog : ev != o.ev ? ev < o.ev : conn != o.conn ? conn < o.conn : ahead < o.ahead;
    }
  };
  struct C {
    uint64_t key, posted, arrived;
    bool waiting;
  };
  double t = 0;
  uint64_t steps = 0, flows = 0, programsDone = 0;
  std::vector<P> progs;
  std::vector<T> timers;
  std::vector<C> conns;  // by key
};

class Sim {
 public:
  Sim(const Network& net, const std::vector<std::vector<CompressedProgram>>& programs, const CostParams& cost)
      : net_(net), cost_(cost), n_(static_cast<uint64_t>(programs.size())) {
    for (size_t r = 0; r < programs.size(); ++r)
      for (const CompressedProgram& p : programs[r])
        if (!p.runs.empty()) progs_.push_back(Prog{static_cast<int>(r), &p});
    failing_ = !cost.failRanks.empty();
    if (failing_) {
      dead_.assign(programs.size(), 0);
      lastMove_.assign(programs.size(), 0);
    }
  }

  static constexpr size_t kSnapshots = 16;  // periods of up to this many reference steps are found

  SimResult run() {
    linkFlows_.resize(net_.capacity().size());
    for (size_t i = 0; i < progs_.size(); ++i) at(cost_.stepOverheadUs, Ev::StepStart, static_cast<int>(i));
    if (failing_) at(cost_.failAtUs, Ev::Fail, -1);
    while (true) {
      if (!dirty_.empty()) solve();
      if (snapshotDue_) {
        snapshotDue_ = false;
        if (cost_.fastForward && !failing_) fastForward();
      }
      while (!finishes_.empty() && finishes_.top().version != flows_[finishes_.top().flow].version) finishes_.pop();
      const double tFlow = finishes_.empty() ? kInf : finishes_.top().t;
      const double tTimer = timers_.empty() ? kInf : timers_.front().t;
      const double t = std::min(tFlow, tTimer);
      if (t == kInf) break;
      if ((cost_.maxSimulatedSteps > 0 && result_.steps - result_.stepsSkipped > cost_.maxSimulatedSteps) ||
          (cost_.maxSolveWork > 0 && result_.solveWork > cost_.maxSolveWork)) {
        result_.aborted = true;
        break;
      }
      now_ = t;
      // Every flow due now ends (rates only change at events, so its finish time is exact).
      while (!finishes_.empty() && finishes_.top().t <= now_) {
        const Finish f = finishes_.top();
        finishes_.pop();
        if (f.version != flows_[f.flow].version) continue;
        endFlow(f.flow);
      }
      while (!timers_.empty() && timers_.front().t <= now_) {
        std::pop_heap(timers_.begin(), timers_.end(), std::greater<>());
        const Timer tm = timers_.back();
        timers_.pop_back();
        handle(tm);
      }
    }
    result_.timeUs = now_;
    result_.complete = result_.programsDone == progs_.size();
    if (failing_) reportStall();
    return result_;
  }

  void at(double t, Ev ev, int prog, uint64_t conn = 0) {
    timers_.push_back(Timer{t, ev, prog, conn});
    std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
  }

  Snapshot snapshot() const {
    Snapshot s;
    s.t = now_;
    s.steps = result_.steps;
    s.flows = result_.flows;
    s.programsDone = result_.programsDone;
    s.progs.reserve(progs_.size());
    for (const Prog& pg : progs_) {
      Snapshot::P p{pg.run, pg.rep, pg.sendDone, pg.recvDone, -1, 0};
      if (pg.flow >= 0) {
        const Flow& f = flows_[static_cast<size_t>(pg.flow)];
        p.left = f.remaining - f.rate * (now_ - f.since);
        p.rate = f.rate;
      }
      s.progs.push_back(p);
    }
    for (const Timer& tm : timers_) s.timers.push_back(Snapshot::T{tm.prog, tm.ev, tm.conn, tm.t - now_});
    std::sort(s.timers.begin(), s.timers.end());
    s.conns.reserve(conns_.size());
    for (const auto& [key, c] : conns_) s.conns.push_back(Snapshot::C{key, c.recvPosted, c.arrived, c.waiter >= 0});
    std::sort(s.conns.begin(), s.conns.end(), [](const Snapshot::C& a, const Snapshot::C& b) { return a.key < b.key; });
    return s;
  }

  // How many whole periods from `a` to `b` (the current state) can be skipped; 0 when the two
  // states differ or some program would leave its run.
  uint64_t periodsToSkip(const Snapshot& a, const Snapshot& b) const {
    const double period = b.t - a.t;
    if (period <= 0 || a.programsDone != b.programsDone || a.progs.size() != b.progs.size() ||
        a.timers.size() != b.timers.size() || a.conns.size() != b.conns.size())
      return 0;
    uint64_t k = UINT64_MAX;
    for (size_t i = 0; i < a.progs.size(); ++i) {
      const Snapshot::P &x = a.progs[i], &y = b.progs[i];
      if (x.run != y.run || x.sendDone != y.sendDone || x.recvDone != y.recvDone || (x.left < 0) != (y.left < 0) ||
          y.rep < x.rep)
        return 0;
      if (x.left >= 0 && (!close(x.left, y.left, x.left) || !close(x.rate, y.rate, x.rate))) return 0;
      const uint32_t d = y.rep - x.rep;
      if (d == 0 || progs_[i].done()) continue;
      const uint32_t repeat = progs_[i].p->runs[y.run].repeat;
      k = std::min<uint64_t>(k, (repeat - 1 - y.rep) / d);
    }
    if (k == 0 || k == UINT64_MAX) return 0;
    for (size_t i = 0; i < a.timers.size(); ++i) {
      const Snapshot::T &x = a.timers[i], &y = b.timers[i];
      if (x.prog != y.prog || x.ev != y.ev || x.conn != y.conn || !close(x.ahead, y.ahead, period)) return 0;
    }
    for (size_t i = 0; i < a.conns.size(); ++i) {
      const Snapshot::C &x = a.conns[i], &y = b.conns[i];
      if (x.key != y.key || x.waiting != y.waiting || x.posted - x.arrived != y.posted - y.arrived) return 0;
    }
    return k;
  }

  // Called after the reference program started a step and every event of this instant ran.
  void fastForward() {
    Snapshot now = snapshot();
    for (const Snapshot& past : snapshots_) {
      const uint64_t k = periodsToSkip(past, now);
      if (k == 0) continue;
      jump(past, now, k);
      snapshots_.clear();
      return;
    }
    if (snapshots_.size() == kSnapshots) snapshots_.erase(snapshots_.begin());
    snapshots_.push_back(std::move(now));
  }

  // Everything moves k periods on: programs by their steps per period, times by k periods,
  // connections by their receives per period; flows keep their bytes left and rates.
  void jump(const Snapshot& a, const Snapshot& b, uint64_t k) {
    const double dt = static_cast<double>(k) * (b.t - a.t);
    for (size_t i = 0; i < progs_.size(); ++i) progs_[i].rep += static_cast<uint32_t>(k * (b.progs[i].rep - a.progs[i].rep));
    for (size_t i = 0; i < b.conns.size(); ++i) {
      Conn& c = conns_[b.conns[i].key];
      const uint64_t d = k * (b.conns[i].posted - a.conns[i].posted);
      c.recvPosted += d;
      c.arrived += d;
      c.waitIndex += d;
    }
    for (Timer& tm : timers_) tm.t += dt;  // a uniform shift keeps the heap a heap
    now_ += dt;
    for (size_t i = 0; i < progs_.size(); ++i) {
      if (progs_[i].flow < 0) continue;
      Flow& f = flows_[static_cast<size_t>(progs_[i].flow)];
      f.remaining = b.progs[i].left;
      f.since = now_;
    }
    rebuildFinishes();
    const uint64_t skipped = k * (b.steps - a.steps);
    result_.steps += skipped;
    result_.stepsSkipped += skipped;
    result_.flows += k * (b.flows - a.flows);
    ++result_.jumps;
  }

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
    result_.solveWork += comp.size();
    // Superseded finish entries wait in the heap until they surface; a giant component re-solved
    // at every flow's end would pile up n of them per solve, so the heap is rebuilt from the live
    // flows once they dominate it.
    if (finishes_.size() > 4 * (flows_.size() - freeFlows_.size()) + 1024) rebuildFinishes();
  }

  void rebuildFinishes() {
    finishes_ = {};
    for (const Prog& pg : progs_) {
      if (pg.flow < 0) continue;
      Flow& f = flows_[static_cast<size_t>(pg.flow)];
      finishes_.push(Finish{f.since + std::max(0.0, f.remaining) / f.rate, static_cast<uint32_t>(pg.flow), f.version});
    }
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

  // Takes the flow off its links; its slot is free.
  void detachFlow(uint32_t id) {
    Flow& fl = flows_[id];
    ++fl.version;
    for (uint32_t l : fl.path) {
      std::vector<uint32_t>& on = linkFlows_[l];
      on.erase(std::find(on.begin(), on.end(), id));
      dirty_.push_back(l);
    }
    freeFlows_.push_back(id);
    progs_[static_cast<size_t>(fl.prog)].flow = -1;
  }

  void endFlow(uint32_t id) {
    const int prog = flows_[id].prog;
    const uint64_t conn = flows_[id].conn;
    const double latUs = flows_[id].latUs;
    detachFlow(id);
    at(now_ + latUs, Ev::Arrive, prog, conn);
    progs_[static_cast<size_t>(prog)].sendDone = true;
    maybeNext(prog);
  }

  bool deadProg(int id) const { return failing_ && dead_[static_cast<size_t>(progs_[static_cast<size_t>(id)].rank)]; }

  // The failing ranks stop: no more steps, and what they were sending stops where it was.
  void fail() {
    for (int r : cost_.failRanks)
      if (r >= 0 && static_cast<size_t>(r) < dead_.size()) dead_[static_cast<size_t>(r)] = 1;
    for (size_t i = 0; i < progs_.size(); ++i)
      if (deadProg(static_cast<int>(i)) && progs_[i].flow >= 0) detachFlow(static_cast<uint32_t>(progs_[i].flow));
  }

  void moved(int id) {
    if (failing_) lastMove_[static_cast<size_t>(progs_[static_cast<size_t>(id)].rank)] = now_;
  }

  // Who is left waiting on whom once nothing can move.
  void reportStall() {
    const size_t n = dead_.size();
    result_.lastMoveUs = lastMove_;
    result_.finished.assign(n, 1);
    result_.waitingOn.assign(n, -1);
    for (const Prog& pg : progs_)
      if (!pg.done()) result_.finished[static_cast<size_t>(pg.rank)] = 0;
    for (const auto& [key, c] : conns_) {
      if (c.waiter < 0) continue;
      const int waiter = progs_[static_cast<size_t>(c.waiter)].rank;
      if (dead_[static_cast<size_t>(waiter)]) continue;
      if (result_.waitingOn[static_cast<size_t>(waiter)] < 0)
        result_.waitingOn[static_cast<size_t>(waiter)] = static_cast<int>(key / 64 / n_);
    }
  }

  void handle(const Timer& tm) {
    if (tm.ev == Ev::Fail) return fail();
    // A failed rank does nothing more; what it sent before still arrives (Arrive names the sender).
    if (tm.ev != Ev::Arrive && deadProg(tm.prog)) return;
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
      case Ev::Fail: break;
      case Ev::Arrive: {
        Conn& c = conns_[tm.conn];
        ++c.arrived;
        if (c.waiter >= 0 && c.arrived > c.waitIndex && !deadProg(c.waiter)) {
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
    const Run& run = pg.p->runs[pg.run];
    const StepShape& s = run.shape;
    ++result_.steps;
    moved(id);
    if (id == reference()) snapshotDue_ = true;
    const int ch = pg.p->channel;
    if (s.kind != algo::StepKind::Transfer) {
      pg.sendDone = false;
      const double bytes = run.sendMean() * static_cast<double>(cost_.elemBytes);
      at(now_ + usFor(bytes, s.kind == algo::StepKind::LocalReduce ? cost_.reduceGBs : cost_.copyGBs), Ev::LocalDone, id);
      return;
    }
    if (s.sendPeer >= 0 && s.sendCount > 0) {
      Flow f;
      f.prog = id;
      f.conn = connKey(pg.rank, s.sendPeer, ch);
      f.remaining = run.sendMean() * static_cast<double>(cost_.elemBytes);
      f.latUs = net_.latencyUs(pg.rank, s.sendPeer);
      net_.route(pg.rank, s.sendPeer, &f.path);
      ++result_.flows;
      if (f.path.empty()) {
        at(now_ + f.latUs, Ev::Arrive, id, f.conn);  // nothing to share: arrives at once
      } else {
        pg.sendDone = false;
        pg.flow = addFlow(std::move(f));
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
    const Run& run = pg.p->runs[pg.run];
    const double reduceUs =
        run.shape.reduce ? usFor(run.recvMean() * static_cast<double>(cost_.elemBytes), cost_.reduceGBs) : 0;
    if (reduceUs > 0)
      at(now_ + reduceUs, Ev::Reduced, id);
    else
      pg.recvDone = true;
  }

  // The program whose step starts trigger snapshots: the first one still running, so the
  // snapshots of one period all sit at the same phase of it.
  int reference() {
    while (ref_ < progs_.size() && progs_[ref_].done()) ++ref_, snapshots_.clear();
    return static_cast<int>(ref_);
  }

  void maybeNext(int id) {
    Prog& pg = progs_[static_cast<size_t>(id)];
    if (!pg.sendDone || !pg.recvDone) return;
    moved(id);
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
  std::vector<Timer> timers_;  // a min-heap (std::push_heap with greater), iterable for snapshots
  std::vector<Snapshot> snapshots_;
  size_t ref_ = 0;
  bool failing_ = false;
  std::vector<uint8_t> dead_;     // by rank, once failed
  std::vector<double> lastMove_;  // by rank
  bool snapshotDue_ = false;
  double now_ = 0;
  SimResult result_;
};

}  // namespace

SimResult simulate(const Network& net, const std::vector<std::vector<CompressedProgram>>& programs, const CostParams& cost) {
  return Sim(net, programs, cost).run();
}

}  // namespace atl::sim
