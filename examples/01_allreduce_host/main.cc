// The smallest useful Atoll program: 4 ranks as threads, one all-reduce on host buffers.
// Build: part of the project (examples/01_allreduce_host). Run: build/examples/01_allreduce_host
#include <nccl.h>

#include <cstdio>
#include <thread>
#include <vector>

int main() {
  constexpr int kRanks = 4;
  constexpr size_t kCount = 1 << 20;
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
  std::vector<int> ok(kRanks, 0);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r)
    ranks.emplace_back([&, r] {
      ncclComm_t comm;
      if (ncclCommInitRank(&comm, kRanks, id, r) != ncclSuccess) return;
      std::vector<float> data(kCount, static_cast<float>(r + 1));
      // In place; a NULL stream on the host backend means "done when the call returns".
      ncclResult_t res = ncclAllReduce(data.data(), data.data(), kCount, ncclFloat, ncclSum, comm, nullptr);
      ok[r] = res == ncclSuccess && data[0] == 10.0f && data[kCount - 1] == 10.0f;
      ncclCommDestroy(comm);
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r)
    if (!ok[r]) {
      std::printf("rank %d: wrong result or error\n", r);
      return 1;
    }
  std::printf("all-reduce of %zu floats on %d ranks: every element is 10\n", kCount, kRanks);
  return 0;
}
