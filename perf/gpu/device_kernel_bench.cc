// The device reduce kernel against the device's own copy, side by side in one run: float sum
// (dst = a + b, 3 bytes of traffic per output byte) and a device-to-device cuMemcpyAsync (2 per
// byte), both back to back on one stream. Issue 16's target: the kernel's memory traffic at least
// 80 % of the copy's ("ratio" >= 0.80 at large sizes). Through the backend ATOLL_DEVICE selects
// (cuda on a GPU; emu or host here, where the figures mean nothing about a GPU).
//
//   device_kernel_bench [--min BYTES] [--max BYTES] [--iters N]
//
// Each size's result is checked once before it is timed; a wrong value exits 1.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/device.h"
#include "perf/common/byte_size.h"

namespace {

using atl::device::Device;
using atl::device::EwCall;
using atl::kernels::cuda::EwOp;

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: device_kernel_bench [--min BYTES] [--max BYTES] [--iters N]\n");
  std::exit(2);
}

[[noreturn]] void fail(const char* what, atl::Status st) {
  std::fprintf(stderr, "device_kernel_bench: %s failed (%d): %s\n", what, static_cast<int>(st.code()),
               atl::lastErrorMessage().c_str());
  std::exit(3);
}

void check(atl::Status st, const char* what) {
  if (!st.ok()) fail(what, st);
}

/// Seconds per run of `enqueue`, from `iters` runs back to back and one wait at the end.
template <class F>
double timePerRun(const Device& d, int dev, cudaStream_t s, int iters, F enqueue) {
  enqueue();  // warm-up: first launch loads the module, first copy maps the pages
  check(d.synchronize(dev, s), "synchronize");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) enqueue();
  check(d.synchronize(dev, s), "synchronize");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
}

}  // namespace

int main(int argc, char** argv) {
  size_t minBytes = 1 << 20, maxBytes = 256 << 20;
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (flag == "--min") {
      if (!atl::perf::parseByteSize(v, &minBytes)) usage();
    } else if (flag == "--max") {
      if (!atl::perf::parseByteSize(v, &maxBytes)) usage();
    } else if (flag == "--iters") {
      iters = std::atoi(v);
    } else {
      usage();
    }
  }
  if (iters < 1 || minBytes < 4 || maxBytes < minBytes) usage();

  atl::Result<const Device*> selected = atl::device::select();
  if (!selected.ok()) fail("selecting the device backend (ATOLL_DEVICE)", selected.status());
  const Device& d = **selected;
  const int dev = d.currentDevice();
  cudaStream_t s = nullptr;
  if (d.streamOrdered()) {
    atl::Result<cudaStream_t> made = d.createStream(dev);
    if (!made.ok()) fail("createStream", made.status());
    s = *made;
  }
  void* buf[3];
  for (void*& b : buf) {
    atl::Result<void*> p = d.allocate(maxBytes);
    if (!p.ok()) fail("allocate", p.status());
    b = *p;
  }
  const size_t maxCount = maxBytes / 4;
  std::vector<float> host(maxCount, 1.0f);
  check(d.copy(dev, buf[1], host.data(), maxCount * 4, s), "upload a");
  host.assign(maxCount, 2.0f);
  check(d.copy(dev, buf[2], host.data(), maxCount * 4, s), "upload b");

  std::printf("# device_kernel_bench: backend %s, device %d, %d iterations per size\n", d.name(), dev, iters);
  std::printf("# traffic GB/s: copy moves 2 bytes per byte, float sum 3 (two reads, one write)\n");
  std::printf("%12s %12s %12s %12s %12s %8s\n", "bytes", "copy_us", "copy_GB/s", "sum_us", "sum_GB/s", "ratio");
  int bad = 0;
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= 2) {
    const size_t count = bytes / 4;
    const EwCall sum{EwOp::Sum, ncclFloat32, buf[0], buf[1], buf[2], count};
    check(d.elementwise(dev, sum, s), "elementwise");
    std::vector<float> got(count);
    check(d.copy(dev, got.data(), buf[0], count * 4, s), "download");
    for (size_t i = 0; i < count; ++i)
      if (got[i] != 3.0f) {
        std::fprintf(stderr, "device_kernel_bench: %zu bytes: element %zu is %g, not 3\n", bytes, i, got[i]);
        ++bad;
        break;
      }
    const double copyT = timePerRun(d, dev, s, iters, [&] { check(d.copyAsync(dev, buf[0], buf[1], bytes, s), "copyAsync"); });
    const double sumT = timePerRun(d, dev, s, iters, [&] { check(d.elementwise(dev, sum, s), "elementwise"); });
    const double copyBw = 2.0 * bytes / copyT / 1e9;
    const double sumBw = 3.0 * bytes / sumT / 1e9;
    std::printf("%12zu %12.2f %12.1f %12.2f %12.1f %8.2f\n", bytes, copyT * 1e6, copyBw, sumT * 1e6, sumBw,
                sumBw / copyBw);
    if (bytes > maxBytes / 2) break;  // no overflow of bytes *= 2
  }
  for (void* b : buf) check(d.release(b), "release");
  if (s != nullptr) check(d.destroyStream(dev, s), "destroyStream");
  return bad == 0 ? 0 : 1;
}
