// File descriptors (base/fd_limit.h): init raises the soft RLIMIT_NOFILE to the hard limit, as
// NCCL does, and when descriptors still run out, init fails promptly with an error that names the
// limit instead of a bare "Too many open files". Each case runs in a child, whose limits it lowers.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include <cstdlib>
#include <string>

#include "nccl.h"
#include "tests/common/open_fds.h"

namespace {

using atl::test::openFds;

/// Runs `body` in a child; its exit code.
template <class F>
int inChild(F body) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(60);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

int initOneRank() {
  setenv("ATOLL_BOOTSTRAP_TIMEOUT_MS", "5000", 1);
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 10;
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 11;
  float x = 1;
  if (ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr) != ncclSuccess || x != 1) return 12;
  return ncclCommDestroy(comm) == ncclSuccess ? 0 : 13;
}

TEST(FdLimit, InitRaisesTheSoftLimitToTheHardOne) {
  EXPECT_EQ(inChild([] {
              rlimit rl{};
              getrlimit(RLIMIT_NOFILE, &rl);
              if (rl.rlim_max < 256) return 0;  // nothing to show on such a machine
              rl.rlim_cur = 128;
              if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 20;
              if (int r = initOneRank()) return r;
              rlimit after{};
              getrlimit(RLIMIT_NOFILE, &after);
              return after.rlim_cur == rl.rlim_max ? 0 : 21;
            }),
            0);
}

TEST(FdLimit, RunningOutNamesTheLimit) {
  // From no spare descriptor up to enough: every failing init must say why, none may hang, and
  // with enough it works.
  bool sawFailure = false, sawSuccess = false;
  for (int spare = 0; spare <= 40 && !sawSuccess; spare += 2) {
    const int code = inChild([spare] {
      const rlim_t want = static_cast<rlim_t>(openFds() + spare);
      rlimit rl{want, want};
      if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 30;
      const int r = initOneRank();
      if (r == 0) return 0;
      const std::string why = ncclGetLastError(nullptr);
      return why.find("RLIMIT_NOFILE") != std::string::npos ? 1 : 2;
    });
    ASSERT_TRUE(code == 0 || code == 1) << spare << " spare descriptors: exit " << code
                                        << " (2: the error does not name RLIMIT_NOFILE)";
    sawFailure = sawFailure || code == 1;
    sawSuccess = code == 0;
  }
  EXPECT_TRUE(sawFailure);
  EXPECT_TRUE(sawSuccess);
}

}  // namespace
