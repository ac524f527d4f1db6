// One-sided operations between real processes (ncclPutSignal, ncclSignal, ncclWaitSignal on
// windows), over shared memory or sockets (NCCL_SHM_DISABLE=1).
//
// Every rank checks what landed in its own window against what its peers must have put there:
//   ring      each rank puts --bytes (more than a link buffer holds) to the next rank while the
//             previous one puts to it: a cycle of puts, which blocks forever if a put needs its
//             target to be inside a call;
//   counted   three puts of odd lengths (padding) at different offsets and dtypes, then one wait
//             for opCnt 3;
//   busy      a put (more than a link buffer) to a rank that is inside an all-reduce with the
//             putter: only the target's progress thread can land it, or neither call returns;
//   signals   every rank signals every other; one wait with a descriptor per peer;
//   self      a put to this rank's own window.
// With --kill, the last rank dies (SIGKILL) after the windows exist, while the others wait for its
// signal: each must get an error naming it within --limit-ms, not hang.
//
//   one_sided --ranks N [--bytes B] [--kill --limit-ms L]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/common/rank_procs.h"

namespace {

struct Options {
  int nranks = 2;
  size_t bytes = 9u << 20;
  bool kill = false;
  long limitMs = 2000;
};

int failures = 0;

#define EXPECT_OK(call)                                                                                     \
  do {                                                                                                      \
    ncclResult_t r_ = (call);                                                                               \
    if (r_ != ncclSuccess) {                                                                                \
      std::printf("rank %d: %s failed: %s (%s)\n", rank, #call, ncclGetErrorString(r_), ncclGetLastError(comm)); \
      return 1;                                                                                             \
    }                                                                                                       \
  } while (0)

void check(bool ok, int rank, const char* what) {
  if (!ok) {
    std::printf("rank %d: FAIL %s\n", rank, what);
    ++failures;
  }
}

uint8_t pattern(int from, size_t i) { return static_cast<uint8_t>(from * 31 + i * 7 + (i >> 12)); }

int runRank(const Options& o, int rank, const ncclUniqueId& id) {
  const int n = o.nranks, next = (rank + 1) % n, prev = (rank + n - 1) % n;
  ncclComm_t comm = nullptr;
  EXPECT_OK(ncclCommInitRank(&comm, n, id, rank));
  std::vector<uint8_t> win(o.bytes + 4096, 0), src(o.bytes);
  ncclWindow_t w = nullptr, w2 = nullptr;
  std::vector<float> small(64, 0.f);
  EXPECT_OK(ncclCommWindowRegister(comm, win.data(), win.size(), &w, NCCL_WIN_DEFAULT));
  EXPECT_OK(ncclCommWindowRegister(comm, small.data(), small.size() * sizeof(float), &w2, NCCL_WIN_DEFAULT));

  if (o.kill) {
    std::vector<float> one(1, 1.f);
    EXPECT_OK(ncclAllReduce(one.data(), one.data(), 1, ncclFloat, ncclSum, comm, nullptr));
    if (rank == n - 1) {
      usleep(100 * 1000);  // the others are waiting by now
      raise(SIGKILL);
    }
    ncclWaitSignalDesc_t d{1, n - 1, 0, 0};
    const auto t0 = std::chrono::steady_clock::now();
    const ncclResult_t r = ncclWaitSignal(1, &d, comm, nullptr);
    const long ms = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    const std::string msg = ncclGetLastError(comm);
    std::printf("rank %d: wait on the killed rank returned %s after %ld ms: %s\n", rank, ncclGetErrorString(r), ms,
                msg.c_str());
    check(r == ncclRemoteError || r == ncclSystemError, rank, "the wait on a dead rank must fail");
    check(ms <= o.limitMs, rank, "the wait must fail within the bound");
    check(msg.find("rank " + std::to_string(n - 1)) != std::string::npos, rank, "the error must name the dead rank");
    ncclResult_t async = ncclSuccess;
    check(ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess, rank,
          "ncclCommGetAsyncError must report it");
    check(ncclCommAbort(comm) == ncclSuccess, rank, "abort after the failure");
    return failures ? 1 : 0;
  }

  // ring: a cycle of puts larger than any link buffer.
  for (size_t i = 0; i < o.bytes; ++i) src[i] = pattern(rank, i);
  EXPECT_OK(ncclPutSignal(src.data(), o.bytes, ncclUint8, next, w, 0, 0, 0, 0, comm, nullptr));
  ncclWaitSignalDesc_t fromPrev{1, prev, 0, 0};
  EXPECT_OK(ncclWaitSignal(1, &fromPrev, comm, nullptr));
  bool same = true;
  for (size_t i = 0; i < o.bytes && same; ++i) same = win[i] == pattern(prev, i);
  check(same, rank, "ring: the previous rank's put landed whole");

  // counted: three puts of odd sizes, then opCnt 3.
  const int32_t ints[3] = {rank, -rank, 7 * rank};
  const uint8_t odd[13] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, static_cast<uint8_t>(rank)};
  const double dbl = 0.5 + rank;
  EXPECT_OK(ncclPutSignal(ints, 3, ncclInt32, next, w, o.bytes + 100, 0, 0, 0, comm, nullptr));
  EXPECT_OK(ncclPutSignal(odd, 13, ncclInt8, next, w, o.bytes + 1001, 0, 0, 0, comm, nullptr));
  EXPECT_OK(ncclPutSignal(&dbl, 1, ncclFloat64, next, w, o.bytes + 2048, 0, 0, 0, comm, nullptr));
  ncclWaitSignalDesc_t three{3, prev, 0, 0};
  EXPECT_OK(ncclWaitSignal(1, &three, comm, nullptr));
  int32_t gotInts[3];
  std::memcpy(gotInts, &win[o.bytes + 100], sizeof gotInts);
  check(gotInts[0] == prev && gotInts[1] == -prev && gotInts[2] == 7 * prev, rank, "counted: int32 put");
  check(std::memcmp(&win[o.bytes + 1001], odd, 12) == 0 && win[o.bytes + 1013] == prev && win[o.bytes + 1014] == 0,
        rank, "counted: 13-byte put, and nothing past it");
  double gotDbl;
  std::memcpy(&gotDbl, &win[o.bytes + 2048], sizeof gotDbl);
  check(gotDbl == 0.5 + prev, rank, "counted: float64 put");

  // busy: the target is in an all-reduce with the putter while the put (more than the link
  // holds) arrives, so only the target's progress thread can take it in.
  std::vector<float> big(1 << 20, static_cast<float>(rank + 1));
  // Rank 0's put below overwrites rank 1's ring data, and nothing else orders it after rank 1's
  // check above: without this all-reduce a slow rank 1 (ASan) saw the new bytes in its ring check.
  std::vector<float> checked(1, 1.f);
  EXPECT_OK(ncclAllReduce(checked.data(), checked.data(), 1, ncclFloat, ncclSum, comm, nullptr));
  if (rank == 0) {
    for (size_t i = 0; i < o.bytes; ++i) src[i] = pattern(100, i);
    EXPECT_OK(ncclPutSignal(src.data(), o.bytes, ncclUint8, 1, w, 0, 0, 0, 0, comm, nullptr));
  }
  EXPECT_OK(ncclAllReduce(big.data(), big.data(), big.size(), ncclFloat, ncclSum, comm, nullptr));
  check(big[12345] == static_cast<float>(n * (n + 1) / 2), rank, "busy: the all-reduce result");
  if (rank == 1) {
    ncclWaitSignalDesc_t d{1, 0, 0, 0};
    EXPECT_OK(ncclWaitSignal(1, &d, comm, nullptr));
    same = true;
    for (size_t i = 0; i < o.bytes && same; ++i) same = win[i] == pattern(100, i);
    check(same, rank, "busy: rank 0's put landed whole");
  }

  // signals: everyone to everyone, one wait with a descriptor per peer.
  for (int p = 0; p < n; ++p)
    if (p != rank) EXPECT_OK(ncclSignal(p, 0, 0, 0, comm, nullptr));
  std::vector<ncclWaitSignalDesc_t> all;
  for (int p = 0; p < n; ++p)
    if (p != rank) all.push_back({1, p, 0, 0});
  EXPECT_OK(ncclWaitSignal(static_cast<int>(all.size()), all.data(), comm, nullptr));

  // self.
  const float selfVal[2] = {-1.f, -2.f};
  EXPECT_OK(ncclPutSignal(selfVal, 2, ncclFloat, rank, w2, 32 * sizeof(float), 0, 0, 0, comm, nullptr));
  ncclWaitSignalDesc_t selfD{1, rank, 0, 0};
  EXPECT_OK(ncclWaitSignal(1, &selfD, comm, nullptr));
  check(small[32] == -1.f && small[33] == -2.f, rank, "self: put to own window");

  // Out of the target's bounds: refused at the source.
  check(ncclPutSignal(src.data(), 8, ncclUint8, next, w2, small.size() * sizeof(float) - 4, 0, 0, 0, comm, nullptr) ==
            ncclInvalidArgument,
        rank, "a put past the window's end is refused");

  // Everyone is done reading before anyone deregisters or leaves.
  EXPECT_OK(ncclAllReduce(big.data(), big.data(), 1, ncclFloat, ncclSum, comm, nullptr));
  EXPECT_OK(ncclCommWindowDeregister(comm, w2));
  EXPECT_OK(ncclCommWindowDeregister(comm, w));
  EXPECT_OK(ncclCommFinalize(comm));
  EXPECT_OK(ncclCommDestroy(comm));
  if (failures == 0) std::printf("rank %d: ok\n", rank);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  int childRank = -1, idFd = -1;
  // Every option but --kill takes a number.
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--kill") {
      o.kill = true;
      continue;
    }
    if (i + 1 >= argc) return std::fprintf(stderr, "%s needs a value\n", a.c_str()), 2;
    const char* v = argv[++i];
    if (a == "--ranks") o.nranks = std::atoi(v);
    else if (a == "--bytes") o.bytes = std::strtoull(v, nullptr, 0);
    else if (a == "--limit-ms") o.limitMs = std::atol(v);
    else if (a == "--rank") childRank = std::atoi(v);
    else if (a == "--id-fd") idFd = std::atoi(v);
    else return std::fprintf(stderr, "unknown argument %s\n", a.c_str()), 2;
  }
  if (o.nranks < 2 || o.bytes < 16) return std::fprintf(stderr, "need --ranks >= 2 and --bytes >= 16\n"), 2;
  if (childRank >= 0) {
    ncclUniqueId id;
    if (!atl::test::readUniqueId(idFd, &id)) return 2;
    return runRank(o, childRank, id);
  }
  std::vector<std::string> args{"--ranks", std::to_string(o.nranks), "--bytes", std::to_string(o.bytes), "--limit-ms",
                                std::to_string(o.limitMs)};
  if (o.kill) args.push_back("--kill");
  atl::test::RankProcs procs;
  ncclUniqueId id;
  if (!atl::test::spawnRanks(o.nranks, argv[0], args, &procs) || ncclGetUniqueId(&id) != ncclSuccess ||
      !atl::test::sendUniqueId(procs, id))
    return std::fprintf(stderr, "could not start the ranks\n"), 2;
  int bad = 0;
  for (int r = 0; r < o.nranks; ++r) {
    int status = 0;
    waitpid(procs.pids[static_cast<size_t>(r)], &status, 0);
    const bool killedVictim = o.kill && r == o.nranks - 1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    if (!killedVictim && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      std::printf("rank %d ended with status %#x\n", r, status);
      ++bad;
    }
  }
  std::printf("%s\n", bad ? "FAILED" : "PASSED");
  return bad ? 1 : 0;
}
