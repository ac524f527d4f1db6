// ShmConnection's single copy (protocol in shm_direct.h).
#include <algorithm>
#include <cstring>

#include "base/copy_bytes.h"
#include "base/debug.h"
#include "base/shared_pool.h"
#include "base/tsan.h"
#include "transports/shm/shm_direct.h"
#include "transports/shm/shm_transport.h"

namespace atl::transport::shm {
namespace {
uint64_t thresholdOf(size_t wanted) { return wanted == 0 ? kNeverDirect : std::max<uint64_t>(wanted, kOfferBytes); }
}  // namespace

void ShmConnection::decideDirect() {
  if (directDecided_ || recv_.peerPid() == 0) return;
  directDecided_ = true;
  uint64_t pooled = kNeverDirect, cma = kNeverDirect;
  std::string why;
  // The CMA probe is a system call per link: only when CMA is wanted (the token tells one process).
  sender_ = recv_.peerToken() == Ring::processToken() ? PeerMemory::SameProcess
            : wanted_.cma > 0 ? probePeerMemory(recv_.peerPid(), recv_.peerToken(), recv_.peerTokenAddr(), &why)
                              : PeerMemory::Unreadable;
  if (sender_ == PeerMemory::SameProcess) {
    pooled = thresholdOf(wanted_.pooled);  // every buffer is ours to read
  } else {
    if (sender_ == PeerMemory::Readable) cma = thresholdOf(wanted_.cma);
    else if (wanted_.cma > 0)
      ATOLL_INFO(log::kShm, "shm: rank %d cannot read rank %d through process_vm_readv (channel %d): %s", rank_, peer_,
                 channel_, why.c_str());
    if (wanted_.pooled > 0) {
      if (peerPool_.canMap(recv_.peerPid(), recv_.peerPoolProbeFd(), recv_.peerPoolToken(), &why))
        pooled = thresholdOf(wanted_.pooled);
      else
        ATOLL_INFO(log::kShm, "shm: rank %d cannot map rank %d's ncclMemAlloc memory, so channel %d copies it through the ring: %s",
                   rank_, peer_, channel_, why.c_str());
    }
  }
  recv_.header()->cmaMin.store(cma, std::memory_order_relaxed);
  recv_.header()->directMin.store(pooled, std::memory_order_release);
  recvFloor_ = std::min(pooled, cma);
  updateOfferFloor();
}

void ShmConnection::updateOfferFloor() {
  if (sendFloor_ == 0 || recvFloor_ == 0) return;
  const uint64_t floor = std::min(sendFloor_, recvFloor_);
  offerFloor_ = floor >= SIZE_MAX ? SIZE_MAX : static_cast<size_t>(floor);
}

Status ShmConnection::peerGoneError(const Ring& ring, const char* doing) const {
  return ATOLL_ERROR(ncclRemoteError, "shm: rank %d: peer rank %d (pid %d on host %s) %s channel %d%s", rank_, peer_,
                     ring.peerPid(), peerHost_.c_str(), ring.peerClosed() ? "closed" : "exited without closing",
                     channel_, doing);
}

bool ShmConnection::writeWords(const uint64_t* words, size_t n) {
  const uint64_t cap = send_.capacity();
  if (cap - (sendHead_ - sendTail_) < 8 * n) {
    sendTail_ = send_.header()->tail.load(std::memory_order_acquire);
    if (cap - (sendHead_ - sendTail_) < 8 * n) return false;
  }
  // Word by word: the capacity is a multiple of 8, so the ring's end falls only between words.
  for (size_t i = 0; i < n; ++i) std::memcpy(send_.data() + ((sendHead_ + 8 * i) & (cap - 1)), &words[i], 8);
  mirrorInline(words, 8 * n, sendHead_);
  sendHead_ += 8 * n;
  send_.header()->head.store(sendHead_, std::memory_order_release);
  return true;
}

bool ShmConnection::peekWords(uint64_t* words, size_t n) {
  recvHead_ = recv_.header()->head.load(std::memory_order_acquire);
  if (recvHead_ - recvTail_ < 8 * n) return false;
  const uint64_t cap = recv_.capacity();
  for (size_t i = 0; i < n; ++i) std::memcpy(&words[i], recv_.data() + ((recvTail_ + 8 * i) & (cap - 1)), 8);
  return true;
}

Result<Connection::Offer> ShmConnection::offer(const void* data, size_t n) {
  const uint64_t pooledMin = send_.header()->directMin.load(std::memory_order_acquire);
  if (pooledMin == 0) {  // the peer has not probed us yet (it does in settle)
    if (peerGone(send_, &sendIdle_)) return peerGoneError(send_, " before deciding how to take large messages");
    return Offer::Wait;
  }
  const uint64_t cmaMin = send_.header()->cmaMin.load(std::memory_order_relaxed);
  if (sendFloor_ == 0) {
    sendFloor_ = std::min(pooledMin, cmaMin);
    updateOfferFloor();
  }
  if (n < std::min(pooledMin, cmaMin)) return Offer::Stream;
  uint64_t words[kOfferWords] = {};
  const bool sameProcess = send_.peerToken() == Ring::processToken();
  std::optional<pool::Region> region;
  if (!sameProcess && n >= pooledMin) region = pool::find(data, n);
  const bool offered = (sameProcess || region) ? n >= pooledMin : n >= cmaMin;
  words[kWordHeader] = (offered ? kOfferMagic : kStreamMagic) + headersSent_ + 1;
  if (offered) {
    words[kWordAddr] = reinterpret_cast<uintptr_t>(data);
    words[kWordLength] = n;
    if (region) {
      words[kWordPoolId] = region->id;
      words[kWordPoolToken] = region->token;
      words[kWordPoolFd] = static_cast<uint64_t>(region->fd);
      words[kWordPoolOffset] = static_cast<uint64_t>(static_cast<const std::byte*>(data) - region->base);
    }
  }
  if (offered) tsan::release(data);  // a thread-rank peer reads it at this address
  if (!writeWords(words, offered ? size_t{kOfferWords} : size_t{1})) {
    if (peerGone(send_, &sendIdle_)) return peerGoneError(send_, "");
    return Offer::Wait;
  }
  sendIdle_ = 0;
  ++headersSent_;
  if (!offered) return Offer::Stream;
  ++offersMade_;
  offeredData_ = data;
  return Offer::Offered;
}

Result<bool> ShmConnection::offerTaken() {
  if (send_.header()->offersTaken.load(std::memory_order_acquire) >= offersMade_) {
    sendIdle_ = 0;
    if (offeredData_ != nullptr) tsan::acquire(offeredData_);  // the peer's reads are done before we write the buffer again
    return true;
  }
  if (peerGone(send_, &sendIdle_)) return peerGoneError(send_, " while reading our buffer in place");
  return false;
}

Result<Connection::Offer> ShmConnection::incoming(size_t n) {
  decideDirect();  // normally done in settle(); here for links driven without it
  if (!directDecided_) return Offer::Wait;  // the sender has not attached yet
  const uint64_t pooledMin = recv_.header()->directMin.load(std::memory_order_relaxed);
  const uint64_t cmaMin = recv_.header()->cmaMin.load(std::memory_order_relaxed);
  if (n < std::min(pooledMin, cmaMin)) return Offer::Stream;
  uint64_t words[kOfferWords];
  if (!peekWords(words, 1)) {
    if (!peerGone(recv_, &recvIdle_) || peekWords(words, 1)) return Offer::Wait;
    return peerGoneError(recv_, " before sending");
  }
  recvIdle_ = 0;
  const uint64_t seq = headersRead_ + 1;
  if (words[kWordHeader] == kStreamMagic + seq) {
    recvTail_ += 8;
    recv_.header()->tail.store(recvTail_, std::memory_order_release);
    ++headersRead_;
    return Offer::Stream;
  }
  if (words[kWordHeader] == kOfferMagic + seq && !peekWords(words, kOfferWords)) return Offer::Wait;
  if (words[kWordHeader] != kOfferMagic + seq || words[kWordLength] != n)
    return ATOLL_ERROR(ncclInternalError,
                       "shm: rank %d expected message %llu of %zu bytes from rank %d on channel %d, but the ring holds "
                       "header %#llx (the ranks disagree on the schedule, or on ATOLL_SHM_DIRECT_MIN/ATOLL_SHM_CMA_MIN)",
                       rank_, static_cast<unsigned long long>(seq), n, peer_, channel_,
                       static_cast<unsigned long long>(words[kWordHeader]));
  ATOLL_CHECK(locateOffer(words));
  recvTail_ += kOfferBytes;
  recv_.header()->tail.store(recvTail_, std::memory_order_release);
  ++headersRead_;
  offerBytes_ = n;
  haveOffer_ = true;
  return Offer::Offered;
}

Status ShmConnection::locateOffer(const uint64_t* words) {
  offerRemote_ = reinterpret_cast<const std::byte*>(static_cast<uintptr_t>(words[kWordAddr]));
  offerLocal_ = nullptr;
  if (sender_ == PeerMemory::SameProcess) {
    offerLocal_ = offerRemote_;
    tsan::acquire(offerRemote_);
  } else if (words[kWordPoolId] != 0) {
    ATOLL_ASSIGN_OR_RETURN(offerLocal_, peerPool_.map(recv_.peerPid(), static_cast<int>(words[kWordPoolFd]),
                                                      words[kWordPoolToken], words[kWordPoolId],
                                                      static_cast<size_t>(words[kWordPoolOffset]),
                                                      static_cast<size_t>(words[kWordLength])));
  } else if (sender_ != PeerMemory::Readable) {
    return ATOLL_ERROR(ncclInternalError, "shm: rank %d got an offer from rank %d it cannot read (channel %d)", rank_,
                       peer_, channel_);
  }
  return Status::Ok();
}

Status ShmConnection::checkOfferRange(size_t at, size_t n) const {
  if (!haveOffer_) return ATOLL_ERROR(ncclInternalError, "shm: rank %d reads an offer it never took", rank_);
  if (at > offerBytes_ || n > offerBytes_ - at)
    return ATOLL_ERROR(ncclInternalError, "shm: rank %d reads bytes %zu+%zu of a %zu-byte offer from rank %d", rank_,
                       at, n, offerBytes_, peer_);
  // A sender that gave up (abort, or a failure elsewhere) may free the buffer it offered.
  if (recv_.peerClosed()) return peerGoneError(recv_, " while we read its buffer in place");
  return Status::Ok();
}

Result<size_t> ShmConnection::readOffered(void* dst, size_t at, size_t n) {
  ATOLL_CHECK(checkOfferRange(at, n));
  if (offerLocal_ != nullptr) copyBytes(dst, offerLocal_ + at, n);
  else ATOLL_CHECK(readPeerMemory(recv_.peerPid(), peer_, offerRemote_ + at, dst, n));
  return n;
}

Result<std::span<const std::byte>> ShmConnection::viewOffered(size_t at, size_t n) {
  ATOLL_CHECK(checkOfferRange(at, n));
  if (offerLocal_ != nullptr) return std::span<const std::byte>(offerLocal_ + at, n);
  n = std::min(n, kBounceBytes);
  if (!bounce_) {
    bounce_.reset(new (std::nothrow) std::byte[kBounceBytes]);
    if (!bounce_) return ATOLL_ERROR(ncclSystemError, "shm: cannot allocate a %zu-byte bounce buffer", kBounceBytes);
  }
  ATOLL_CHECK(readPeerMemory(recv_.peerPid(), peer_, offerRemote_ + at, bounce_.get(), n));
  return std::span<const std::byte>(bounce_.get(), n);
}

Status ShmConnection::finishOffered() {
  if (!haveOffer_) return ATOLL_ERROR(ncclInternalError, "shm: rank %d finished an offer it never took", rank_);
  haveOffer_ = false;
  ++offersRead_;
  tsan::release(offerRemote_);
  recv_.header()->offersTaken.store(offersRead_, std::memory_order_release);
  return Status::Ok();
}

}  // namespace atl::transport::shm
