// One link of the net transport: a full-duplex byte stream (transport.h's Connection) over a net
// plugin's send comm to the peer and receive comm from it.
//
// Sending: send() copies into a ring as a record, an 8-byte length and the bytes (padded to 8 in
// the ring), and returns; the proxy (net_proxy.h) isends each record as one message, at most
// kChunks in flight, and frees ring space as the plugin completes them, in order. Records carry
// their own length because plugins may leave a receive's size unset (nccl-fastsocket does). A
// record that would cross the ring's end is preceded by a skip marker the proxy steps over.
// send() takes all it is given or a multiple of 8 bytes, so record boundaries fall on 8-byte
// offsets of the engine's messages (or at their ends) and no element straddles two views.
//
// Receiving: the receive ring is kChunks slots of one chunk each, all posted as irecvs; a completed
// slot holds one record, handed to peek() whole and reposted once the engine consumed it. Plugins
// match a comm's messages in order, so slot order is stream order.
//
// Both rings are registered with the plugin once (regMr), as NCCL registers its staging buffers.
// The engine thread touches only ring memory and atomics; every plugin call is the proxy's.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "transports/net/net_plugin.h"
#include "transports/net/net_proxy.h"
#include "transports/transport.h"

namespace atl::net {

class NetLink final : public transport::Connection, public Driven {
 public:
  static constexpr int kChunks = 8;  // in flight per direction (a plugin allows 32 per comm)
  /// How long closing a link waits for its last bytes to leave.
  static constexpr auto kFlushTimeout = std::chrono::seconds(10);

  struct Ends {
    PluginNet* net = nullptr;
    Proxy* proxy = nullptr;
    void* sendComm = nullptr;
    void* recvComm = nullptr;
    size_t maxMessage = 0;  // the device's maxP2pBytes
    std::string peerWhere;  // "pid P on host H", for errors that name the peer
  };
  /// Registers the rings and starts driving the link; the comms are the link's from now on
  /// (closed by it, also when this fails).
  static Result<std::unique_ptr<NetLink>> create(const Ends& ends, int rank, int peer, int channel, size_t bufferBytes);
  ~NetLink() override;

  Result<size_t> send(const void* data, size_t n) override;
  Result<std::span<const std::byte>> peek() override;
  void consume(size_t n) override;
  std::string describe() const override;
  size_t bufferBytes() const override { return 2 * cap_; }
  void shutdown() override;

  bool drive() override;  // proxy thread

 private:
  NetLink(const Ends& ends, int rank, int peer, int channel, size_t cap);
  Status registerRings();
  void closeComms();
  bool driveSends();
  bool driveRecvs();
  void fail(ncclResult_t code, const std::string& why);
  /// fail() for a plugin call that returned `s`, with the plugin's message.
  void failCall(const char* what, Status s, const std::string& why = {});
  Status error() const;

  Ends ends_;
  int rank_, peer_, channel_;
  size_t cap_;    // bytes per ring, a multiple of 8 * kChunks
  size_t chunk_;  // cap_ / kChunks, at most maxMessage: the largest record, its header included
  std::unique_ptr<std::byte[]> sendRing_, recvRing_;
  void* sendMr_ = nullptr;
  void* recvMr_ = nullptr;

  // Send ring positions (stream bytes): the engine advances head, the proxy posted and done.
  std::atomic<uint64_t> sendHead_{0};
  std::atomic<uint64_t> sendDone_{0};
  uint64_t sendPosted_ = 0;
  static constexpr uint64_t kSkip = ~uint64_t{0};  // a record header: the rest of the ring is unused
  struct InFlight {
    void* request = nullptr;
    uint64_t end = 0;
  };
  InFlight sends_[kChunks];
  uint64_t sendsIssued_ = 0, sendsDone_ = 0;  // proxy: requests in sends_[i % kChunks]

  // Receive slots: the proxy posts and completes them in order; the engine reads and frees them.
  void* recvs_[kChunks] = {};
  size_t recvSize_[kChunks] = {};  // the record's length (its bytes, not its header)
  uint64_t recvPosted_ = 0;                // proxy
  std::atomic<uint64_t> recvArrived_{0};   // proxy writes: slots below it hold data
  std::atomic<uint64_t> recvFreed_{0};     // engine writes: slots below it may be reposted
  uint64_t readSlot_ = 0;                  // engine
  size_t readOff_ = 0;                     // engine

  std::atomic<bool> shut_{false};          // shutdown(): the proxy closes the comms
  std::atomic<int> err_{ncclSuccess};      // set once, after why_
  std::string why_;
};

}  // namespace atl::net
