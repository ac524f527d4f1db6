#include "transports/shm/shm_transport.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

#include "base/copy_bytes.h"
#include "base/debug.h"

namespace atl::transport::shm {
namespace {

class ShmConnector final : public Connector {
 public:
  ShmConnector(const Context& ctx, int peer, int channel, Ring recvRing)
      : rank_(ctx.rank),
        peer_(peer),
        channel_(channel),
        peerHost_(ctx.peers[static_cast<size_t>(peer)].hostname,
                  strnlen(ctx.peers[static_cast<size_t>(peer)].hostname, sizeof ctx.peers[0].hostname)),
        commHash_(ctx.commHash),
        directMin_{ctx.shmDirectMinBytes, ctx.shmCmaMinBytes},
        timeoutMs_(ctx.timeoutMs),
        abort_(ctx.abort),
        recv_(std::move(recvRing)) {}

  Status connect() override { return Status::Ok(); }

  Result<std::unique_ptr<Connection>> finish() override {
    if (recv_.header() == nullptr) return ATOLL_ERROR(ncclInternalError, "shm connector finished twice");
    ATOLL_ASSIGN_OR_RETURN(Ring send,
                           Ring::attach(ringName(commHash_, rank_, peer_, channel_), Deadline::afterMs(timeoutMs_),
                                        abort_));
    ATOLL_INFO(log::kShm, "shm: rank %d <-> %d channel %d connected (%llu-byte rings)", rank_, peer_, channel_,
               static_cast<unsigned long long>(send.capacity()));
    return std::unique_ptr<Connection>(
        std::make_unique<ShmConnection>(rank_, peer_, channel_, peerHost_, std::move(send), std::move(recv_), directMin_));
  }

 private:
  int rank_, peer_, channel_;
  std::string peerHost_;
  uint64_t commHash_;
  ShmConnection::DirectMins directMin_;
  int timeoutMs_;
  const AbortFlag* abort_;
  Ring recv_;
};

}  // namespace

ShmConnection::ShmConnection(int rank, int peer, int channel, std::string peerHost, Ring sendRing, Ring recvRing,
                             DirectMins wanted)
    : rank_(rank),
      peer_(peer),
      channel_(channel),
      peerHost_(std::move(peerHost)),
      send_(std::move(sendRing)),
      recv_(std::move(recvRing)),
      wanted_(wanted) {
  offerFloor_ = 0;  // ask until both ends published their thresholds
  sendHead_ = send_.header()->head.load(std::memory_order_relaxed);
  sendTail_ = send_.header()->tail.load(std::memory_order_acquire);
  inlineStart_ = send_.header()->inlineStart.load(std::memory_order_relaxed);
  inlineSeq_ = send_.header()->inlineSeq.load(std::memory_order_relaxed);
  for (size_t i = 0; i < kInlineWords; ++i)
    inlineShadow_[i] = send_.header()->inlineWords[i].load(std::memory_order_relaxed);
  recvTail_ = recv_.header()->tail.load(std::memory_order_relaxed);
  recvHead_ = recv_.header()->head.load(std::memory_order_acquire);
  (rank_ < peer_ ? send_ : recv_).dropLiveness();
}

ShmConnection::~ShmConnection() { shutdown(); }

void ShmConnection::shutdown() {
  send_.markClosed();
  recv_.markClosed();
}

bool ShmConnection::probeDue(uint32_t* idle) {
  if (++*idle % kClockEvery != 0) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now < nextProbe_) return false;
  nextProbe_ = now + kProbePeriod;
  return true;
}

bool ShmConnection::peerGone(const Ring& ring, uint32_t* idle) {
  return ring.peerClosed() || (probeDue(idle) && watched().peerExited());
}

Result<size_t> ShmConnection::send(const void* data, size_t n) {
  if (n == 0) return size_t{0};
  const uint64_t cap = send_.capacity();
  uint64_t space = cap - (sendHead_ - sendTail_);
  if (space < n) {
    sendTail_ = send_.header()->tail.load(std::memory_order_acquire);
    space = cap - (sendHead_ - sendTail_);
  }
  if (space == 0) {
    // The reader may be gone for good; look only now and then, a full ring is usually just a busy reader.
    if (peerGone(send_, &sendIdle_)) return peerGoneError(send_, "");
    return size_t{0};
  }
  sendIdle_ = 0;
  const size_t len = static_cast<size_t>(std::min<uint64_t>(n, space));
  const size_t off = static_cast<size_t>(sendHead_ & (cap - 1));
  const size_t first = std::min(len, static_cast<size_t>(cap) - off);
  copyBytes(send_.data() + off, data, first);
  if (first < len) copyBytes(send_.data(), static_cast<const std::byte*>(data) + first, len - first);
  mirrorInline(data, len, sendHead_);
  sendHead_ += len;
  send_.header()->head.store(sendHead_, std::memory_order_release);
  return len;
}

void ShmConnection::mirrorInline(const void* data, size_t n, uint64_t pos) {
  constexpr uint64_t kCap = 8 * kInlineWords;
  RingHeader* h = send_.header();
  // Every byte of the window below the head is mirrored, always: a reader trusts the window for
  // any range inside it. A message that fits starts a new window where it begins whenever it
  // would not fit in what is left (a reader still behind the new start reads the ring). A larger
  // one fills what is left of the window, and its reader, whose range then ends past the window,
  // takes it from the ring.
  if (pos + n > inlineStart_ + kCap && n <= kCap) {
    // Odd: the words are changing. No fences (TSan cannot check them): the words and the start
    // are release stores, so a reader whose acquire load sees any of them also sees this odd
    // value when it loads the sequence again.
    h->inlineSeq.store(++inlineSeq_, std::memory_order_relaxed);
    inlineStart_ = pos;
    h->inlineStart.store(pos, std::memory_order_release);
    std::memset(inlineShadow_, 0, sizeof inlineShadow_);
    std::memcpy(inlineShadow_, data, n);
    for (size_t w = 0; w < (n + 7) / 8; ++w) h->inlineWords[w].store(inlineShadow_[w], std::memory_order_release);
    h->inlineSeq.store(++inlineSeq_, std::memory_order_release);
    return;
  }
  // Appending leaves the bytes a reader may be copying as they were, so no sequence bump: a word
  // shared with earlier bytes is rewritten with those bytes unchanged.
  if (pos >= inlineStart_ + kCap) return;  // none of it falls in the window
  const size_t at = static_cast<size_t>(pos - inlineStart_);
  const size_t take = std::min<size_t>(n, kCap - at);
  std::memcpy(reinterpret_cast<std::byte*>(inlineShadow_) + at, data, take);
  for (size_t w = at / 8; w <= (at + take - 1) / 8; ++w)
    h->inlineWords[w].store(inlineShadow_[w], std::memory_order_release);
}

std::span<const std::byte> ShmConnection::peekInline(uint64_t end) {
  constexpr uint64_t kCap = 8 * kInlineWords;
  RingHeader* h = recv_.header();
  const uint64_t seq = h->inlineSeq.load(std::memory_order_acquire);
  const uint64_t start = h->inlineStart.load(std::memory_order_acquire);
  if ((seq & 1) != 0 || recvTail_ < start || end > start + kCap) return {};
  const size_t at = static_cast<size_t>(recvTail_ - start), n = static_cast<size_t>(end - recvTail_);
  const size_t first = at / 8, last = (at + n - 1) / 8;
  uint64_t words[kInlineWords];
  for (size_t w = first; w <= last; ++w) words[w] = h->inlineWords[w].load(std::memory_order_acquire);
  // Loaded after the acquire loads above, so it sees the odd value of any restart they saw part of.
  if (h->inlineSeq.load(std::memory_order_relaxed) != seq) return {};  // a new window began meanwhile
  // Handed out at the stream position's offset within a word, as ring views are: elements stay
  // aligned to their size, which the reduce kernels may assume.
  std::byte* view = reinterpret_cast<std::byte*>(inlineCopy_) + (recvTail_ & 7);
  std::memcpy(view, reinterpret_cast<const std::byte*>(words) + at, n);
  return std::span<const std::byte>(view, n);
}

Result<std::span<const std::byte>> ShmConnection::peek() {
  const uint64_t cap = recv_.capacity();
  recvHead_ = recv_.header()->head.load(std::memory_order_acquire);
  if ((recvHead_ & ~uint64_t{7}) <= recvTail_) {  // no whole word to hand out
    if (peerGone(recv_, &recvIdle_)) {
      // The writer is gone, so head is final: hand out what it wrote before failing.
      recvHead_ = recv_.header()->head.load(std::memory_order_acquire);
      if ((recvHead_ & ~uint64_t{7}) <= recvTail_)
        return peerGoneError(recv_, recvHead_ != recvTail_ ? " (a partial word was left unread)" : "");
    } else {
      return std::span<const std::byte>();
    }
  }
  recvIdle_ = 0;
  if ((recvHead_ & ~uint64_t{7}) - recvTail_ <= 8 * kInlineWords) {
    std::span<const std::byte> mirrored = peekInline(recvHead_ & ~uint64_t{7});
    if (!mirrored.empty()) return mirrored;
  }
  const size_t off = static_cast<size_t>(recvTail_ & (cap - 1));
  uint64_t end = std::min(recvHead_ & ~uint64_t{7}, recvTail_ + (cap - off));
  if (end < recvTail_) end = recvTail_;
  return std::span<const std::byte>(recv_.data() + off, static_cast<size_t>(end - recvTail_));
}

void ShmConnection::consume(size_t n) {
  if (n == 0) return;
  recvTail_ += n;
  recv_.header()->tail.store(recvTail_, std::memory_order_release);
}

Status ShmConnection::settle(Deadline deadline, const AbortFlag* abort) {
  // The peer attaches to the ring we receive on in its own finish(); until it has, tearing our end
  // down would unlink a name it still waits for (it would time out instead of failing at once).
  auto backoff = std::chrono::microseconds(50);
  while (recv_.peerPid() == 0) {
    if (recv_.peerClosed())
      return ATOLL_ERROR(ncclRemoteError, "shm: rank %d: peer rank %d on host %s closed channel %d during setup", rank_,
                         peer_, peerHost_.c_str(), channel_);
    if (aborted(abort)) return ATOLL_ERROR(ncclSystemError, "shm: rank %d: aborted while linking to rank %d", rank_, peer_);
    if (deadline.expired())
      return ATOLL_ERROR(ncclSystemError, "shm: rank %d: rank %d (host %s) did not attach to channel %d in time", rank_,
                         peer_, peerHost_.c_str(), channel_);
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::microseconds(5000));
  }
  decideDirect();
  return Status::Ok();
}

std::string ShmConnection::describe() const {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "shm rank %d <-> %d channel %d", rank_, peer_, channel_);
  return buf;
}

Status ShmTransport::attach(std::shared_ptr<const Context> ctx) {
  if (ctx == nullptr || ctx->nranks <= 0 || ctx->rank < 0 || ctx->rank >= ctx->nranks)
    return ATOLL_ERROR(ncclInvalidArgument, "shm: bad context (rank %d of %d)", ctx ? ctx->rank : -1,
                       ctx ? ctx->nranks : 0);
  ctx_ = std::move(ctx);
  attached_ = true;
  return Status::Ok();
}

bool ShmTransport::canConnect(const PeerInfo& self, const PeerInfo& peer) const {
  return self.hostHash == peer.hostHash;
}

Result<std::unique_ptr<Connector>> ShmTransport::prepare(int peer, int channel) {
  if (!attached_) return ATOLL_ERROR(ncclInternalError, "shm: prepare() before attach()");
  const Context& ctx = *ctx_;
  if (peer < 0 || peer >= ctx.nranks || peer == ctx.rank || channel < 0)
    return ATOLL_ERROR(ncclInvalidArgument, "shm: bad peer %d / channel %d for rank %d of %d", peer, channel,
                       ctx.rank, ctx.nranks);
  ATOLL_ASSIGN_OR_RETURN(Ring recv, Ring::create(ringName(ctx.commHash, peer, ctx.rank, channel), ctx.bufferBytes));
  return std::unique_ptr<Connector>(std::make_unique<ShmConnector>(ctx, peer, channel, std::move(recv)));
}

}  // namespace atl::transport::shm

namespace atl::transport {
std::unique_ptr<Transport> createShmTransport() { return std::make_unique<shm::ShmTransport>(); }
}  // namespace atl::transport
