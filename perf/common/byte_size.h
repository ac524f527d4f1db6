// Byte counts on the perf tools' command lines (nccl-tests' -b/-e/-i): "8", "1K", "64M", "1G".
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <limits>
#include <string>

namespace atl::perf {

/// "8", "1K", "64M", "1G" (optionally with a trailing B); false on garbage or overflow.
inline bool parseByteSize(const std::string& text, size_t* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return false;
  std::string suffix(end);
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (suffix == "T" || suffix == "t")
    shift = 40;
  else if (!suffix.empty())
    return false;
  if (v > (std::numeric_limits<size_t>::max() >> shift)) return false;
  *out = static_cast<size_t>(v) << shift;
  return true;
}

}  // namespace atl::perf
