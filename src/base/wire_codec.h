// Explicit serialisation for structures that cross process boundaries and hold padding, floats,
// sockaddr storage or anything else whose memory image is not a format: each field is written
// little-endian at a fixed width, so no padding byte (uninitialised memory) is ever sent, and a
// reader rejects a short or long record instead of copying garbage into a struct.
//
// Fixed-layout headers that are sent as they are (bootstrap/wire.h, the socket hello) assert
// std::has_unique_object_representations instead, which proves they have no padding.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <span>
#include <vector>

namespace atl::codec {

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<std::byte>(v)); }
  void u16(uint16_t v) { le(v, 2); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void f32(float v) { u32(std::bit_cast<uint32_t>(v)); }
  void bytes(std::span<const uint8_t> b) {
    for (uint8_t c : b) u8(c);
  }
  /// A char array of `n` bytes, NUL-padded (and so NUL-terminated when the text is shorter).
  void text(const char* s, size_t n) {
    const size_t len = strnlen(s, n);
    for (size_t i = 0; i < n; ++i) u8(i < len ? static_cast<uint8_t>(s[i]) : 0);
  }
  const std::vector<std::byte>& data() const { return out_; }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i, v >>= 8) out_.push_back(static_cast<std::byte>(v & 0xff));
  }
  std::vector<std::byte> out_;
};

/// Reads what Writer wrote. Reading past the end yields zeros and makes ok() false for good, so a
/// decoder reads every field and checks once at the end.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  uint8_t u8() { return static_cast<uint8_t>(le(1)); }
  uint16_t u16() { return static_cast<uint16_t>(le(2)); }
  uint32_t u32() { return static_cast<uint32_t>(le(4)); }
  uint64_t u64() { return le(8); }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  float f32() { return std::bit_cast<float>(u32()); }
  void bytes(std::span<uint8_t> out) {
    for (uint8_t& c : out) c = u8();
  }
  /// Fills a char array of `n` bytes; the last byte is forced to NUL so the result is a C string.
  void text(char* s, size_t n) {
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(u8());
    if (n > 0) s[n - 1] = '\0';
  }
  bool ok() const { return ok_; }
  /// Everything was read, and nothing is left over.
  bool finished() const { return ok_ && at_ == in_.size(); }

 private:
  uint64_t le(int n) {
    if (!ok_ || in_.size() - at_ < static_cast<size_t>(n)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(in_[at_ + static_cast<size_t>(i)]) << (8 * i);
    at_ += static_cast<size_t>(n);
    return v;
  }
  std::span<const std::byte> in_;
  size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace atl::codec
