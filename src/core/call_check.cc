#include "core/call_check.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>

#include "base/debug.h"
#include "base/fnv1a.h"
#include "core/comm.h"
#include "kernels/host/reduce.h"

namespace atl {

enum class CheckType : uint16_t {
  Up = 1,      // a subtree's summary, to the tree parent
  Down = 2,    // the verdict, from the tree parent
  P2P = 3,     // a point-to-point pair's print
  State = 4,   // "I am in this collective launch", to a rank whose p2p print found me there
  Poison = 5,  // launches are out of step: fail, and pass it on
};

/// Every check message has this one fixed size and layout (it comes from an authenticated peer and
/// is still checked before use).
struct CheckMessage {
  uint32_t magic = 0;
  uint16_t version = 0;
  uint16_t type = 0;
  int32_t diffRank = -1;  // Up/Down: the lowest rank whose print differs (-1: none)
  uint32_t reserved = 0;
  CallPrint ref;          // Up: the sender's print; Down: rank 0's; P2P/State: the sender's
  CallPrint diff;         // Up/Down: diffRank's print
  char reason[240] = {};  // Poison: the cause, NUL-terminated
};
static_assert(sizeof(CheckMessage) == 384);
static_assert(std::has_unique_object_representations_v<CheckMessage>, "no padding: sent as its bytes");

namespace {

constexpr uint32_t kPrintMagic = 0x4b435441;  // "ATCK"
constexpr uint16_t kPrintVersion = 1;
constexpr uint32_t kMsgMagic = 0x4d435441;    // "ATCM"
constexpr uint16_t kMsgVersion = 1;
constexpr uint32_t kCollectives = 0, kPointToPoint = 1;
constexpr uint32_t kTag = 0x00430000u;        // 'C': away from split/shrink/fault tags and the reserved ones

bool rooted(algo::Coll c) {
  return c == algo::Coll::Broadcast || c == algo::Coll::Reduce || c == algo::Coll::Gather || c == algo::Coll::Scatter;
}

CallPrint blank(uint32_t kind) {
  CallPrint p;
  p.magic = kPrintMagic;
  p.version = kPrintVersion;
  p.size = sizeof(CallPrint);
  p.kind = kind;
  return p;
}

bool wellFormed(const CallPrint& p) {
  return p.magic == kPrintMagic && p.version == kPrintVersion && p.size == sizeof(CallPrint);
}

/// Two collective prints that describe the same launch.
bool same(const CallPrint& a, const CallPrint& b) {
  return wellFormed(a) && wellFormed(b) && a.kind == b.kind && a.seq == b.seq && a.hash == b.hash && a.ops == b.ops;
}

std::string describe(const CallPrint& p) {
  if (p.coll < 0) return "nothing";
  char out[160];
  const auto coll = static_cast<algo::Coll>(p.coll);
  const bool reduction = coll == algo::Coll::AllReduce || coll == algo::Coll::Reduce || coll == algo::Coll::ReduceScatter;
  char root[24] = "";
  if (rooted(coll)) snprintf(root, sizeof(root), ", root %d", p.root);
  char op[24] = "";
  if (reduction) {
    static constexpr const char* kOps[] = {"sum", "prod", "max", "min", "avg"};
    if (p.redop >= 0 && p.redop < 5)
      snprintf(op, sizeof(op), ", %s", kOps[p.redop]);
    else
      snprintf(op, sizeof(op), ", op %d", p.redop);
  }
  snprintf(out, sizeof(out), "%s(count %llu, %s%s%s)", algo::collName(coll), static_cast<unsigned long long>(p.count),
           kernels::dtypeName(static_cast<ncclDataType_t>(p.dtype)), op, root);
  std::string s = out;
  if (p.ops > 1) s += " and " + std::to_string(p.ops - 1) + " more collective(s) in its group";
  return s;
}

Status malformed(const CallPrint& p, int from) {
  return ATOLL_ERROR(ncclInvalidUsage,
                     "ATOLL_CHECK: rank %d sent a malformed call fingerprint (magic %08x, version %u, size %u; "
                     "expected %08x, %u, %zu): is it running another Atoll build, or without ATOLL_CHECK?",
                     from, p.magic, p.version, p.size, kPrintMagic, kPrintVersion, sizeof(CallPrint));
}

CallPrint collectivePrint(ncclComm* comm, std::span<const OpDesc* const> colls) {
  CallPrint p = blank(kCollectives);
  p.seq = comm->checkSeq++;
  p.ops = static_cast<uint32_t>(colls.size());
  uint64_t h = kFnv1aBasis;
  for (const OpDesc* op : colls) {
    h = fnv1a(h, static_cast<uint64_t>(op->coll));
    h = fnv1a(h, op->count);
    h = fnv1a(h, static_cast<uint64_t>(static_cast<uint32_t>(op->rawDtype)));
    h = fnv1a(h, static_cast<uint64_t>(static_cast<uint32_t>(op->rawOp)));
    h = fnv1a(h, rooted(op->coll) ? static_cast<uint64_t>(static_cast<uint32_t>(op->root)) : 0);
  }
  p.hash = h;
  const OpDesc& first = *colls.front();
  p.coll = static_cast<int32_t>(first.coll);
  p.dtype = first.rawDtype;
  p.redop = first.rawOp;
  p.root = rooted(first.coll) ? first.root : -1;
  p.count = first.count;
  return p;
}

/// The check's binomial tree rooted at rank 0: a rank's parent clears its lowest set bit.
int treeParent(int r) { return r == 0 ? -1 : r & (r - 1); }
std::vector<int> treeChildren(int r, int n) {
  std::vector<int> out;
  const unsigned top = r == 0 ? std::bit_ceil(static_cast<unsigned>(n)) : static_cast<unsigned>(r & -r);
  for (unsigned m = 1; m < top; m <<= 1)
    if (static_cast<unsigned>(r) + m < static_cast<unsigned>(n)) out.push_back(r + static_cast<int>(m));
  return out;
}

/// One communicator's check of one batch, advanced by step() until done.
class Check {
 public:
  Check(ncclComm* comm, std::span<const OpDesc> ops, Deadline deadline) : comm_(comm), deadline_(deadline) {
    std::vector<const OpDesc*> colls;
    for (const OpDesc& op : ops) {
      if (op.comm != comm) continue;
      if (op.coll != algo::Coll::SendRecv) {
        colls.push_back(&op);
        continue;
      }
      // Bytes to and from each peer, in call order of first appearance.
      size_t i = 0;
      while (i < peers_.size() && peers_[i] != op.root) ++i;
      if (i == peers_.size()) {
        peers_.push_back(op.root);
        out_.push_back(blank(kPointToPoint));
        out_.back().coll = static_cast<int32_t>(algo::Coll::SendRecv);
        out_.back().seq = comm->checkSeq;  // the next collective launch: where this pair stands
        in_.emplace_back();
        got_.push_back(false);
      }
      const uint64_t bytes = op.count * kernels::dtypeSize(op.dtype);
      (op.isSend ? out_[i].count : out_[i].expect) += bytes;
    }
    const int n = comm->nranks, r = comm->rank;
    if (!colls.empty()) {
      collective_ = true;
      peers_.clear(), out_.clear(), in_.clear(), got_.clear();  // collectives first: p2p of the group runs after
      mine_ = collectivePrint(comm, colls);
      parent_ = treeParent(r);
      children_ = treeChildren(r, n);
      fromChild_.assign(children_.size(), false);
      diffRank_ = -1;
    }
    if (n == 1 || (!collective_ && peers_.empty())) done_ = true;
  }

  bool done() const { return done_; }
  CheckOutcome& outcome() { return outcome_; }

  /// Takes what the bootstrap has queued for this check (waiting up to `waitMs` for the first).
  void drain(int64_t waitMs) {
    int from = -1;
    while (auto bytes = comm_->bootstrap->tryRecv(-1, kTag, waitMs, &from)) {
      waitMs = 0;
      if (bytes->size() != sizeof(CheckMessage)) {
        ATOLL_WARN("ATOLL_CHECK: rank %d: dropping a check message of %zu bytes from rank %d", comm_->rank,
                   bytes->size(), from);
        continue;
      }
      auto m = std::make_shared<CheckMessage>();
      std::memcpy(m.get(), bytes->data(), sizeof(CheckMessage));
      if (m->magic != kMsgMagic || m->version != kMsgVersion || m->type < 1 || m->type > 5 ||
          std::memchr(m->reason, '\0', sizeof m->reason) == nullptr || m->diffRank < -1 ||
          m->diffRank >= comm_->nranks) {
        ATOLL_WARN("ATOLL_CHECK: rank %d: dropping a malformed check message from rank %d", comm_->rank, from);
        continue;
      }
      comm_->checkInbox.items.push_back({from, m->type, m->ref.seq, std::move(m)});
    }
  }

  /// Advances as far as the queued messages allow; true if anything happened.
  bool step() {
    if (done_) return false;
    if (aborted(&comm_->abortFlag))
      return finish(ATOLL_ERROR(ncclSystemError, "ATOLL_CHECK: rank %d: aborted during the fingerprint exchange",
                                comm_->rank));
    if (const CheckInbox::Item* poison = find(CheckType::Poison, -1)) {
      const std::string reason = poison->msg->reason;
      const int from = poison->from;
      outcome_.desync = true;
      finish(ATOLL_ERROR(ncclInvalidUsage, "%s (rank %d heard it from rank %d)", reason.c_str(), comm_->rank, from));
      spreadPoison(reason, from);
      return true;
    }
    bool moved = !started_;
    if (!started_) {
      started_ = true;
      if (!collective_)
        for (size_t i = 0; i < peers_.size(); ++i) {
          if (peers_[i] == comm_->rank) {
            in_[i] = out_[i];  // compared locally
            got_[i] = true;
            continue;
          }
          if (!send(peers_[i], CheckType::P2P, out_[i])) return true;
        }
    }
    moved = (collective_ ? stepCollective() : stepPointToPoint()) || moved;
    if (!done_ && deadline_.expired()) {
      const int waited = waitingOn();
      outcome_.failedPeer = waited;
      outcome_.timedOut = true;
      finish(ATOLL_ERROR(ncclSystemError,
                         "ATOLL_CHECK: rank %d: no call fingerprint from rank %d within ATOLL_TIMEOUT_MS (%s)",
                         comm_->rank, waited, collective_ ? describe(mine_).c_str() : "send/recv"));
      return true;
    }
    return moved;
  }

 private:
  bool stepCollective() {
    bool moved = answerPointToPoint();
    for (size_t i = 0; i < children_.size(); ++i) {
      if (fromChild_[i]) continue;
      auto it = take(CheckType::Up, children_[i], kAnySeq);
      if (!it) continue;
      fromChild_[i] = true;
      moved = true;
      // The child's subtree differs from us at the child itself, or wherever it says.
      const CheckMessage& m = *it;
      int cand = -1;
      CallPrint candPrint;
      if (!same(m.ref, mine_)) cand = children_[i], candPrint = m.ref;
      else if (m.diffRank >= 0) cand = m.diffRank, candPrint = m.diff;
      if (cand >= 0 && (diffRank_ < 0 || cand < diffRank_)) diffRank_ = cand, diff_ = candPrint;
    }
    for (bool b : fromChild_)
      if (!b) return moved;
    if (!sentUp_) {
      sentUp_ = true;
      if (parent_ < 0) return deliver(mine_, diffRank_, diff_), true;  // rank 0: the verdict
      CheckMessage up = message(CheckType::Up, mine_);
      up.diffRank = diffRank_;
      up.diff = diff_;
      if (!sendMessage(parent_, up)) return true;
      moved = true;
    }
    if (auto it = take(CheckType::Down, parent_, kAnySeq)) {
      deliver(it->ref, it->diffRank, it->diff);
      moved = true;
    }
    return moved;
  }

  /// The verdict, passed on to the children and turned into this rank's result.
  void deliver(const CallPrint& rank0, int diffRank, const CallPrint& diff) {
    CheckMessage down = message(CheckType::Down, rank0);
    down.diffRank = diffRank;
    down.diff = diff;
    for (int c : children_)
      if (!sendMessage(c, down)) return;
    if (diffRank < 0) return void(finish(Status::Ok()));
    if (!wellFormed(diff)) return void(finish(malformed(diff, diffRank)));
    if (diff.seq != rank0.seq)
      return void(finish(ATOLL_ERROR(ncclInvalidUsage,
                                     "ATOLL_CHECK: rank %d is at collective launch %llu (%s) while rank 0 is at launch "
                                     "%llu (%s): a rank skipped or added a call",
                                     diffRank, static_cast<unsigned long long>(diff.seq), describe(diff).c_str(),
                                     static_cast<unsigned long long>(rank0.seq), describe(rank0).c_str())));
    finish(ATOLL_ERROR(ncclInvalidUsage, "ATOLL_CHECK: ranks disagree on collective launch %llu: rank 0 called %s, rank %d %s",
                       static_cast<unsigned long long>(rank0.seq), describe(rank0).c_str(), diffRank,
                       describe(diff).c_str()));
  }

  /// A rank's point-to-point print found us in a collective launch: tell it where we are, once per
  /// launch. The print stays queued, for a send/recv of ours that may yet come.
  bool answerPointToPoint() {
    bool moved = false;
    for (const CheckInbox::Item& item : comm_->checkInbox.items) {
      if (item.type != static_cast<uint16_t>(CheckType::P2P)) continue;
      if (!comm_->checkInbox.answered.insert({item.from, mine_.seq}).second) continue;
      CheckMessage state = message(CheckType::State, mine_);
      if (!sendMessage(item.from, state)) return true;
      moved = true;
    }
    return moved;
  }

  bool stepPointToPoint() {
    bool moved = false;
    for (size_t i = 0; i < peers_.size(); ++i) {
      if (got_[i]) continue;
      // The peer is in collective launch `seq`, and we are still before it: it passed the point at
      // which it would have had to exchange with us, so the two can never match.
      if (auto st = take(CheckType::State, peers_[i], comm_->checkSeq)) {
        char why[sizeof(CheckMessage::reason)];
        std::snprintf(why, sizeof why,
                      "ATOLL_CHECK: rank %d launched send/recv with rank %d, which launched %s instead: launches are "
                      "out of step, the communicator is broken",
                      comm_->rank, peers_[i], describe(st->ref).c_str());
        outcome_.desync = true;
        finish(ATOLL_ERROR(ncclInvalidUsage, "%s", why));
        spreadPoison(why, -1);
        return true;
      }
      auto it = take(CheckType::P2P, peers_[i], kAnySeq);
      if (!it) continue;
      in_[i] = it->ref;
      got_[i] = true;
      moved = true;
    }
    // Stale answers (a peer behind us, since caught up) mean nothing now.
    std::erase_if(comm_->checkInbox.items, [&](const CheckInbox::Item& item) {
      return item.type == static_cast<uint16_t>(CheckType::State) && item.seq < comm_->checkSeq;
    });
    for (bool b : got_)
      if (!b) return moved;
    for (size_t i = 0; i < peers_.size(); ++i) {
      const CallPrint& mine = out_[i];
      const CallPrint& theirs = in_[i];
      const int peer = peers_[i];
      if (!wellFormed(theirs)) return finish(malformed(theirs, peer)), true;
      if (mine.count != theirs.expect || mine.expect != theirs.count)
        return finish(ATOLL_ERROR(ncclInvalidUsage,
                                  "ATOLL_CHECK: rank %d sends %llu bytes to rank %d and receives %llu from it, but rank %d "
                                  "sends %llu and receives %llu",
                                  comm_->rank, static_cast<unsigned long long>(mine.count), peer,
                                  static_cast<unsigned long long>(mine.expect), peer,
                                  static_cast<unsigned long long>(theirs.count),
                                  static_cast<unsigned long long>(theirs.expect))),
               true;
    }
    finish(Status::Ok());
    return true;
  }

  static constexpr uint64_t kAnySeq = ~uint64_t{0};

  const CheckInbox::Item* find(CheckType type, int from) const {
    for (const CheckInbox::Item& item : comm_->checkInbox.items)
      if (item.type == static_cast<uint16_t>(type) && (from < 0 || item.from == from)) return &item;
    return nullptr;
  }

  /// Removes and returns the first queued message of `type` from `from` for launch `seq` (kAnySeq:
  /// the first one). Up and Down messages are matched in arrival order, not by launch number: each
  /// pair's messages arrive in send order, so the k-th from a tree neighbour belongs to our k-th
  /// collective check, and a rank that skipped a call shows as a different print, not a hang.
  std::shared_ptr<const CheckMessage> take(CheckType type, int from, uint64_t seq) {
    auto& items = comm_->checkInbox.items;
    for (auto it = items.begin(); it != items.end(); ++it) {
      if (it->type != static_cast<uint16_t>(type) || it->from != from || (seq != kAnySeq && it->seq != seq)) continue;
      auto m = std::move(it->msg);
      items.erase(it);
      return m;
    }
    return nullptr;
  }

  CheckMessage message(CheckType type, const CallPrint& ref) const {
    CheckMessage m;
    m.magic = kMsgMagic;
    m.version = kMsgVersion;
    m.type = static_cast<uint16_t>(type);
    m.ref = ref;
    return m;
  }

  bool send(int peer, CheckType type, const CallPrint& ref) { return sendMessage(peer, message(type, ref)); }

  /// Sends, or fails the check naming the peer.
  bool sendMessage(int peer, const CheckMessage& m) {
    Status s = comm_->bootstrap->sendUntil(peer, kTag, std::as_bytes(std::span(&m, 1)), deadline_);
    if (s.ok()) return true;
    outcome_.failedPeer = peer;
    finish(ATOLL_ERROR(s.code() == ncclSystemError && !aborted(&comm_->abortFlag) ? ncclRemoteError : s.code(),
                       "ATOLL_CHECK: rank %d could not send its call fingerprint to rank %d: %s", comm_->rank, peer,
                       lastErrorMessage().c_str()));
    return false;
  }

  /// Passes a poison on along tree edges and point-to-point pairs (each rank once).
  void spreadPoison(const std::string& reason, int except) {
    if (comm_->checkInbox.poisoned) return;
    comm_->checkInbox.poisoned = true;
    CheckMessage m = message(CheckType::Poison, CallPrint{});
    std::snprintf(m.reason, sizeof m.reason, "%s", reason.c_str());
    const int r = comm_->rank;
    std::vector<int> to = treeChildren(r, comm_->nranks);
    if (r != 0) to.push_back(treeParent(r));
    for (int p : peers_) to.push_back(p);
    for (const CheckInbox::Item& item : comm_->checkInbox.items) to.push_back(item.from);  // who talked to us
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    // Poison is the last word on a broken communicator: short per-peer deadlines, so a dead or
    // stopped peer does not hold up the rest. A peer that already gave up and exited is no news:
    // the check's own error stays this thread's last one.
    std::string own = lastErrorMessage();
    for (int p : to)
      if (p != r && p != except)
        (void)comm_->bootstrap->sendWithin(p, kTag, std::as_bytes(std::span(&m, 1)), Deadline::afterMs(200));
    restoreLastError(std::move(own));
  }

  int waitingOn() const {
    if (collective_) {
      for (size_t i = 0; i < children_.size(); ++i)
        if (!fromChild_[i]) return children_[i];
      return parent_;
    }
    for (size_t i = 0; i < peers_.size(); ++i)
      if (!got_[i]) return peers_[i];
    return -1;
  }

  bool finish(Status s) {
    if (done_) return false;
    done_ = true;
    outcome_.result = s;
    return true;
  }

  ncclComm* comm_;
  Deadline deadline_;
  bool collective_ = false;
  bool started_ = false;
  bool done_ = false;
  CheckOutcome outcome_;
  // Collectives: this rank's print and the tree.
  CallPrint mine_;
  int parent_ = -1;
  std::vector<int> children_;
  std::vector<bool> fromChild_;
  bool sentUp_ = false;
  int diffRank_ = -1;
  CallPrint diff_;
  // Point-to-point: one print per peer, each way.
  std::vector<int> peers_;
  std::vector<CallPrint> out_, in_;
  std::vector<bool> got_;
};

}  // namespace

std::vector<CheckOutcome> checkBatch(std::span<ncclComm* const> comms, std::span<const OpDesc> ops, int64_t timeoutMs) {
  const Deadline deadline = timeoutMs > 0 ? Deadline::afterMs(timeoutMs) : Deadline::never();
  std::vector<std::unique_ptr<Check>> checks;
  for (ncclComm* c : comms) checks.push_back(std::make_unique<Check>(c, ops, deadline));
  for (;;) {
    bool pending = false, moved = false;
    for (auto& c : checks) {
      if (c->done()) continue;
      c->drain(0);
      moved = c->step() || moved;
      pending = pending || !c->done();
    }
    if (!pending) break;
    if (moved) continue;
    // Nothing to do until a message comes: one communicator can sleep on its queue; several are
    // polled in turn, since any of them may be the one a peer answers first.
    if (checks.size() == 1) checks[0]->drain(5);
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  std::vector<CheckOutcome> out;
  for (auto& c : checks) out.push_back(c->outcome());
  return out;
}

}  // namespace atl
