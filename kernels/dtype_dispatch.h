// Datatype dispatch for host code: the storage type of each ncclDataType_t.
#pragma once

#include <cstdint>

#include "kernels/reduce_functors.h"
#include "nccl.h"

namespace atl::kernels {

/// Calls fn(T{}) with T the storage type of dt; returns false for an invalid type.
template <class Fn>
bool withType(ncclDataType_t dt, Fn&& fn) {
  switch (dt) {
    case ncclInt8: fn(int8_t{}); return true;
    case ncclUint8: fn(uint8_t{}); return true;
    case ncclInt32: fn(int32_t{}); return true;
    case ncclUint32: fn(uint32_t{}); return true;
    case ncclInt64: fn(int64_t{}); return true;
    case ncclUint64: fn(uint64_t{}); return true;
    case ncclFloat16: fn(Half{}); return true;
    case ncclFloat32: fn(float{}); return true;
    case ncclFloat64: fn(double{}); return true;
    case ncclBfloat16: fn(BFloat16{}); return true;
    case ncclFloat8e4m3: fn(Fp8E4M3{}); return true;
    case ncclFloat8e5m2: fn(Fp8E5M2{}); return true;
    default: return false;
  }
}

}  // namespace atl::kernels
