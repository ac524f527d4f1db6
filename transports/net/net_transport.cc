#include "transports/net/net_transport.h"

#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "base/debug.h"
#include "base/hmac.h"
#include "transports/net/net_abi.h"
#include "transports/net/net_link.h"
#include "transports/net/net_proxy.h"

namespace atl::net {
namespace {

constexpr uint32_t kHelloMagic = 0x4e45544c;  // "NETL"
constexpr uint32_t kHelloVersion = 1;

Digest helloProof(const Secret& secret, const Hello& h) {
  return hmacSha256(secret, std::span(reinterpret_cast<const uint8_t*>(&h), offsetof(Hello, proof)));
}

class NetTransport;

/// This rank's half of a link: dial the peer's handle, then send the Hello on the new send comm.
/// Driven by the proxy; finish() reads `state` and takes `sendComm` once it is kSent.
class Dial final : public Driven {
 public:
  enum State : int { kDialing, kGreeting, kSent, kFailed };
  Dial(NetTransport* t, const std::array<uint8_t, abi::kHandleMaxSize>& handle, const Hello& hello)
      : t_(t), handle_(handle), hello_(hello) {}
  bool drive() override;

  std::atomic<int> state{kDialing};
  std::string why;           // written before state becomes kFailed
  void* sendComm = nullptr;  // the proxy's until kSent, then finish()'s

 private:
  void set(State s);
  NetTransport* t_;
  std::array<uint8_t, abi::kHandleMaxSize> handle_;  // the plugin may write dial progress into it
  Hello hello_;
  void* mr_ = nullptr;
  void* request_ = nullptr;
};

class NetTransport final : public transport::Transport, public Driven {
 public:
  NetTransport(PluginNet* net, int dev) : net_(net), dev_(dev), name_("net " + net->name()) {}
  ~NetTransport() override;

  Status listen(transport::PeerInfo* me);
  const char* name() const override { return name_.c_str(); }
  using Transport::attach;
  Status attach(std::shared_ptr<const transport::Context> ctx) override {
    ctx_ = std::move(ctx);
    return Status::Ok();
  }
  bool canConnect(const transport::PeerInfo&, const transport::PeerInfo& peer) const override {
    return (peer.flags & transport::kPeerHasNet) != 0;
  }
  Result<std::unique_ptr<transport::Connector>> prepare(int peer, int channel) override;

  /// Accepts while some connector waits, and reads each accepted connection's Hello (proxy thread).
  bool drive() override;

  PluginNet* net() const { return net_; }
  int dev() const { return dev_; }
  Proxy& proxy() { return proxy_; }
  const transport::Context& ctx() const { return *ctx_; }

  /// The links whose receive comm has not arrived yet: the proxy accepts only while there are
  /// some, because some plugins (nccl-fastsocket) block in accept until a connection comes.
  void await(int peer, int channel, bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!on) awaited_.erase({peer, channel});
    else if (arrived_.count({peer, channel}) == 0) awaited_.insert({peer, channel});
    awaiting_.store(!awaited_.empty(), std::memory_order_release);
  }
  /// Whether every awaited link has an accepted connection (its hello may still be on the way).
  /// Proxy thread only.
  bool acceptedAllAwaited() {
    std::lock_guard<std::mutex> lock(mu_);
    return greetings_.size() >= awaited_.size();
  }
  /// Wakes finish() calls: a dial moved or a hello arrived.
  void changed() {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  /// Waits up to `slice` for a change; takes the receive comm of (peer, channel) if it is there.
  void* waitArrived(int peer, int channel, std::chrono::milliseconds slice);

 private:
  struct Greeting {
    void* recvComm = nullptr;
    std::unique_ptr<Hello> hello = std::make_unique<Hello>();
    void* mr = nullptr;
    void* request = nullptr;
  };
  /// Moves one accepted connection towards its Hello; false once it is settled (stashed or closed).
  bool greet(Greeting& g, bool* moved);

  PluginNet* net_;
  int dev_;
  std::string name_;
  std::shared_ptr<const transport::Context> ctx_;
  void* listenComm_ = nullptr;
  std::set<std::pair<int, int>> awaited_;  // under mu_
  std::atomic<bool> awaiting_{false};      // !awaited_.empty()
  std::vector<Greeting> greetings_;  // proxy thread
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int, int>, void*> arrived_;  // (peer, channel) -> receive comm, under mu_
  Proxy proxy_;  // last: its thread stops first, while everything it drives still exists
};

class NetConnector final : public transport::Connector {
 public:
  NetConnector(NetTransport* t, int peer, int channel) : t_(t), peer_(peer), channel_(channel) {}
  ~NetConnector() override;
  Status connect() override;
  Result<std::unique_ptr<transport::Connection>> finish() override;

 private:
  void release();
  NetTransport* t_;
  int peer_, channel_;
  std::unique_ptr<Dial> dial_;
  bool waiting_ = false;  // in the transport's awaited_
};

void Dial::set(State s) {
  state.store(s, std::memory_order_release);
  t_->changed();
}

bool Dial::drive() {
  PluginNet* net = t_->net();
  const int st = state.load(std::memory_order_relaxed);
  if (st == kSent || st == kFailed) return false;
  auto failWith = [&](const char* what) {
    why = std::string(what) + ": " + lastErrorMessage();
    set(kFailed);
    return true;
  };
  bool moved = false;
  if (st == kDialing) {
    if (!net->connect(t_->dev(), handle_.data(), &sendComm).ok()) return failWith("connect");
    if (sendComm == nullptr) return false;  // not connected yet
    if (!net->regMr(sendComm, &hello_, sizeof(hello_), abi::kPtrHost, &mr_).ok()) return failWith("regMr");
    state.store(kGreeting, std::memory_order_relaxed);
    moved = true;
  }
  if (request_ == nullptr) {
    // As NCCL does, no data moves before this transport accepted the connections it waits for:
    // some plugins (nccl-fastsocket) finish a connect only inside the peer's accept, and their
    // first send waits for that, so two ranks sending before accepting would wait on each other.
    if (!t_->acceptedAllAwaited()) return moved;
    if (!net->isend(sendComm, &hello_, sizeof(hello_), 0, mr_, &request_).ok()) return failWith("isend of the hello");
    if (request_ == nullptr) return moved;
    moved = true;
  }
  int done = 0;
  if (!net->test(request_, 1, &done, nullptr).ok()) return failWith("sending the hello");
  if (!done) return moved;
  (void)net->deregMr(sendComm, mr_);
  set(kSent);
  return true;
}

NetTransport::~NetTransport() {
  proxy_.remove(this);
  (void)proxy_.call([this] {
    for (Greeting& g : greetings_) (void)net_->closeRecv(g.recvComm);
    for (auto& [key, comm] : arrived_) (void)net_->closeRecv(comm);  // links nobody asked for
    if (listenComm_ != nullptr) (void)net_->closeListen(listenComm_);
    return Status::Ok();
  });
}

Status NetTransport::listen(transport::PeerInfo* me) {
  std::array<uint8_t, abi::kHandleMaxSize> handle{};
  ATOLL_CHECK(proxy_.call([&] { return net_->listen(dev_, handle.data(), &listenComm_); }));
  proxy_.add(this);
  me->flags |= transport::kPeerHasNet;
  std::memset(me->netName, 0, sizeof(me->netName));
  std::strncpy(me->netName, net_->name().c_str(), sizeof(me->netName) - 1);
  me->netHandle = handle;
  return Status::Ok();
}

Result<std::unique_ptr<transport::Connector>> NetTransport::prepare(int peer, int channel) {
  if (!ctx_) return ATOLL_ERROR(ncclInternalError, "net transport: prepare before attach");
  const transport::PeerInfo& p = ctx_->peers[static_cast<size_t>(peer)];
  if (!(p.flags & transport::kPeerHasNet))
    return ATOLL_ERROR(ncclInvalidUsage, "rank %d uses net '%s' but rank %d (%s) uses none: set NCCL_NET_PLUGIN alike on every rank",
                       ctx_->rank, net_->name().c_str(), peer, p.hostname);
  return std::unique_ptr<transport::Connector>(new NetConnector(this, peer, channel));
}

bool NetTransport::greet(Greeting& g, bool* moved) {
  auto drop = [&](const char* why) {
    ATOLL_WARN("rank %d: net %s: closed an accepted connection (%s: %s)", ctx_->rank, net_->name().c_str(), why,
               lastErrorMessage().c_str());
    (void)net_->closeRecv(g.recvComm);
    *moved = true;
    return false;
  };
  if (g.mr == nullptr && !net_->regMr(g.recvComm, g.hello.get(), sizeof(Hello), abi::kPtrHost, &g.mr).ok())
    return drop("regMr");
  if (g.request == nullptr) {
    void* data = g.hello.get();
    const size_t size = sizeof(Hello);
    const int tag = 0;
    if (!net_->irecv(g.recvComm, 1, &data, &size, &tag, &g.mr, &g.request).ok()) return drop("irecv of the hello");
    if (g.request == nullptr) return true;
    *moved = true;
  }
  int done = 0, size = -1;
  if (!net_->test(g.request, 1, &done, &size).ok()) return drop("before its hello");
  if (!done) return true;
  *moved = true;
  (void)net_->deregMr(g.recvComm, g.mr);
  if (size != -1 && size != static_cast<int>(sizeof(Hello))) return drop("a first message that is not a hello");
  if (const char* why = checkHello(*g.hello, *ctx_)) return drop(why);
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = arrived_.try_emplace({g.hello->from, g.hello->channel}, g.recvComm);
  awaited_.erase({g.hello->from, g.hello->channel});
  awaiting_.store(!awaited_.empty(), std::memory_order_release);
  if (!fresh) {
    ATOLL_WARN("rank %d: net %s: a second link from rank %d on channel %d, closed", ctx_->rank,
               net_->name().c_str(), g.hello->from, g.hello->channel);
    (void)net_->closeRecv(g.recvComm);
  }
  cv_.notify_all();
  return false;
}

bool NetTransport::drive() {
  bool moved = false;
  if (awaiting_.load(std::memory_order_acquire) && listenComm_ != nullptr) {
    // No more accepts than links awaited: a blocking accept (nccl-fastsocket) would wait forever.
    while (!acceptedAllAwaited()) {
      void* comm = nullptr;
      if (!net_->accept(listenComm_, &comm).ok()) {
        // The listener is broken for good: connectors waiting for it time out with the reason logged.
        (void)net_->closeListen(listenComm_);
        listenComm_ = nullptr;
        break;
      }
      if (comm == nullptr) break;
      Greeting g;
      g.recvComm = comm;
      greetings_.push_back(std::move(g));
      moved = true;
    }
  }
  for (size_t i = 0; i < greetings_.size();) {
    if (greet(greetings_[i], &moved)) ++i;
    else greetings_.erase(greetings_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return moved;
}

void* NetTransport::waitArrived(int peer, int channel, std::chrono::milliseconds slice) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = arrived_.find({peer, channel});
  if (it == arrived_.end()) {
    cv_.wait_for(lock, slice);
    it = arrived_.find({peer, channel});
    if (it == arrived_.end()) return nullptr;
  }
  void* comm = it->second;
  arrived_.erase(it);
  return comm;
}

NetConnector::~NetConnector() { release(); }

void NetConnector::release() {
  if (waiting_) t_->await(peer_, channel_, false);
  waiting_ = false;
  if (!dial_) return;
  t_->proxy().remove(dial_.get());
  if (void* comm = dial_->sendComm) {
    (void)t_->proxy().call([&] { return t_->net()->closeSend(comm); });
  }
  dial_.reset();
}

Status NetConnector::connect() {
  const transport::Context& ctx = t_->ctx();
  dial_ = std::make_unique<Dial>(t_, ctx.peers[static_cast<size_t>(peer_)].netHandle, makeHello(ctx, peer_, channel_));
  // The dial first: the proxy's next turn then dials before it accepts (see Proxy::add).
  t_->proxy().add(dial_.get());
  t_->await(peer_, channel_, true);
  waiting_ = true;
  return Status::Ok();
}

Result<std::unique_ptr<transport::Connection>> NetConnector::finish() {
  const transport::Context& ctx = t_->ctx();
  const Deadline deadline = Deadline::afterMs(ctx.timeoutMs);
  void* recvComm = nullptr;
  for (;;) {
    if (recvComm == nullptr) recvComm = t_->waitArrived(peer_, channel_, std::chrono::milliseconds(10));
    const int st = dial_->state.load(std::memory_order_acquire);
    if (st == Dial::kFailed) {
      if (recvComm != nullptr) (void)t_->proxy().call([&] { return t_->net()->closeRecv(recvComm); });
      return ATOLL_ERROR(ncclRemoteError, "rank %d: net %s link to rank %d (channel %d): %s", ctx.rank,
                         t_->net()->name().c_str(), peer_, channel_, dial_->why.c_str());
    }
    if (st == Dial::kSent && recvComm != nullptr) break;
    if (aborted(ctx.abort) || deadline.expired()) {
      if (recvComm != nullptr) (void)t_->proxy().call([&] { return t_->net()->closeRecv(recvComm); });
      return ATOLL_ERROR(aborted(ctx.abort) ? ncclInternalError : ncclRemoteError,
                         "rank %d: net %s link to rank %d (channel %d) not made %s (%s)", ctx.rank,
                         t_->net()->name().c_str(), peer_, channel_,
                         aborted(ctx.abort) ? "before the communicator was aborted" : "within the timeout",
                         st == Dial::kSent ? "its hello never came" : "the dial did not complete");
    }
    t_->proxy().kick();
  }
  t_->proxy().remove(dial_.get());
  NetLink::Ends ends;
  ends.net = t_->net();
  ends.proxy = &t_->proxy();
  ends.sendComm = std::exchange(dial_->sendComm, nullptr);
  ends.recvComm = recvComm;
  ends.maxMessage = t_->net()->devices()[static_cast<size_t>(t_->dev())].maxP2pBytes;
  const transport::PeerInfo& p = ctx.peers[static_cast<size_t>(peer_)];
  ends.peerWhere = "pid " + std::to_string(p.pid) + " on host " + p.hostname;
  release();
  ATOLL_ASSIGN_OR_RETURN(std::unique_ptr<NetLink> link, NetLink::create(ends, ctx.rank, peer_, channel_, ctx.bufferBytes));
  return std::unique_ptr<transport::Connection>(std::move(link));
}

}  // namespace

Hello makeHello(const transport::Context& ctx, int to, int channel) {
  Hello h{};
  h.magic = kHelloMagic;
  h.version = kHelloVersion;
  h.commHash = ctx.commHash;
  h.from = ctx.rank;
  h.to = to;
  h.channel = channel;
  const Digest d = helloProof(ctx.secret, h);
  std::memcpy(h.proof, d.data(), sizeof(h.proof));
  return h;
}

const char* checkHello(const Hello& h, const transport::Context& ctx) {
  if (h.magic != kHelloMagic) return "not an Atoll net hello";
  if (h.version != kHelloVersion) return "a hello of another Atoll version";
  if (h.commHash != ctx.commHash) return "a hello for another communicator";
  if (h.to != ctx.rank) return "a hello for another rank";
  if (h.from < 0 || h.from >= ctx.nranks || h.from == ctx.rank || h.channel < 0 || h.zero != 0) return "a malformed hello";
  const Digest d = helloProof(ctx.secret, h);
  if (!constantTimeEqual(d, std::span<const uint8_t>(h.proof, sizeof(h.proof)))) return "a hello without the communicator's proof";
  return nullptr;
}

Result<std::unique_ptr<transport::Transport>> createNetTransport(PluginNet* net, int dev, transport::PeerInfo* me) {
  if (dev < 0 || static_cast<size_t>(dev) >= net->devices().size())
    return ATOLL_ERROR(ncclInvalidArgument, "net %s has no device %d", net->name().c_str(), dev);
  auto t = std::make_unique<NetTransport>(net, dev);
  ATOLL_CHECK(t->listen(me));
  return std::unique_ptr<transport::Transport>(std::move(t));
}

}  // namespace atl::net
