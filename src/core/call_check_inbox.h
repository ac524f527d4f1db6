// What ATOLL_CHECK (core/call_check.h) keeps on a communicator between launches: check messages
// that arrived ahead of the launch they belong to (a faster peer's next fingerprint, a point-to-point
// print for a later send/recv), and whether the communicator was found out of step.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <utility>

namespace atl {

struct CheckMessage;  // core/call_check.cc

struct CheckInbox {
  struct Item {
    int from = -1;
    uint16_t type = 0;
    uint64_t seq = 0;
    std::shared_ptr<const CheckMessage> msg;
  };
  std::deque<Item> items;
  bool poisoned = false;                  // a desync was seen here or passed on to us
  std::set<std::pair<int, uint64_t>> answered;  // (rank, collective launch) told where we are
};

}  // namespace atl
