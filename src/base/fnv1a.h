// FNV-1a, 64-bit: the one non-cryptographic hash of the library (host identity, call
// fingerprints). Not for anything an attacker chooses to collide; HMACs (base/hmac.h) cover that.
#pragma once

#include <cstdint>
#include <string_view>

namespace atl {

inline constexpr uint64_t kFnv1aBasis = 1469598103934665603ull;

/// Folds bytes into a running hash; start from kFnv1aBasis.
constexpr uint64_t fnv1a(uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

constexpr uint64_t fnv1a(std::string_view bytes) { return fnv1a(kFnv1aBasis, bytes); }

/// Folds a 64-bit value in little-endian byte order, so the result does not depend on the host.
constexpr uint64_t fnv1a(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
  return h;
}

}  // namespace atl
