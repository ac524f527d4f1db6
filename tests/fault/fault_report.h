// What each rank of a fault test writes about itself, one file per rank in a report directory,
// and how the test judges those files afterwards.
//
// Why files and timestamps rather than exit statuses and waitpid times: the bound is measured
// from the kill to each survivor's failing call, under launchers that do not hand statuses back
// (atollrun and mpirun report the dead rank's), under parents that reap late (a zombie's exit is
// not seen until it is reaped) and across pid namespaces. CLOCK_MONOTONIC is one clock for every
// process of the host, whatever namespace it runs in.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nccl.h"

namespace atl::test {

inline int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

inline std::string reportPath(const std::string& dir, int rank) { return dir + "/r" + std::to_string(rank); }

/// Appends one line ("event value..."); a single write, safe from any thread and right before a raise().
inline void reportLine(const std::string& dir, int rank, const std::string& line) {
  const int fd = ::open(reportPath(dir, rank).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string text = line + "\n";
  [[maybe_unused]] ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
}

/// What one rank reported.
struct RankReport {
  int64_t killedNs = -1;   // victim: right before it raised SIGKILL / SIGSTOP
  int64_t failedNs = -1;   // survivor: right after its call failed
  int result = -1;         // survivor: the ncclResult_t it got
  int verdict = -1;        // survivor: 0, or what its own checks found wrong (exit codes of dead_peer)
};

inline RankReport readReport(const std::string& dir, int rank) {
  RankReport r;
  std::ifstream in(reportPath(dir, rank));
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string event;
    words >> event;
    if (event == "killed" || event == "stopped") words >> r.killedNs;
    else if (event == "failed") words >> r.result >> r.failedNs;
    else if (event == "verdict") words >> r.verdict;
  }
  return r;
}

}  // namespace atl::test
