// Root server. Authentication failures and malformed input are a client's problem: logged, closed,
// ignored. Disagreement between authenticated ranks (nranks, roots, duplicate rank, info size) is
// the job's problem: every rank that joined, or joins later, is told so and fails with
// ncclInvalidUsage.
//
// What a root sends (wire.h): each rank of its block gets the listen addresses of its Bruck
// partners that this root serves (about log2(n) entries, not the n-entry table), and a rank of
// another block that looks up partners served here gets those. The root knows from the block
// layout exactly which ranks of other blocks will look up here, so it exits once all of them have
// been answered.
#include "bootstrap/root.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "base/debug.h"
#include "base/handshake_server.h"
#include "bootstrap/wire.h"
#include "bootstrap/wire_check.h"

namespace atl::bootstrap {
namespace {

constexpr int kReplyTimeoutMs = 10000;
/// How long a failed rendezvous keeps telling late joiners why, unless all of them were told sooner.
constexpr int kFailureLingerMs = 10000;

struct Member {
  bool present = false;
  net::Fd fd;
  wire::Nonce nonce{};  // this connection's: the reply's MAC covers it
  std::string peer;
  net::PackedAddr listenAddr{};
};

struct Lookup {
  net::Fd fd;
  wire::Nonce nonce{};
  int asker = -1;
  std::vector<int32_t> ranks;
};

net::HandshakeServer::Options serverOptions(const std::string& name, int64_t timeoutMs) {
  net::HandshakeServer::Options opt;
  opt.name = name;
  opt.headerSize = sizeof(wire::JoinHeader);
  opt.headerTimeoutMs = wire::kHandshakeTimeoutMs;
  opt.bodyTimeoutMs = timeoutMs > 0 ? static_cast<int>(std::min<int64_t>(timeoutMs, 1 << 30)) : 1 << 30;
  return opt;
}

class RootServer {
 public:
  RootServer(net::Fd listenFd, const net::SockAddr& bound, const Secret& secret, int64_t timeoutMs)
      : name_("bootstrap root " + bound.toString()),
        secret_(secret),
        deadline_(Deadline::afterMs(timeoutMs)),
        timeoutMs_(timeoutMs),
        server_(std::move(listenFd), serverOptions(name_, timeoutMs),
                [this](const net::HandshakeServer::Conn& c, std::string* why) { return checkHeader(c, why); },
                [this](net::HandshakeServer::Conn&& c) { onRequest(std::move(c)); }) {}

  void run() {
    while (!finished_) {
      if (deadline_.expired()) {
        onTimeout();
        break;
      }
      if (failed_ && linger_.expired()) break;
      server_.pump(deadline_.remainingMs(200));
    }
    server_.dropAll();
  }

 private:
  std::optional<size_t> checkHeader(const net::HandshakeServer::Conn& c, std::string* why) {
    auto len = wire::checkJoinHeader(c.header, secret_, c.nonce, why);
    if (!len) return std::nullopt;
    return *len + wire::kMacBytes;  // the body, then its MAC
  }

  /// The block layout, fixed by the first authenticated request; what later ones must agree with.
  bool layoutFrom(const wire::JoinHeader& h, char* msg, size_t len) {
    if (nranks_ < 0) {
      nranks_ = h.nranks;
      nroots_ = h.nroots;
      index_ = h.rootIndex;
      infoSize_ = h.infoSize;
      firstRank_ = h.rank;
      lo_ = wire::firstRankOfRoot(index_, nranks_, nroots_);
      hi_ = wire::firstRankOfRoot(index_ + 1, nranks_, nroots_);
      members_.resize(static_cast<size_t>(hi_ - lo_));
      expectedLookups_ = countLookups();
      return true;
    }
    if (h.nranks != nranks_) {
      snprintf(msg, len, "rank %d joined with nranks=%d but rank %d declared nranks=%d", h.rank, h.nranks, firstRank_,
               nranks_);
      return false;
    }
    if (h.nroots != nroots_ || h.rootIndex != index_) {
      snprintf(msg, len, "rank %d came as root %d of %d but rank %d as root %d of %d (unique ids differ?)", h.rank,
               h.rootIndex, h.nroots, firstRank_, index_, nroots_);
      return false;
    }
    if (h.infoSize != infoSize_) {
      snprintf(msg, len, "rank %d published %u bytes of info but rank %d published %u", h.rank, h.infoSize, firstRank_,
               infoSize_);
      return false;
    }
    return true;
  }

  /// Ranks of other blocks with a Bruck partner in this block: each sends this root one lookup.
  int countLookups() const {
    int n = 0;
    for (int r = 0; r < nranks_; ++r) {
      if (r >= lo_ && r < hi_) continue;
      for (int p : wire::bruckPartners(r, nranks_))
        if (p >= lo_ && p < hi_) {
          ++n;
          break;
        }
    }
    return n;
  }

  void onRequest(net::HandshakeServer::Conn&& c) {
    wire::JoinHeader h;
    std::memcpy(&h, c.header.data(), sizeof(h));
    if (!wire::takeBodyMac(secret_, wire::kMacJoin, c.nonce, c.header, c.body)) {
      ATOLL_WARN("%s: rejected a request from %s claiming rank %d: its body failed authentication (altered in "
                 "transit?)", name_.c_str(), c.peer.c_str(), h.rank);
      return;  // closed: the rank retries or fails at its deadline, naming this root
    }
    maxNranks_ = std::max(maxNranks_, h.nranks);
    if (failed_) {
      replyError(c.fd.get(), c.nonce, h.rank);
      lingerCheck();
      return;
    }
    char msg[512];
    if (!layoutFrom(h, msg, sizeof msg)) return fail(std::move(c), h.rank, msg);
    if (h.kind == static_cast<uint32_t>(wire::JoinKind::Lookup)) return onLookup(std::move(c), h);
    Member& m = members_[static_cast<size_t>(h.rank - lo_)];
    if (m.present) {
      snprintf(msg, sizeof(msg), "rank %d joined twice (from %s and from %s)", h.rank, m.peer.c_str(), c.peer.c_str());
      return fail(std::move(c), h.rank, msg);
    }
    m.present = true;
    m.fd = std::move(c.fd);
    m.nonce = c.nonce;
    m.peer = c.peer;
    m.listenAddr = h.listenAddr;
    ++joined_;
    ATOLL_INFO(log::kBootstrap, "%s: rank %d of %d joined from %s (%d/%d of ranks %d-%d)", name_.c_str(), h.rank,
               nranks_, c.peer.c_str(), joined_, hi_ - lo_, lo_, hi_ - 1);
    if (joined_ == hi_ - lo_) complete();
  }

  void onLookup(net::HandshakeServer::Conn&& c, const wire::JoinHeader& h) {
    Lookup l;
    l.asker = h.rank;
    l.ranks.resize(h.count);
    std::memcpy(l.ranks.data(), c.body.data(), l.ranks.size() * sizeof(int32_t));
    for (int32_t r : l.ranks)
      if (r < lo_ || r >= hi_) {
        ATOLL_WARN("%s: rank %d looked up rank %d, which this root (ranks %d-%d) does not serve", name_.c_str(),
                   h.rank, r, lo_, hi_ - 1);
        return;  // dropped: the asker fails on the missing reply with the root's name
      }
    l.fd = std::move(c.fd);
    l.nonce = c.nonce;
    if (complete_) answer(l);
    else lookups_.push_back(std::move(l));
  }

  void answer(Lookup& l) {
    std::vector<wire::AddrEntry> entries;
    for (int32_t r : l.ranks) entries.push_back({r, 0, members_[static_cast<size_t>(r - lo_)].listenAddr});
    if (!sendEntries(l.fd.get(), l.nonce, entries))
      ATOLL_WARN("%s: could not answer rank %d's lookup", name_.c_str(), l.asker);
    l.fd.reset();
    ++answered_;
    if (answered_ >= expectedLookups_) finished_ = true;
  }

  bool sendEntries(int fd, const wire::Nonce& nonce, const std::vector<wire::AddrEntry>& entries) {
    wire::ReplyHeader rh{wire::kReplyMagic, ncclSuccess, nranks_, static_cast<uint32_t>(entries.size()), 0};
    std::vector<uint8_t> body;
    wire::put(body, entries.data(), entries.size() * sizeof(wire::AddrEntry));
    return sendReply(fd, nonce, rh, body);
  }

  /// Header, body and the MAC over both and the connection's nonce (wire.h).
  bool sendReply(int fd, const wire::Nonce& nonce, const wire::ReplyHeader& rh, const std::vector<uint8_t>& body) {
    std::vector<uint8_t> out;
    wire::put(out, &rh, sizeof(rh));
    wire::put(out, body.data(), body.size());
    const Digest mac = wire::bodyMac(secret_, wire::kMacReply, nonce, {out.data(), sizeof(rh)}, body);
    wire::put(out, mac.data(), mac.size());
    return net::sendAll(fd, out.data(), out.size(), Deadline::afterMs(kReplyTimeoutMs), nullptr).ok();
  }

  void complete() {
    complete_ = true;
    // Each reply is a few hundred bytes, so it fits the socket buffer: a rank that stopped reading
    // does not hold up the others.
    for (int r = lo_; r < hi_; ++r) {
      Member& m = members_[static_cast<size_t>(r - lo_)];
      std::vector<wire::AddrEntry> entries;
      for (int p : wire::bruckPartners(r, nranks_))
        if (p >= lo_ && p < hi_) entries.push_back({p, 0, members_[static_cast<size_t>(p - lo_)].listenAddr});
      if (!sendEntries(m.fd.get(), m.nonce, entries)) ATOLL_WARN("%s: could not send rank %d its partners", name_.c_str(), r);
      m.fd.reset();
    }
    ATOLL_INFO(log::kBootstrap, "%s: ranks %d-%d of %d joined; %d lookups from other blocks to answer", name_.c_str(),
               lo_, hi_ - 1, nranks_, expectedLookups_);
    std::vector<Lookup> queued = std::move(lookups_);
    for (Lookup& l : queued) answer(l);
    if (answered_ >= expectedLookups_) finished_ = true;
  }

  void fail(net::HandshakeServer::Conn&& c, int rank, const char* msg) {
    failed_ = true;
    linger_ = Deadline::afterMs(kFailureLingerMs);
    code_ = ncclInvalidUsage;
    message_ = msg;
    ATOLL_WARN("%s: rendezvous failed: %s", name_.c_str(), msg);
    replyError(c.fd.get(), c.nonce, rank);
    tellEveryone();
    lingerCheck();
  }

  void tellEveryone() {
    for (size_t r = 0; r < members_.size(); ++r) {
      if (!members_[r].fd.valid()) continue;
      replyError(members_[r].fd.get(), members_[r].nonce, lo_ + static_cast<int>(r));
      members_[r].fd.reset();
    }
    for (Lookup& l : lookups_) replyError(l.fd.get(), l.nonce, -1);
    lookups_.clear();
  }

  void onTimeout() {
    std::string missing;
    int nMissing = 0;
    for (size_t r = 0; r < members_.size(); ++r) {
      if (members_[r].present) continue;
      if (++nMissing > 16) continue;
      if (!missing.empty()) missing += ',';
      missing += std::to_string(lo_ + static_cast<int>(r));  // piecewise: GCC 12 -O3 flags `"," + std::string` (-Wrestrict)
    }
    if (nMissing > 16) missing += ",...";
    char msg[512];
    if (complete_)
      snprintf(msg, sizeof(msg), "timed out after %lld ms (ATOLL_BOOTSTRAP_TIMEOUT_MS): %d of %d lookups from other blocks came",
               static_cast<long long>(timeoutMs_), answered_, expectedLookups_);
    else
      snprintf(msg, sizeof(msg), "timed out after %lld ms (ATOLL_BOOTSTRAP_TIMEOUT_MS) waiting for ranks: %d of %d joined%s%s",
               static_cast<long long>(timeoutMs_), joined_, nranks_ < 0 ? 0 : hi_ - lo_,
               missing.empty() ? "" : ", missing ", missing.c_str());
    if (!failed_) {
      ATOLL_WARN("%s: %s", name_.c_str(), msg);
      code_ = ncclSystemError;
      message_ = msg;
    }
    tellEveryone();
  }

  void replyError(int fd, const wire::Nonce& nonce, int rank) {
    wire::ReplyHeader rh{wire::kReplyMagic, code_, 0, 0, static_cast<uint32_t>(message_.size())};
    std::vector<uint8_t> body;
    wire::put(body, message_.data(), message_.size());
    (void)sendReply(fd, nonce, rh, body);
    if (rank >= 0 && rank < wire::kMaxRanks) informed_.insert(rank);
  }

  // After a failure the root keeps answering late joiners with the error, until every rank of the
  // largest declared job has been told (or the deadline).
  void lingerCheck() {
    if (static_cast<int>(informed_.size()) >= maxNranks_) finished_ = true;
  }

  std::string name_;
  Secret secret_;
  Deadline deadline_;
  Deadline linger_;
  int64_t timeoutMs_;
  net::HandshakeServer server_;
  std::vector<Member> members_;  // ranks lo_..hi_-1
  std::vector<Lookup> lookups_;  // queued until the block is complete
  int nranks_ = -1, nroots_ = 1, index_ = 0, lo_ = 0, hi_ = 0;
  uint32_t infoSize_ = 0;
  int firstRank_ = -1;
  int joined_ = 0;
  int expectedLookups_ = 0, answered_ = 0;
  int maxNranks_ = 0;
  bool complete_ = false;
  bool finished_ = false;
  bool failed_ = false;
  int32_t code_ = ncclSuccess;
  std::string message_;
  std::set<int> informed_;
};

}  // namespace

Status startRoot(net::Fd listenFd, const net::SockAddr& bound, const Secret& secret, int64_t timeoutMs) {
  auto root = std::make_shared<RootServer>(std::move(listenFd), bound, secret, timeoutMs);
  try {
    std::thread([root] { root->run(); }).detach();
  } catch (const std::system_error& e) {
    return ATOLL_ERROR(ncclSystemError, "cannot start the bootstrap root thread: %s", e.what());
  }
  return Status::Ok();
}

}  // namespace atl::bootstrap
