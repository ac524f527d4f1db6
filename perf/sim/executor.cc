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
  double remaining = 0;  // bytes
  double rate = 0;       // bytes per microsecond
  double latUs = 0;
  std::vector<uint32_t> path;
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
    for (size_t i = 0; i < progs_.size(); ++i) at(cost_.stepOverheadUs, Ev::StepStart, static_cast<int>(i));
    while (true) {
      if (changed_) solve();
      double tFlow = kInf;
      for (const Flow& f : flows_) tFlow = std::min(tFlow, now_ + f.remaining / f.rate);
      const double tTimer = timers_.empty() ? kInf : timers_.top().t;
      const double t = std::min(tFlow, tTimer);
      if (t == kInf) break;
      const double dt = t - now_;
      now_ = t;
      for (size_t i = 0; i < flows_.size();) {
        Flow& f = flows_[i];
        f.remaining -= f.rate * dt;
        // Finished: its time was this event's (rounding may leave a sliver).
        if (f.remaining <= f.rate * 1e-9 * std::max(1.0, now_) || f.remaining <= 0) {
          const Flow done = std::move(f);
          if (i + 1 != flows_.size()) f = std::move(flows_.back());
          flows_.pop_back();
          changed_ = true;
          at(now_ + done.latUs, Ev::Arrive, done.prog, done.conn);
          progs_[static_cast<size_t>(done.prog)].sendDone = true;
          maybeNext(done.prog);
        } else {
          ++i;
        }
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

 private:
  void at(double t, Ev ev, int prog, uint64_t conn = 0) { timers_.push(Timer{t, ev, prog, conn}); }

  uint64_t connKey(int src, int dst, int channel) const {
    return (static_cast<uint64_t>(src) * n_ + static_cast<uint64_t>(dst)) * 64 + static_cast<uint64_t>(channel & 63);
  }

  void solve() {
    changed_ = false;
    if (flows_.empty()) return;
    ++result_.solves;
    FlowPaths fp;
    for (const Flow& f : flows_) fp.add(f.path);
    const std::vector<double> rates = maxMinRates(net_.capacity(), fp);
    for (size_t i = 0; i < flows_.size(); ++i) flows_[i].rate = rates[i] * 1e3;  // GB/s -> bytes/us
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
        flows_.push_back(std::move(f));
        changed_ = true;
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
  std::vector<Flow> flows_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  double now_ = 0;
  bool changed_ = false;
  SimResult result_;
};

}  // namespace

SimResult simulate(const Network& net, const std::vector<std::vector<CompressedProgram>>& programs, const CostParams& cost) {
  return Sim(net, programs, cost).run();
}

}  // namespace atl::sim
