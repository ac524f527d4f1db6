#include "algorithms/verify.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace atl::algo {
namespace {

struct Value {
  uint64_t hash = 0;
  uint32_t count = 0;  // contributions; kUnset when never written
  // The shape of the combination, commutative but not associative like float reduction: ranks
  // whose trees differ would produce different bits.
  uint64_t tree = 0;
  bool operator==(const Value& o) const { return hash == o.hash && count == o.count; }
};
constexpr uint32_t kUnset = 0xffffffffu;

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
Value combine(const Value& a, const Value& b) {
  const uint64_t lo = std::min(a.tree, b.tree), hi = std::max(a.tree, b.tree);
  return Value{a.hash + b.hash, a.count + b.count, mix(lo * 0x9e3779b97f4a7c15ull ^ mix(hi + 0x632be59bd9b4e019ull))};
}

size_t inputElems(const CollSpec& s) {
  switch (s.coll) {
    case Coll::ReduceScatter:
    case Coll::AlltoAll:
    case Coll::Scatter: return s.count * static_cast<size_t>(s.nranks);
    default: return s.count;
  }
}
size_t outputElems(const CollSpec& s) {
  switch (s.coll) {
    case Coll::AllGather:
    case Coll::AlltoAll:
    case Coll::Gather: return s.count * static_cast<size_t>(s.nranks);
    default: return s.count;
  }
}

struct RankState {
  std::vector<Value> send, recv, scratch;
  size_t sendBase = 0;  // in place: where the send buffer starts inside recv
  bool sendInRecv = false;
  Schedule schedule;
  std::vector<size_t> pc;  // next step per program
  struct StepState {
    bool posted = false;    // the send half of the current step is posted
    bool received = false;  // its receive half is done
    uint64_t sentId = 0;    // the message it posted
  };
  std::vector<StepState> steps;  // per program
};

/// A message in flight. Buffered: its values, copied when posted. Rendezvous: where they are in
/// the sender's memory, read when the receiver takes the message.
struct Message {
  uint64_t id = 0;
  std::vector<Value> values;
  int from = -1;
  Ref src;
  size_t count = 0;
};

class Simulator {
 public:
  Simulator(const CollSpec& spec, Generator generate, Delivery delivery)
      : spec_(spec), generate_(generate), rendezvous_(delivery == Delivery::Rendezvous) {}

  VerifyResult run() {
    const int n = spec_.nranks;
    ranks_.resize(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      RankState& st = ranks_[static_cast<size_t>(r)];
      CollSpec mine = spec_;
      mine.rank = r;
      st.recv.assign(outputElems(spec_), Value{0, kUnset});
      layoutInPlace(st, r);
      if (!st.sendInRecv) st.send.assign(inputElems(spec_), Value{});
      for (size_t i = 0; i < inputElems(spec_); ++i) sendRef(st, i) = Value{weight(r, i), 1, weight(r, i)};
      st.schedule = generate_(mine);
      if (!checkDirections(r, st.schedule)) return result_;
      st.scratch.assign(st.schedule.scratchElems, Value{0, kUnset});
      st.pc.assign(st.schedule.programs.size(), 0);
      st.steps.assign(st.schedule.programs.size(), {});
    }
    // Event-driven: a rank runs until it blocks, and runs again when a message arrives for it.
    std::vector<char> queued(static_cast<size_t>(n), 1);
    for (int r = 0; r < n; ++r) work_.push_back(r);
    while (!work_.empty() && result_.ok) {
      int r = work_.front();
      work_.pop_front();
      queued[static_cast<size_t>(r)] = 0;
      RankState& st = ranks_[static_cast<size_t>(r)];
      for (size_t p = 0; p < st.schedule.programs.size() && result_.ok; ++p) {
        const Program& prog = st.schedule.programs[p];
        while (st.pc[p] < prog.steps.size() && result_.ok && tryStep(r, prog.channel, prog.steps[st.pc[p]], st.steps[p])) ++st.pc[p];
      }
      for (int woken : woken_)
        if (!queued[static_cast<size_t>(woken)]) {
          queued[static_cast<size_t>(woken)] = 1;
          work_.push_back(woken);
        }
      woken_.clear();
    }
    if (!result_.ok) return result_;
    for (int r = 0; r < n; ++r) {
      const RankState& st = ranks_[static_cast<size_t>(r)];
      for (size_t p = 0; p < st.pc.size(); ++p)
        if (st.pc[p] < st.schedule.programs[p].steps.size())
          return fail("deadlock: rank " + std::to_string(r) + " program " + std::to_string(p) + " blocked at step " +
                      std::to_string(st.pc[p]));
    }
    for (auto& [key, q] : queues_)
      if (!q.empty())
        return fail("rank " + std::to_string((key >> 24) & 0xffffff) + " sent " + std::to_string(q.size()) +
                    " message(s) to rank " + std::to_string(key & 0xffffff) + " that were never received");
    checkResults();
    return result_;
  }

 private:
  using Key = uint64_t;  // channel, from, to packed
  static Key key(int channel, int from, int to) {
    return (static_cast<uint64_t>(channel) << 48) | (static_cast<uint64_t>(from) << 24) | static_cast<uint64_t>(to);
  }

  void layoutInPlace(RankState& st, int r) {
    if (!spec_.inPlace) return;
    const size_t c = spec_.count;
    switch (spec_.coll) {
      case Coll::AllGather: st.sendInRecv = true, st.sendBase = static_cast<size_t>(r) * c; break;
      case Coll::Gather:
        if (r == spec_.root) st.sendInRecv = true, st.sendBase = static_cast<size_t>(r) * c;
        break;
      case Coll::ReduceScatter:
      case Coll::Scatter:
        // Here the receive buffer lives inside the (larger) send buffer.
        break;
      default: st.sendInRecv = true, st.sendBase = 0; break;
    }
  }

  bool recvInSend(int r) const {
    if (!spec_.inPlace) return false;
    return spec_.coll == Coll::ReduceScatter || (spec_.coll == Coll::Scatter && r == spec_.root);
  }
  size_t recvBase(int r) const { return static_cast<size_t>(spec_.coll == Coll::Scatter ? spec_.root : r) * spec_.count; }

  Value& sendRef(RankState& st, size_t i) { return st.sendInRecv ? st.recv[st.sendBase + i] : st.send[i]; }

  Value* at(int r, const Ref& ref, size_t len) {
    RankState& st = ranks_[static_cast<size_t>(r)];
    std::vector<Value>* buf = nullptr;
    size_t base = 0;
    if (ref.buf == kSendBuf) {
      buf = st.sendInRecv ? &st.recv : &st.send;
      base = st.sendInRecv ? st.sendBase : 0;
    } else if (ref.buf == kRecvBuf) {
      buf = recvInSend(r) ? &st.send : &st.recv;
      base = recvInSend(r) ? recvBase(r) : 0;
    } else if (ref.buf == kScratchBuf) {
      buf = &st.scratch;
    }
    if (buf == nullptr || base + ref.offset + len > buf->size()) {
      fail("rank " + std::to_string(r) + " addresses buffer " + std::to_string(ref.buf) + " out of bounds at " +
           std::to_string(ref.offset) + "+" + std::to_string(len));
      return nullptr;
    }
    return buf->data() + base + ref.offset;
  }

  /// The executor matches messages per connection, so two concurrent programs talking to the same
  /// peer in the same direction on one channel would interleave unpredictably.
  bool checkDirections(int r, const Schedule& sched) {
    std::unordered_map<uint64_t, size_t> owner;
    for (size_t p = 0; p < sched.programs.size(); ++p)
      for (const Step& st : sched.programs[p].steps) {
        if (st.kind != StepKind::Transfer) continue;
        for (int dir = 0; dir < 2; ++dir) {
          const int peer = dir == 0 ? st.sendPeer : st.recvPeer;
          if (peer < 0) continue;
          if (peer >= spec_.nranks || peer == r) {
            fail("rank " + std::to_string(r) + " program " + std::to_string(p) + " talks to invalid peer " + std::to_string(peer));
            return false;
          }
          const uint64_t k = key(sched.programs[p].channel, peer, dir);
          auto [it, fresh] = owner.emplace(k, p);
          if (!fresh && it->second != p) {
            fail("rank " + std::to_string(r) + " programs " + std::to_string(it->second) + " and " + std::to_string(p) +
                 " both " + (dir == 0 ? "send to" : "receive from") + " rank " + std::to_string(peer) + " on channel " +
                 std::to_string(sched.programs[p].channel));
            return false;
          }
        }
      }
    return true;
  }

  bool tryStep(int r, int channel, const Step& st, RankState::StepState& ss) {
    if (st.kind == StepKind::LocalReduce) {
      const size_t n = st.sendCount;
      Value* a = at(r, st.src, n);
      Value* b = at(r, st.acc, n);
      Value* dst = at(r, st.dst, n);
      if (!a || !b || !dst) return false;
      // The kernels allow dst to alias an operand exactly, never partially.
      std::less<const Value*> before;
      for (const Value* op : {a, b})
        if (op != dst && before(op, dst + n) && before(dst, op + n)) {
          fail("rank " + std::to_string(r) + " local reduce writes a partial overlap of its operand");
          return false;
        }
      for (size_t i = 0; i < n; ++i) {
        if (a[i].count == kUnset || b[i].count == kUnset) {
          fail("rank " + std::to_string(r) + " reduces an element that was never written");
          return false;
        }
        dst[i] = combine(a[i], b[i]);
      }
      return true;
    }
    if (st.kind == StepKind::LocalCopy) {
      Value* src = at(r, st.src, st.sendCount);
      Value* dst = at(r, st.dst, st.sendCount);
      if (!src || !dst) return false;
      std::vector<Value> tmp(src, src + st.sendCount);
      std::copy(tmp.begin(), tmp.end(), dst);
      return true;
    }
    // The executor sends and writes a step's halves concurrently, slice by slice, so a step must
    // not write memory it is still sending (in-place layouts make that easy to do by accident).
    if (st.sendPeer >= 0 && st.recvPeer >= 0 && st.sendCount > 0 && st.recvCount > 0 && !ss.posted) {
      const Value* src = at(r, st.src, st.sendCount);
      const Value* dst = at(r, st.dst, st.recvCount);
      if (!src || !dst) return false;
      std::less<const Value*> before;
      if (before(src, dst + st.recvCount) && before(dst, src + st.sendCount)) {
        fail("rank " + std::to_string(r) + " writes elements it is sending in the same step (channel " +
             std::to_string(channel) + ", to rank " + std::to_string(st.sendPeer) + ")");
        return false;
      }
    }
    // The send half is posted once; the step completes when its receive half has a message and,
    // under rendezvous, when its own message was taken.
    postSend(r, channel, st, ss);
    if (st.recvPeer >= 0 && !ss.received) {
      auto it = queues_.find(key(channel, st.recvPeer, r));
      if (it == queues_.end() || it->second.empty()) return false;
      Message msg = std::move(it->second.front());
      it->second.pop_front();
      if (!receive(r, channel, st, msg)) return false;
      ss.received = true;
    }
    if (rendezvous_ && st.sendPeer >= 0 && untaken_.count(ss.sentId) != 0) return false;
    ss = {};
    return true;
  }

  bool receive(int r, int channel, const Step& st, Message& msg) {
    if (rendezvous_) {
      untaken_.erase(msg.id);
      woken_.push_back(msg.from);
      const Value* src = at(msg.from, msg.src, msg.count);
      if (!src) return false;
      msg.values.assign(src, src + msg.count);
    }
    if (msg.values.size() != st.recvCount) {
      fail("rank " + std::to_string(r) + " expected " + std::to_string(st.recvCount) + " elements from rank " +
           std::to_string(st.recvPeer) + " on channel " + std::to_string(channel) + " but the message has " +
           std::to_string(msg.values.size()));
      return false;
    }
    Value* dst = at(r, st.dst, st.recvCount);
    if (!dst) return false;
    if (st.reduce) {
      Value* acc = at(r, st.acc, st.recvCount);
      if (!acc) return false;
      for (size_t i = 0; i < msg.values.size(); ++i) {
        if (acc[i].count == kUnset || msg.values[i].count == kUnset) {
          fail("rank " + std::to_string(r) + " reduces an element that was never written");
          return false;
        }
        dst[i] = combine(acc[i], msg.values[i]);
      }
    } else {
      std::copy(msg.values.begin(), msg.values.end(), dst);
    }
    return true;
  }

  void postSend(int r, int channel, const Step& st, RankState::StepState& ss) {
    if (st.sendPeer < 0 || ss.posted) return;
    ss.posted = true;
    Value* src = at(r, st.src, st.sendCount);
    if (!src) return;
    Message msg;
    msg.id = ss.sentId = ++lastId_;
    if (rendezvous_) {
      msg.from = r, msg.src = st.src, msg.count = st.sendCount;
      untaken_.insert(msg.id);
    } else {
      msg.values.assign(src, src + st.sendCount);
    }
    queues_[key(channel, r, st.sendPeer)].push_back(std::move(msg));
    woken_.push_back(st.sendPeer);
    result_.messages++;
    result_.elements += st.sendCount;
  }

  /// A pseudo-random weight per (rank, element), computed rather than stored (splitmix64), so
  /// 4096 ranks with rank-sized inputs need no n^2 table.
  static uint64_t weight(int r, size_t i) { return mix((static_cast<uint64_t>(r) << 40) ^ i ^ 0x9e3779b97f4a7c15ull) | 1; }
  /// Memoised: every rank checks the same sums, and recomputing them costs n per element.
  Value expectSum(size_t index) {
    if (sums_.empty()) sums_.assign(inputElems(spec_), Value{0, kUnset});
    Value& v = sums_[index];
    if (v.count == kUnset) {
      v = Value{};
      for (int r = 0; r < spec_.nranks; ++r) v.hash += weight(r, index), v.count++;
    }
    return v;
  }
  Value expectFrom(int r, size_t index) const { return Value{weight(r, index), 1}; }

  void checkResults() {
    const int n = spec_.nranks;
    const size_t c = spec_.count;
    for (int r = 0; r < n && result_.ok; ++r) {
      RankState& st = ranks_[static_cast<size_t>(r)];
      auto out = [&](size_t i) -> Value& { return recvInSend(r) ? st.send[recvBase(r) + i] : st.recv[i]; };
      auto expectAt = [&](size_t i, Value want) {
        if (out(i) == want) return true;
        fail(std::string(collName(spec_.coll)) + ": rank " + std::to_string(r) + " output[" + std::to_string(i) +
             "] holds " + std::to_string(out(i).count) + " contribution(s), not the expected " +
             std::to_string(want.count) + (out(i).count == want.count ? " (wrong ones)" : ""));
        return false;
      };
      bool ok = true;
      switch (spec_.coll) {
        case Coll::AllReduce:
          for (size_t i = 0; i < c && ok; ++i) ok = expectAt(i, expectSum(i));
          // Bitwise identical results need the same combination tree everywhere, not just the
          // same contributions.
          for (size_t i = 0; i < c && ok && r > 0; ++i)
            if (out(i).tree != ranks_[0].recv[i].tree) {
              fail("AllReduce: rank " + std::to_string(r) + " output[" + std::to_string(i) +
                   "] combines its contributions in a different order than rank 0 (results would differ bitwise)");
              ok = false;
            }
          break;
        case Coll::Reduce:
          if (r == spec_.root)
            for (size_t i = 0; i < c && ok; ++i) ok = expectAt(i, expectSum(i));
          break;
        case Coll::Broadcast:
          for (size_t i = 0; i < c && ok; ++i) ok = expectAt(i, expectFrom(spec_.root, i));
          break;
        case Coll::AllGather:
          for (int k = 0; k < n && ok; ++k)
            for (size_t i = 0; i < c && ok; ++i) ok = expectAt(static_cast<size_t>(k) * c + i, expectFrom(k, i));
          break;
        case Coll::ReduceScatter:
          for (size_t i = 0; i < c && ok; ++i) ok = expectAt(i, expectSum(static_cast<size_t>(r) * c + i));
          break;
        case Coll::AlltoAll:
          for (int k = 0; k < n && ok; ++k)
            for (size_t i = 0; i < c && ok; ++i)
              ok = expectAt(static_cast<size_t>(k) * c + i, expectFrom(k, static_cast<size_t>(r) * c + i));
          break;
        case Coll::Gather:
          if (r == spec_.root)
            for (int k = 0; k < n && ok; ++k)
              for (size_t i = 0; i < c && ok; ++i) ok = expectAt(static_cast<size_t>(k) * c + i, expectFrom(k, i));
          break;
        case Coll::Scatter:
          for (size_t i = 0; i < c && ok; ++i) ok = expectAt(i, expectFrom(spec_.root, static_cast<size_t>(r) * c + i));
          break;
        case Coll::SendRecv: break;
      }
    }
  }

  VerifyResult fail(const std::string& why) {
    if (result_.ok) {
      result_.ok = false;
      result_.error = why;
    }
    return result_;
  }

  CollSpec spec_;
  Generator generate_;
  std::vector<RankState> ranks_;
  bool rendezvous_ = false;
  std::unordered_map<Key, std::deque<Message>> queues_;
  std::unordered_set<uint64_t> untaken_;  // rendezvous: posted messages no receiver has taken yet
  uint64_t lastId_ = 0;
  std::deque<int> work_;
  std::vector<int> woken_;
  std::vector<Value> sums_;
  VerifyResult result_;
};

}  // namespace

VerifyResult verifySchedule(const CollSpec& spec, Delivery delivery) {
  return Simulator(spec, &buildSchedule, delivery).run();
}
VerifyResult verifySchedule(const CollSpec& spec, Generator generate, Delivery delivery) {
  return Simulator(spec, generate, delivery).run();
}

}  // namespace atl::algo
