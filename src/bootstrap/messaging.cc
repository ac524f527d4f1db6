#include "bootstrap/messaging.h"

#include "bootstrap/wire_check.h"

#include <algorithm>
#include <cstring>

#include "base/debug.h"

namespace atl::bootstrap {
namespace {
constexpr uint32_t kAllGatherTag = kReservedTagBase + 1;
constexpr uint32_t kTableTag = kReservedTagBase + 2;
constexpr uint32_t kBarrierTagBase = kReservedTagBase + 0x40;  // + round (< 32)
constexpr int kListenerSliceMs = 50;
}  // namespace

BootstrapImpl::BootstrapImpl(int rank, int nranks, std::vector<net::SockAddr> addrs, const Secret& secret,
                             uint64_t commHash, const AbortFlag* abort, int64_t timeoutMs)
    : rank_(rank),
      nranks_(nranks),
      addrs_(std::move(addrs)),
      secret_(secret),
      commHash_(commHash),
      abort_(abort),
      timeoutMs_(timeoutMs) {}

Status BootstrapImpl::start(net::Fd listenFd) {
  int bodyTimeout = timeoutMs_ > 0 ? static_cast<int>(std::min<int64_t>(timeoutMs_, 1 << 30)) : 1 << 30;
  net::HandshakeServer::Options opt;
  opt.name = "bootstrap rank " + std::to_string(rank_);
  opt.headerSize = sizeof(wire::MsgHeader);
  opt.headerTimeoutMs = wire::kHandshakeTimeoutMs;
  opt.bodyTimeoutMs = bodyTimeout;
  server_ = std::make_unique<net::HandshakeServer>(
      std::move(listenFd), std::move(opt),
      [this](const net::HandshakeServer::Conn& c, std::string* why) { return checkHeader(c, why); },
      [this](net::HandshakeServer::Conn&& c) { onMessage(std::move(c)); });
  try {
    listener_ = std::thread([this] {
      log::setThreadRank(rank_);
      while (!stop_.load(std::memory_order_acquire)) server_->pump(kListenerSliceMs);
      server_->dropAll();
    });
  } catch (const std::system_error& e) {
    return ATOLL_ERROR(ncclSystemError, "cannot start the bootstrap listener thread: %s", e.what());
  }
  return Status::Ok();
}

BootstrapImpl::~BootstrapImpl() {
  stop_.store(true, std::memory_order_release);
  if (listener_.joinable()) listener_.join();
}

std::span<const std::byte> BootstrapImpl::peerInfo(int r) const {
  if (r < 0 || r >= nranks_) return {};
  return {infos_.data() + static_cast<size_t>(r) * infoSize_, infoSize_};
}

std::optional<size_t> BootstrapImpl::checkHeader(const net::HandshakeServer::Conn& c, std::string* why) const {
  auto len = wire::checkMsgHeader(c.header, secret_, c.nonce, nranks_, why);
  if (!len) return std::nullopt;
  return *len + wire::kMacBytes;  // the payload, then its MAC
}

void BootstrapImpl::onMessage(net::HandshakeServer::Conn&& c) {
  wire::MsgHeader h;
  std::memcpy(&h, c.header.data(), sizeof(h));
  if (!wire::takeBodyMac(secret_, wire::kMacMessage, c.nonce, c.header, c.body)) {
    ATOLL_WARN("bootstrap rank %d: rejected a message from %s claiming rank %d, tag %u: its payload failed "
               "authentication (altered in transit?)", rank_, c.peer.c_str(), h.from, h.tag);
    uint8_t nak = wire::kNak;
    (void)::send(c.fd.get(), &nak, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    return;
  }
  // Ack before queueing: once queued, recv() may return and this process exit, and the sender must
  // not see that as a lost message. Order per (peer, tag) still holds: this thread queues the
  // message before it reads the sender's next connection.
  uint8_t ack = wire::kAck;
  (void)::send(c.fd.get(), &ack, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  enqueue({h.from, h.tag, std::move(c.body)});
}

void BootstrapImpl::enqueue(Message m) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    unexpected_.push_back(std::move(m));
  }
  cv_.notify_all();
}

Status BootstrapImpl::send(int peer, uint32_t tag, std::span<const std::byte> data) {
  if (tag >= kReservedTagBase)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap send: tag 0x%x is reserved", tag);
  return sendTo(peer, tag, data);
}

Status BootstrapImpl::recv(int peer, uint32_t tag, std::span<std::byte> data) {
  if (tag >= kReservedTagBase)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap recv: tag 0x%x is reserved", tag);
  return recvFrom(peer, tag, data);
}

Status BootstrapImpl::sendWithin(int peer, uint32_t tag, std::span<const std::byte> data, Deadline deadline) {
  if (tag >= kReservedTagBase)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap send: tag 0x%x is reserved", tag);
  return sendTo(peer, tag, data, deadline, nullptr, net::ConnectRetry::Never);
}

Status BootstrapImpl::sendUntil(int peer, uint32_t tag, std::span<const std::byte> data, Deadline deadline) {
  if (tag >= kReservedTagBase)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap send: tag 0x%x is reserved", tag);
  return sendTo(peer, tag, data, deadline, abort_, net::ConnectRetry::Never);
}

std::optional<std::vector<std::byte>> BootstrapImpl::tryRecv(int peer, uint32_t tag, int64_t waitMs, int* from) {
  const auto until = Clock::now() + std::chrono::milliseconds(std::max<int64_t>(waitMs, 0));
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
      if ((peer >= 0 && it->from != peer) || it->tag != tag) continue;
      auto* p = reinterpret_cast<const std::byte*>(it->data.data());
      std::vector<std::byte> out(p, p + it->data.size());
      if (from != nullptr) *from = it->from;
      unexpected_.erase(it);
      return out;
    }
    if (Clock::now() >= until) return std::nullopt;
    cv_.wait_until(lock, until);
  }
}

Status BootstrapImpl::sendTo(int peer, uint32_t tag, std::span<const std::byte> data, Deadline deadline,
                             const AbortFlag* abort, net::ConnectRetry retry) {
  if (peer < 0 || peer >= nranks_)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap send: peer %d out of range [0,%d)", peer, nranks_);
  if (data.size() > wire::kMaxMessageBytes)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap send: %zu bytes exceeds the %llu byte limit", data.size(),
                       static_cast<unsigned long long>(wire::kMaxMessageBytes));
  if (peer == rank_) {
    auto* p = reinterpret_cast<const uint8_t*>(data.data());
    enqueue({rank_, tag, std::vector<uint8_t>(p, p + data.size())});
    return Status::Ok();
  }
  const net::SockAddr& addr = addrs_[static_cast<size_t>(peer)];
  if (!addr.valid())
    return ATOLL_ERROR(ncclInternalError, "bootstrap send: rank %d does not know rank %d's address yet", rank_, peer);
  sent_.fetch_add(1, std::memory_order_relaxed);
  ATOLL_ASSIGN_OR_RETURN(net::Fd fd, net::connectTo(addr, deadline, abort, retry));
  wire::Nonce nonce;
  ATOLL_CHECK(net::recvAll(fd.get(), nonce.data(), nonce.size(), deadline, abort));
  wire::MsgHeader h{};
  h.magic = wire::kMsgMagic;
  h.from = rank_;
  h.tag = tag;
  h.version = wire::kVersion;
  h.len = data.size();
  Digest proof = wire::msgProof(secret_, nonce, h);
  std::memcpy(h.proof, proof.data(), proof.size());
  const auto* payload = reinterpret_cast<const uint8_t*>(data.data());
  const Digest mac = wire::bodyMac(secret_, wire::kMacMessage, nonce, {reinterpret_cast<const uint8_t*>(&h), sizeof(h)},
                                   {payload, data.size()});
  ATOLL_CHECK(net::sendAll(fd.get(), &h, sizeof(h), deadline, abort));
  ATOLL_CHECK(net::sendAll(fd.get(), data.data(), data.size(), deadline, abort));
  ATOLL_CHECK(net::sendAll(fd.get(), mac.data(), mac.size(), deadline, abort));
  uint8_t ack = 0;
  Status s = net::recvAll(fd.get(), &ack, 1, deadline, abort);
  if (s.ok() && ack == wire::kNak)
    return ATOLL_ERROR(ncclSystemError,
                       "bootstrap send to rank %d (%s) tag %u was rejected: the message failed authentication on "
                       "the way (altered in transit?)", peer, addr.toString().c_str(), tag);
  if (!s.ok() || ack != wire::kAck)
    return ATOLL_ERROR(s.ok() ? ncclRemoteError : s.code(), "bootstrap send to rank %d (%s) tag %u was not acknowledged",
                       peer, addr.toString().c_str(), tag);
  return Status::Ok();
}

Status BootstrapImpl::recvFrom(int peer, uint32_t tag, std::span<std::byte> data) {
  if (peer < 0 || peer >= nranks_)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap recv: peer %d out of range [0,%d)", peer, nranks_);
  Deadline deadline = opDeadline();
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
      if (it->from != peer || it->tag != tag) continue;
      Message m = std::move(*it);
      unexpected_.erase(it);
      lock.unlock();
      if (m.data.size() != data.size())
        return ATOLL_ERROR(ncclInvalidUsage, "bootstrap recv from rank %d tag %u: expected %zu bytes, got %zu", peer,
                           tag, data.size(), m.data.size());
      if (!m.data.empty()) std::memcpy(data.data(), m.data.data(), m.data.size());
      return Status::Ok();
    }
    if (aborted(abort_)) return ATOLL_ERROR(ncclSystemError, "bootstrap recv from rank %d tag %u aborted", peer, tag);
    if (deadline.expired())
      return ATOLL_ERROR(ncclSystemError, "bootstrap recv from rank %d tag %u timed out after %lld ms", peer, tag,
                         static_cast<long long>(timeoutMs_));
    cv_.wait_for(lock, std::chrono::milliseconds(deadline.remainingMs(100)));
  }
}

Status BootstrapImpl::gatherTable(const net::SockAddr& myAddr, std::span<const std::byte> myInfo, int rootMessages) {
  sent_.fetch_add(static_cast<uint64_t>(rootMessages), std::memory_order_relaxed);
  // One slot per rank: its listen address, then its info.
  const size_t slot = sizeof(net::PackedAddr) + myInfo.size();
  std::vector<std::byte> all(slot * static_cast<size_t>(nranks_));
  net::PackedAddr packed = net::pack(myAddr);
  std::byte* mine = all.data() + slot * static_cast<size_t>(rank_);
  std::memcpy(mine, &packed, sizeof(packed));
  if (!myInfo.empty()) std::memcpy(mine + sizeof(packed), myInfo.data(), myInfo.size());
  ATOLL_CHECK(bruck(all, slot, kTableTag));
  infoSize_ = myInfo.size();
  infos_.resize(infoSize_ * static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) {
    const std::byte* at = all.data() + slot * static_cast<size_t>(r);
    std::memcpy(&packed, at, sizeof(packed));
    addrs_[static_cast<size_t>(r)] = net::unpack(packed);
    if (infoSize_ > 0) std::memcpy(infos_.data() + infoSize_ * static_cast<size_t>(r), at + sizeof(packed), infoSize_);
  }
  return Status::Ok();
}

Status BootstrapImpl::bruck(std::span<std::byte> data, size_t perRank, uint32_t tag) {
  // Bruck: `have` holds the slots of ranks rank, rank+1, ... (mod n) in that order. Round j sends
  // the first min(2^j, n - 2^j) of them to rank - 2^j and appends as many from rank + 2^j, so
  // ceil(log2 n) rounds fill all n, each rank sending to the same ceil(log2 n) partners (the ones
  // the root told it about, bootstrap.cc), and n - 1 slots in all.
  const size_t n = static_cast<size_t>(nranks_);
  std::vector<std::byte> have(n * perRank);
  std::memcpy(have.data(), data.data() + static_cast<size_t>(rank_) * perRank, perRank);
  for (size_t dist = 1; dist < n; dist <<= 1) {
    const size_t blocks = std::min(dist, n - dist);
    const int to = static_cast<int>((static_cast<size_t>(rank_) + n - dist) % n);
    const int from = static_cast<int>((static_cast<size_t>(rank_) + dist) % n);
    ATOLL_CHECK(sendTo(to, tag, std::span<const std::byte>(have.data(), blocks * perRank)));
    ATOLL_CHECK(recvFrom(from, tag, std::span<std::byte>(have.data() + dist * perRank, blocks * perRank)));
  }
  for (size_t i = 0; i < n; ++i)
    std::memcpy(data.data() + ((static_cast<size_t>(rank_) + i) % n) * perRank, have.data() + i * perRank, perRank);
  return Status::Ok();
}

Status BootstrapImpl::allGather(std::span<std::byte> data, size_t perRank) {
  if (data.size() < perRank * static_cast<size_t>(nranks_))
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap allGather: buffer of %zu bytes < %d x %zu", data.size(),
                       nranks_, perRank);
  return bruck(data, perRank, kAllGatherTag);
}

Status BootstrapImpl::barrier() {
  // Dissemination: in round j every rank tells rank + 2^j it has arrived and waits for rank - 2^j;
  // after ceil(log2 n) rounds each rank has heard, through some chain, from every rank.
  const std::byte token{1};
  uint32_t round = 0;
  for (int64_t dist = 1; dist < nranks_; dist <<= 1, ++round) {
    const int to = static_cast<int>((rank_ + dist) % nranks_);
    const int from = static_cast<int>((rank_ - dist % nranks_ + nranks_) % nranks_);
    ATOLL_CHECK(sendTo(to, kBarrierTagBase + round, std::span<const std::byte>(&token, 1)));
    std::byte got{};
    ATOLL_CHECK(recvFrom(from, kBarrierTagBase + round, std::span<std::byte>(&got, 1)));
  }
  return Status::Ok();
}

}  // namespace atl::bootstrap
