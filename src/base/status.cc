#include "base/status.h"

#include <cstdio>

#include "base/debug.h"

namespace atl {
namespace {
thread_local std::string tLastError;
}

Status makeError(ncclResult_t code, const char* file, int line, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  tLastError = msg;
  if (log::enabled(log::Level::Warn, log::kAll)) log::write(log::Level::Warn, log::kAll, file, line, "%s", msg);
  return Status(code);
}

const std::string& lastErrorMessage() { return tLastError; }
void clearLastError() { tLastError.clear(); }
void restoreLastError(std::string message) { tLastError = std::move(message); }

}  // namespace atl
