// The calling thread's instance of T, reached through one out-of-line call.
//
// Why not a plain thread_local at the use: GCC recomputes a thread_local's address at every use
// instead of keeping it in a register, and under -mtls-dialect=gnu2 each recomputation is a call
// through the TLS descriptor (19 of them per collective on the call path before this). The
// reference returned here is an ordinary pointer the caller keeps and passes down.
#pragma once

namespace atl {

template <class T>
[[gnu::noinline]] T& perThread() {
  thread_local T instance;
  return instance;
}

}  // namespace atl
