// The one server every listener of the library runs (the bootstrap root, each rank's bootstrap
// messages, each socket transport's data listener): accepted connections optionally get a fresh
// nonce, then their fixed-size header and its body are read by a nonblocking state machine. Many
// clients progress at once, so a silent or slow client only ever costs its own slot, and each one
// is dropped at its own deadline. What a header means is the caller's: it judges each complete one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/socket.h"

namespace atl::net {

class HandshakeServer {
 public:
  using Nonce = std::array<uint8_t, 32>;
  struct Conn {
    Fd fd;
    std::string peer;
    Nonce nonce{};  // what was sent on accept (all zero when Options::sendNonce is off)
    std::vector<uint8_t> header;
    std::vector<uint8_t> body;
    size_t have = 0;
    bool inBody = false;
    Deadline deadline;
  };
  /// Judges a complete header: the body length to read next, or nullopt with `reason` set to reject.
  using HeaderCheck = std::function<std::optional<size_t>(const Conn&, std::string* reason)>;
  /// Receives a fully read, accepted connection (it now owns it).
  using OnComplete = std::function<void(Conn&&)>;

  struct Options {
    std::string name;           // prefixes every log line ("bootstrap root ...", "socket: rank 3")
    size_t headerSize = 0;
    bool sendNonce = true;      // challenge each client with fresh random bytes it must prove over
    int headerTimeoutMs = 5000;
    int bodyTimeoutMs = 5000;
  };

  HandshakeServer(Fd listenFd, Options options, HeaderCheck check, OnComplete done);

  /// One round: waits at most `timeoutMs` for activity, then advances every connection.
  void pump(int timeoutMs);
  /// Closes all connections still in progress (the listener stays open).
  void dropAll() { conns_.clear(); }
  size_t inProgress() const { return conns_.size(); }
  /// The errno of the last accept() that failed for want of descriptors (0: none since the last
  /// call). Accepting pauses briefly then; a caller that must not wait can fail on it instead.
  int takeFdError() { return std::exchange(fdError_, 0); }
  /// For listeners that learn who they are after they are created (the socket transport).
  void setName(std::string name) { opt_.name = std::move(name); }
  void setHeaderTimeoutMs(int ms) { opt_.headerTimeoutMs = ms; }
  int fd() const { return listen_.get(); }

 private:
  void acceptNew();
  /// Returns false when the connection is finished (completed or rejected) and must be removed.
  bool advance(Conn& c);
  void reject(const Conn& c, const char* reason);

  Fd listen_;
  Options opt_;
  HeaderCheck check_;
  OnComplete done_;
  std::vector<Conn> conns_;
  bool paused_ = false;  // out of descriptors: accept again once resume_ expired
  Deadline resume_;
  bool warnedFds_ = false;
  int fdError_ = 0;
};

}  // namespace atl::net
