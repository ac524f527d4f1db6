#include "tools/atollrun/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "perf/common/tool_env.h"

namespace atl::run {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t gPendingSignal = 0;

void onSignal(int sig) { gPendingSignal = sig; }

// Output of one child stream, re-emitted line by line with a "[rank] " prefix.
struct TaggedStream {
  int fd = -1;
  int rank = 0;
  FILE* sink = nullptr;
  std::string partial;

  void emit(const char* data, size_t n) {
    partial.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::fprintf(sink, "[%d] %.*s\n", rank, static_cast<int>(nl - start), partial.data() + start);
    }
    partial.erase(0, start);
    std::fflush(sink);
  }
  void close() {
    if (!partial.empty()) {
      std::fprintf(sink, "[%d] %s\n", rank, partial.c_str());
      partial.clear();
      std::fflush(sink);
    }
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct Child {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
};

struct RankEnv {
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

RankEnv rankEnvironment(const LaunchSpec& spec, int rank) {
  RankEnv env;
  env.strings = spec.baseEnv;
  env.strings.push_back(std::string(perf::kEnvUniqueId) + "=" + spec.uniqueIdHex);
  env.strings.push_back(std::string(perf::kEnvRank) + "=" + std::to_string(rank));
  env.strings.push_back(std::string(perf::kEnvWorldSize) + "=" + std::to_string(spec.nranks));
  env.strings.push_back(std::string(perf::kEnvLocalRank) + "=" + std::to_string(rank));
  env.strings.push_back(std::string(perf::kEnvLocalWorldSize) + "=" + std::to_string(spec.nranks));
  for (std::string& s : env.strings) env.pointers.push_back(s.data());
  env.pointers.push_back(nullptr);
  return env;
}

// Runs in the forked child: only async-signal-safe calls until execve.
[[noreturn]] void execChild(const LaunchSpec& spec, char* const* argv, char* const* envp, pid_t parent, int devNull,
                            int outFd, int errFd) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the launcher died before prctl took effect
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(devNull, STDIN_FILENO);
  if (outFd >= 0) dup2(outFd, STDOUT_FILENO);
  if (errFd >= 0) dup2(errFd, STDERR_FILENO);
  execve(spec.program.c_str(), argv, envp);
  static const char kMsg[] = "atollrun: exec failed\n";
  ssize_t ignored = write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  (void)ignored;
  _exit(127);
}

class Supervisor {
 public:
  explicit Supervisor(const LaunchSpec& spec) : spec_(spec), children_(static_cast<size_t>(spec.nranks)) {}

  int run();

 private:
  bool start();
  void pumpOutput(int timeoutMs);
  void reap();
  void signalAll(int sig);
  void beginShutdown(int exitCode);
  int alive() const {
    int n = 0;
    for (const Child& c : children_) n += c.running ? 1 : 0;
    return n;
  }

  const LaunchSpec& spec_;
  std::vector<Child> children_;
  std::vector<TaggedStream> streams_;
  bool shuttingDown_ = false;
  bool killed_ = false;
  int exitCode_ = 0;
  Clock::time_point killAt_{};
};

bool Supervisor::start() {
  int devNull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devNull < 0) {
    std::perror("atollrun: /dev/null");
    return false;
  }
  std::vector<std::string> argStrings = spec_.args;
  std::vector<char*> argv;
  for (std::string& a : argStrings) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t self = getpid();
  std::fflush(nullptr);  // buffered output must not be written twice by a child
  for (int r = 0; r < spec_.nranks; ++r) {
    RankEnv env = rankEnvironment(spec_, r);
    int outPipe[2] = {-1, -1}, errPipe[2] = {-1, -1};
    if (spec_.tagOutput && (pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0)) {
      std::perror("atollrun: pipe");
      return false;
    }
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("atollrun: fork");
      return false;
    }
    if (pid == 0) execChild(spec_, argv.data(), env.pointers.data(), self, devNull, outPipe[1], errPipe[1]);
    setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
    children_[static_cast<size_t>(r)] = Child{pid, true, 0};
    if (spec_.tagOutput) {
      ::close(outPipe[1]);
      ::close(errPipe[1]);
      streams_.push_back(TaggedStream{outPipe[0], r, stdout, {}});
      streams_.push_back(TaggedStream{errPipe[0], r, stderr, {}});
    }
  }
  ::close(devNull);
  return true;
}

void Supervisor::pumpOutput(int timeoutMs) {
  std::vector<pollfd> fds;
  std::vector<TaggedStream*> owners;
  for (TaggedStream& s : streams_) {
    if (s.fd < 0) continue;
    fds.push_back(pollfd{s.fd, POLLIN, 0});
    owners.push_back(&s);
  }
  if (poll(fds.data(), fds.size(), timeoutMs) <= 0) return;
  char buf[65536];
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    ssize_t n = read(fds[i].fd, buf, sizeof buf);
    if (n > 0)
      owners[i]->emit(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR)
      owners[i]->close();
  }
}

void Supervisor::signalAll(int sig) {
  for (const Child& c : children_) {
    if (c.running && kill(-c.pid, sig) != 0) kill(c.pid, sig);
  }
}

void Supervisor::beginShutdown(int exitCode) {
  if (shuttingDown_) return;
  shuttingDown_ = true;
  exitCode_ = exitCode;
  signalAll(SIGTERM);
  killAt_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec_.graceSec));
}

void Supervisor::reap() {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (size_t r = 0; r < children_.size(); ++r) {
      Child& c = children_[r];
      if (c.pid != pid || !c.running) continue;
      c.running = false;
      c.status = status;
      const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (!failed || shuttingDown_) break;
      if (WIFEXITED(status)) {
        std::fprintf(stderr, "atollrun: rank %zu (pid %d) exited with status %d; stopping the other ranks\n", r,
                     static_cast<int>(pid), WEXITSTATUS(status));
        beginShutdown(WEXITSTATUS(status));
      } else {
        const int sig = WTERMSIG(status);
        std::fprintf(stderr, "atollrun: rank %zu (pid %d) was killed by signal %d (%s); stopping the other ranks\n", r,
                     static_cast<int>(pid), sig, strsignal(sig));
        beginShutdown(128 + sig);
      }
      break;
    }
  }
}

int Supervisor::run() {
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  if (!start()) {
    beginShutdown(1);
  }
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec_.timeoutSec));
  while (alive() > 0) {
    if (spec_.tagOutput)
      pumpOutput(20);
    else
      poll(nullptr, 0, 20);
    reap();
    if (int sig = gPendingSignal) {
      gPendingSignal = 0;
      std::fprintf(stderr, "atollrun: received signal %d (%s); forwarding to the ranks\n", sig, strsignal(sig));
      signalAll(sig);
      if (!shuttingDown_) {
        beginShutdown(128 + sig);
      }
    }
    if (spec_.timeoutSec > 0 && !shuttingDown_ && Clock::now() > deadline) {
      std::fprintf(stderr, "atollrun: timeout after %g s; stopping %d running rank(s)\n", spec_.timeoutSec, alive());
      beginShutdown(124);
    }
    if (shuttingDown_ && !killed_ && Clock::now() > killAt_) {
      std::fprintf(stderr, "atollrun: %d rank(s) still running %g s after SIGTERM; killing them\n", alive(),
                   spec_.graceSec);
      signalAll(SIGKILL);
      killed_ = true;
    }
  }
  // Drain what the ranks wrote before they exited; a descendant holding a pipe open cannot stall us.
  const auto drainUntil = Clock::now() + std::chrono::seconds(2);
  while (spec_.tagOutput && Clock::now() < drainUntil) {
    bool open = false;
    for (const TaggedStream& s : streams_) open = open || s.fd >= 0;
    if (!open) break;
    pumpOutput(50);
  }
  for (TaggedStream& s : streams_) s.close();
  // Descendants the ranks left behind in their process groups.
  if (shuttingDown_) {
    for (const Child& c : children_) {
      if (c.pid > 0) kill(-c.pid, SIGKILL);
    }
  }
  return exitCode_;
}

}  // namespace

std::string resolveProgram(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) return {};
    start = end + 1;
  }
}

int launch(const LaunchSpec& spec) {
  Supervisor supervisor(spec);
  return supervisor.run();
}

}  // namespace atl::run
