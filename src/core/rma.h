// One-sided operations on host memory (ncclPutSignal, ncclSignal, ncclWaitSignal): a put lands in
// the peer's window without the peer posting a receive.
//
// How, without RDMA: every rank that registered a window holds one link per peer on a channel of
// its own (kChannel), whose byte stream only this engine reads. A put is a 32-byte header (window,
// offset, length) followed by the data; the receiving side copies the data straight from the link
// into the window and then counts one signal from that peer, so a signal is seen only after the
// data before it on that link (links keep byte order). The receiving side is driven by whoever
// runs first: a call on this engine (a put or a wait, which also land what arrives meanwhile) or
// the engine's own progress thread, which lands puts while the application is busy elsewhere (in
// a collective, or computing). A put therefore never needs its target's cooperation, as NCCL's
// contract says, and puts that form a cycle (each rank putting to the next) cannot deadlock.
//
// A put returns once its data is in the link (the source buffer may then be reused), which is
// where a GPU put would be once its stream has passed it.
#pragma once

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "engine/connections.h"
#include "transports/transport.h"

namespace atl::rma {

/// The channel of one-sided links (engine/connections.h).
inline constexpr int kChannel = engine::kOneSidedChannel;

/// Bytes of a put's header on the wire (the data follows, padded to 8 as every engine message).
inline constexpr size_t kHeaderBytes = 32;

struct Header {
  uint32_t kind = 0;  // kPut, kSignal or kBye
  uint64_t window = 0;  // the window's collective sequence number (equal on every rank)
  uint64_t offset = 0;  // bytes into the target's window
  uint64_t bytes = 0;   // data that follows
};
inline constexpr uint32_t kPut = 1;
inline constexpr uint32_t kSignal = 2;
/// The sender destroyed its communicator: nothing follows (so the link's close is no failure).
inline constexpr uint32_t kBye = 3;

/// Wire format of the header (base/wire_codec.h: fixed-width little-endian fields, magic first).
std::array<std::byte, kHeaderBytes> encodeHeader(const Header& h);
/// The header, or nullopt when the bytes are not one (wrong magic or kind).
std::optional<Header> decodeHeader(std::span<const std::byte, kHeaderBytes> bytes);

/// One registered window as a put's target sees it.
struct Window {
  std::byte* base = nullptr;
  size_t size = 0;
  std::vector<uint64_t> peerSizes;  // every rank's size of this window (bounds-checks puts at the source)
};

/// What ncclWaitSignal waits for: `count` more signals from `peer`.
struct WaitFor {
  int peer = -1;
  uint64_t count = 0;
};

class Engine {
 public:
  /// Takes `links` (index = peer; null for this rank) and starts the progress thread.
  Engine(int rank, std::vector<std::unique_ptr<transport::Connection>> links, const AbortFlag* abort,
         int64_t timeoutMs);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void addWindow(uint64_t seq, Window w);
  void removeWindow(uint64_t seq);
  /// Bounds of window `seq` at `peer`: an error when [offset, offset+bytes) is not inside it.
  Status checkTarget(const char* fn, int peer, uint64_t seq, size_t offset, size_t bytes);

  /// Puts `bytes` from `src` at `offset` of the peer's window `seq`, then one signal (bytes 0 and
  /// kind kSignal: the signal alone). Returns once `src` is no longer read.
  Status put(const char* fn, int peer, const Header& h, const void* src);
  /// Waits until each entry's signals arrived (and their puts landed), then consumes them.
  Status wait(std::span<const WaitFor> what);

  /// Link buffer memory this engine holds (ncclCommMemStats).
  size_t bufferBytes() const;

 private:
  struct Outgoing {
    std::array<std::byte, kHeaderBytes> head{};
    const std::byte* src = nullptr;
    size_t bytes = 0;
    size_t sent = 0;  // of head, data and padding
    uint64_t serial = 0;
    size_t total() const { return kHeaderBytes + ((bytes + 7) & ~size_t{7}); }
  };
  struct Incoming {
    std::array<std::byte, kHeaderBytes> head{};
    size_t headGot = 0;
    bool inBody = false;
    std::byte* dst = nullptr;  // null: the put has no valid target here, its data is dropped
    size_t left = 0;           // data bytes still to land
    size_t pad = 0;            // padding still to skip
  };
  struct Peer {
    std::unique_ptr<transport::Connection> link;
    std::deque<Outgoing> out;
    uint64_t queued = 0;  // serials handed out by put()
    uint64_t sentDone = 0;  // puts whose bytes are all in the link
    Incoming in;
    uint64_t arrived = 0;   // signals landed
    uint64_t consumed = 0;  // signals taken by waits
    ncclResult_t error = ncclSuccess;  // the link broke (or a put from this peer was bad)
    std::string errorMessage;
    std::string dropped;  // a put from this peer found no window here (reported by the next wait)
  };

  /// One pass over every link; true when any byte moved. Caller holds mu_.
  bool progressLocked();
  bool pushLocked(Peer& p);
  bool pullLocked(int rank, Peer& p);
  void failPeer(Peer& p, ncclResult_t code, std::string message);
  Status peerError(const char* fn, int peer, const Peer& p) const;
  /// Drives progress until done() holds (under mu_), the abort flag, a peer error (peerFailed
  /// under mu_ returns the peer) or the no-progress timeout.
  template <class Done, class Failed>
  Status driveUntil(const char* fn, Done done, Failed peerFailed);
  void progressThread();

  const int rank_;
  const AbortFlag* abort_;
  const int64_t timeoutMs_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::vector<Peer> peers_;
  std::unordered_map<uint64_t, Window> windows_;
  std::thread thread_;
};

}  // namespace atl::rma
