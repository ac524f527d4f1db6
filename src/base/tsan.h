// Happens-before edges ThreadSanitizer cannot see by itself.
//
// Why: a shared-memory ring is mapped once per end, so two thread-ranks of one process reach the
// same counters through two virtual addresses, and TSan (which tracks addresses) sees no
// synchronisation through them. That was harmless while every byte crossed the ring (each side
// only touched its own mapping), but single copy reads the peer's own buffer at its own address
// (transports/shm/shm_direct.h). The two ends then name the edge by that buffer's address.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define ATOLL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ATOLL_TSAN 1
#endif
#endif

#ifdef ATOLL_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace atl::tsan {

/// Everything this thread did before is visible to whoever calls acquire(key) after.
inline void release([[maybe_unused]] const void* key) {
#ifdef ATOLL_TSAN
  __tsan_release(const_cast<void*>(key));
#endif
}
inline void acquire([[maybe_unused]] const void* key) {
#ifdef ATOLL_TSAN
  __tsan_acquire(const_cast<void*>(key));
#endif
}

}  // namespace atl::tsan
