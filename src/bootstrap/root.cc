// Root server. Authentication failures and malformed input are a client's problem: logged, closed,
// ignored. Disagreement between authenticated ranks (nranks, duplicate rank, info size) is the job's
// problem: every rank that joined, or joins later, is told so and fails with ncclInvalidUsage.
#include "bootstrap/root.h"

#include <cstring>
#include <memory>
#include <set>
#include <system_error>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/challenge_server.h"
#include "bootstrap/wire.h"
#include "bootstrap/wire_check.h"
#include "core/debug.h"

namespace atl::bootstrap {
namespace {

constexpr int kReplyTimeoutMs = 10000;
/// How long a failed rendezvous keeps telling late joiners why, unless all of them were told sooner.
constexpr int kFailureLingerMs = 10000;

struct Member {
  bool present = false;
  net::Fd fd;
  std::string peer;
  net::PackedAddr listenAddr{};
  std::vector<uint8_t> info;
};

class RootServer {
 public:
  RootServer(net::Fd listenFd, const net::SockAddr& bound, const Secret& secret, int64_t timeoutMs)
      : name_("bootstrap root " + bound.toString()),
        secret_(secret),
        deadline_(Deadline::afterMs(timeoutMs)),
        timeoutMs_(timeoutMs),
        server_(std::move(listenFd), name_, sizeof(wire::JoinHeader),
                [this](const ChallengeServer::Conn& c, std::string* why) { return checkHeader(c, why); },
                [this](ChallengeServer::Conn&& c) { onJoin(std::move(c)); },
                timeoutMs > 0 ? static_cast<int>(std::min<int64_t>(timeoutMs, 1 << 30)) : 1 << 30) {}

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
  std::optional<size_t> checkHeader(const ChallengeServer::Conn& c, std::string* why) {
    return wire::checkJoinHeader(c.header, secret_, c.nonce, why);
  }

  void onJoin(ChallengeServer::Conn&& c) {
    wire::JoinHeader h;
    std::memcpy(&h, c.header.data(), sizeof(h));
    maxNranks_ = std::max(maxNranks_, h.nranks);
    if (failed_) {
      replyError(c.fd.get(), h.rank);
      lingerCheck();
      return;
    }
    if (nranks_ < 0) {
      nranks_ = h.nranks;
      infoSize_ = h.infoSize;
      firstRank_ = h.rank;
      members_.resize(static_cast<size_t>(nranks_));
    }
    char msg[512];
    if (h.nranks != nranks_) {
      snprintf(msg, sizeof(msg), "rank %d joined with nranks=%d but rank %d declared nranks=%d", h.rank, h.nranks,
               firstRank_, nranks_);
      return fail(std::move(c), h.rank, msg);
    }
    if (h.infoSize != infoSize_) {
      snprintf(msg, sizeof(msg), "rank %d published %u bytes of info but rank %d published %u", h.rank, h.infoSize,
               firstRank_, infoSize_);
      return fail(std::move(c), h.rank, msg);
    }
    Member& m = members_[static_cast<size_t>(h.rank)];
    if (m.present) {
      snprintf(msg, sizeof(msg), "rank %d joined twice (from %s and from %s)", h.rank, m.peer.c_str(), c.peer.c_str());
      return fail(std::move(c), h.rank, msg);
    }
    m.present = true;
    m.fd = std::move(c.fd);
    m.peer = c.peer;
    m.listenAddr = h.listenAddr;
    m.info = std::move(c.body);
    ++joined_;
    ATOLL_INFO(log::kBootstrap, "%s: rank %d of %d joined from %s (%d/%d)", name_.c_str(), h.rank, nranks_,
               c.peer.c_str(), joined_, nranks_);
    if (joined_ == nranks_) complete();
  }

  void complete() {
    std::vector<uint8_t> table;
    wire::ReplyHeader rh{wire::kReplyMagic, ncclSuccess, nranks_, infoSize_, 0};
    wire::put(table, &rh, sizeof(rh));
    for (const Member& m : members_) wire::put(table, &m.listenAddr, sizeof(m.listenAddr));
    for (const Member& m : members_) wire::put(table, m.info.data(), m.info.size());
    // One rank that stopped reading must not stop the others from getting the table.
    for (Member& m : members_) {
      Status s = net::sendAll(m.fd.get(), table.data(), table.size(), Deadline::afterMs(kReplyTimeoutMs), nullptr);
      if (!s.ok()) ATOLL_WARN("%s: could not send the table to %s", name_.c_str(), m.peer.c_str());
      m.fd.reset();
    }
    ATOLL_INFO(log::kBootstrap, "%s: rendezvous of %d ranks complete", name_.c_str(), nranks_);
    finished_ = true;
  }

  void fail(ChallengeServer::Conn&& c, int rank, const char* msg) {
    failed_ = true;
    linger_ = Deadline::afterMs(kFailureLingerMs);
    code_ = ncclInvalidUsage;
    message_ = msg;
    ATOLL_WARN("%s: rendezvous failed: %s", name_.c_str(), msg);
    replyError(c.fd.get(), rank);
    for (size_t r = 0; r < members_.size(); ++r) {
      if (!members_[r].fd.valid()) continue;
      replyError(members_[r].fd.get(), static_cast<int>(r));
      members_[r].fd.reset();
    }
    lingerCheck();
  }

  void onTimeout() {
    std::string missing;
    int nMissing = 0;
    for (size_t r = 0; r < members_.size(); ++r) {
      if (members_[r].present) continue;
      if (++nMissing > 16) continue;
      if (!missing.empty()) missing += ',';
      missing += std::to_string(r);  // appended piecewise: GCC 12 -O3 flags `"," + std::string` (-Wrestrict)
    }
    if (nMissing > 16) missing += ",...";
    char msg[512];
    snprintf(msg, sizeof(msg), "timed out after %lld ms (ATOLL_BOOTSTRAP_TIMEOUT_MS) waiting for ranks: %d of %d joined%s%s",
             static_cast<long long>(timeoutMs_), joined_, nranks_ < 0 ? 0 : nranks_,
             missing.empty() ? "" : ", missing ", missing.c_str());
    if (!failed_) {
      ATOLL_WARN("%s: %s", name_.c_str(), msg);
      code_ = ncclSystemError;
      message_ = msg;
    }
    for (size_t r = 0; r < members_.size(); ++r) {
      if (members_[r].fd.valid()) replyError(members_[r].fd.get(), static_cast<int>(r));
      members_[r].fd.reset();
    }
  }

  void replyError(int fd, int rank) {
    wire::ReplyHeader rh{wire::kReplyMagic, code_, 0, 0, static_cast<uint32_t>(message_.size())};
    std::vector<uint8_t> out;
    wire::put(out, &rh, sizeof(rh));
    wire::put(out, message_.data(), message_.size());
    (void)net::sendAll(fd, out.data(), out.size(), Deadline::afterMs(kReplyTimeoutMs), nullptr);
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
  ChallengeServer server_;
  std::vector<Member> members_;
  int nranks_ = -1;
  uint32_t infoSize_ = 0;
  int firstRank_ = -1;
  int joined_ = 0;
  int maxNranks_ = 0;
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
