#include "base/fd_limit.h"

#include <dirent.h>
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "base/debug.h"

namespace atl::net {
namespace {

FdLimit current() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return {};
  return {static_cast<uint64_t>(rl.rlim_cur), static_cast<uint64_t>(rl.rlim_max)};
}

}  // namespace

FdLimit raiseFdLimit() {
  static std::once_flag once;
  std::call_once(once, [] {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
    const rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
      ATOLL_INFO(log::kInit, "raised the soft RLIMIT_NOFILE from %llu to the hard limit %llu",
                 static_cast<unsigned long long>(was), static_cast<unsigned long long>(rl.rlim_max));
    else
      ATOLL_WARN("could not raise the soft RLIMIT_NOFILE from %llu to %llu", static_cast<unsigned long long>(was),
                 static_cast<unsigned long long>(rl.rlim_max));
  });
  return current();
}

namespace {
// When this process last ran out (any thread): a wait that then failed was likely its victim even
// if the descriptors are free again by the time the wait gives up (the root that could not accept
// has closed its listener at its own deadline).
std::atomic<int64_t> lastExhaustedMs{-1};
int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
constexpr int64_t kRecentMs = 10 * 60 * 1000;
}  // namespace

std::string fdPressureHint() {
  const int64_t last = lastExhaustedMs.load(std::memory_order_relaxed);
  if (last >= 0 && nowMs() - last < kRecentMs) return fdHint(EMFILE);
  const FdLimit l = current();
  int open = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++open;
    closedir(d);
    open -= 3;
  }
  if (l.soft == 0 || static_cast<uint64_t>(open) + 4 < l.soft) return "";
  return fdHint(EMFILE);
}

std::string fdHint(int err) {
  if (err == ENFILE) return " (the system-wide file table is full: fs.file-max)";
  if (err != EMFILE) return "";
  lastExhaustedMs.store(nowMs(), std::memory_order_relaxed);
  const FdLimit l = current();
  char buf[256];
  std::snprintf(buf, sizeof buf,
                " (out of file descriptors: RLIMIT_NOFILE is %llu, hard limit %llu; each socket link and bootstrap "
                "message needs one: raise the hard limit, e.g. ulimit -Hn, or use fewer links with NCCL_RUNTIME_CONNECT=1)",
                static_cast<unsigned long long>(l.soft), static_cast<unsigned long long>(l.hard));
  return buf;
}

}  // namespace atl::net
