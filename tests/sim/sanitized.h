// Whether this build runs under ASan or TSan: the simulator's scale tests (thousands of ranks) run
// in release builds only, since sanitizers slow its hash maps and heaps some 40-fold; the small
// tests exercise the same code under them.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
