// Throughput of the host reduction kernels against memcpy, on an out-of-cache buffer (64 MiB per
// operand) and an in-cache one (256 KiB). Bytes processed count every stream touched once:
// reduce = 2 reads + 1 write, scale/divide/copy/memcpy = 1 read + 1 write. Write-allocate
// traffic (a store reading its line first) is not counted, so a kernel at memory speed shows the
// same bytes/s as memcpy only if both avoid or both pay it.
// The "dst=a" variants run in place, which is what the engine does when folding a received chunk.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/host/isa.h"
#include "kernels/host/reduce.h"

namespace {

using atl::kernels::RedOp;

constexpr int64_t kLarge = 64 << 20;
constexpr int64_t kSmall = 256 << 10;

struct Buffers {
  explicit Buffers(size_t bytes) : a(bytes), b(bytes), d(bytes) {
    // Small integers as float/half/etc. bit patterns would be odd; a byte ramp is valid data for
    // every type (no effect on speed except for subnormal floats, which the ramp avoids).
    for (size_t i = 0; i < bytes; ++i) {
      a[i] = static_cast<unsigned char>(0x3c + (i % 3));
      b[i] = static_cast<unsigned char>(0x3d + (i % 5));
    }
    std::memcpy(d.data(), a.data(), bytes);
  }
  std::vector<unsigned char> a, b, d;
};

void setIsa(const benchmark::State& state, int arg) {
  (void)state;
  atl::kernels::setIsa(arg ? atl::kernels::Isa::Avx2 : atl::kernels::Isa::Baseline);
}

void BM_Reduce(benchmark::State& state, ncclDataType_t dt, RedOp op, bool inPlace) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  setIsa(state, static_cast<int>(state.range(1)));
  const size_t count = bytes / atl::kernels::dtypeSize(dt);
  Buffers buf(bytes);
  void* dst = inPlace ? static_cast<void*>(buf.a.data()) : buf.d.data();
  for (auto _ : state) {
    atl::kernels::reduce(dt, op, dst, buf.a.data(), buf.b.data(), count);
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(3 * bytes));
  atl::kernels::setIsa(atl::kernels::detectedIsa());
}

void BM_Scale(benchmark::State& state, ncclDataType_t dt) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  setIsa(state, static_cast<int>(state.range(1)));
  const size_t count = bytes / atl::kernels::dtypeSize(dt);
  Buffers buf(bytes);
  const unsigned char scalar[8] = {0, 0, 0, 0, 0, 0, 0, 0x3f};  // any valid value of each type
  for (auto _ : state) {
    atl::kernels::scale(dt, buf.d.data(), buf.a.data(), scalar, count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(2 * bytes));
  atl::kernels::setIsa(atl::kernels::detectedIsa());
}

// The extra pass of ncclAvg, in place on the result. Floats divide by 1: a real division (the
// divisor is a run-time value) that leaves the data unchanged, so repeated runs never decay them
// into subnormals, which would measure a slow path the engine does not take. Integers divide by 3:
// the library skips a divide by 1 outright, and integer division costs the same whatever the data
// decays to.
void BM_Divide(benchmark::State& state, ncclDataType_t dt) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  setIsa(state, static_cast<int>(state.range(1)));
  const size_t count = bytes / atl::kernels::dtypeSize(dt);
  Buffers buf(bytes);
  const int divisor = atl::kernels::isFloating(dt) ? 1 : 3;
  for (auto _ : state) {
    atl::kernels::divide(dt, buf.d.data(), count, divisor);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(2 * bytes));
  atl::kernels::setIsa(atl::kernels::detectedIsa());
}

// Copies with the destination `ahead` bytes past the source modulo 4 KiB (range 1): glibc's
// memcpy is 15-20x slower on AMD Zen for 1-31 bytes ahead between 2 KiB and the L2 size, which
// kernels::copy avoids (base/copy_bytes.h).
template <bool kOurs>
void BM_CopyAhead(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t ahead = static_cast<size_t>(state.range(1));
  Buffers buf(bytes);
  std::vector<unsigned char> out(bytes + 8192);
  const auto src = reinterpret_cast<uintptr_t>(buf.a.data());
  const auto base = reinterpret_cast<uintptr_t>(out.data());
  unsigned char* dst = out.data() + ((src + ahead - base) & 4095);
  for (auto _ : state) {
    if constexpr (kOurs) atl::kernels::copy(dst, buf.a.data(), bytes);
    else std::memcpy(dst, buf.a.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(2 * bytes));
}

// Args: {bytes per operand, isa (0 baseline, 1 avx2)}.
void sizesAndIsa(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {kSmall, kLarge}) {
    b->Args({bytes, 1});
    if (atl::kernels::detectedIsa() == atl::kernels::Isa::Avx2) b->Args({bytes, 0});
  }
  b->ArgNames({"bytes", "avx2"});
}

// Args: {bytes, destination's distance past the source modulo 4 KiB}.
void sizesAndAhead(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {int64_t{8} << 10, kSmall, kLarge})
    for (int64_t ahead : {0, 16, 64}) b->Args({bytes, ahead});
  b->ArgNames({"bytes", "ahead"});
}

int registerAll() {
  const ncclDataType_t all[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,   ncclInt64,      ncclUint64,
                                ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
  const std::pair<RedOp, const char*> ops[] = {
      {RedOp::Sum, "sum"}, {RedOp::Prod, "prod"}, {RedOp::Max, "max"}, {RedOp::Min, "min"}};
  for (auto [op, opName] : ops) {
    for (ncclDataType_t dt : all) {
      const std::string name = std::string("reduce/") + opName + "/" + atl::kernels::dtypeName(dt);
      benchmark::RegisterBenchmark(name.c_str(), BM_Reduce, dt, op, false)->Apply(sizesAndIsa);
    }
  }
  benchmark::RegisterBenchmark("reduce_inplace/sum/float", BM_Reduce, ncclFloat32, RedOp::Sum, true)
      ->Apply(sizesAndIsa);
  for (ncclDataType_t dt : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
    const std::string name = std::string("scale/") + atl::kernels::dtypeName(dt);
    benchmark::RegisterBenchmark(name.c_str(), BM_Scale, dt)->Apply(sizesAndIsa);
  }
  for (ncclDataType_t dt : all) {
    const std::string name = std::string("divide/") + atl::kernels::dtypeName(dt);
    benchmark::RegisterBenchmark(name.c_str(), BM_Divide, dt)->Apply(sizesAndIsa);
  }
  benchmark::RegisterBenchmark("copy", BM_CopyAhead<true>)->Apply(sizesAndAhead);
  benchmark::RegisterBenchmark("memcpy", BM_CopyAhead<false>)->Apply(sizesAndAhead);
  return 0;
}
const int kRegistered = registerAll();

}  // namespace

BENCHMARK_MAIN();
