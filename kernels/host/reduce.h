// Host (CPU) reduction kernels over every NCCL datatype. The element math comes from
// kernels/reduce_functors.h, shared with the CUDA kernels; this layer adds vectorised loops.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace atl::kernels {

enum class RedOp : uint8_t { Sum, Prod, Max, Min };

/// Size in bytes of one element of `dt` (0 for an invalid type).
size_t dtypeSize(ncclDataType_t dt);
bool isFloating(ncclDataType_t dt);
const char* dtypeName(ncclDataType_t dt);

/// dst[i] = a[i] op b[i] for i < count. dst may alias a or b exactly (not partially overlap).
void reduce(ncclDataType_t dt, RedOp op, void* dst, const void* a, const void* b, size_t count);
/// dst[i] = src[i] * scalar, scalar pointing to one element of type dt. dst may alias src.
void scale(ncclDataType_t dt, void* dst, const void* src, const void* scalar, size_t count);
/// dst[i] = dst[i] / divisor (integer types truncate toward zero; floats divide and round).
void divide(ncclDataType_t dt, void* dst, size_t count, int divisor);
/// memcpy, here so the engine has one place to optimise copies (non-temporal stores etc.).
void copy(void* dst, const void* src, size_t bytes);

}  // namespace atl::kernels
