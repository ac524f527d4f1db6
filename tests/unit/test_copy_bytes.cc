// base/copy_bytes.h: every size and every placement of the destination relative to the source
// copies exactly the source bytes and nothing outside the destination, on both of its paths
// (memcpy, and the backward loop taken 1-63 bytes ahead modulo 4 KiB).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "base/copy_bytes.h"

namespace {

constexpr unsigned char kCanary = 0xa5;
constexpr size_t kGuard = 128;

// Source and destination in separate arrays, the destination `ahead` bytes past the source modulo
// 4 KiB, with guard bytes around it.
struct Placement {
  Placement(size_t n, size_t ahead) : src(n + 4096), out(n + 4096 + 2 * kGuard, kCanary) {
    s = src.data() + 7;  // an odd address: no alignment is assumed
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<unsigned char>(i * 131 + (i >> 8) + 1);
    const auto from = reinterpret_cast<uintptr_t>(s);
    const auto lo = reinterpret_cast<uintptr_t>(out.data()) + kGuard;
    d = out.data() + kGuard + ((from + ahead - lo) & 4095);
    EXPECT_EQ((reinterpret_cast<uintptr_t>(d) - from) & 4095, ahead);
  }
  void expectCopied(size_t n) const {
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(d[i], s[i]) << "byte " << i << " of " << n;
    for (const unsigned char* p = out.data(); p < d; ++p) ASSERT_EQ(*p, kCanary) << "before the destination";
    for (const unsigned char* p = d + n; p < out.data() + out.size(); ++p)
      ASSERT_EQ(*p, kCanary) << "after the destination, " << (p - (d + n)) << " bytes past its end";
  }
  std::vector<unsigned char> src, out;
  unsigned char* s = nullptr;
  unsigned char* d = nullptr;
};

TEST(CopyBytes, EverySizeAndDistanceCopiesExactly) {
  const size_t sizes[] = {0, 1, 15, 63, 64, 65, 127, 2047, 2048, 2049, 4096 + 17, (64 << 10) + 3, size_t{4} << 20,
                          (size_t{4} << 20) + 1};
  const size_t aheads[] = {0, 1, 8, 16, 31, 32, 63, 64, 65, 2048, 4088, 4095};
  for (size_t n : sizes) {
    for (size_t ahead : aheads) {
      SCOPED_TRACE(testing::Message() << n << " bytes, destination " << ahead << " ahead");
      Placement p(n, ahead);
      atl::copyBytes(p.d, p.s, n);
      p.expectCopied(n);
      if (testing::Test::HasFatalFailure()) return;
    }
  }
}

// The loop itself at every length up to a few blocks, so each head length under 64 bytes is hit.
TEST(CopyBytes, BackwardLoopHandlesEveryHeadLength) {
  for (size_t n = 0; n <= 300; ++n) {
    SCOPED_TRACE(testing::Message() << n << " bytes");
    Placement p(n, 16);
    atl::detail::copyBackward(p.d, p.s, n);
    p.expectCopied(n);
    if (testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
