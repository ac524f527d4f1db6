// Element encoding and the verification pattern of the perf tools. Inputs are small integers (or
// powers of two for prod) chosen so that every partial result is exactly representable in the
// datatype: any reduction order then yields the same bits, and the expected result can be computed
// in double precision on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "nccl.h"

namespace atl::perf {

struct TypeInfo {
  ncclDataType_t type;
  const char* name;  // as nccl-tests prints it
  size_t size;
  bool isFloat;
  bool isSigned;
  double exactLimit;  // largest integer magnitude below which every integer is representable
  int maxPow2;        // largest k with 2^k representable (and, for integers, not overflowing)
  int mantissaBits;   // floats only: relative precision 2^-mantissaBits
};

std::span<const TypeInfo> allTypes();
const TypeInfo& typeInfo(ncclDataType_t type);
/// Accepts nccl-tests' names and common aliases (float32, fp16, bf16, e4m3, ...).
bool parseTypeName(std::string_view name, ncclDataType_t* out);

/// Writes v (which must be representable, or is rounded to nearest even) as element `index` of dst.
void encode(ncclDataType_t type, double v, void* dst, size_t index);
double decode(ncclDataType_t type, const void* src, size_t index);

/// What the inputs of one measurement are reduced with; Copy for collectives that only move data.
enum class Combine { Copy, Sum, Prod, Min, Max, Avg };
Combine combineFor(bool reduces, ncclRedOp_t op);

class Pattern {
 public:
  Pattern(ncclDataType_t type, Combine combine, int nranks);

  /// Element `index` of rank `rank`'s input buffer.
  double input(int rank, size_t index) const;
  /// The reduction over all ranks of input(r, index).
  double reduced(size_t index) const;
  /// Exact comparison, except Avg on floats, where rounding of the division may differ.
  bool matches(double got, double expected) const;
  /// Fills count elements of rank's input into dst (element offset 0).
  void fill(int rank, void* dst, size_t count) const;

 private:
  ncclDataType_t type_;
  const TypeInfo& info_;
  Combine combine_;
  int nranks_;
  int stride_ = 1;     // only ranks with (rank + index) % stride_ == 0 contribute a non-neutral value
  int64_t range_ = 1;  // magnitude bound of a contributed value
};

}  // namespace atl::perf
