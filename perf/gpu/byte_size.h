// Byte counts on the GPU benchmarks' command lines: "64", "4K", "1.5M", "2G".
#pragma once

#include <cstddef>
#include <cstdlib>

namespace atl::perf {

/// False on garbage or a value below 1.
inline bool parseBytes(const char* s, size_t* out) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || v < 1) return false;
  switch (*end) {
    case 'K': case 'k': v *= 1024; ++end; break;
    case 'M': case 'm': v *= 1024.0 * 1024; ++end; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v);
  return true;
}

}  // namespace atl::perf
