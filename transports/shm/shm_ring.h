// One single-producer/single-consumer byte ring in POSIX shared memory, one per direction.
//
// Why this shape: the two ends live in different processes, so the ring is the only shared state
// and each counter has exactly one writer (head: producer, tail: consumer). Monotonic 64-bit byte
// counters never wrap in practice, so "full" and "empty" need no extra flag, and acquire/release on
// them is the whole synchronisation protocol. Head and tail sit on their own cache lines so the two
// ends do not false-share while streaming.
//
// Why the receiver creates and the sender unlinks: the receiver can create its ring before the
// rendezvous barrier without waiting for anyone; the sender attaches after it and removes the name
// at once, so after setup nothing is left in /dev/shm even if both processes are killed -9 later
// (the mapping itself lives until both ends unmap it).
//
// Why a record lock for liveness: a peer that dies never sets its "closed" flag, and its pid says
// nothing reliable (a zombie still answers kill(pid, 0); a peer in another pid namespace has a pid
// we cannot name). Each end keeps the ring file open and holds a POSIX read lock on one byte of it
// (receiver byte 0, sender byte 1). The kernel drops it the moment the process exits, reaped or
// not, and any process that shares /dev/shm can ask with F_GETLK whether it is still held. Fork
// children do not inherit it, so a rank's forked workers cannot keep a dead rank "alive". The pid
// stays in the header only for error messages.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/deadline.h"
#include "base/shared_pool.h"
#include "base/status.h"

namespace atl::transport::shm {

/// Process identity of one end of a ring, as stored in the shared header.
struct RingEnd {
  std::atomic<int32_t> pid{0};       // as seen in this end's own pid namespace (for messages)
  std::atomic<uint32_t> closed{0};   // set by this end when it shuts down in an orderly way
  std::atomic<uint64_t> token{0};    // random per process: same token = same process (0: not attached)
  std::atomic<uint64_t> tokenAddr{0};  // where this end's process keeps the token (single-copy probe)
  std::atomic<uint64_t> poolToken{0};  // this end's shared pool (base/shared_pool.h, pool::probe)
  std::atomic<int32_t> poolProbeFd{-1};
};

/// Words of the stream the producer mirrors next to `head`, in the rest of its cache line (see
/// RingHeader::inlineWords).
inline constexpr size_t kInlineWords = 5;

struct alignas(64) RingHeader {
  alignas(64) std::atomic<uint64_t> head{0};  // bytes ever written (producer only)
  // A copy of the latest small messages beside the head, so that a reader polling `head` finds
  // them in the line it just fetched instead of fetching a ring line too: one cache-line transfer
  // per small message rather than two (NCCL's LL protocol puts flags in the data for the same
  // reason). The words hold the stream's bytes [inlineStart, inlineStart + 8 * kInlineWords) up to
  // `head`. The producer appends in place (the bytes below the old head never change) and bumps
  // inlineSeq to odd and back to even around starting a window elsewhere (a seqlock), so a reader
  // whose copy saw one even value throughout has bytes the producer wrote before its head.
  // Only head's line: a second line of mirror is a transfer of its own, after head's, and its
  // restarts touched head's line twice; with it a 64-byte np=2 all-reduce took 0.59 us against
  // 0.48 us from the ring (fast-phase medians, perf/baselines/README.md).
  std::atomic<uint64_t> inlineSeq{0};
  std::atomic<uint64_t> inlineStart{0};
  std::atomic<uint64_t> inlineWords[kInlineWords]{};  // the rest of head's line
  alignas(64) std::atomic<uint64_t> tail{0};  // bytes ever consumed (consumer only)
  alignas(64) std::atomic<uint32_t> ready{0}; // kReadyMagic once the creator filled the header
  uint32_t version = 0;
  uint64_t capacity = 0;                      // data bytes, a power of two
  uint64_t dataOffset = 0;                    // page-aligned offset of the data area
  std::atomic<uint32_t> unlinked{0};          // the attacher removed the name
  RingEnd receiver;                           // creator
  RingEnd sender;                             // attacher
  // Single copy (shm_direct.h), written by the receiver: the smallest message the sender may offer
  // from pooled memory (or any memory, in one process), and from other memory (0: not decided
  // yet, UINT64_MAX: never); how many offers it has finished reading.
  std::atomic<uint64_t> directMin{0};
  std::atomic<uint64_t> cmaMin{0};
  alignas(64) std::atomic<uint64_t> offersTaken{0};
};
static_assert(offsetof(RingHeader, inlineWords) + 8 * kInlineWords == 64 && offsetof(RingHeader, tail) == 64,
              "the mirror must fill the rest of head's line");
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free to work across processes");

/// A mapped ring. Move-only; unmaps (and unlinks the name if it is still ours) on destruction.
class Ring {
 public:
  static constexpr uint64_t kMinCapacity = 64 << 10;

  /// Receiver side: creates, sizes (fails cleanly when /dev/shm is full) and initialises the ring.
  static Result<Ring> create(const std::string& name, size_t requestedBytes);
  /// Sender side: waits for the ring to exist and be initialised, maps it and unlinks the name.
  static Result<Ring> attach(const std::string& name, Deadline deadline, const AbortFlag* abort);

  Ring() = default;
  Ring(Ring&& o) noexcept { *this = std::move(o); }
  Ring& operator=(Ring&& o) noexcept;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  ~Ring();

  RingHeader* header() const { return header_; }
  std::byte* data() const { return data_; }
  uint64_t capacity() const { return capacity_; }
  const std::string& name() const { return name_; }
  bool isCreator() const { return creator_; }

  /// Marks this process's end closed so the other end stops waiting (orderly shutdown).
  void markClosed();
  /// Whether the other end's process has exited: asks the kernel about its liveness lock (one
  /// fcntl call). False when it cannot tell: the peer is this process, or this end let go of
  /// liveness.
  bool peerExited() const;
  /// Closes the file and with it this end's liveness lock, keeping the mapping: a link needs one
  /// ring both ends watch, not two (ShmConnection), and a descriptor per ring end adds up.
  void dropLiveness();
  int peerPid() const { return other().pid.load(std::memory_order_acquire); }
  uint64_t peerToken() const { return other().token.load(std::memory_order_acquire); }
  uint64_t peerTokenAddr() const { return other().tokenAddr.load(std::memory_order_acquire); }
  uint64_t peerPoolToken() const { return other().poolToken.load(std::memory_order_acquire); }
  int peerPoolProbeFd() const { return other().poolProbeFd.load(std::memory_order_acquire); }
  /// This process's token (RingEnd::token); drawn again after fork.
  static uint64_t processToken();
  bool peerClosed() const { return other().closed.load(std::memory_order_acquire) != 0; }

  /// Capacity actually used for a request: a power of two, at least kMinCapacity.
  static uint64_t roundCapacity(size_t requestedBytes);

 private:
  void release();
  RingEnd& self() const { return creator_ ? header_->receiver : header_->sender; }
  RingEnd& other() const { return creator_ ? header_->sender : header_->receiver; }

  std::string name_;
  int fd_ = -1;  // kept open: our liveness lock lives as long as it does
  void* base_ = nullptr;
  size_t mapBytes_ = 0;
  RingHeader* header_ = nullptr;
  std::byte* data_ = nullptr;
  uint64_t capacity_ = 0;
  bool creator_ = false;
  std::shared_ptr<const pool::Probe> probe_;  // published in our RingEnd: kept open while we are
};

/// Name of the ring that carries rank `from` -> rank `to` on `channel` of communicator `commHash`.
std::string ringName(uint64_t commHash, int from, int to, int channel);

}  // namespace atl::transport::shm
