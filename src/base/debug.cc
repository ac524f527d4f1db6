#include "base/debug.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "base/params.h"

namespace atl::log {

std::atomic<int> detail::gCeiling{INT_MAX};

namespace {

struct Config {
  Level level = Level::Warn;
  uint64_t mask = kInit | kBootstrap | kEnv;
  FILE* file = stdout;
  char host[64] = "";
};

uint64_t parseSubsys(const std::string& spec) {
  struct Named {
    const char* name;
    uint64_t bit;
  };
  static constexpr Named kNames[] = {{"INIT", kInit},   {"COLL", kColl},   {"P2P", kP2p},       {"SHM", kShm},
                                     {"NET", kNet},     {"GRAPH", kGraph}, {"TUNING", kTune},   {"ENV", kEnv},
                                     {"ALLOC", kAlloc}, {"CALL", kCall},   {"PROXY", kProxy},   {"BOOTSTRAP", kBootstrap},
                                     {"ALL", kAll}};
  bool invert = !spec.empty() && spec[0] == '^';
  uint64_t mask = 0;
  size_t pos = invert ? 1 : 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string token = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    for (const Named& n : kNames)
      if (strcasecmp(token.c_str(), n.name) == 0) mask |= n.bit;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return invert ? ~mask : mask;
}

Level parseLevel(const std::string& s) {
  if (strcasecmp(s.c_str(), "VERSION") == 0) return Level::Version;
  if (strcasecmp(s.c_str(), "WARN") == 0) return Level::Warn;
  if (strcasecmp(s.c_str(), "INFO") == 0) return Level::Info;
  if (strcasecmp(s.c_str(), "ABORT") == 0) return Level::Abort;
  if (strcasecmp(s.c_str(), "TRACE") == 0) return Level::Trace;
  if (strcasecmp(s.c_str(), "NONE") == 0 || s.empty()) return Level::None;
  return Level::Warn;
}

std::string expandPath(const std::string& pattern, const char* host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') out += host;
      else if (c == 'p') out += std::to_string(getpid());
      else if (c == '%') out += '%';
      else (out += '%') += c;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

std::mutex gMutex;
std::atomic<bool> gReady{false};
Config gConfig;
std::string gPath;

FILE* output() {
  if (gConfig.file == nullptr) {
    gConfig.file = stdout;
    if (!gPath.empty())
      if (FILE* f = std::fopen(gPath.c_str(), "w")) {
        setvbuf(f, nullptr, _IOLBF, 0);
        gConfig.file = f;
      }
  }
  return gConfig.file;
}
std::atomic<uint64_t> gMask{0};
thread_local int tRank = -1;

void init() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gReady.load(std::memory_order_acquire)) return;
  gethostname(gConfig.host, sizeof(gConfig.host) - 1);
  if (char* dot = std::strchr(gConfig.host, '.')) *dot = '\0';
  gConfig.level = parseLevel(params::getString(params::Id::Debug));
  gConfig.mask = parseSubsys(params::getString(params::Id::DebugSubsys));
  const std::string& file = params::getString(params::Id::DebugFile);
  if (gConfig.file != stdout && gConfig.file != stderr && gConfig.file != nullptr) std::fclose(gConfig.file);
  gConfig.file = nullptr;
  // Opened at the first line written, so processes that never log (a launcher) leave no file.
  gPath = file.empty() ? std::string() : expandPath(file, gConfig.host);
  detail::gCeiling.store(static_cast<int>(gConfig.level), std::memory_order_relaxed);
  gMask.store(gConfig.mask, std::memory_order_relaxed);
  gReady.store(true, std::memory_order_release);
}

const char* levelName(Level level) {
  switch (level) {
    case Level::Warn: return "WARN";
    case Level::Info: return "INFO";
    case Level::Trace: return "TRACE";
    case Level::Abort: return "ABORT";
    default: return "VERSION";
  }
}

}  // namespace

bool enabled(Level level, uint64_t subsys) {
  if (!gReady.load(std::memory_order_acquire)) init();
  int configured = detail::gCeiling.load(std::memory_order_relaxed);
  if (static_cast<int>(level) > configured) return false;
  if (level == Level::Warn || level == Level::Version || level == Level::Abort) return true;
  return (gMask.load(std::memory_order_relaxed) & subsys) != 0;
}

void write(Level level, uint64_t /*subsys*/, const char* file, int line, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  char rank[16] = "";
  if (tRank >= 0) snprintf(rank, sizeof(rank), " [%d]", tRank);
  long tid = syscall(SYS_gettid);
  std::lock_guard<std::mutex> lock(gMutex);
  if (level == Level::Warn) {
    const char* base = std::strrchr(file, '/');
    std::fprintf(output(), "%s:%d:%ld%s NCCL WARN %s (%s:%d)\n", gConfig.host, getpid(), tid, rank, msg,
                 base ? base + 1 : file, line);
  } else {
    std::fprintf(output(), "%s:%d:%ld%s NCCL %s %s\n", gConfig.host, getpid(), tid, rank, levelName(level),
                 msg);
  }
  std::fflush(output());
}

void setThreadRank(int rank) { tRank = rank; }
int threadRank() { return tRank; }

void reset() {
  params::reloadForTesting();
  gReady.store(false, std::memory_order_release);
  init();
}

}  // namespace atl::log
