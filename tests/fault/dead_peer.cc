// Fault injection: one rank is killed with SIGKILL (or, with --stop, frozen with SIGSTOP: alive but
// silent, so only ATOLL_TIMEOUT_MS can end the wait) in the middle of large all-reduces; every
// survivor's call must fail (ncclRemoteError or ncclSystemError) within a bounded time, and
// ncclCommGetAsyncError must report it, and each survivor's ncclGetLastError must name the victim
// and its host, also on ranks that only saw a neighbour give up. After ncclCommAbort each survivor
// must be back to the fds and threads it had before ncclCommInitRank, and /dev/shm must hold
// nothing of the job. The parent
// measures from the victim's death (or stop) to each survivor's exit, which happens right after
// its failing call returns.
//
// With --shrink the survivors then recover as a training job would: ncclCommShrink without the
// victim (NCCL_SHRINK_ABORT), and a checked all-reduce on the new communicator.
//
//   dead_peer --ranks N --victim V [--bytes B] [--limit-ms L] [--stop | --shrink]   (NCCL_SHM_DISABLE=1: sockets)
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/common/rank_procs.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kExitBase = 10;  // survivors exit with kExitBase + the ncclResult_t they got
constexpr int kLeaked = 7;     // a survivor kept fds or threads after ncclCommAbort

int openFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

int threads() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return -1;
}

constexpr int kShrinkFailed = 8;  // the survivors could not rebuild and compute without the victim
constexpr int kWrongCause = 9;    // a survivor's error does not name the victim and its host

/// Survivors only: a communicator without the victim, and a correct all-reduce on it.
bool recover(ncclComm_t comm, int rank, int nranks, int victim) {
  int exclude[] = {victim};
  ncclComm_t child = nullptr;
  if (ncclCommShrink(comm, exclude, 1, &child, nullptr, NCCL_SHRINK_ABORT) != ncclSuccess) {
    std::fprintf(stderr, "rank %d: shrink failed: %s\n", rank, ncclGetLastError(comm));
    return false;
  }
  std::vector<float> v(100003, static_cast<float>(rank + 1));
  const bool ran = ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, child, nullptr) == ncclSuccess;
  const float want = static_cast<float>(nranks * (nranks + 1) / 2 - (victim + 1));
  bool right = ran;
  for (float x : v) right = right && x == want;
  if (!right) std::fprintf(stderr, "rank %d: all-reduce after shrink %s\n", rank, ran ? "wrong" : "failed");
  return ncclCommDestroy(child) == ncclSuccess && right;
}

int child(int rank, int nranks, int victim, size_t bytes, int idFd, bool stop, bool shrink) {
  ncclUniqueId id;
  if (!atl::test::readUniqueId(idFd, &id)) return 2;
  // Sanitizer runtimes start a helper thread of their own at the first thread creation: let that
  // happen before the baseline.
  std::thread([] {}).join();
  const int fds0 = openFds(), threads0 = threads();
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 3;
  const size_t count = bytes / sizeof(float);
  std::vector<float> buf(count, 1.0f);
  for (int iter = 0;; ++iter) {
    if (rank == victim && iter == 2) {
      // Die part-way through the next call, not between calls.
      std::thread([stop] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        raise(stop ? SIGSTOP : SIGKILL);
      }).detach();
    }
    ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, ncclSum, comm, nullptr);
    if (r != ncclSuccess) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      std::fprintf(stderr, "rank %d: iteration %d failed with %s (async %s): %s\n", rank, iter, ncclGetErrorString(r),
                   ncclGetErrorString(async), ncclGetLastError(comm));
      if (async != r) return 4;
      // Every survivor, next to the victim or not, must blame it, with its host, before any other
      // rank it names that way (core/fault_notice.h); a silent victim too, at the end of the chain
      // of timed-out ranks that wait on one another.
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      const std::string why = ncclGetLastError(comm);
      std::smatch blamed;
      const bool named = std::regex_search(why, blamed, std::regex("rank ([0-9]+) \\(")) &&
                         blamed[1] == std::to_string(victim);
      if (!named || why.find("host " + std::string(host)) == std::string::npos) {
        std::fprintf(stderr, "rank %d: the error does not name rank %d on host %s\n", rank, victim, host);
        return kWrongCause;
      }
      if (shrink && !recover(comm, rank, nranks, victim)) return kShrinkFailed;
      ncclCommAbort(comm);
      // Bootstrap listener threads close their sockets as they exit: allow them a moment.
      for (int i = 0; i < 200 && (openFds() > fds0 || threads() > threads0); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (openFds() != fds0 || threads() != threads0) {
        std::fprintf(stderr, "rank %d: after abort %d fds (%d before init), %d threads (%d before)\n", rank, openFds(),
                     fds0, threads(), threads0);
        return kLeaked;
      }
      return kExitBase + r;
    }
    if (iter > 2000) return 5;  // the victim never died: the test itself is broken
  }
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 4, victim = 1, childRank = -1, idFd = -1;
  bool stop = false, shrink = false;
  size_t bytes = 32u << 20;
  long limitMs = 5000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? argv[++i] : (std::fprintf(stderr, "missing value for %s\n", a.c_str()), exit(2), ""); };
    if (a == "--ranks") nranks = std::atoi(next());
    else if (a == "--victim") victim = std::atoi(next());
    else if (a == "--bytes") bytes = std::strtoull(next(), nullptr, 0);
    else if (a == "--limit-ms") limitMs = std::atol(next());
    else if (a == "--rank") childRank = std::atoi(next());
    else if (a == "--id-fd") idFd = std::atoi(next());
    else if (a == "--stop") stop = true;
    else if (a == "--shrink") shrink = true;
    else return std::fprintf(stderr, "unknown argument %s\n", a.c_str()), 2;
  }
  if (childRank >= 0) return child(childRank, nranks, victim, bytes, idFd, stop, shrink);

  std::vector<std::string> args{"--ranks", std::to_string(nranks), "--victim", std::to_string(victim), "--bytes",
                                std::to_string(bytes)};
  if (stop) args.push_back("--stop");
  if (shrink) args.push_back("--shrink");
  atl::test::RankProcs procs;
  ncclUniqueId id;
  if (!atl::test::spawnRanks(nranks, argv[0], args, &procs) || ncclGetUniqueId(&id) != ncclSuccess ||
      !atl::test::sendUniqueId(procs, id))
    return 2;
  const std::vector<pid_t>& pids = procs.pids;

  const auto start = Clock::now();
  Clock::time_point victimDied{};
  int failures = 0, left = nranks;
  while (left > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG | WUNTRACED);
    if (pid == 0) {
      if (Clock::now() - start > std::chrono::seconds(120)) {
        std::fprintf(stderr, "FAIL: ranks still running after 120 s; killing them\n");
        for (pid_t p : pids) kill(p, SIGKILL);
        return 1;
      }
      usleep(1000);
      continue;
    }
    if (pid < 0) break;
    --left;
    int rank = 0;
    while (pids[static_cast<size_t>(rank)] != pid) ++rank;
    auto now = Clock::now();
    if (rank == victim && WIFSTOPPED(status)) {
      // Frozen, not dead: the survivors can only give up at ATOLL_TIMEOUT_MS. It is killed below.
      victimDied = now;
      std::printf("rank %d (victim) stopped: SIGSTOP\n", rank);
      continue;
    }
    if (rank == victim) {
      if (stop) continue;  // killed by us once the survivors were done
      victimDied = now;
      std::printf("rank %d (victim) died: %s\n", rank,
                  WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? "SIGKILL" : "unexpected status");
      if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) ++failures;
      continue;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) - kExitBase : -1;
    long ms = victimDied == Clock::time_point{}
                  ? -1
                  : static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(now - victimDied).count());
    if (WIFEXITED(status) && WEXITSTATUS(status) == kShrinkFailed) {
      std::printf("rank %d: FAILED to shrink and all-reduce without the victim\n", rank);
      ++failures;
      continue;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == kWrongCause) {
      std::printf("rank %d: FAILED: its error does not name the victim (rank %d) and its host\n", rank, victim);
      ++failures;
      continue;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == kLeaked) {
      std::printf("rank %d: LEAKED file descriptors or threads after ncclCommAbort\n", rank);
      ++failures;
      continue;
    }
    bool okCode = code == ncclRemoteError || code == ncclSystemError;
    bool okTime = ms >= 0 && ms <= limitMs;
    std::printf("rank %d: %s after %ld ms%s\n", rank, okCode ? ncclGetErrorString(static_cast<ncclResult_t>(code)) : "WRONG EXIT",
                ms, okTime ? "" : " (TOO SLOW or before the victim died)");
    if (!okCode || !okTime) ++failures;
  }
  if (stop) {
    kill(pids[static_cast<size_t>(victim)], SIGKILL);
    int status = 0;
    waitpid(pids[static_cast<size_t>(victim)], &status, 0);
  }
  // Nothing may be left behind in /dev/shm by any rank, the dead one included.
  std::string leftovers = "ls /dev/shm 2>/dev/null | grep -c '^atoll-' > /dev/null";
  if (std::system("ls /dev/shm | grep -q '^atoll-'") == 0) {
    std::printf("FAIL: atoll-* segments left in /dev/shm\n");
    ++failures;
  }
  std::printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures ? 1 : 0;
}
