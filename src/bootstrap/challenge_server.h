// Serves a listening socket: every accepted connection gets a fresh nonce, then its fixed-size header
// and body are read by a nonblocking state machine. Many clients progress at once, so a silent or slow
// client only ever costs its own slot, and each one is dropped at its own deadline.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/wire.h"
#include "common/socket.h"

namespace atl::bootstrap {

class ChallengeServer {
 public:
  struct Conn {
    net::Fd fd;
    std::string peer;
    wire::Nonce nonce{};
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

  ChallengeServer(net::Fd listenFd, std::string name, size_t headerSize, HeaderCheck check, OnComplete done,
                  int bodyTimeoutMs);

  /// One round: waits at most `timeoutMs` for activity, then advances every connection.
  void pump(int timeoutMs);
  /// Closes all connections still in progress (the listener stays open).
  void dropAll() { conns_.clear(); }
  size_t inProgress() const { return conns_.size(); }

 private:
  void acceptNew();
  /// Returns false when the connection is finished (completed or rejected) and must be removed.
  bool advance(Conn& c);
  void reject(const Conn& c, const char* reason);

  net::Fd listen_;
  std::string name_;
  size_t headerSize_;
  HeaderCheck check_;
  OnComplete done_;
  int bodyTimeoutMs_;
  std::vector<Conn> conns_;
  bool paused_ = false;  // out of descriptors: accept again once resume_ expired
  Deadline resume_;
  bool warnedFds_ = false;
};

}  // namespace atl::bootstrap
