// Buffers recorded by ncclCommRegister (and windows by ncclCommWindowRegister). Each communicator
// owns its tables, so ncclCommDestroy and ncclCommAbort free its registrations with it instead of
// leaving them behind in a global set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace atl {

class RegistrationTable {
 public:
  RegistrationTable() = default;
  RegistrationTable(const RegistrationTable&) = delete;
  RegistrationTable& operator=(const RegistrationTable&) = delete;
  ~RegistrationTable();

  struct Entry {
    const void* buff;
    size_t size;
    int flags;
    uint64_t tag;  // windows: the collective sequence number naming the window on every rank
  };

  /// Records the buffer and returns its handle.
  void* add(const void* buff, size_t size, int flags = 0, uint64_t tag = 0);
  /// Forgets the registration; false when `handle` is not one of this table's.
  bool remove(void* handle);
  /// The registration behind `handle`; false when it is not one of this table's.
  bool find(const void* handle, Entry* out);

  /// Registrations alive in the process, over all communicators (lets tests see that destroy frees them).
  static size_t liveCount();

 private:
  // Handles are serial numbers, never addresses: a handle is only ever looked up, so a stale,
  // foreign or garbage one is rejected, and one from a destroyed communicator can never match a
  // later registration, even on a communicator allocated at the same address.
  std::mutex mutex_;
  std::unordered_map<uintptr_t, Entry> entries_;
};

}  // namespace atl
