// Keyed proofs for the bootstrap and transport handshakes (OpenSSL's HMAC-SHA256), so a peer proves
// it knows the unique id's secret without ever sending it.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace atl {

using Digest = std::array<uint8_t, 32>;
using Secret = std::array<uint8_t, 32>;

Digest hmacSha256(std::span<const uint8_t> key, std::span<const uint8_t> message);
Digest sha256(std::span<const uint8_t> message);
/// Compares without early exit, so timing does not leak how much of a proof was right.
bool constantTimeEqual(std::span<const uint8_t> a, std::span<const uint8_t> b);
/// Cryptographically random bytes (getrandom); aborts the process only if the kernel cannot supply them.
void randomBytes(std::span<uint8_t> out);

}  // namespace atl
