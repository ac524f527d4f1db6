// Status and Result<T>: the internal error currency. They map 1:1 onto ncclResult_t so the C API
// boundary converts without a table, and [[nodiscard]] makes a dropped error a compile warning.
#pragma once

#include <cstdarg>
#include <optional>
#include <string>
#include <utility>

#include "nccl.h"

namespace atl {

class [[nodiscard]] Status {
 public:
  constexpr Status() = default;
  constexpr explicit Status(ncclResult_t code) : code_(code) {}
  static constexpr Status Ok() { return Status(); }

  constexpr bool ok() const { return code_ == ncclSuccess; }
  constexpr ncclResult_t code() const { return code_; }
  constexpr explicit operator bool() const { return ok(); }

 private:
  ncclResult_t code_ = ncclSuccess;
};

/// Either a value or an error Status (a small std::expected, which C++20 lacks).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(status) {}     // NOLINT(google-explicit-constructor)

  bool ok() const { return value_.has_value(); }
  Status status() const { return ok() ? Status::Ok() : status_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  T& operator*() { return *value_; }

 private:
  std::optional<T> value_;
  Status status_{ncclInternalError};
};

/// Logs at WARN (file:line), records the message as this thread's last error, and returns the code.
Status makeError(ncclResult_t code, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

/// The message of the last error raised on this thread (empty if none).
const std::string& lastErrorMessage();
void clearLastError();
/// Puts back a message saved from lastErrorMessage(), after cleanup work raised errors of its own.
void restoreLastError(std::string message);

}  // namespace atl

#define ATOLL_ERROR(code, ...) ::atl::makeError((code), __FILE__, __LINE__, __VA_ARGS__)

#define ATOLL_CHECK(expr)                       \
  do {                                          \
    ::atl::Status atoll_status_ = (expr);     \
    if (!atoll_status_.ok()) return atoll_status_; \
  } while (0)

#define ATOLL_CONCAT_INNER(a, b) a##b
#define ATOLL_CONCAT(a, b) ATOLL_CONCAT_INNER(a, b)
#define ATOLL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
/// `ATOLL_ASSIGN_OR_RETURN(auto x, makeX());` unwraps a Result or returns its error.
#define ATOLL_ASSIGN_OR_RETURN(lhs, expr) ATOLL_ASSIGN_OR_RETURN_IMPL(ATOLL_CONCAT(atoll_res_, __LINE__), lhs, expr)
