// The one thread that calls a net plugin for a communicator's links (NCCL's proxy thread).
//
// Why a thread: a plugin moves data only while it is called (Atoll's Socket net and most plugins
// have no thread of their own, and a send may be refused with a null request until later), but the
// engine hands a link its bytes and moves on to other links. Why one: plugins may keep per-thread
// state, so every call into one instance comes from the same thread, listen and close included.
//
// The engine never blocks on the proxy for data: it fills and drains rings the proxy drives
// (net_link.h) and kicks the proxy when it did. The proxy polls while there is traffic, then naps
// (kIdleNap) so idle communicators cost no core; a kick ends a nap at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"

namespace atl::net {

/// Something the proxy calls on every turn (a link, a dial, the accept pool). It runs on the
/// proxy thread only and returns whether anything moved.
class Driven {
 public:
  virtual ~Driven() = default;
  virtual bool drive() = 0;
};

class Proxy {
 public:
  Proxy();
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  /// Runs fn on the proxy thread and returns its result (plugin calls from other threads go here).
  Status call(const std::function<Status()>& fn);
  /// From the next turn on, drives d until remove(d) returns.
  void add(Driven* d);
  void remove(Driven* d);
  /// Ends a nap: there is work (bytes to send, a slot freed, a link waiting).
  void kick() {
    if (napping_.load(std::memory_order_acquire)) wake();
  }

  /// How long the proxy keeps polling after the last movement, then how long it naps.
  static constexpr auto kSpin = std::chrono::microseconds(200);
  static constexpr auto kIdleNap = std::chrono::milliseconds(1);

 private:
  struct Task {
    std::function<Status()> fn;
    Status result;
    bool done = false;
  };
  void loop();
  void wake();
  bool runTasks();

  std::mutex mu_;
  std::condition_variable cv_;      // the proxy naps on it
  std::condition_variable doneCv_;  // callers of call() wait on it
  std::deque<Task*> tasks_;
  std::vector<Driven*> driven_;     // proxy thread only
  std::vector<Driven*> toAdd_, toRemove_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> napping_{false};
  std::thread thread_;
};

}  // namespace atl::net
