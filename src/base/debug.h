// NCCL-format logging: "host:pid:tid [rank] NCCL INFO msg", controlled by NCCL_DEBUG,
// NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE (with %h host and %p pid substitution).
#pragma once

#include <atomic>
#include <cstdint>

namespace atl::log {

enum class Level : int { None = 0, Version = 1, Warn = 2, Info = 3, Abort = 4, Trace = 5 };

/// Subsystem bits; names match NCCL_DEBUG_SUBSYS tokens.
enum Subsys : uint64_t {
  kInit = 1ull << 0,
  kColl = 1ull << 1,
  kP2p = 1ull << 2,
  kShm = 1ull << 3,
  kNet = 1ull << 4,
  kGraph = 1ull << 5,
  kTune = 1ull << 6,
  kEnv = 1ull << 7,
  kAlloc = 1ull << 8,
  kCall = 1ull << 9,
  kProxy = 1ull << 10,
  kBootstrap = 1ull << 12,
  kAll = ~0ull,
};

bool enabled(Level level, uint64_t subsys);

namespace detail {
/// The configured level once NCCL_DEBUG is read (enabled() reads it then), INT_MAX before, so the
/// first check reads the configuration: ATOLL_LOG compares against it inline, and a line that
/// cannot print (INFO and TRACE on the collective path, by default) costs a load and a compare
/// rather than a call.
extern std::atomic<int> gCeiling;
}  // namespace detail
void write(Level level, uint64_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

/// Rank shown in "[rank]" for log lines from this thread; -1 hides it.
void setThreadRank(int rank);
int threadRank();

/// Re-reads NCCL_DEBUG* (ncclResetDebugInit and tests).
void reset();

}  // namespace atl::log

#define ATOLL_LOG(level, subsys, ...)                                                   \
  do {                                                                                  \
    if (static_cast<int>(level) <= ::atl::log::detail::gCeiling.load(std::memory_order_relaxed) && \
        ::atl::log::enabled((level), (subsys)))                                         \
      ::atl::log::write((level), (subsys), __FILE__, __LINE__, __VA_ARGS__);          \
  } while (0)
#define ATOLL_WARN(...) ATOLL_LOG(::atl::log::Level::Warn, ::atl::log::kAll, __VA_ARGS__)
#define ATOLL_INFO(subsys, ...) ATOLL_LOG(::atl::log::Level::Info, (subsys), __VA_ARGS__)
#define ATOLL_TRACE(subsys, ...) ATOLL_LOG(::atl::log::Level::Trace, (subsys), __VA_ARGS__)
