// The C boundary: every exported entry point is defined with NCCL_API, which also emits the
// 'pnccl' profiling alias, and runs its body through apiGuard so no exception ever crosses it.
#pragma once

#include <cstring>
#include <new>

#include "base/debug.h"
#include "base/status.h"
#include "nccl.h"

#define NCCL_API(ret, name, ...)                                                              \
  extern "C" __attribute__((visibility("default"))) ret name(__VA_ARGS__);                    \
  extern "C" __attribute__((visibility("default"), alias(#name))) ret p##name(__VA_ARGS__);   \
  extern "C" __attribute__((visibility("default"))) ret name(__VA_ARGS__)

namespace atl {

/// Reads an enum argument through its object representation: C callers may pass any int, and an
/// enum holding a value outside its range must never be loaded as that enum (UB; UBSan flags it).
template <class E>
int rawEnum(const E& value) {
  static_assert(sizeof(E) == sizeof(int));
  int raw;
  std::memcpy(&raw, &value, sizeof(raw));
  return raw;
}

template <class F>
ncclResult_t apiGuard(const char* fn, F&& body) noexcept {
  try {
    Status s = body();
    return s.code();
  } catch (const std::bad_alloc&) {
    return ATOLL_ERROR(ncclSystemError, "%s: out of memory", fn).code();
  } catch (...) {
    return ATOLL_ERROR(ncclInternalError, "%s: unexpected internal exception", fn).code();
  }
}

}  // namespace atl
