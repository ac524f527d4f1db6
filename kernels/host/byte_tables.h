// Kernels for 1-byte types by table lookup. An fp8 operation is a decode, a float operation and a
// rounding encode (reduce_functors.h) that no x86 instruction does; but its result depends on 16
// bits of input only, so a 64 KiB table of every (a, b) pair, filled once from the scalar functor,
// computes it with one load, and is bit-identical to the functor by construction. Unary ops
// (scale, avg's divide) of any 1-byte type take a 256-entry table filled per call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/host/reduce.h"

namespace atl::kernels::host {

/// Below this many elements a per-call 256-entry table costs more than it saves.
inline constexpr size_t kByteTableMinCount = 1024;

/// dst[i] = a[i] op b[i] for fp8 (dt ncclFloat8e4m3 or ncclFloat8e5m2). The pair table is built
/// on first use by a call of at least kByteTableMinCount elements; until then, and for smaller
/// calls, false: the caller runs its scalar loop.
bool fp8ReduceByTable(ncclDataType_t dt, RedOp op, void* dst, const void* a, const void* b, size_t count);

/// dst[i] = table[src[i]]; dst may alias src.
void byteMap(const uint8_t (&table)[256], uint8_t* dst, const uint8_t* src, size_t count);

}  // namespace atl::kernels::host
