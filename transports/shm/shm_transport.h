// Shared-memory transport: two SPSC rings per (peer, channel), one per direction.
// Large messages may skip the rings' copies: see shm_direct.h (single copy, offers).
//
// Why one ring per direction rather than one shared buffer: each ring then has a single writer per
// counter, so no locks and no read-modify-write atomics are needed, and full-duplex traffic never
// contends. Why the receiver owns the ring: prepare() can create it before the barrier without
// depending on the peer, and finish() (which may wait) only has to attach to the peer's ring, so
// the three-phase setup cannot deadlock whatever order ranks finish in.
//
// Views are whole 8-byte words of the stream: peek() withholds a trailing partial word (the engine
// pads every message to 8 bytes, so nothing is withheld for long), and the ring capacity is a power
// of two, so the ring end never splits a word either.
//
// Dead peers: an orderly close sets a flag in the header; a crashed peer is noticed by asking the
// kernel whether it still holds its liveness lock (shm_ring.h), at most every kProbePeriod of
// idling, so the hot path stays a pair of atomic loads. Both ends watch the same ring, the one the
// lower rank receives on, and let go of the other ring's file: one descriptor per link end. Either way the reader first drains what
// the peer managed to write, then gets ncclRemoteError.
#pragma once

#include <chrono>
#include <memory>

#include "transports/shm/shm_direct.h"
#include "transports/shm/shm_peer_memory.h"
#include "transports/shm/shm_peer_pool.h"
#include "transports/shm/shm_ring.h"
#include "transports/transport.h"

namespace atl::transport::shm {

class ShmConnection final : public Connection {
 public:
  /// The smallest messages this end lets its peer offer (shm_direct.h): from pooled memory (or
  /// any, in one process), and from other memory through process_vm_readv; 0: never.
  struct DirectMins {
    size_t pooled = 0;
    size_t cma = 0;
  };
  ShmConnection(int rank, int peer, int channel, std::string peerHost, Ring sendRing, Ring recvRing,
                DirectMins wanted);
  ~ShmConnection() override;

  Result<size_t> send(const void* data, size_t n) override;
  Result<std::span<const std::byte>> peek() override;
  void consume(size_t n) override;
  std::string describe() const override;
  size_t bufferBytes() const override { return send_.capacity() + recv_.capacity() + (bounce_ ? kBounceBytes : 0); }
  Status settle(Deadline deadline, const AbortFlag* abort) override;
  void shutdown() override;

  // Single copy (shm_direct.h, implemented in shm_direct.cc).
  Result<Offer> offer(const void* data, size_t n) override;
  Result<bool> offerTaken() override;
  Result<Offer> incoming(size_t n) override;
  Result<size_t> readOffered(void* dst, size_t at, size_t n) override;
  Result<std::span<const std::byte>> viewOffered(size_t at, size_t n) override;
  Status finishOffered() override;

 private:
  // Idle time between liveness probes. Time, not a poll count: on an oversubscribed host (8 ranks
  // on 2 cores) one idle poll may yield for milliseconds, so counts gave anything from 1 ms to 1 s.
  static constexpr auto kProbePeriod = std::chrono::milliseconds(5);
  // Idle polls between clock reads, so an idle spin costs a clock read only now and then.
  static constexpr uint32_t kClockEvery = 64;
  /// Whether an idle end should probe its peer now (counts idle polls in *idle).
  bool probeDue(uint32_t* idle);
  /// Whether the peer is gone: it closed `ring`, or (when a probe is due) its process exited.
  bool peerGone(const Ring& ring, uint32_t* idle);
  const Ring& watched() const { return rank_ < peer_ ? recv_ : send_; }
  /// Receiver: probes the sender's memory once and publishes the offer threshold on recv_.
  void decideDirect();
  /// Receiver: where the current offer's bytes are, once its descriptor is read.
  Status locateOffer(const uint64_t* words);
  /// Sender: writes n words at the ring head if there is room; false otherwise.
  bool writeWords(const uint64_t* words, size_t n);
  /// Receiver: reads n words at the ring tail without consuming them, if they have arrived.
  bool peekWords(uint64_t* words, size_t n);
  Status checkOfferRange(size_t at, size_t n) const;
  Status peerGoneError(const Ring& ring, const char* doing) const;
  /// Lowers the engine's gate (Connection::offerFloor) to what both rings allow, once both are known.
  void updateOfferFloor();
  /// Sender: mirrors the stream bytes [pos, pos + n) beside the head (RingHeader::inlineWords).
  void mirrorInline(const void* data, size_t n, uint64_t pos);
  /// Receiver: the whole words [recvTail_, end) from the mirror, copied out, if it holds them all.
  std::span<const std::byte> peekInline(uint64_t end);

  int rank_, peer_, channel_;
  std::string peerHost_;  // for error messages
  Ring send_, recv_;
  uint64_t sendHead_ = 0;    // our copy of send_.head (we are its only writer)
  uint64_t sendTail_ = 0;    // last tail seen; refreshed only when the ring looks full
  uint64_t recvTail_ = 0;    // our copy of recv_.tail
  uint64_t recvHead_ = 0;    // last head seen
  uint32_t sendIdle_ = 0, recvIdle_ = 0;
  // The mirror of small messages (RingHeader::inlineWords): our side as its only writer, and the
  // copy a reader hands out (stable until the next peek, whatever the writer does meanwhile).
  uint64_t inlineStart_ = 0, inlineSeq_ = 0;
  uint64_t inlineShadow_[kInlineWords] = {};
  uint64_t inlineCopy_[kInlineWords + 1] = {};  // a view starts at the stream position's offset in a word
  std::chrono::steady_clock::time_point nextProbe_{};
  // Single copy: our side as sender, then as receiver.
  uint64_t headersSent_ = 0, offersMade_ = 0;
  const void* offeredData_ = nullptr;  // the last offer's buffer (names its edge for TSan)
  uint64_t sendFloor_ = 0, recvFloor_ = 0;  // min of each ring's thresholds; 0 until published
  DirectMins wanted_;
  bool directDecided_ = false;
  PeerMemory sender_ = PeerMemory::Unreadable;  // whether process_vm_readv reads the peer
  PeerPool peerPool_;                           // the peer's pool regions we mapped
  uint64_t headersRead_ = 0, offersRead_ = 0;
  size_t offerBytes_ = 0;                  // length of the offer being read
  bool haveOffer_ = false;                 // its descriptor is taken
  const std::byte* offerLocal_ = nullptr;  // its bytes, readable here; null: through process_vm_readv
  const std::byte* offerRemote_ = nullptr; // its bytes in the sender's address space
  std::unique_ptr<std::byte[]> bounce_;    // kBounceBytes, allocated at the first CMA reduce
};

class ShmTransport final : public Transport {
 public:
  const char* name() const override { return "SHM"; }
  using Transport::attach;
  Status attach(std::shared_ptr<const Context> ctx) override;
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override;
  Result<std::unique_ptr<Connector>> prepare(int peer, int channel) override;

 private:
  std::shared_ptr<const Context> ctx_;
  bool attached_ = false;
};

}  // namespace atl::transport::shm
