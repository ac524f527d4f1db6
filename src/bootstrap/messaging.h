// The rank side after rendezvous: peer table plus authenticated point-to-point messages. A listener
// thread accepts, authenticates and queues incoming messages, so send() never waits for the peer
// to be inside recv() (two ranks may send to each other first without deadlocking).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/socket.h"
#include "bootstrap/bootstrap.h"
#include "base/handshake_server.h"

namespace atl::bootstrap {

/// Tags at or above this value are used by allGather/barrier.
constexpr uint32_t kReservedTagBase = 0xFFFFFF00u;

class BootstrapImpl final : public Bootstrap {
 public:
  /// `addrs` holds n entries, of which at least this rank's Bruck partners are valid.
  BootstrapImpl(int rank, int nranks, std::vector<net::SockAddr> addrs, const Secret& secret, uint64_t commHash,
                const AbortFlag* abort, int64_t timeoutMs);
  /// Starts the listener thread on the socket this rank advertised at rendezvous.
  Status start(net::Fd listenFd);
  /// Gathers every rank's listen address and info (after start()); `rootMessages` were sent to roots.
  Status gatherTable(const net::SockAddr& myAddr, std::span<const std::byte> myInfo, int rootMessages);
  ~BootstrapImpl() override;

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  std::span<const std::byte> peerInfo(int r) const override;
  const Secret& secret() const override { return secret_; }
  uint64_t commHash() const override { return commHash_; }

  Status send(int peer, uint32_t tag, std::span<const std::byte> data) override;
  Status recv(int peer, uint32_t tag, std::span<std::byte> data) override;
  Status allGather(std::span<std::byte> data, size_t perRank) override;
  Status barrier() override;
  Status sendWithin(int peer, uint32_t tag, std::span<const std::byte> data, Deadline deadline) override;
  Status sendUntil(int peer, uint32_t tag, std::span<const std::byte> data, Deadline deadline) override;
  std::optional<std::vector<std::byte>> tryRecv(int peer, uint32_t tag, int64_t waitMs, int* from = nullptr) override;
  uint64_t messagesSent() const override { return sent_.load(std::memory_order_relaxed); }
  net::SockAddr listenAddress() const override { return addrs_[static_cast<size_t>(rank_)]; }

 private:
  struct Message {
    int from;
    uint32_t tag;
    std::vector<uint8_t> data;
  };

  std::optional<size_t> checkHeader(const net::HandshakeServer::Conn& c, std::string* why) const;
  void onMessage(net::HandshakeServer::Conn&& c);
  void enqueue(Message m);
  Status sendTo(int peer, uint32_t tag, std::span<const std::byte> data) {
    return sendTo(peer, tag, data, opDeadline(), abort_, net::ConnectRetry::UntilDeadline);
  }
  Status sendTo(int peer, uint32_t tag, std::span<const std::byte> data, Deadline deadline, const AbortFlag* abort,
                net::ConnectRetry retry);
  Status recvFrom(int peer, uint32_t tag, std::span<std::byte> data);
  /// All-gather of n slots of `perRank` bytes in ceil(log2 n) rounds (Bruck).
  Status bruck(std::span<std::byte> data, size_t perRank, uint32_t tag);
  Deadline opDeadline() const { return Deadline::afterMs(timeoutMs_); }

  const int rank_;
  const int nranks_;
  std::vector<net::SockAddr> addrs_;  // complete once gatherTable() returned
  std::vector<std::byte> infos_;
  size_t infoSize_ = 0;
  std::atomic<uint64_t> sent_{0};
  const Secret secret_;
  const uint64_t commHash_;
  const AbortFlag* abort_;
  const int64_t timeoutMs_;

  std::unique_ptr<net::HandshakeServer> server_;  // touched only by the listener thread once started
  std::thread listener_;
  std::atomic<bool> stop_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Message> unexpected_;
};

}  // namespace atl::bootstrap
