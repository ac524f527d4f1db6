#include "transports/net/net_link.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "base/debug.h"
#include "transports/net/net_abi.h"

namespace atl::net {

NetLink::NetLink(const Ends& ends, int rank, int peer, int channel, size_t cap)
    : ends_(ends), rank_(rank), peer_(peer), channel_(channel) {
  // Chunks are whole words, no larger than the plugin takes in one message, and the ring is a
  // whole number of them.
  size_t chunk = std::max<size_t>(cap / kChunks, 4096) / 8 * 8;
  if (ends.maxMessage > 0) chunk = std::min(chunk, ends.maxMessage / 8 * 8);
  chunk_ = std::max<size_t>(chunk, 64);
  cap_ = chunk_ * kChunks;
  sendRing_ = std::make_unique<std::byte[]>(cap_);
  recvRing_ = std::make_unique<std::byte[]>(cap_);
}

Result<std::unique_ptr<NetLink>> NetLink::create(const Ends& ends, int rank, int peer, int channel, size_t bufferBytes) {
  std::unique_ptr<NetLink> link(new NetLink(ends, rank, peer, channel, bufferBytes));
  NetLink* l = link.get();
  Status s = ends.proxy->call([l] { return l->registerRings(); });
  if (!s.ok()) return s;  // the destructor closes the comms
  ends.proxy->add(l);
  return link;
}

Status NetLink::registerRings() {
  ATOLL_CHECK(ends_.net->regMr(ends_.sendComm, sendRing_.get(), cap_, abi::kPtrHost, &sendMr_));
  return ends_.net->regMr(ends_.recvComm, recvRing_.get(), cap_, abi::kPtrHost, &recvMr_);
}

NetLink::~NetLink() {
  // The engine counts bytes as sent once they are in the ring; a socket's kernel buffer outlives
  // its close, the ring does not. So the last bytes go out before the comms close, unless the link
  // is broken or shut down (then the peer is told by the close), bounded by kFlushTimeout.
  const auto until = std::chrono::steady_clock::now() + kFlushTimeout;
  while (err_.load(std::memory_order_acquire) == ncclSuccess && !shut_.load(std::memory_order_acquire) &&
         sendDone_.load(std::memory_order_acquire) < sendHead_.load(std::memory_order_relaxed) &&
         std::chrono::steady_clock::now() < until) {
    ends_.proxy->kick();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  ends_.proxy->remove(this);
  (void)ends_.proxy->call([this] {
    closeComms();
    return Status::Ok();
  });
}

namespace {
/// Rings a net could not let go of, never freed: reachable, so no leak checker reports them.
void keepRing(std::unique_ptr<std::byte[]> ring, size_t bytes, const char* what, const std::string& link) {
  static std::mutex lock;
  static auto* kept = new std::vector<std::unique_ptr<std::byte[]>>;
  ATOLL_WARN("%s: the net's close failed with a transfer still using the %s ring; its %zu bytes stay allocated (%s)",
             link.c_str(), what, bytes, lastErrorMessage().c_str());
  std::lock_guard<std::mutex> guard(lock);
  kept->push_back(std::move(ring));
}
}  // namespace

void NetLink::closeComms() {
  // Requests still in flight die with their comm (NCCL closes the same way on abort). A net that
  // cannot stop one by its close deadline (UCX does not cancel a rendezvous it has matched) fails
  // the close: the transfer may still touch the ring, so the ring outlives the link.
  if (ends_.sendComm != nullptr) {
    if (sendMr_ != nullptr) (void)ends_.net->deregMr(ends_.sendComm, sendMr_);
    if (!ends_.net->closeSend(ends_.sendComm).ok()) keepRing(std::move(sendRing_), cap_, "send", describe());
  }
  if (ends_.recvComm != nullptr) {
    if (recvMr_ != nullptr) (void)ends_.net->deregMr(ends_.recvComm, recvMr_);
    if (!ends_.net->closeRecv(ends_.recvComm).ok()) keepRing(std::move(recvRing_), cap_, "receive", describe());
  }
  ends_.sendComm = ends_.recvComm = nullptr;
  sendMr_ = recvMr_ = nullptr;
}

void NetLink::fail(ncclResult_t code, const std::string& why) {
  if (err_.load(std::memory_order_relaxed) != ncclSuccess) return;
  why_ = why;
  err_.store(code, std::memory_order_release);
}

void NetLink::failCall(const char* what, Status s, const std::string& why) {
  // A plugin call failing on a link means the peer or the path to it is gone.
  fail(s.code() == ncclSystemError ? ncclRemoteError : s.code(), std::string(what) + ": " + (why.empty() ? lastErrorMessage() : why));
}

Status NetLink::error() const {
  if (shut_.load(std::memory_order_acquire))
    return ATOLL_ERROR(ncclRemoteError, "net: rank %d: link to peer rank %d (channel %d) was shut down", rank_, peer_,
                       channel_);
  const int code = err_.load(std::memory_order_acquire);
  if (code == ncclSuccess) return Status::Ok();
  return ATOLL_ERROR(static_cast<ncclResult_t>(code), "net: rank %d: link to peer rank %d (%s, channel %d, net %s) failed: %s",
                     rank_, peer_, ends_.peerWhere.c_str(), channel_, ends_.net->name().c_str(), why_.c_str());
}

Result<size_t> NetLink::send(const void* data, size_t n) {
  ATOLL_CHECK(error());
  if (n == 0) return size_t{0};
  uint64_t head = sendHead_.load(std::memory_order_relaxed);
  size_t room = cap_ - static_cast<size_t>(head - sendDone_.load(std::memory_order_acquire));
  size_t at = static_cast<size_t>(head % cap_);
  const size_t want = 8 + (std::min(n, chunk_ - 8) + 7) / 8 * 8;
  if (want > cap_ - at && room >= cap_ - at + 16) {
    // Not enough before the ring's end for the record: mark the rest unused and start over.
    std::memcpy(sendRing_.get() + at, &kSkip, sizeof(kSkip));
    room -= cap_ - at;
    head += cap_ - at;
    at = 0;
  }
  const size_t space = std::min({room, cap_ - at, chunk_});
  size_t take = space > 8 ? std::min(n, space - 8) : 0;
  if (take < n) take = take / 8 * 8;  // a part: whole words, so records split messages on 8-byte offsets
  if (take > 0) {
    const uint64_t len = take;
    std::memcpy(sendRing_.get() + at, &len, sizeof(len));
    std::memcpy(sendRing_.get() + at + 8, data, take);
    head += 8 + (take + 7) / 8 * 8;
  }
  sendHead_.store(head, std::memory_order_release);
  ends_.proxy->kick();
  return take;
}

Result<std::span<const std::byte>> NetLink::peek() {
  if (readSlot_ == recvArrived_.load(std::memory_order_acquire)) {
    Status e = error();
    if (e.ok()) {
      ends_.proxy->kick();
      return std::span<const std::byte>();
    }
    // The proxy marks a message arrived before it records the failure it met after it (the peer's
    // close right behind its last message): look again, or that message is lost to the race.
    if (readSlot_ == recvArrived_.load(std::memory_order_acquire)) return e;
  }
  const size_t slot = static_cast<size_t>(readSlot_ % kChunks);
  const std::byte* data = recvRing_.get() + slot * chunk_ + 8;
  return std::span<const std::byte>(data + readOff_, recvSize_[slot] - readOff_);
}

void NetLink::consume(size_t n) {
  // Nothing consumed (after an empty peek, as the one-sided engine does) must not step past a slot
  // that has not arrived: its size is stale or 0, and stepping would free it before it is read.
  if (n == 0) return;
  readOff_ += n;
  if (readOff_ < recvSize_[readSlot_ % kChunks]) return;
  readOff_ = 0;
  ++readSlot_;
  recvFreed_.store(readSlot_, std::memory_order_release);
  ends_.proxy->kick();
}

void NetLink::shutdown() {
  shut_.store(true, std::memory_order_release);
  ends_.proxy->kick();
}

bool NetLink::drive() {
  if (ends_.sendComm == nullptr) return false;
  if (shut_.load(std::memory_order_acquire)) {
    closeComms();  // the peer's next test sees the link gone
    return true;
  }
  if (err_.load(std::memory_order_relaxed) != ncclSuccess) return false;
  const bool sent = driveSends();
  const bool recvd = driveRecvs();
  return sent || recvd;
}

bool NetLink::driveSends() {
  bool moved = false;
  // Complete in order: ring space is freed from the oldest chunk on.
  while (sendsDone_ < sendsIssued_) {
    InFlight& f = sends_[sendsDone_ % kChunks];
    int done = f.request == nullptr ? 1 : 0;  // a skip marker
    Status s = f.request == nullptr ? Status::Ok() : ends_.net->test(f.request, 1, &done, nullptr);
    if (!s.ok()) {
      failCall("send", s);
      return true;
    }
    if (!done) break;
    sendDone_.store(f.end, std::memory_order_release);
    ++sendsDone_;
    moved = true;
  }
  const uint64_t ready = sendHead_.load(std::memory_order_acquire);
  while (sendPosted_ < ready && sendsIssued_ - sendsDone_ < kChunks) {
    const size_t at = static_cast<size_t>(sendPosted_ % cap_);
    uint64_t len = 0;
    std::memcpy(&len, sendRing_.get() + at, sizeof(len));
    if (len == kSkip) {  // completes with the chunks before it
      sendPosted_ += cap_ - at;
      sends_[sendsIssued_ % kChunks] = {nullptr, sendPosted_};
      ++sendsIssued_;
      moved = true;
      continue;
    }
    void* request = nullptr;
    Status s = ends_.net->isend(ends_.sendComm, sendRing_.get() + at, 8 + len, 0, sendMr_, &request);
    if (!s.ok()) {
      failCall("isend", s);
      return true;
    }
    if (request == nullptr) break;  // the plugin cannot take it yet
    sendPosted_ += 8 + (len + 7) / 8 * 8;
    sends_[sendsIssued_ % kChunks] = {request, sendPosted_};
    ++sendsIssued_;
    moved = true;
  }
  return moved;
}

bool NetLink::driveRecvs() {
  bool moved = false;
  const uint64_t freed = recvFreed_.load(std::memory_order_acquire);
  // A plugin may fill an earlier receive inside a later irecv and then meet the peer's close, so
  // the irecv fails with a message already in: a failed post waits until what was posted is tested.
  Status postFailed;
  std::string postWhy;
  while (recvPosted_ < freed + kChunks) {
    const size_t slot = static_cast<size_t>(recvPosted_ % kChunks);
    void* data = recvRing_.get() + slot * chunk_;
    const size_t size = chunk_;
    const int tag = 0;
    void* request = nullptr;
    Status s = ends_.net->irecv(ends_.recvComm, 1, &data, &size, &tag, &recvMr_, &request);
    if (!s.ok()) {
      postFailed = s;
      postWhy = lastErrorMessage();
      break;
    }
    if (request == nullptr) break;
    recvs_[slot] = request;
    ++recvPosted_;
    moved = true;
  }
  uint64_t arrived = recvArrived_.load(std::memory_order_relaxed);
  while (arrived < recvPosted_) {
    const size_t slot = static_cast<size_t>(arrived % kChunks);
    int done = 0, size = -1;
    Status s = ends_.net->test(recvs_[slot], 1, &done, &size);
    if (!s.ok()) {
      failCall("receive", s);
      return true;
    }
    if (!done) break;
    uint64_t len = 0;
    std::memcpy(&len, recvRing_.get() + slot * chunk_, sizeof(len));
    // The record says its length; a plugin that reports a size (not all do) must agree.
    if (len == 0 || len > chunk_ - 8 || (size >= 0 && static_cast<uint64_t>(size) != 8 + len)) {
      fail(ncclSystemError, "received a malformed record (" + std::to_string(len) + " bytes, message of " +
                                std::to_string(size) + ")");
      return true;
    }
    recvSize_[slot] = static_cast<size_t>(len);
    recvArrived_.store(++arrived, std::memory_order_release);
    moved = true;
  }
  if (!postFailed.ok() && arrived == recvPosted_) {
    failCall("irecv", postFailed, postWhy);
    return true;
  }
  return moved;
}

std::string NetLink::describe() const {
  return "net " + ends_.net->name() + " link to rank " + std::to_string(peer_) + " channel " + std::to_string(channel_) +
         " (" + std::to_string(kChunks) + " x " + std::to_string(chunk_) + " B chunks)";
}

}  // namespace atl::net
