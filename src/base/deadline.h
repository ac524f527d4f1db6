// Deadlines for every wait: nothing in Atoll blocks without one (DESIGN.md, reliability contract).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace atl {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  /// A deadline `ms` milliseconds from now; ms <= 0 means never.
  static Deadline afterMs(int64_t ms) {
    Deadline d;
    if (ms > 0) d.at_ = Clock::now() + std::chrono::milliseconds(ms);
    return d;
  }
  static Deadline never() { return Deadline(); }

  bool expired() const { return at_ != Clock::time_point::max() && Clock::now() >= at_; }
  /// Milliseconds left, clamped to [0, cap]; cap when there is no deadline (for poll()).
  int remainingMs(int cap = 1000) const {
    if (at_ == Clock::time_point::max()) return cap;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }

 private:
  Clock::time_point at_ = Clock::time_point::max();
};

/// Cooperative cancellation: long waits poll this (ncclCommAbort sets it from another thread).
using AbortFlag = std::atomic<bool>;
inline bool aborted(const AbortFlag* flag) { return flag != nullptr && flag->load(std::memory_order_acquire); }

}  // namespace atl
