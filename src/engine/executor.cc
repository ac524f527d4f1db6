#include "engine/executor.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <vector>

#include "base/debug.h"
#include "base/per_thread.h"

namespace atl::engine {

uint64_t nextPlanSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

namespace {

// Every message is padded to a multiple of 8 bytes on the wire so that elements never straddle the
// end of a transport ring (transports/transport.h, stream contract).
constexpr size_t kWireAlign = 8;
constexpr std::byte kZeros[kWireAlign] = {};
size_t wireSize(size_t bytes) { return (bytes + kWireAlign - 1) / kWireAlign * kWireAlign; }
constexpr size_t kSliceBytes = 128 << 10;
// Copies read in place (single copy, transports/shm/shm_direct.h) go in larger pieces: each is a
// system call between processes, and nothing is staged that must stay in cache.
constexpr size_t kDirectCopyBytes = 1 << 20;

using Offer = transport::Connection::Offer;

struct ProgramState {
  const algo::Program* program = nullptr;
  size_t step = 0;
  size_t sent = 0;  // wire bytes of the current step already handed to the transport
  size_t recvd = 0;
  transport::Connection* sendConn = nullptr;
  transport::Connection* recvConn = nullptr;
  Offer sendAs = Offer::Wait;  // how the send half goes: undecided (Wait), offered or streamed
  Offer recvAs = Offer::Wait;  // how the receive half comes
  bool done() const { return step >= program->steps.size(); }
};

class PlanRun {
 public:
  /// Binds a plan and starts it; the object is reused for plan after plan (its state vector keeps
  /// its capacity, so a steady stream of small collectives allocates nothing here).
  Status start(Plan& plan, const ConnTable& conns) {
    finished_ = false;
    failedPeer_ = -1;
    if (plan.serial == startedSerial_ && &conns == conns_ && conns.generation() == startedAt_ && !plan.staging) {
      // The plan this slot started last, over the same links: its programs start where they
      // started then (a repeated small call spends more binding than moving its bytes).
      // The scratch slot still holds what startBound put there: only startBound writes it.
      plan_ = &plan;
      if (plan.prologue) plan.prologue(plan);
      std::copy(started_.begin(), started_.end(), states_.begin());
      return Status::Ok();
    }
    plan_ = &plan;
    conns_ = &conns;
    startedSerial_ = 0;
    ATOLL_CHECK(startBound());
    started_.assign(states_.begin(), states_.end());
    startedSerial_ = plan.serial;
    startedAt_ = conns.generation();
    return Status::Ok();
  }

 private:
  Status startBound() {
    if (plan_->staging) ATOLL_CHECK(plan_->staging->in());
    if (plan_->prologue) plan_->prologue(*plan_);
    size_t scratchBytes = plan_->schedule.scratchElems * plan_->elemSize;
    if (scratchBytes > plan_->scratchCapacity) {  // kept across calls when the plan is cached
      plan_->scratchCapacity = 0;
      plan_->ownedScratch.reset(new (std::nothrow) std::byte[scratchBytes]);
      if (!plan_->ownedScratch) return ATOLL_ERROR(ncclSystemError, "cannot allocate %zu bytes of scratch for %s", scratchBytes, plan_->what.c_str());
      plan_->scratchCapacity = scratchBytes;
    }
    if (plan_->buffers.size() <= algo::kScratchBuf) plan_->buffers.resize(algo::kScratchBuf + 1, nullptr);
    plan_->buffers[algo::kScratchBuf] = plan_->ownedScratch.get();
    // Reset in place rather than cleared and grown again: a repeated small call pays for every
    // element constructed.
    states_.resize(plan_->schedule.programs.size());
    for (size_t i = 0; i < states_.size(); ++i) {
      states_[i] = ProgramState{.program = &plan_->schedule.programs[i]};
      ATOLL_CHECK(bindStep(states_[i]));
    }
    return Status::Ok();
  }

 public:
  /// One pass over all programs; sets `moved` when any byte moved.
  Status progress(bool* moved) {
    bool allDone = true;
    for (ProgramState& ps : states_) {
      while (!ps.done()) {
        bool stepDone = false;
        ATOLL_CHECK(advance(ps, moved, &stepDone));
        if (!stepDone) break;
        ++ps.step;
        ps.sent = ps.recvd = 0;
        ps.sendAs = ps.recvAs = Offer::Wait;
        ATOLL_CHECK(bindStep(ps));
      }
      allDone = allDone && ps.done();
    }
    if (allDone && !finished_) {
      finished_ = true;
      if (plan_->epilogue) plan_->epilogue(*plan_);
      if (plan_->staging) ATOLL_CHECK(plan_->staging->out());
    }
    return Status::Ok();
  }

  bool finished() const { return finished_; }

  /// The peer whose link failed in the last progress() error (-1: not a link error).
  int failedPeer() const { return failedPeer_; }

  /// The peer the first unfinished program waits for (a timeout blames it), or -1.
  int waitingPeer() const {
    for (const ProgramState& ps : states_) {
      if (ps.done()) continue;
      const algo::Step& st = ps.program->steps[ps.step];
      if (st.recvPeer >= 0 && ps.recvd < wireSize(st.recvCount * plan_->elemSize)) return st.recvPeer;
      return st.sendPeer;
    }
    return -1;
  }

  /// Where the plan is stuck, for timeout messages.
  std::string waitingOn() const {
    for (const ProgramState& ps : states_) {
      if (ps.done()) continue;
      const algo::Step& st = ps.program->steps[ps.step];
      char buf[160];
      snprintf(buf, sizeof(buf), "step %zu/%zu of channel %d (send to %d: %zu/%zu B, recv from %d: %zu/%zu B)", ps.step,
               ps.program->steps.size(), ps.program->channel, st.sendPeer, ps.sent, wireSize(st.sendCount * plan_->elemSize),
               st.recvPeer, ps.recvd, wireSize(st.recvCount * plan_->elemSize));
      return buf;
    }
    return "nothing";
  }

 private:
  std::byte* at(const algo::Ref& r) const { return plan_->buffers[r.buf] + r.offset * plan_->elemSize; }

  Status bindStep(ProgramState& ps) {
    if (ps.done()) return Status::Ok();
    const algo::Step& st = ps.program->steps[ps.step];
    ps.sendConn = ps.recvConn = nullptr;
    if (st.kind != algo::StepKind::Transfer) return Status::Ok();
    if (st.sendPeer >= 0 && !(ps.sendConn = lookup(ps.program->channel, st.sendPeer)))
      return ATOLL_ERROR(ncclInternalError, "%s: no connection to rank %d on channel %d", plan_->what.c_str(), st.sendPeer, ps.program->channel);
    if (st.recvPeer >= 0 && !(ps.recvConn = lookup(ps.program->channel, st.recvPeer)))
      return ATOLL_ERROR(ncclInternalError, "%s: no connection to rank %d on channel %d", plan_->what.c_str(), st.recvPeer, ps.program->channel);
    return Status::Ok();
  }

  Status advance(ProgramState& ps, bool* moved, bool* stepDone) {
    const algo::Step& st = ps.program->steps[ps.step];
    const size_t esz = plan_->elemSize;
    if (st.kind == algo::StepKind::LocalCopy) {
      std::byte* dst = at(st.dst);
      const std::byte* src = at(st.src);
      if (dst != src) kernels::copy(dst, src, st.sendCount * esz);
      *moved = true;
      *stepDone = true;
      return Status::Ok();
    }
    if (st.kind == algo::StepKind::LocalReduce) {
      kernels::reduce(plan_->dtype, plan_->op, at(st.dst), at(st.src), at(st.acc), st.sendCount);
      *moved = true;
      *stepDone = true;
      return Status::Ok();
    }
    // Alternate bounded slices of sending and receiving: the peer starts consuming a slice while
    // the next is written (a whole-ring memcpy would serialise writer and reader), and the slice
    // being reduced is still in cache from the peer's write.
    const size_t sendBytes = st.sendCount * esz, sendWire = wireSize(sendBytes);
    const size_t recvBytes = st.recvCount * esz, recvWire = wireSize(recvBytes);
    const std::byte* src = ps.sendConn ? at(st.src) : nullptr;
    std::byte* dst = ps.recvConn ? at(st.dst) : nullptr;
    if (ps.sendConn && ps.sendAs == Offer::Wait) {
      if (sendBytes < ps.sendConn->offerFloor()) {
        ps.sendAs = Offer::Stream;
      } else {
        ATOLL_ASSIGN_OR_RETURN(ps.sendAs, onLink(st.sendPeer, ps.sendConn->offer(src, sendBytes)));
        *moved = *moved || ps.sendAs == Offer::Offered;
      }
    }
    if (ps.sendAs == Offer::Offered && ps.sent < sendWire) {
      // The buffer is the peer's to read until it says so; the step holds until then.
      ATOLL_ASSIGN_OR_RETURN(bool taken, onLink(st.sendPeer, ps.sendConn->offerTaken()));
      if (taken) ps.sent = sendWire, *moved = true;
    }
    if (ps.recvConn && ps.recvAs == Offer::Wait) {
      if (recvBytes < ps.recvConn->offerFloor()) {
        ps.recvAs = Offer::Stream;
      } else {
        ATOLL_ASSIGN_OR_RETURN(ps.recvAs, onLink(st.recvPeer, ps.recvConn->incoming(recvBytes)));
      }
    }
    if (ps.recvAs == Offer::Offered && ps.recvd < recvWire) ATOLL_CHECK(receiveOffered(ps, st, dst, moved));
    for (bool progressed = true; progressed;) {
      progressed = false;
      if (ps.sendConn && ps.sendAs == Offer::Stream && ps.sent < sendWire) {
        const void* from = ps.sent < sendBytes ? static_cast<const void*>(src + ps.sent) : kZeros;
        size_t len = ps.sent < sendBytes ? std::min(sendBytes - ps.sent, kSliceBytes) : sendWire - ps.sent;
        ATOLL_ASSIGN_OR_RETURN(size_t n, onLink(st.sendPeer, ps.sendConn->send(from, len)));
        ps.sent += n;
        progressed = progressed || n > 0;
      }
      if (ps.recvAs != Offer::Stream) {
      } else if (ps.recvConn && ps.recvd < recvBytes && !st.reduce) {
        // Plain copies land straight in the destination (one copy fewer on sockets).
        const size_t len = std::min(recvBytes - ps.recvd, kSliceBytes);
        ATOLL_ASSIGN_OR_RETURN(size_t n, onLink(st.recvPeer, ps.recvConn->receiveInto(dst + ps.recvd, len)));
        ps.recvd += n;
        progressed = progressed || n > 0;
      } else if (ps.recvConn && ps.recvd < recvWire) {
        ATOLL_ASSIGN_OR_RETURN(std::span<const std::byte> view, onLink(st.recvPeer, ps.recvConn->peek()));
        size_t take = 0;
        if (view.empty()) {
        } else if (ps.recvd < recvBytes) {
          take = std::min({view.size(), recvBytes - ps.recvd, kSliceBytes});
          take -= take % esz;  // a partial element: its rest is still in flight
          if (take > 0) {
            if (st.reduce)
              kernels::reduce(plan_->dtype, plan_->op, dst + ps.recvd, at(st.acc) + ps.recvd, view.data(), take / esz);
            else
              kernels::copy(dst + ps.recvd, view.data(), take);
          }
        } else {
          take = std::min(view.size(), recvWire - ps.recvd);
        }
        if (take > 0) {
          ps.recvConn->consume(take);
          ps.recvd += take;
          progressed = true;
        }
      }
      *moved = *moved || progressed;
    }
    *stepDone = (!ps.sendConn || ps.sent == wireSize(st.sendCount * esz)) &&
                (!ps.recvConn || ps.recvd == wireSize(st.recvCount * esz));
    return Status::Ok();
  }

  /// Receives an offered message (single copy): copies land in place, reductions read the peer's
  /// buffer slice by slice. Done when the whole message is in; then the sender may reuse it. At
  /// most kDirectCopyBytes per call, so the other programs (and this step's send) keep moving.
  Status receiveOffered(ProgramState& ps, const algo::Step& st, std::byte* dst, bool* moved) {
    const size_t esz = plan_->elemSize, bytes = st.recvCount * esz;
    for (const size_t stop = std::min(bytes, ps.recvd + kDirectCopyBytes); ps.recvd < stop;) {
      size_t n = 0;
      if (!st.reduce) {
        ATOLL_ASSIGN_OR_RETURN(n, onLink(st.recvPeer, ps.recvConn->readOffered(dst + ps.recvd, ps.recvd, stop - ps.recvd)));
      } else {
        ATOLL_ASSIGN_OR_RETURN(std::span<const std::byte> view,
                               onLink(st.recvPeer, ps.recvConn->viewOffered(ps.recvd, std::min(stop - ps.recvd, kSliceBytes))));
        n = view.size() - view.size() % esz;
        if (n > 0) kernels::reduce(plan_->dtype, plan_->op, dst + ps.recvd, at(st.acc) + ps.recvd, view.data(), n / esz);
      }
      if (n == 0) return Status::Ok();  // the descriptor is still in flight
      ps.recvd += n;
      *moved = true;
    }
    if (ps.recvd < bytes) return Status::Ok();
    ATOLL_CHECK(onLink(st.recvPeer, ps.recvConn->finishOffered()));
    ps.recvd = wireSize(bytes);
    *moved = true;
    return Status::Ok();
  }

  /// The link to `peer` on `channel`. A hash lookup costs as much as a small message's step, and
  /// a thread runs the same few links call after call, so the last few answers are remembered
  /// with the table's generation (unique to one table and its content, connections.h).
  transport::Connection* lookup(int channel, int peer) {
    LinkMemo& m = links_[static_cast<unsigned>(peer * 3 + channel) % links_.size()];
    const uint64_t generation = conns_->generation();
    if (m.generation != generation || m.channel != channel || m.peer != peer)
      m = {generation, channel, peer, conns_->get(channel, peer)};
    return m.conn;
  }

  /// Passes a link call's result through, remembering the peer when it failed.
  template <class T>
  Result<T> onLink(int peer, Result<T> r) {
    if (!r.ok()) failedPeer_ = peer;
    return r;
  }
  Status onLink(int peer, Status s) {
    if (!s.ok()) failedPeer_ = peer;
    return s;
  }

  Plan* plan_ = nullptr;
  const ConnTable* conns_ = nullptr;
  std::vector<ProgramState> states_;
  // The states of the plan started last as they were at its start, its serial (0: none) and the
  // links' generation then.
  std::vector<ProgramState> started_;
  uint64_t startedSerial_ = 0;
  uint64_t startedAt_ = 0;
  struct LinkMemo {
    uint64_t generation = 0;  // 0: empty (generations start at 1)
    int channel = -1, peer = -1;
    transport::Connection* conn = nullptr;
  };
  std::array<LinkMemo, 8> links_{};
  bool finished_ = false;
  int failedPeer_ = -1;
};

/// The wait between polls that moved nothing. Spin a little (latency), then yield so oversubscribed
/// hosts (8 ranks on 2 cores) still run the peer we wait for, and check the deadline only
/// occasionally (clock reads cost). The clock starts when spinning stops: a latency-bound loop goes
/// idle at every hop, and a clock read there would cost as much as the hop.
class IdleWait {
 public:
  explicit IdleWait(const ExecOptions& options)
      : spin_(static_cast<uint64_t>(std::max(options.spinCount, 1))), timeoutMs_(options.timeoutMs) {}
  void moved() { idle_ = 0; }
  /// After a poll that moved nothing; true when the deadline has passed.
  bool wait() {
    ++idle_;
    if (idle_ < spin_) return false;
    if (idle_ == spin_) lastProgress_ = Clock::now();
    if (idle_ < spin_ * 64) sched_yield();
    else usleep(50);
    return (idle_ & 63) == 0 && timeoutMs_ > 0 && Clock::now() - lastProgress_ > std::chrono::milliseconds(timeoutMs_);
  }
  int64_t timeoutMs() const { return timeoutMs_; }

 private:
  uint64_t idle_ = 0;
  const uint64_t spin_;
  const int64_t timeoutMs_;
  Clock::time_point lastProgress_{};  // set when spinning stops: read only after that
};

Status stalled(const CommQueue& q, const PlanRun& run, int64_t timeoutMs) {
  return ATOLL_ERROR(ncclSystemError, "%s made no progress for %lld ms, waiting at %s", q.current().what.c_str(),
                     static_cast<long long>(timeoutMs), run.waitingOn().c_str());
}

Status failQueue(CommQueue& q, Status s, int peer, bool timedOut) {
  q.result = s;
  q.failedPeer = peer;
  q.timedOut = timedOut;
  return s;
}

/// One queue, the common case (every call outside a group, and ranks as processes): the loop of
/// execute() without the bookkeeping that several queues need. A small repeated call spends
/// more in that bookkeeping than in moving its bytes.
Status executeOne(CommQueue& q, PlanRun& run, const ExecOptions& options) {
  log::setThreadRank(q.rank);
  for (; q.pending(); ++q.next) {
    if (Status s = run.start(q.current(), *q.conns); !s.ok()) return failQueue(q, s, run.failedPeer(), false);
    IdleWait idle(options);
    for (;;) {
      bool moved = false;
      if (Status s = run.progress(&moved); !s.ok()) return failQueue(q, s, run.failedPeer(), false);
      if (run.finished()) break;
      if (aborted(q.abort))
        return failQueue(q, ATOLL_ERROR(ncclSystemError, "%s: communicator aborted", q.current().what.c_str()), -1, false);
      if (moved) {
        idle.moved();
      } else if (idle.wait()) {
        return failQueue(q, stalled(q, run, idle.timeoutMs()), run.waitingPeer(), true);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status execute(std::span<CommQueue> queues, const ExecOptions& options) {
  // One run slot per queue, kept by the thread across calls (see PlanRun::start).
  std::vector<PlanRun>& slots = perThread<std::vector<PlanRun>>();
  if (slots.size() < queues.size()) slots.resize(queues.size());
  if (queues.size() == 1) return executeOne(queues[0], slots[0], options);
  std::vector<PlanRun*> running(queues.size(), nullptr);
  auto startNext = [&](size_t q) -> Status {
    CommQueue& cq = queues[q];
    running[q] = nullptr;
    while (cq.pending()) {
      PlanRun& run = slots[q];
      ATOLL_CHECK(run.start(cq.current(), *cq.conns));
      bool moved = false;
      ATOLL_CHECK(run.progress(&moved));
      if (!run.finished()) {
        running[q] = &run;
        return Status::Ok();
      }
      ++cq.next;
    }
    return Status::Ok();
  };
  // Every queue still holding plans stops with the error: their peers are mid-stream too.
  auto failAll = [&](size_t q, Status s, int peer = -1, bool timedOut = false) {
    (void)failQueue(queues[q], s, peer, timedOut);
    for (CommQueue& other : queues)
      if (other.pending() && other.result.ok()) other.result = s;
    return s;
  };
  for (size_t q = 0; q < queues.size(); ++q)
    if (Status s = startNext(q); !s.ok()) return failAll(q, s, slots[q].failedPeer());

  IdleWait idle(options);
  for (;;) {
    bool anyActive = false, moved = false;
    for (size_t q = 0; q < queues.size(); ++q) {
      if (!running[q]) continue;
      anyActive = true;
      log::setThreadRank(queues[q].rank);
      if (aborted(queues[q].abort))
        return failAll(q, ATOLL_ERROR(ncclSystemError, "%s: communicator aborted", queues[q].current().what.c_str()));
      if (Status s = running[q]->progress(&moved); !s.ok()) return failAll(q, s, running[q]->failedPeer());
      if (running[q]->finished()) {
        ++queues[q].next;
        if (Status s = startNext(q); !s.ok()) return failAll(q, s, slots[q].failedPeer());
      }
    }
    if (!anyActive) return Status::Ok();
    if (moved) {
      idle.moved();
    } else if (idle.wait()) {
      for (size_t q = 0; q < queues.size(); ++q)
        if (running[q]) return failAll(q, stalled(queues[q], *running[q], idle.timeoutMs()), running[q]->waitingPeer(), true);
    }
  }
}

}  // namespace atl::engine
