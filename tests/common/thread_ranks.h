// Ranks as threads of the test process: start them, make their communicators, check a collective.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "nccl.h"

namespace atl::test {

/// Runs body(rank) on n threads at once and waits for all of them.
inline void runRanks(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(body, r);
  for (auto& t : threads) t.join();
}

/// n communicators of one clique (ncclCommInitAll).
inline std::vector<ncclComm_t> initAll(int n) {
  std::vector<ncclComm_t> comms(static_cast<size_t>(n), nullptr);
  EXPECT_EQ(ncclCommInitAll(comms.data(), n, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  return comms;
}

/// Sum all-reduce of `rank + 1` on `comm`; returns the value every element holds.
inline float allReduceRankSum(ncclComm_t comm, int rank) {
  std::vector<float> v(1031, static_cast<float>(rank + 1));
  EXPECT_EQ(ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, nullptr), ncclSuccess)
      << ncclGetLastError(comm);
  for (float x : v) EXPECT_EQ(x, v[0]);
  return v[0];
}

}  // namespace atl::test
