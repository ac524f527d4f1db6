// Starts the ranks of a local job as child processes and supervises them: forwards signals, kills
// the survivors when one rank fails, and enforces an optional deadline.
#pragma once

#include <string>
#include <vector>

namespace atl::run {

struct LaunchSpec {
  int nranks = 1;
  std::string program;               // resolved path
  std::vector<std::string> args;     // argv[0] included
  std::vector<std::string> baseEnv;  // environment shared by all ranks, "NAME=VALUE"
  std::string uniqueIdHex;
  double timeoutSec = 0;  // 0: no deadline
  double graceSec = 3;    // SIGTERM → SIGKILL delay
  bool tagOutput = false;
};

/// Runs the job to completion; returns the launcher's exit status (0, the first failing rank's
/// code, 128+signal, or 124 on timeout).
int launch(const LaunchSpec& spec);

/// Finds `name` on PATH (or checks it when it contains a '/'); empty when not executable.
std::string resolveProgram(const std::string& name);

}  // namespace atl::run
