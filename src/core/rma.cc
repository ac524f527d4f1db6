#include "core/rma.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/debug.h"
#include "base/wire_codec.h"

namespace atl::rma {
namespace {

constexpr uint32_t kMagic = 0x414d5241;  // "ARMA"
using Clock = std::chrono::steady_clock;

size_t padOf(size_t bytes) { return ((bytes + 7) & ~size_t{7}) - bytes; }

}  // namespace

std::array<std::byte, kHeaderBytes> encodeHeader(const Header& h) {
  codec::Writer w;
  w.u32(kMagic);
  w.u32(h.kind);
  w.u64(h.window);
  w.u64(h.offset);
  w.u64(h.bytes);
  std::array<std::byte, kHeaderBytes> out{};
  std::memcpy(out.data(), w.data().data(), kHeaderBytes);
  return out;
}

std::optional<Header> decodeHeader(std::span<const std::byte, kHeaderBytes> bytes) {
  codec::Reader r(bytes);
  const uint32_t magic = r.u32();
  Header h;
  h.kind = r.u32();
  h.window = r.u64();
  h.offset = r.u64();
  h.bytes = r.u64();
  if (!r.ok() || magic != kMagic || (h.kind != kPut && h.kind != kSignal && h.kind != kBye) ||
      (h.kind != kPut && h.bytes != 0))
    return std::nullopt;
  return h;
}

Engine::Engine(int rank, std::vector<std::unique_ptr<transport::Connection>> links, const AbortFlag* abort,
               int64_t timeoutMs)
    : rank_(rank), abort_(abort), timeoutMs_(timeoutMs), peers_(links.size()) {
  for (size_t i = 0; i < links.size(); ++i) peers_[i].link = std::move(links[i]);
  thread_ = std::thread([this] { progressThread(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    // Tell each peer that nothing more comes, so its progress thread stops reading this link
    // instead of reporting its close. Best effort: a full or broken link just closes.
    const std::array<std::byte, kHeaderBytes> bye = encodeHeader(Header{kBye, 0, 0, 0});
    for (Peer& p : peers_)
      if (p.link && p.error == ncclSuccess && p.out.empty()) (void)p.link->send(bye.data(), bye.size());
  }
  wake_.notify_all();
  thread_.join();
}

void Engine::addWindow(uint64_t seq, Window w) {
  std::lock_guard<std::mutex> lock(mu_);
  windows_[seq] = std::move(w);
}

void Engine::removeWindow(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  windows_.erase(seq);
}

Status Engine::checkTarget(const char* fn, int peer, uint64_t seq, size_t offset, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(seq);
  if (it == windows_.end() || it->second.peerSizes.size() <= static_cast<size_t>(peer))
    return ATOLL_ERROR(ncclInvalidArgument, "%s: the window was deregistered", fn);
  const uint64_t size = it->second.peerSizes[static_cast<size_t>(peer)];
  if (offset > size || bytes > size - offset)
    return ATOLL_ERROR(ncclInvalidArgument,
                       "%s: %zu bytes at offset %zu do not fit in rank %d's window of %llu bytes", fn, bytes, offset,
                       peer, static_cast<unsigned long long>(size));
  return Status::Ok();
}

size_t Engine::bufferBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = 0;
  for (const Peer& p : peers_)
    if (p.link) bytes += p.link->bufferBytes();
  return bytes;
}

void Engine::failPeer(Peer& p, ncclResult_t code, std::string message) {
  if (p.error != ncclSuccess) return;
  p.error = code;
  p.errorMessage = std::move(message);
}

Status Engine::peerError(const char* fn, int peer, const Peer& p) const {
  if (p.error != ncclSuccess)
    return ATOLL_ERROR(p.error, "%s: rank %d: one-sided link to rank %d failed: %s", fn, rank_, peer,
                       p.errorMessage.c_str());
  return ATOLL_ERROR(ncclInvalidUsage, "%s: rank %d: %s", fn, rank_, p.dropped.c_str());
}

bool Engine::pushLocked(Peer& p) {
  static constexpr std::byte kZeros[8] = {};
  bool moved = false;
  while (!p.out.empty()) {
    Outgoing& m = p.out.front();
    const size_t total = m.total();
    while (m.sent < total) {
      const std::byte* from;
      size_t n;
      if (m.sent < kHeaderBytes) {
        from = m.head.data() + m.sent;
        n = kHeaderBytes - m.sent;
      } else if (m.sent - kHeaderBytes < m.bytes) {
        const size_t done = m.sent - kHeaderBytes;
        from = m.src + done;
        n = m.bytes - done;
      } else {
        from = kZeros;
        n = total - m.sent;
      }
      Result<size_t> r = p.link->send(from, n);
      if (!r.ok()) {
        failPeer(p, r.status().code(), lastErrorMessage());
        return true;
      }
      if (*r == 0) return moved;
      m.sent += *r;
      moved = true;
    }
    p.sentDone = m.serial;
    p.out.pop_front();
  }
  return moved;
}

bool Engine::pullLocked(int peer, Peer& p) {
  bool moved = false;
  Incoming& in = p.in;
  auto broken = [&](Status s) {
    failPeer(p, s.code(), lastErrorMessage());
    return true;
  };
  for (;;) {
    if (!in.inBody) {
      Result<size_t> r = p.link->receiveInto(in.head.data() + in.headGot, kHeaderBytes - in.headGot);
      if (!r.ok()) return broken(r.status());
      if (*r == 0) return moved;
      moved = true;
      in.headGot += *r;
      if (in.headGot < kHeaderBytes) continue;
      in.headGot = 0;
      std::optional<Header> h = decodeHeader(std::span<const std::byte, kHeaderBytes>(in.head));
      if (!h) {
        // Out of step: nothing after this point can be trusted, so the link is given up.
        p.link->shutdown();
        failPeer(p, ncclInternalError, "the stream from that rank holds no valid put header");
        return true;
      }
      if (h->kind == kBye) {
        char why[120];
        std::snprintf(why, sizeof(why), "rank %d destroyed its communicator (after %llu signals)", peer,
                      static_cast<unsigned long long>(p.arrived));
        failPeer(p, ncclRemoteError, why);  // quietly: reading on would only report the close
        return true;
      }
      in = Incoming{};
      in.inBody = true;
      in.left = h->bytes;
      in.pad = padOf(h->bytes);
      if (h->kind == kPut) {
        auto it = windows_.find(h->window);
        if (it != windows_.end() && h->offset <= it->second.size && h->bytes <= it->second.size - h->offset) {
          in.dst = it->second.base + h->offset;
        } else if (p.dropped.empty()) {
          // The source checked the bounds against this rank's registration, so the window was
          // deregistered here while the put was on its way: the data has nowhere to go.
          char why[200];
          std::snprintf(why, sizeof(why), "a put of %llu bytes from rank %d arrived for window #%llu after it was deregistered",
                        static_cast<unsigned long long>(h->bytes), peer, static_cast<unsigned long long>(h->window));
          p.dropped = why;
        }
      }
    }
    if (in.left > 0) {
      size_t n = 0;
      if (in.dst != nullptr) {
        Result<size_t> r = p.link->receiveInto(in.dst, in.left);
        if (!r.ok()) return broken(r.status());
        n = *r;
        in.dst += n;
      } else {
        Result<std::span<const std::byte>> v = p.link->peek();
        if (!v.ok()) return broken(v.status());
        n = std::min(v->size(), in.left);
        p.link->consume(n);
      }
      if (n == 0) return moved;
      in.left -= n;
      moved = true;
      if (in.left > 0) continue;
    }
    if (in.pad > 0) {
      Result<std::span<const std::byte>> v = p.link->peek();
      if (!v.ok()) return broken(v.status());
      const size_t n = std::min(v->size(), in.pad);
      p.link->consume(n);
      if (n == 0) return moved;
      in.pad -= n;
      if (in.pad > 0) continue;
    }
    in.inBody = false;
    ++p.arrived;
    moved = true;
  }
}

bool Engine::progressLocked() {
  bool moved = false;
  for (size_t i = 0; i < peers_.size(); ++i) {
    Peer& p = peers_[i];
    if (!p.link || p.error != ncclSuccess) continue;
    moved |= pushLocked(p);
    if (p.error == ncclSuccess) moved |= pullLocked(static_cast<int>(i), p);
  }
  return moved;
}

template <class Done, class Failed>
Status Engine::driveUntil(const char* fn, Done done, Failed peerFailed) {
  Clock::time_point lastProgress = Clock::now();
  for (uint64_t idle = 0;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (progressLocked()) {
        idle = 0;
        lastProgress = Clock::now();
      }
      if (done()) return Status::Ok();
      const int bad = peerFailed();
      if (bad >= 0) return peerError(fn, bad, peers_[static_cast<size_t>(bad)]);
    }
    if (abort_ != nullptr && abort_->load(std::memory_order_acquire))
      return ATOLL_ERROR(ncclSystemError, "%s: communicator aborted", fn);
    ++idle;
    // As the executor: spin a little for latency, then yield, then nap, so a wait on an
    // oversubscribed host leaves the CPU to the rank it waits for.
    if (idle < 64 * 200) sched_yield();
    else usleep(50);
    if ((idle & 63) == 0 && timeoutMs_ > 0 && Clock::now() - lastProgress > std::chrono::milliseconds(timeoutMs_))
      return ATOLL_ERROR(ncclSystemError, "%s: rank %d made no progress for %lld ms", fn, rank_,
                         static_cast<long long>(timeoutMs_));
  }
}

Status Engine::put(const char* fn, int peer, const Header& h, const void* src) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  if (peer == rank_) {
    // To itself: the window is this rank's own memory.
    std::lock_guard<std::mutex> lock(mu_);
    if (h.kind == kPut) {
      auto it = windows_.find(h.window);
      if (it == windows_.end()) return ATOLL_ERROR(ncclInvalidArgument, "%s: the window was deregistered", fn);
      if (h.bytes > 0) std::memmove(it->second.base + h.offset, src, h.bytes);
    }
    ++p.arrived;
    return Status::Ok();
  }
  uint64_t serial = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (p.error != ncclSuccess) return peerError(fn, peer, p);
    Outgoing m;
    m.head = encodeHeader(h);
    m.src = static_cast<const std::byte*>(src);
    m.bytes = h.bytes;
    m.serial = serial = ++p.queued;
    p.out.push_back(m);
  }
  wake_.notify_all();
  return driveUntil(
      fn, [&] { return p.sentDone >= serial; }, [&] { return p.error != ncclSuccess ? peer : -1; });
}

Status Engine::wait(std::span<const WaitFor> what) {
  auto met = [&] {
    for (const WaitFor& w : what) {
      uint64_t need = 0;  // every entry of this peer, so two entries for one peer need both counts
      for (const WaitFor& x : what)
        if (x.peer == w.peer) need += x.count;
      const Peer& p = peers_[static_cast<size_t>(w.peer)];
      if (p.arrived - p.consumed < need) return false;
    }
    for (const WaitFor& w : what) peers_[static_cast<size_t>(w.peer)].consumed += w.count;
    return true;
  };
  auto failed = [&] {
    for (const WaitFor& w : what) {
      const Peer& p = peers_[static_cast<size_t>(w.peer)];
      if (p.error != ncclSuccess || !p.dropped.empty()) return w.peer;
    }
    return -1;
  };
  Status s = driveUntil("ncclWaitSignal", met, failed);
  if (!s.ok()) {
    // A dropped put is reported once; the link itself is still in step.
    std::lock_guard<std::mutex> lock(mu_);
    for (const WaitFor& w : what) peers_[static_cast<size_t>(w.peer)].dropped.clear();
  }
  return s;
}

void Engine::progressThread() {
  std::unique_lock<std::mutex> lock(mu_);
  int idle = 0;
  while (!stop_) {
    // After an abort the blocked call reports it; the links go with the communicator.
    const bool aborted = abort_ != nullptr && abort_->load(std::memory_order_acquire);
    if (!aborted && progressLocked()) {
      idle = 0;
      lock.unlock();
      sched_yield();  // let a call waiting for the lock in
      lock.lock();
      continue;
    }
    ++idle;
    // Short naps while traffic may be about to come, then 1 ms: an idle communicator costs a
    // thousand cheap polls a second, and a put to it is landed within a millisecond.
    wake_.wait_for(lock, idle < 100 ? std::chrono::microseconds(20) : std::chrono::microseconds(1000),
                   [&] { return stop_; });
  }
}

}  // namespace atl::rma
