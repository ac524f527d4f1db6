// Fault injection: one rank is killed with SIGKILL (or, with --stop, frozen with SIGSTOP: alive but
// silent, so only ATOLL_TIMEOUT_MS can end the wait) in the middle of large all-reduces; every
// survivor's call must fail (ncclRemoteError or ncclSystemError) within --limit-ms of the kill,
// ncclCommGetAsyncError must report it, and each survivor's ncclGetLastError must name the victim
// and its host, also on ranks that only saw a neighbour give up. After ncclCommAbort each survivor
// must be back to the fds and threads it had before ncclCommInitRank, and /dev/shm must hold
// nothing of the job. Times come from the ranks themselves (fault_report.h): the victim stamps the
// moment before it raises the signal, each survivor the moment its call returned.
//
// With --shrink the survivors then recover as a training job would: ncclCommShrink without the
// victim (NCCL_SHRINK_ABORT), and a checked all-reduce on the new communicator.
//
// How the ranks are started (the bound must hold for each):
//   (default)      this program forks the ranks and reaps each one as soon as it exits;
//   --reap-late    ... and reaps them only in rank order, as a Python multiprocessing parent that
//                  joins its workers one by one does: a victim after the survivors stays a zombie;
//   --pidns        each rank in its own pid namespace (unshare --pid --fork), /dev/shm shared;
//   --victim-forks the victim forks a child after init (as a data-loader worker) that outlives it;
//   --vanish-netns NS  the victim runs in network namespace NS (another host) and, instead of
//                  dying, takes its eth0 down and freezes: a host gone without a FIN;
//   --slow-ms MS   nobody dies: the victim sleeps MS before one call while the others wait in it,
//                  and every call must succeed (a busy rank is not a dead one);
//   --launch atollrun|mpirun|env   under atollrun, Open MPI's mpirun, or torchrun-style
//                  RANK/WORLD_SIZE/MASTER_ADDR variables (ranks started here, reaped late). The
//                  survivors ignore SIGTERM so a launcher that stops the job on the first death
//                  cannot hide a survivor that would hang: the launchers' SIGKILL comes 4 s
//                  later, and a survivor killed before it reported fails the test.
//
//   dead_peer --ranks N --victim V [--bytes B] [--limit-ms L] [--stop | --shrink]
//             [--reap-late] [--pidns] [--victim-forks] [--vanish-netns NS] [--slow-ms MS]
//             [--launch STYLE [--atollrun PATH]]   (NCCL_SHM_DISABLE=1: sockets)
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
#include "perf/common/world.h"
#include "tests/common/rank_procs.h"
#include "tests/fault/fault_report.h"

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
constexpr int kAllDone = 100;     // --slow-ms: every call succeeded

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

struct Options {
  int nranks = 4, victim = 1;
  size_t bytes = 32u << 20;
  long limitMs = 5000;
  bool ncclMem = false, stop = false, shrink = false, reapLate = false, pidns = false, launched = false, victimForks = false;
  long slowMs = 0;
  std::string launch, atollrun = "atollrun", reportDir, vanishNetns;
};

/// The victim's host, for --vanish-netns: its own network namespace and NCCL_HOSTID.
bool enterVictimHost(const std::string& netns) {
  const int fd = ::open(("/var/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "cannot enter network namespace %s: %s\n", netns.c_str(), std::strerror(errno));
    return false;
  }
  ::close(fd);
  setenv("NCCL_HOSTID", "vanishing-host", 1);
  return true;
}

/// Takes this namespace's eth0 down: from the peers' side the host is gone without a FIN or RST.
void vanish() {
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "eth0", IFNAMSIZ - 1);
  if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) != 0) return;
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags & ~IFF_UP);
  ioctl(s, SIOCSIFFLAGS, &ifr);
  ::close(s);
}

/// Rank side: joins `id`, runs all-reduces until the victim dies, and reports (fault_report.h).
int runRank(const Options& o, int rank, const ncclUniqueId& id, const atl::perf::World* world) {
  auto report = [dir = o.reportDir, rank](const std::string& line) { atl::test::reportLine(dir, rank, line); };
  const int victim = o.victim, nranks = o.nranks;
  // Sanitizer runtimes start a helper thread of their own at the first thread creation: let that
  // happen before the baseline.
  std::thread([] {}).join();
  const size_t count = o.bytes / sizeof(float);
  // --nccl-mem: from the shared pool, so shm links move it in a single copy (the peer reads the
  // victim's pages in place while it dies). Made before the descriptor count: its memfd is ours.
  std::vector<float> own;
  float* buf = nullptr;
  if (o.ncclMem) {
    void* p = nullptr;
    if (ncclMemAlloc(&p, o.bytes) != ncclSuccess) return 3;
    buf = static_cast<float*>(p);
    std::fill(buf, buf + count, 1.0f);
  } else {
    own.assign(count, 1.0f);
    buf = own.data();
  }
  const int fds0 = openFds(), threads0 = threads();
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 3;
  if (world != nullptr) atl::perf::retireIdFile(*world);
  if (rank == victim && o.victimForks && fork() == 0) {
    // A data-loader worker: it inherits the victim's descriptors and mappings and outlives it.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    _exit(0);
  }
  auto verdict = [&](int code) {
    report("verdict " + std::to_string(code));
    return code;
  };
  for (int iter = 0;; ++iter) {
    if (o.slowMs > 0 && iter == 4) {
      // Slow, not dead: everyone finished, and nobody may have given up on the slow rank.
      ncclCommDestroy(comm);
      return verdict(kAllDone);
    }
    if (rank == victim && iter == 2 && o.slowMs > 0) {
      // Busy elsewhere (as a rank computing before its next collective) while the others already
      // sent it all their socket buffers can hold.
      std::this_thread::sleep_for(std::chrono::milliseconds(o.slowMs));
    } else if (rank == victim && iter == 2) {
      // Die (or freeze, or lose the host's network) part-way through the next call, not between calls.
      std::thread([stop = o.stop, net = !o.vanishNetns.empty(), report] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        report(std::string(stop || net ? "stopped " : "killed ") + std::to_string(atl::test::monotonicNs()));
        if (net) vanish();
        raise(stop || net ? SIGSTOP : SIGKILL);
      }).detach();
    }
    ncclResult_t r = ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, nullptr);
    if (r != ncclSuccess) {
      report("failed " + std::to_string(static_cast<int>(r)) + " " + std::to_string(atl::test::monotonicNs()));
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      std::fprintf(stderr, "rank %d: iteration %d failed with %s (async %s): %s\n", rank, iter, ncclGetErrorString(r),
                   ncclGetErrorString(async), ncclGetLastError(comm));
      if (async != r) return verdict(4);
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
        return verdict(kWrongCause);
      }
      if (o.shrink && !recover(comm, rank, nranks, victim)) return verdict(kShrinkFailed);
      ncclCommAbort(comm);
      // Bootstrap listener threads close their sockets as they exit: allow them a moment.
      // Fewer is fine: under an MPI launcher rank 0 hosted the root before the baseline.
      for (int i = 0; i < 200 && (openFds() > fds0 || threads() > threads0); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (openFds() > fds0 || threads() > threads0) {
        std::fprintf(stderr, "rank %d: after abort %d fds (%d before init), %d threads (%d before)\n", rank, openFds(),
                     fds0, threads(), threads0);
        return verdict(kLeaked);
      }
      verdict(0);
      return kExitBase + r;
    }
    if (iter > 2000) return 5;  // the victim never died: the test itself is broken
  }
}

/// Judges the reports once every rank is gone; returns the number of failures.
int judge(const Options& o) {
  int failures = 0;
  if (o.slowMs > 0) {
    for (int rank = 0; rank < o.nranks; ++rank) {
      const atl::test::RankReport r = atl::test::readReport(o.reportDir, rank);
      const bool done = r.verdict == kAllDone && r.failedNs < 0;
      std::printf("rank %d: %s\n", rank, done ? "finished every call" : "FAILED: a call failed or never returned");
      failures += done ? 0 : 1;
    }
    return failures;
  }
  const atl::test::RankReport v = atl::test::readReport(o.reportDir, o.victim);
  if (v.killedNs < 0) {
    std::printf("FAIL: the victim (rank %d) never reached its kill\n", o.victim);
    return 1;
  }
  for (int rank = 0; rank < o.nranks; ++rank) {
    if (rank == o.victim) continue;
    const atl::test::RankReport r = atl::test::readReport(o.reportDir, rank);
    if (r.failedNs < 0) {
      std::printf("rank %d: FAILED: its call never returned an error\n", rank);
      ++failures;
      continue;
    }
    const long ms = static_cast<long>((r.failedNs - v.killedNs) / 1000000);
    const bool okCode = r.result == ncclRemoteError || r.result == ncclSystemError;
    const bool okTime = ms >= 0 && ms <= o.limitMs;
    std::printf("rank %d: %s after %ld ms%s\n", rank,
                okCode ? ncclGetErrorString(static_cast<ncclResult_t>(r.result)) : "WRONG RESULT", ms,
                okTime ? "" : " (TOO SLOW or before the victim died)");
    if (!okCode || !okTime) ++failures;
    switch (r.verdict) {
      case 0: break;
      case kShrinkFailed: std::printf("rank %d: FAILED to shrink and all-reduce without the victim\n", rank); break;
      case kWrongCause:
        std::printf("rank %d: FAILED: its error does not name the victim (rank %d) and its host\n", rank, o.victim);
        break;
      case kLeaked: std::printf("rank %d: LEAKED file descriptors or threads after ncclCommAbort\n", rank); break;
      default: std::printf("rank %d: FAILED its checks after the error (verdict %d)\n", rank, r.verdict); break;
    }
    if (r.verdict != 0) ++failures;
  }
  return failures;
}

bool pastDeadline(Clock::time_point start) { return Clock::now() - start > std::chrono::seconds(120); }

/// Waits for `pids` (or the launcher's process group) with the test's overall deadline.
bool waitAll(const std::vector<pid_t>& pids, const Options& o, bool groups) {
  const auto start = Clock::now();
  auto killAll = [&] {
    std::fprintf(stderr, "FAIL: ranks still running after 120 s; killing them\n");
    for (pid_t p : pids) kill(groups ? -p : p, SIGKILL);
    for (pid_t p : pids) waitpid(p, nullptr, 0);
    return false;
  };
  if (o.reapLate) {
    for (pid_t p : pids) {
      while (waitpid(p, nullptr, WNOHANG) == 0) {
        if (pastDeadline(start)) return killAll();
        usleep(1000);
      }
    }
    return true;
  }
  const pid_t victimPid = pids.size() == static_cast<size_t>(o.nranks) ? pids[static_cast<size_t>(o.victim)] : -1;
  size_t left = pids.size();
  bool victimStopped = false;
  while (left > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG | WUNTRACED);
    if (pid < 0) break;
    if (pid == 0) {
      if (pastDeadline(start)) return killAll();
      usleep(1000);
      continue;
    }
    if (WIFSTOPPED(status)) {
      victimStopped = pid == victimPid;
      continue;
    }
    --left;
    if (pid == victimPid && !o.stop && !o.pidns && o.vanishNetns.empty() && o.slowMs == 0 &&
        !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
      std::printf("victim ended with status %#x, not SIGKILL\n", status);
    // Frozen, not dead: once every survivor is done the victim is killed here.
    if (victimStopped && left == 1) kill(victimPid, SIGKILL);
  }
  return true;
}

/// Starts the job under a launcher (or, for "env", as torchrun would) with this program as each rank.
bool launchJob(const Options& o, const std::vector<std::string>& rankArgs, std::vector<pid_t>* pids) {
  const std::string exe = atl::test::selfExe();
  if (exe.empty()) return false;
  auto start = [&](std::vector<std::string> argv, const std::vector<std::string>& env) {
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);  // so a hung job can be killed whole
      for (const std::string& e : env) putenv(strdup(e.c_str()));
      std::vector<char*> cargv;
      for (std::string& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execvp(cargv[0], cargv.data());
      _exit(127);
    }
    if (pid > 0) pids->push_back(pid);
    return pid > 0;
  };
  std::vector<std::string> rank{exe, "--launched"};
  rank.insert(rank.end(), rankArgs.begin(), rankArgs.end());
  const std::string np = std::to_string(o.nranks);
  if (o.launch == "atollrun") {
    std::vector<std::string> argv{o.atollrun, "--grace", "4", "-np", np};
    argv.insert(argv.end(), rank.begin(), rank.end());
    return start(argv, {});
  }
  if (o.launch == "mpirun") {
    std::vector<std::string> argv{"mpirun", "--allow-run-as-root", "--oversubscribe", "--mca",
                                  "odls_base_sigkill_timeout", "4", "-np", np};
    argv.insert(argv.end(), rank.begin(), rank.end());
    return start(argv, {});
  }
  if (o.launch == "env") {
    const std::string port = std::to_string(20000 + getpid() % 20000);
    for (int r = 0; r < o.nranks; ++r)
      if (!start(rank, {"RANK=" + std::to_string(r), "WORLD_SIZE=" + np, "LOCAL_RANK=" + std::to_string(r),
                        "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port}))
        return false;
    return true;
  }
  std::fprintf(stderr, "unknown --launch %s (atollrun, mpirun or env)\n", o.launch.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  int childRank = -1, idFd = -1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? argv[++i] : (std::fprintf(stderr, "missing value for %s\n", a.c_str()), exit(2), ""); };
    if (a == "--ranks") o.nranks = std::atoi(next());
    else if (a == "--victim") o.victim = std::atoi(next());
    else if (a == "--bytes") o.bytes = std::strtoull(next(), nullptr, 0);
    else if (a == "--limit-ms") o.limitMs = std::atol(next());
    else if (a == "--rank") childRank = std::atoi(next());
    else if (a == "--id-fd") idFd = std::atoi(next());
    else if (a == "--report-dir") o.reportDir = next();
    else if (a == "--stop") o.stop = true;
    else if (a == "--nccl-mem") o.ncclMem = true;
    else if (a == "--shrink") o.shrink = true;
    else if (a == "--reap-late") o.reapLate = true;
    else if (a == "--pidns") o.pidns = true;
    else if (a == "--launched") o.launched = true;
    else if (a == "--victim-forks") o.victimForks = true;
    else if (a == "--vanish-netns") o.vanishNetns = next();
    else if (a == "--slow-ms") o.slowMs = std::atol(next());
    else if (a == "--launch") o.launch = next();
    else if (a == "--atollrun") o.atollrun = next();
    else return std::fprintf(stderr, "unknown argument %s\n", a.c_str()), 2;
  }
  if (o.launch == "env") o.reapLate = true;  // as torchrun's agent, which polls its workers now and then
  if (o.victim < 0 || o.victim >= o.nranks || (o.stop && (o.reapLate || o.pidns || !o.launch.empty())))
    return std::fprintf(stderr, "bad --victim, or --stop with another launch mode\n"), 2;
  if (childRank >= 0) {
    if (childRank == o.victim && !o.vanishNetns.empty() && !enterVictimHost(o.vanishNetns)) return 2;
    ncclUniqueId id;
    if (!atl::test::readUniqueId(idFd, &id)) return 2;
    return runRank(o, childRank, id, nullptr);
  }
  if (o.launched) {
    signal(SIGTERM, SIG_IGN);  // see the header: the launcher must not end a survivor's wait for it
    atl::perf::World world;
    std::string error;
    if (!atl::perf::discoverWorld(&world, &error) || world.nprocs != o.nranks)
      return std::fprintf(stderr, "launched rank: %s (world of %d)\n", error.c_str(), world.nprocs), 2;
    return runRank(o, world.proc, world.id, &world);
  }

  char dirTemplate[] = "/tmp/atoll-dead-peer-XXXXXX";
  if (mkdtemp(dirTemplate) == nullptr) return 2;
  o.reportDir = dirTemplate;
  std::vector<std::string> args{"--ranks", std::to_string(o.nranks), "--victim", std::to_string(o.victim), "--bytes",
                                std::to_string(o.bytes), "--report-dir", o.reportDir};
  if (o.stop) args.push_back("--stop");
  if (o.ncclMem) args.push_back("--nccl-mem");
  if (o.shrink) args.push_back("--shrink");
  if (o.victimForks) args.push_back("--victim-forks");
  if (!o.vanishNetns.empty()) args.insert(args.end(), {"--vanish-netns", o.vanishNetns});
  if (o.slowMs > 0) args.insert(args.end(), {"--slow-ms", std::to_string(o.slowMs)});
  std::vector<pid_t> pids;
  bool ran = false;
  if (!o.launch.empty()) {
    ran = launchJob(o, args, &pids) && waitAll(pids, o, true);
  } else {
    atl::test::RankProcs procs;
    ncclUniqueId id;
    const std::vector<std::string> wrapper =
        o.pidns ? std::vector<std::string>{"unshare", "--pid", "--fork", "--kill-child", "sh", "-c", "\"$0\" \"$@\" & wait $!"}
                : std::vector<std::string>{};
    ran = atl::test::spawnRanks(o.nranks, argv[0], args, &procs, "", wrapper) && ncclGetUniqueId(&id) == ncclSuccess &&
          atl::test::sendUniqueId(procs, id) && waitAll(procs.pids, o, false);
  }
  int failures = ran ? judge(o) : 1;
  std::system(("rm -rf " + o.reportDir).c_str());
  // Nothing may be left behind in /dev/shm by any rank, the dead one included.
  if (std::system("ls /dev/shm | grep -q '^atoll-'") == 0) {
    std::printf("FAIL: atoll-* segments left in /dev/shm\n");
    ++failures;
  }
  std::printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures ? 1 : 0;
}
