// Ranks as real processes for the fault and load tests: this program re-executed once per rank,
// told its rank on the command line ("--rank R --id-fd FD") and handed the unique id over a pipe.
// The copies are exec'd before the id exists, so nothing forks after the library started threads.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "nccl.h"

namespace atl::test {

struct RankProcs {
  std::vector<pid_t> pids;
  std::vector<int> pipes;  // write ends, one per rank
};

/// Absolute path of this program (empty when /proc cannot tell), for re-executing it.
inline std::string selfExe() {
  char exe[4096] = {};
  return readlink("/proc/self/exe", exe, sizeof exe - 1) > 0 ? std::string(exe) : std::string();
}

/// Starts `n` copies of this program with `args` and "--rank r --id-fd FD". With `logDir`, rank
/// r's stdout and stderr go to logDir/r<r>.log. With `wrapper`, each copy runs as
/// `wrapper... /path/to/this/program args...` (found on PATH), e.g. inside `unshare --pid --fork`.
inline bool spawnRanks(int n, const char* argv0, const std::vector<std::string>& args, RankProcs* out,
                       const std::string& logDir = "", const std::vector<std::string>& wrapper = {}) {
  std::string exe = selfExe();
  if (exe.empty()) return false;
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (pipe(p) != 0) return false;
    const pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
      close(p[1]);
      if (!logDir.empty()) {
        const int log = ::open((logDir + "/r" + std::to_string(r) + ".log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(log, 1);  // NCCL logs to stdout
        dup2(log, 2);
      }
      std::vector<std::string> all = args;
      all.insert(all.end(), {"--rank", std::to_string(r), "--id-fd", std::to_string(p[0])});
      std::vector<std::string> front = wrapper;
      std::vector<char*> cargv;
      for (std::string& w : front) cargv.push_back(w.data());
      cargv.push_back(wrapper.empty() ? const_cast<char*>(argv0) : exe.data());
      for (std::string& a : all) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      if (wrapper.empty()) execv("/proc/self/exe", cargv.data());
      else execvp(cargv[0], cargv.data());
      _exit(127);
    }
    close(p[0]);
    out->pids.push_back(pid);
    out->pipes.push_back(p[1]);
  }
  return true;
}

/// Sends the id to every rank; the pipes stay open only with `keepOpen` (for a later signal).
inline bool sendUniqueId(RankProcs& procs, const ncclUniqueId& id, bool keepOpen = false) {
  for (int fd : procs.pipes) {
    if (write(fd, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return false;
    if (!keepOpen) close(fd);
  }
  return true;
}

/// Rank side.
inline bool readUniqueId(int fd, ncclUniqueId* id) {
  return read(fd, id, sizeof(*id)) == static_cast<ssize_t>(sizeof(*id));
}

}  // namespace atl::test
