// User-created reduction operators (ncclRedOpCreatePreMulSum). Handles are values >= ncclNumOps,
// per communicator, as in NCCL.
#pragma once

#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "nccl.h"

namespace atl {

struct PreMulSum {
  ncclDataType_t dtype = ncclFloat;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  const void* scalarPtr = nullptr;  // read at execution time when residence == ncclScalarDevice
  uint8_t scalar[8] = {};           // captured at creation when residence == ncclScalarHostImmediate
};

class RedOpTable {
 public:
  ncclRedOp_t create(const PreMulSum& op) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i]) {
        slots_[i] = op;
        return static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(i));
      }
    slots_.push_back(op);
    return static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(slots_.size() - 1));
  }
  bool destroy(ncclRedOp_t op) {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t i = index(op);
    if (i >= slots_.size() || !slots_[i]) return false;
    slots_[i].reset();
    return true;
  }
  std::optional<PreMulSum> find(ncclRedOp_t op) const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t i = index(op);
    if (i >= slots_.size()) return std::nullopt;
    return slots_[i];
  }

 private:
  static size_t index(ncclRedOp_t op) {
    int v = static_cast<int>(op);
    return v < ncclNumOps ? SIZE_MAX : static_cast<size_t>(v - ncclNumOps);
  }
  mutable std::mutex mutex_;
  std::vector<std::optional<PreMulSum>> slots_;
};

}  // namespace atl
