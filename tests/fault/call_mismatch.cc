// ATOLL_CHECK=1 end to end on real processes: ranks make mismatched calls (a different count, type,
// operator, root or collective; send/recv sizes that disagree), and every rank involved must get
// ncclInvalidUsage with the same message, promptly, with nothing having moved; then the same
// communicator must still run a correct all-reduce. Without a mismatch nothing may be reported.
// "mixed": one rank sends and receives while the others run a collective; it gets ncclInvalidUsage,
// the others that or ncclRemoteError naming it, all promptly, and the communicator is broken.
//
//   call_mismatch --case NAME [--ranks N] [--bound-ms MS]
//   NAME: count dtype op root coll p2p mixed init none
//   (init: one rank runs without ATOLL_CHECK, which every rank must refuse at ncclCommInitRank)
// "Promptly" is asserted: every rank's call returns within --bound-ms (default 5000), while the
// engine's and the links' own timeouts are raised to 60 s, so a rank that learned of the mismatch
// only by timing out fails the bound instead of passing late.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/common/rank_procs.h"

namespace {

// The rank that deviates: the last one, so the message (which names the lowest differing rank
// against rank 0) is the same on every rank.
int odd(int nranks) { return nranks - 1; }

/// The mismatched launch of `which` on this rank; returns the call's result.
ncclResult_t mismatched(const std::string& which, int rank, int nranks, ncclComm_t comm, std::vector<float>& buf) {
  const bool me = rank == odd(nranks);
  const size_t count = 1024;
  if (which == "count") return ncclAllReduce(buf.data(), buf.data(), me ? count + 1 : count, ncclFloat, ncclSum, comm, nullptr);
  if (which == "dtype") return ncclAllReduce(buf.data(), buf.data(), count, me ? ncclInt32 : ncclFloat, ncclSum, comm, nullptr);
  if (which == "op") return ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, me ? ncclMax : ncclSum, comm, nullptr);
  if (which == "root") return ncclBroadcast(buf.data(), buf.data(), count, ncclFloat, me ? 1 : 0, comm, nullptr);
  if (which == "coll") {
    if (me) return ncclBroadcast(buf.data(), buf.data(), count, ncclFloat, 0, comm, nullptr);
    return ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, ncclSum, comm, nullptr);
  }
  if (which == "p2p") {
    // Ranks 0 and 1 disagree on the size; the others pair up correctly and must succeed.
    const int peer = rank ^ 1;
    if (peer >= nranks) return ncclSuccess;
    const size_t send = count, recv = count / 2;  // each expects half of what the other sends
    const size_t n = rank < 2 ? 0 : count;
    ncclGroupStart();
    ncclSend(buf.data(), rank < 2 ? send : n, ncclFloat, peer, comm, nullptr);
    ncclRecv(buf.data() + 2 * count, rank < 2 ? recv : n, ncclFloat, peer, comm, nullptr);
    return ncclGroupEnd();
  }
  if (which == "mixed" && me) {
    // The odd rank exchanges with rank 1 while every other rank, rank 1 included, launches an
    // all-reduce: ranks 0 and 2 never exchange with it, yet must not wait for it until the timeout.
    ncclGroupStart();
    ncclSend(buf.data(), count, ncclFloat, 1, comm, nullptr);
    ncclRecv(buf.data() + count, count, ncclFloat, 1, comm, nullptr);
    return ncclGroupEnd();
  }
  return ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, ncclSum, comm, nullptr);  // "none"
}

int child(const std::string& which, int rank, int nranks, int idFd, const std::string& outDir) {
  alarm(60);  // a hang is a failure, not a stuck CI job
  ncclUniqueId id;
  if (!atl::test::readUniqueId(idFd, &id)) return 2;
  if (which == "init" && rank == odd(nranks)) setenv("ATOLL_CHECK", "0", 1);
  ncclComm_t comm;
  const ncclResult_t init = ncclCommInitRank(&comm, nranks, id, rank);
  if (which == "init") {
    // Every rank sees every rank's setting at the rendezvous, so every one refuses.
    std::ofstream(outDir + "/r" + std::to_string(rank)) << ncclGetErrorString(init) << "\n"
                                                        << ncclGetLastError(nullptr) << "\n0\n";
    return init == ncclInvalidUsage ? 0 : 3;
  }
  if (init != ncclSuccess) return 3;
  std::vector<float> buf(4096, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  const ncclResult_t r = mismatched(which, rank, nranks, comm, buf);
  const long ms = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
  std::ofstream(outDir + "/r" + std::to_string(rank)) << ncclGetErrorString(r) << "\n"
                                                      << (r == ncclSuccess ? "" : ncclGetLastError(comm)) << "\n"
                                                      << ms << "\n";
  if (which == "mixed") {
    // Not every rank can see this mismatch, so it breaks the communicator: the asynchronous error
    // says so, and abort must still clean up.
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    if (async == ncclSuccess) return 4;
    return ncclCommAbort(comm) == ncclSuccess ? 0 : 6;
  }
  // The communicator is still usable: nothing moved, no link was broken.
  std::vector<float> x(777, static_cast<float>(rank + 1));
  if (ncclAllReduce(x.data(), x.data(), x.size(), ncclFloat, ncclSum, comm, nullptr) != ncclSuccess) return 4;
  const float want = static_cast<float>(nranks * (nranks + 1) / 2);
  for (float v : x)
    if (v != want) return 5;
  return ncclCommDestroy(comm) == ncclSuccess ? 0 : 6;
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "count", outDir;
  int nranks = 4, childRank = -1, idFd = -1;
  long boundMs = 5000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return std::fprintf(stderr, "missing value for %s\n", a.c_str()), 2;
    if (a == "--case") which = argv[++i];
    else if (a == "--ranks") nranks = std::atoi(argv[++i]);
    else if (a == "--rank") childRank = std::atoi(argv[++i]);
    else if (a == "--id-fd") idFd = std::atoi(argv[++i]);
    else if (a == "--out") outDir = argv[++i];
    else if (a == "--bound-ms") boundMs = std::atol(argv[++i]);
    else return std::fprintf(stderr, "unknown argument %s\n", a.c_str()), 2;
  }
  if (childRank >= 0) return child(which, childRank, nranks, idFd, outDir);
  setenv("ATOLL_CHECK", "1", 1);
  setenv("ATOLL_TIMEOUT_MS", "60000", 1);
  setenv("ATOLL_HEARTBEAT_TIMEOUT_MS", "60000", 1);
  char tmpl[] = "/tmp/atoll-mismatch-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 2;
  outDir = tmpl;

  atl::test::RankProcs procs;
  ncclUniqueId id;
  if (!atl::test::spawnRanks(nranks, argv[0], {"--ranks", std::to_string(nranks), "--case", which, "--out", outDir},
                             &procs) ||
      ncclGetUniqueId(&id) != ncclSuccess || !atl::test::sendUniqueId(procs, id))
    return 2;
  const std::vector<pid_t>& pids = procs.pids;
  int failures = 0;
  for (int r = 0; r < nranks; ++r) {
    int status = 0;
    waitpid(pids[static_cast<size_t>(r)], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::printf("FAIL rank %d: %s %d\n", r, WIFEXITED(status) ? "exit" : "signal",
                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      ++failures;
    }
  }
  // Who must see the error, and that they all say the same thing.
  std::string reference;
  for (int r = 0; r < nranks; ++r) {
    const std::vector<std::string> got = lines(outDir + "/r" + std::to_string(r));
    if (got.size() < 3) {
      std::printf("FAIL rank %d: no report\n", r);
      ++failures;
      continue;
    }
    const bool involved = which != "none" && (which != "p2p" || r < 2);
    std::string want = involved ? ncclGetErrorString(ncclInvalidUsage) : ncclGetErrorString(ncclSuccess);
    // In "mixed" the ranks in the collective may instead see the odd rank's (or each other's)
    // links break before their own exchange completes; the message must still name the cause.
    const bool alsoRemote = which == "mixed" && r != odd(nranks);
    std::printf("rank %d: %s after %s ms: %s\n", r, got[0].c_str(), got[2].c_str(), got[1].c_str());
    if (got[0] != want && !(alsoRemote && got[0] == ncclGetErrorString(ncclRemoteError))) {
      std::printf("FAIL rank %d: expected '%s'\n", r, want.c_str());
      ++failures;
    }
    if (std::atol(got[2].c_str()) > boundMs) {
      std::printf("FAIL rank %d: the call took %s ms, over the %ld ms bound\n", r, got[2].c_str(), boundMs);
      ++failures;
    }
    if (involved && got[1].find("ATOLL_CHECK") == std::string::npos) {
      std::printf("FAIL rank %d: the message does not come from ATOLL_CHECK\n", r);
      ++failures;
    }
    if (involved && which != "p2p" && which != "init" && which != "mixed") {
      if (reference.empty()) reference = got[1];
      if (got[1] != reference) {
        std::printf("FAIL rank %d: message differs from rank 0's\n", r);
        ++failures;
      }
    }
  }
  std::system(("rm -rf '" + outDir + "'").c_str());
  std::printf("%s: %s\n", which.c_str(), failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
