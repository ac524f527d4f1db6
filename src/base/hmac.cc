// OpenSSL one-shot digests: no context objects to leak, and both are safe to call from any thread.
#include "base/hmac.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace atl {
namespace {
// OpenSSL's atexit cleanup would free its caches while a detached thread (a bootstrap root still
// waiting for ranks) may be using them; the OS reclaims everything at exit anyway.
void initCrypto() {
  static std::once_flag once;
  std::call_once(once, [] { OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr); });
}
}  // namespace

Digest hmacSha256(std::span<const uint8_t> key, std::span<const uint8_t> message) {
  initCrypto();
  Digest out{};
  unsigned int len = 0;
  // OpenSSL wants non-null pointers even for empty inputs.
  static const uint8_t kEmpty = 0;
  const uint8_t* k = key.empty() ? &kEmpty : key.data();
  const uint8_t* m = message.empty() ? &kEmpty : message.data();
  if (HMAC(EVP_sha256(), k, static_cast<int>(key.size()), m, message.size(), out.data(), &len) == nullptr ||
      len != out.size()) {
    std::fprintf(stderr, "atoll: HMAC-SHA256 failed\n");
    std::abort();
  }
  return out;
}

Digest sha256(std::span<const uint8_t> message) {
  initCrypto();
  Digest out{};
  static const uint8_t kEmpty = 0;
  SHA256(message.empty() ? &kEmpty : message.data(), message.size(), out.data());
  return out;
}

bool constantTimeEqual(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.size() != b.size()) return false;
  volatile uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = diff | static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

void randomBytes(std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t rc = getrandom(out.data() + done, out.size() - done, 0);
    if (rc < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "atoll: getrandom failed (errno %d)\n", errno);
      std::abort();
    }
    done += static_cast<size_t>(rc);
  }
}

}  // namespace atl
