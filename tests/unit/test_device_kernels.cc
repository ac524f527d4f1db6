// The CUDA elementwise kernels (kernels/cuda/elementwise.h). EwGrid runs the kernel body on the
// host for every thread of a grid, as the emulated GPU does, and checks it against the host
// kernels at every alignment; DeviceKernels launches them through the backend ATOLL_DEVICE selects
// (ctest: emu; perf/gpu/check.sh: cuda, on a GPU) and checks the values that come back.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "device/device.h"
#include "device/emu_device.h"
#include "kernels/cuda/elementwise_host.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/host/reduce.h"

namespace atl::kernels::cuda {
namespace {

constexpr ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,    ncclUint32,     ncclInt64,     ncclUint64,
                                     ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
constexpr EwOp kOps[] = {EwOp::Sum, EwOp::Prod, EwOp::Max, EwOp::Min, EwOp::Scale, EwOp::Divide};


std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(gen());
  return v;
}

/// What the host kernels compute for (op, dt): the reference.
void reference(EwOp op, ncclDataType_t dt, void* dst, const void* a, const void* b, size_t count, uint64_t scalar,
               int divisor) {
  switch (op) {
    case EwOp::Sum: reduce(dt, RedOp::Sum, dst, a, b, count); break;
    case EwOp::Prod: reduce(dt, RedOp::Prod, dst, a, b, count); break;
    case EwOp::Max: reduce(dt, RedOp::Max, dst, a, b, count); break;
    case EwOp::Min: reduce(dt, RedOp::Min, dst, a, b, count); break;
    case EwOp::Scale: scale(dt, dst, a, &scalar, count); break;
    case EwOp::Divide:
      std::memcpy(dst, a, count * dtypeSize(dt));
      divide(dt, dst, count, divisor);
      break;
  }
}

/// The first element where `got` and `want` differ, or `count`. Bits must match, except that any
/// NaN equals any NaN: which NaN an operation returns is not specified (x86 keeps an operand's
/// payload, in whichever order the compiler put them; a GPU returns the canonical NaN).
size_t firstDifference(ncclDataType_t dt, const uint8_t* got, const uint8_t* want, size_t count) {
  size_t at = count;
  withType(dt, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count && at == count; ++i) {
      T g, w;
      std::memcpy(&g, got + i * sizeof(T), sizeof(T));
      std::memcpy(&w, want + i * sizeof(T), sizeof(T));
      if (std::memcmp(&g, &w, sizeof(T)) == 0) continue;
      if constexpr (kIsLowFloat<T>) {
        if (toFloat(g) != toFloat(g) && toFloat(w) != toFloat(w)) continue;
      } else if constexpr (std::is_floating_point_v<T>) {
        if (g != g && w != w) continue;
      }
      at = i;
    }
  });
  return at;
}

/// Runs the kernel body over a grid of `threads` on host buffers at the given byte offsets (from
/// 64-byte aligned bases) and compares every byte, guards included, with the host kernels.
void checkGrid(EwOp op, ncclDataType_t dt, size_t count, size_t dstOff, size_t aOff, size_t bOff, uint64_t threads) {
  const size_t elem = dtypeSize(dt);
  const size_t bytes = count * elem;
  constexpr size_t kGuard = 64;
  auto in = randomBytes(2 * (bytes + 2 * kGuard), static_cast<uint32_t>(count * 131 + dstOff * 7 + aOff));
  std::vector<uint8_t> aBuf(bytes + 2 * kGuard + 64), bBuf(bytes + 2 * kGuard + 64), got(bytes + 2 * kGuard + 64, 0xa5);
  auto align = [](std::vector<uint8_t>& v) {
    return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
  };
  uint8_t* a = align(aBuf) + aOff;
  uint8_t* b = align(bBuf) + bOff;
  uint8_t* d = align(got) + dstOff;
  std::memcpy(a, in.data(), bytes);
  std::memcpy(b, in.data() + bytes, bytes);
  std::vector<uint8_t> want(got);
  uint64_t scalar = 0;
  std::memcpy(&scalar, in.data() + in.size() - 8, elem);
  const int divisor = 3;
  reference(op, dt, want.data() + (d - got.data()), a, b, count, scalar, divisor);

  EwArgs x{d, a, isBinary(op) ? b : nullptr, count, 0, 0, scalar, divisor};
  splitForPacks(x, elem, isBinary(op));
  if (count * elem >= 48 && dstOff % 16 == aOff % 16 && (!isBinary(op) || dstOff % 16 == bOff % 16)) {
    EXPECT_GT(x.packs, 0u) << "aligned buffers must take the 16-byte path";
  }
  ASSERT_TRUE(runGridOnHost(op, dt, x, threads));
  const size_t at = static_cast<size_t>(d - got.data());
  ASSERT_EQ(std::memcmp(got.data(), want.data(), at), 0) << "wrote before dst";
  ASSERT_EQ(std::memcmp(got.data() + at + bytes, want.data() + at + bytes, got.size() - at - bytes), 0)
      << "wrote past dst";
  ASSERT_EQ(firstDifference(dt, got.data() + at, want.data() + at, count), count)
      << opName(op) << " " << dtypeName(dt) << " count " << count << " offsets " << dstOff << "/" << aOff << "/"
      << bOff << " threads " << threads << " (head " << x.head << ", packs " << x.packs << ")";
}

TEST(EwGrid, CoversEveryElementOnceAtEveryAlignmentAndGridSize) {
  for (ncclDataType_t dt : {ncclInt8, ncclBfloat16, ncclFloat32, ncclFloat64}) {
    const size_t elem = dtypeSize(dt);
    for (size_t off = 0; off < 16; off += elem) {
      for (size_t count : {0, 1, 2, 3, 15, 16, 17, 31, 64, 65, 127, 300, 4099}) {
        for (uint64_t threads : {1, 3, 32, 96, 5000}) {
          checkGrid(EwOp::Sum, dt, count, off, off, off, threads);          // same alignment: packs
          checkGrid(EwOp::Sum, dt, count, off, (off + elem) % 16, off, threads);  // mismatched: scalar
          checkGrid(EwOp::Scale, dt, count, off, off, 0, threads);
        }
      }
    }
  }
}

TEST(EwGrid, EveryTypeAndOperationMatchesTheHostKernels) {
  for (ncclDataType_t dt : kTypes)
    for (EwOp op : kOps)
      for (size_t off : {size_t{0}, dtypeSize(dt)}) checkGrid(op, dt, 1013, off, off, off, 96);
}

TEST(EwGrid, KernelNamesAreThoseOfTheFatbin) {
  EXPECT_EQ(kernelName(EwOp::Sum, ncclFloat32), "atoll_ew_sum_f32");
  EXPECT_EQ(kernelName(EwOp::Divide, ncclFloat8e5m2), "atoll_ew_divide_e5m2");
  EXPECT_EQ(kernelName(EwOp::Sum, ncclNumTypes), "");
}

/// Through the selected backend: device buffers, a stream, and the result copied back.
class DeviceKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<const device::Device*> d = device::select();
    ASSERT_TRUE(d.ok());
    dev_ = *d;
    devIndex_ = dev_->currentDevice();
    if (dev_->streamOrdered()) {
      Result<cudaStream_t> s = dev_->createStream(devIndex_);
      ASSERT_TRUE(s.ok());
      stream_ = *s;
    }
  }
  void TearDown() override {
    if (stream_ != nullptr) {
      EXPECT_TRUE(dev_->destroyStream(devIndex_, stream_).ok());
    }
    for (void* p : buffers_) EXPECT_TRUE(dev_->release(p).ok());
  }
  void* alloc(size_t bytes) {
    Result<void*> p = dev_->allocate(bytes);
    EXPECT_TRUE(p.ok());
    buffers_.push_back(*p);
    return *p;
  }
  const device::Device* dev_ = nullptr;
  int devIndex_ = 0;
  cudaStream_t stream_ = nullptr;
  std::vector<void*> buffers_;
};

TEST_F(DeviceKernels, EveryTypeAndOperationMatchesTheHostKernels) {
  constexpr size_t kCount = 100003;  // a tail after the packs, and more packs than one grid pass
  std::printf("device backend: %s\n", dev_->name());
  for (ncclDataType_t dt : kTypes) {
    const size_t elem = dtypeSize(dt);
    const size_t bytes = kCount * elem;
    auto in = randomBytes(2 * bytes + 8, static_cast<uint32_t>(dt) + 1);
    char* a = static_cast<char*>(alloc(bytes + 16));
    char* b = static_cast<char*>(alloc(bytes + 16));
    char* d = static_cast<char*>(alloc(bytes + 16));
    for (EwOp op : kOps) {
      for (size_t off : {size_t{0}, elem}) {
        ASSERT_TRUE(dev_->copy(devIndex_, a + off, in.data(), bytes, stream_).ok());
        ASSERT_TRUE(dev_->copy(devIndex_, b + off, in.data() + bytes, bytes, stream_).ok());
        device::EwCall call;
        call.op = op;
        call.dt = dt;
        call.dst = d + off;
        call.a = a + off;
        call.b = b + off;
        call.count = kCount;
        std::memcpy(&call.scalar, in.data() + 2 * bytes, elem);
        call.divisor = 7;
        Status st = dev_->elementwise(devIndex_, call, stream_);
        ASSERT_TRUE(st.ok()) << lastErrorMessage();
        std::vector<uint8_t> got(bytes), want(bytes);
        ASSERT_TRUE(dev_->copy(devIndex_, got.data(), d + off, bytes, stream_).ok());
        reference(op, dt, want.data(), in.data(), in.data() + bytes, kCount, call.scalar, call.divisor);
        const size_t bad = firstDifference(dt, got.data(), want.data(), kCount);
        ASSERT_EQ(bad, kCount) << opName(op) << " " << dtypeName(dt) << " offset " << off;
      }
    }
  }
}

TEST_F(DeviceKernels, RunInStreamOrderAndInPlace) {
  constexpr size_t kCount = 1 << 20;
  std::vector<float> x(kCount), y(kCount), got(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    x[i] = static_cast<float>(i % 1000);
    y[i] = 0.5f;
  }
  float* a = static_cast<float*>(alloc(kCount * 4));
  float* b = static_cast<float*>(alloc(kCount * 4));
  float* d = static_cast<float*>(alloc(kCount * 4));
  ASSERT_TRUE(dev_->copy(devIndex_, a, x.data(), kCount * 4, stream_).ok());
  ASSERT_TRUE(dev_->copy(devIndex_, b, y.data(), kCount * 4, stream_).ok());
  // copyAsync, then three in-place kernels on its output: each must see the one before it.
  ASSERT_TRUE(dev_->copyAsync(devIndex_, d, a, kCount * 4, stream_).ok());
  device::EwCall call{EwOp::Sum, ncclFloat32, d, d, b, kCount};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(dev_->elementwise(devIndex_, call, stream_).ok());
  ASSERT_TRUE(dev_->copy(devIndex_, got.data(), d, kCount * 4, stream_).ok());
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(got[i], x[i] + 1.5f) << i;
}

TEST_F(DeviceKernels, BadCallsAreRefused) {
  float* d = static_cast<float*>(alloc(4096));
  device::EwCall call{EwOp::Sum, ncclNumTypes, d, d, d, 16};
  EXPECT_EQ(dev_->elementwise(devIndex_, call, stream_).code(), ncclInvalidArgument);
  call.dt = ncclFloat32;
  call.b = nullptr;
  EXPECT_EQ(dev_->elementwise(devIndex_, call, stream_).code(), ncclInvalidArgument);
  call.op = EwOp::Divide;
  call.divisor = 0;
  EXPECT_EQ(dev_->elementwise(devIndex_, call, stream_).code(), ncclInvalidArgument);
  call.op = EwOp::Sum;
  call.b = d;
  call.count = 0;  // nothing to do is not an error
  EXPECT_TRUE(dev_->elementwise(devIndex_, call, stream_).ok());
  if (dev_->kind() == device::Kind::Emu) {
    call.count = 4096;  // 16 KiB from a 4 KiB allocation (the emulator checks bounds)
    EXPECT_EQ(dev_->elementwise(devIndex_, call, stream_).code(), ncclInvalidArgument);
  }
}

TEST_F(DeviceKernels, ALaunchReturnsBeforeItsStreamRunsIt) {
  if (dev_->kind() != device::Kind::Emu) GTEST_SKIP() << "holds the stream back with the emulator's emuEnqueue";
  std::atomic<bool> release{false};
  ASSERT_TRUE(device::emuEnqueue(stream_, [&] {
                while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
              }).ok());
  float* a = static_cast<float*>(alloc(4096));
  const float one = 1.0f;
  std::vector<float> ones(1024, one), got(1024);
  ASSERT_TRUE(dev_->copyAsync(devIndex_, a, ones.data(), 4096, stream_).ok());  // queued behind the gate
  device::EwCall call{EwOp::Sum, ncclFloat32, a, a, a, 1024};
  ASSERT_TRUE(dev_->elementwise(devIndex_, call, stream_).ok());  // would hang here if it waited
  release = true;
  ASSERT_TRUE(dev_->copy(devIndex_, got.data(), a, 4096, stream_).ok());
  for (float v : got) ASSERT_EQ(v, 2.0f);
}

}  // namespace
}  // namespace atl::kernels::cuda
