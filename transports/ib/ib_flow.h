// The ibverbs net's flow control and message layout, kept free of verbs so they are tested
// without a device.
//
// Credits: a sender may RDMA-write only into a buffer the receiver posted. The receiver writes
// each posted receive (address, key, size, tag) into the next slot of the sender's FIFO, a ring of
// kFifoDepth slots in the sender's memory, with a sequence number; the sender takes slots in order
// and only when the sequence it expects is there, so a slot is never read before the receiver's
// write of it completed, nor reused before the sender took it (the receiver posts at most
// kFifoDepth receives ahead of its completions, and a receive completes only after its data came).
//
// Layout: a message goes out as one RDMA write with immediate on every queue pair of the
// connection (several QPs spread a large message over the fabric's paths); the chunks are equal,
// rounded up to `align`, the last ones possibly empty. The immediate carries the whole message's
// size, and a receive is complete once every QP delivered its write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace atl::net::ib {

inline constexpr int kFifoDepth = 32;  // as NCCL_NET_MAX_REQUESTS

/// One posted receive, as the receiver writes it into the sender's FIFO.
struct FifoSlot {
  uint64_t addr;
  uint32_t rkey;
  uint32_t size;
  int32_t tag;
  uint32_t zero;
  uint64_t seq;  // 1-based: 0 is a slot never written
};
static_assert(sizeof(FifoSlot) == 32);

/// Receiver side: where its next receive goes in the sender's FIFO.
class CreditGrant {
 public:
  bool canPost() const { return posted_ - completed_ < kFifoDepth; }
  /// Numbers the next receive: its slot in the FIFO and the sequence that marks it written.
  struct Grant {
    int slot;
    uint64_t seq;
  };
  Grant post() {
    const uint64_t seq = ++posted_;
    return {static_cast<int>((seq - 1) % kFifoDepth), seq};
  }
  /// The oldest outstanding receive completed: its slot may be granted again.
  void complete() { ++completed_; }
  uint64_t outstanding() const { return posted_ - completed_; }

 private:
  uint64_t posted_ = 0, completed_ = 0;
};

/// Sender side: takes the receiver's slots in order.
class FifoReader {
 public:
  /// The next posted receive if its slot has been written (a copy), advancing past it.
  std::optional<FifoSlot> take(const FifoSlot* fifo);
  uint64_t taken() const { return next_; }

 private:
  uint64_t next_ = 0;
};

struct Chunk {
  int qp;
  size_t offset;
  size_t len;
};
/// One chunk per QP covering [0, size): equal, rounded up to `align`, trailing ones possibly empty.
std::vector<Chunk> splitAcrossQps(size_t size, int nqps, size_t align);

/// Receiver side: counts the writes that land for one receive.
class RecvProgress {
 public:
  explicit RecvProgress(int nqps) : left_(nqps) {}
  /// One QP's write arrived, with the message size from its immediate. True once all have.
  bool arrived(uint32_t size) {
    size_ = size;
    return --left_ == 0;
  }
  uint32_t size() const { return size_; }

 private:
  int left_;
  uint32_t size_ = 0;
};

}  // namespace atl::net::ib
