#include "device/cuda_device.h"

#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <deque>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "base/debug.h"
#include "kernels/cuda/elementwise_host.h"
#include "kernels/host/reduce.h"
#if defined(ATOLL_HAVE_CUDA_KERNELS)
#include "device/cuda_fatbin.h"
#endif

namespace atl::device {
namespace {

/// The driver entry points the backend uses, resolved by their versioned names (cuda.h maps the
/// plain names to these at compile time; dlsym needs them spelled out).
struct Driver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuDeviceCanAccessPeer) deviceCanAccessPeer = nullptr;
  decltype(&::cuCtxEnablePeerAccess) ctxEnablePeerAccess = nullptr;
  decltype(&::cuCtxGetCurrent) ctxGetCurrent = nullptr;
  decltype(&::cuCtxGetDevice) ctxGetDevice = nullptr;
  decltype(&::cuCtxPushCurrent) ctxPush = nullptr;
  decltype(&::cuCtxPopCurrent) ctxPop = nullptr;
  decltype(&::cuPointerGetAttribute) pointerGetAttribute = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  decltype(&::cuMemHostRegister) memHostRegister = nullptr;
  decltype(&::cuMemHostUnregister) memHostUnregister = nullptr;
  decltype(&::cuMemcpyAsync) memcpyAsync = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&::cuStreamIsCapturing) streamIsCapturing = nullptr;
  decltype(&::cuEventCreate) eventCreate = nullptr;
  decltype(&::cuEventRecord) eventRecord = nullptr;
  decltype(&::cuEventQuery) eventQuery = nullptr;
  decltype(&::cuEventDestroy) eventDestroy = nullptr;
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamDestroy) streamDestroy = nullptr;
  decltype(&::cuMemHostAlloc) memHostAlloc = nullptr;
  decltype(&::cuMemHostGetDevicePointer) memHostGetDevicePointer = nullptr;
  decltype(&::cuStreamWaitValue32) streamWaitValue32 = nullptr;  // optional: without it, waits are on the host
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuIpcGetMemHandle) ipcGetMemHandle = nullptr;
  decltype(&::cuIpcOpenMemHandle) ipcOpenMemHandle = nullptr;
  decltype(&::cuIpcCloseMemHandle) ipcCloseMemHandle = nullptr;
  decltype(&::cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  int deviceCount = 0;
  std::string why;  // empty when usable
};

template <class F>
bool resolve(void* lib, const char* symbol, F* out, std::string* why) {
  *out = reinterpret_cast<F>(dlsym(lib, symbol));
  if (*out == nullptr && why->empty()) *why = std::string("libcuda.so.1 lacks ") + symbol;
  return *out != nullptr;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* err = dlerror();
      r.why = std::string("no CUDA driver (dlopen libcuda.so.1: ") + (err ? err : "not found") + ")";
      return r;
    }
    bool ok = true;
    ok &= resolve(lib, "cuInit", &r.init, &r.why);
    ok &= resolve(lib, "cuDeviceGetCount", &r.deviceGetCount, &r.why);
    ok &= resolve(lib, "cuDeviceGet", &r.deviceGet, &r.why);
    ok &= resolve(lib, "cuDevicePrimaryCtxRetain", &r.primaryCtxRetain, &r.why);
    ok &= resolve(lib, "cuDeviceCanAccessPeer", &r.deviceCanAccessPeer, &r.why);
    ok &= resolve(lib, "cuCtxEnablePeerAccess", &r.ctxEnablePeerAccess, &r.why);
    ok &= resolve(lib, "cuCtxGetCurrent", &r.ctxGetCurrent, &r.why);
    ok &= resolve(lib, "cuCtxGetDevice", &r.ctxGetDevice, &r.why);
    ok &= resolve(lib, "cuCtxPushCurrent_v2", &r.ctxPush, &r.why);
    ok &= resolve(lib, "cuCtxPopCurrent_v2", &r.ctxPop, &r.why);
    ok &= resolve(lib, "cuPointerGetAttribute", &r.pointerGetAttribute, &r.why);
    ok &= resolve(lib, "cuMemAlloc_v2", &r.memAlloc, &r.why);
    ok &= resolve(lib, "cuMemFree_v2", &r.memFree, &r.why);
    ok &= resolve(lib, "cuMemHostRegister_v2", &r.memHostRegister, &r.why);
    ok &= resolve(lib, "cuMemHostUnregister", &r.memHostUnregister, &r.why);
    ok &= resolve(lib, "cuMemcpyAsync", &r.memcpyAsync, &r.why);
    ok &= resolve(lib, "cuStreamSynchronize", &r.streamSynchronize, &r.why);
    ok &= resolve(lib, "cuStreamIsCapturing", &r.streamIsCapturing, &r.why);
    ok &= resolve(lib, "cuEventCreate", &r.eventCreate, &r.why);
    ok &= resolve(lib, "cuEventRecord", &r.eventRecord, &r.why);
    ok &= resolve(lib, "cuEventQuery", &r.eventQuery, &r.why);
    ok &= resolve(lib, "cuEventDestroy_v2", &r.eventDestroy, &r.why);
    ok &= resolve(lib, "cuStreamCreate", &r.streamCreate, &r.why);
    ok &= resolve(lib, "cuStreamDestroy_v2", &r.streamDestroy, &r.why);
    ok &= resolve(lib, "cuMemHostAlloc", &r.memHostAlloc, &r.why);
    ok &= resolve(lib, "cuMemHostGetDevicePointer_v2", &r.memHostGetDevicePointer, &r.why);
    r.streamWaitValue32 = reinterpret_cast<decltype(r.streamWaitValue32)>(dlsym(lib, "cuStreamWaitValue32_v2"));
    if (r.streamWaitValue32 == nullptr)
      r.streamWaitValue32 = reinterpret_cast<decltype(r.streamWaitValue32)>(dlsym(lib, "cuStreamWaitValue32"));
    ok &= resolve(lib, "cuDeviceGetAttribute", &r.deviceGetAttribute, &r.why);
    ok &= resolve(lib, "cuIpcGetMemHandle", &r.ipcGetMemHandle, &r.why);
    ok &= resolve(lib, "cuIpcOpenMemHandle_v2", &r.ipcOpenMemHandle, &r.why);
    ok &= resolve(lib, "cuIpcCloseMemHandle", &r.ipcCloseMemHandle, &r.why);
    ok &= resolve(lib, "cuModuleLoadData", &r.moduleLoadData, &r.why);
    ok &= resolve(lib, "cuModuleGetFunction", &r.moduleGetFunction, &r.why);
    ok &= resolve(lib, "cuLaunchKernel", &r.launchKernel, &r.why);
    ok &= resolve(lib, "cuGetErrorName", &r.getErrorName, &r.why);
    ok &= resolve(lib, "cuGetErrorString", &r.getErrorString, &r.why);
    if (!ok) return r;
    CUresult rc = r.init(0);
    if (rc != CUDA_SUCCESS) {
      const char* name = nullptr;
      r.getErrorName(rc, &name);
      r.why = std::string("the CUDA driver did not initialise (cuInit: ") + (name ? name : "?") + ")";
      return r;
    }
    if (r.deviceGetCount(&r.deviceCount) != CUDA_SUCCESS || r.deviceCount == 0) r.why = "the CUDA driver sees no GPU";
    return r;
  }();
  return d;
}

Status cudaError(CUresult rc, const char* what) {
  const Driver& d = driver();
  const char* name = nullptr;
  const char* text = nullptr;
  d.getErrorName(rc, &name);
  d.getErrorString(rc, &text);
  return ATOLL_ERROR(ncclUnhandledCudaError, "%s failed: %s (%s)", what, name ? name : "?", text ? text : "?");
}

#define ATOLL_CU(call, what)                         \
  do {                                               \
    CUresult atoll_rc_ = (call);                     \
    if (atoll_rc_ != CUDA_SUCCESS) return cudaError(atoll_rc_, what); \
  } while (0)

/// Makes device `dev`'s context current for a scope: the caller's own when it already is on that
/// device (a driver-API user's context), else the device's primary context, which the CUDA runtime
/// (and so PyTorch) allocates its memory and streams in.
class ContextScope {
 public:
  Status enter(int dev) {
    const Driver& d = driver();
    CUcontext cur = nullptr;
    if (d.ctxGetCurrent(&cur) == CUDA_SUCCESS && cur != nullptr) {
      CUdevice curDev = -1;
      if (d.ctxGetDevice(&curDev) == CUDA_SUCCESS && curDev == dev) return Status::Ok();
    }
    ATOLL_ASSIGN_OR_RETURN(CUcontext ctx, primaryContext(dev));
    ATOLL_CU(d.ctxPush(ctx), "cuCtxPushCurrent");
    pushed_ = true;
    return Status::Ok();
  }
  /// Device `dev`'s primary context, retained once and held for the process.
  static Result<CUcontext> primaryContext(int dev) {
    const Driver& d = driver();
    if (dev < 0 || dev >= d.deviceCount)
      return ATOLL_ERROR(ncclInvalidArgument, "CUDA device %d does not exist (%d visible)", dev, d.deviceCount);
    std::lock_guard<std::mutex> lock(primaryMutex());
    CUcontext& slot = primary()[static_cast<size_t>(dev) % primary().size()];
    if (slot == nullptr) {
      CUdevice device = 0;
      ATOLL_CU(d.deviceGet(&device, dev), "cuDeviceGet");
      ATOLL_CU(d.primaryCtxRetain(&slot, device), "cuDevicePrimaryCtxRetain");
    }
    return slot;
  }
  ~ContextScope() {
    if (pushed_) {
      CUcontext popped = nullptr;
      (void)driver().ctxPop(&popped);
    }
  }

 private:
  static std::array<CUcontext, 64>& primary() {
    static std::array<CUcontext, 64> contexts{};
    return contexts;
  }
  static std::mutex& primaryMutex() {
    static std::mutex m;
    return m;
  }
  bool pushed_ = false;
};

/// The staged path waits for streams on the host, which a stream being captured into a CUDA graph
/// forbids (and the wait would invalidate the capture): refuse before touching the stream.
Status checkNotCapturing(CUstream s) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  ATOLL_CU(driver().streamIsCapturing(s, &status), "cuStreamIsCapturing");
  if (status != CU_STREAM_CAPTURE_STATUS_NONE)
    return ATOLL_ERROR(ncclInvalidUsage,
                       "stream %p is being captured into a CUDA graph: Atoll's CUDA backend runs collectives from the "
                       "host (staged through host memory) and cannot be captured yet; issue the call outside capture",
                       static_cast<void*>(s));
  return Status::Ok();
}

#if defined(ATOLL_HAVE_CUDA_KERNELS)
/// The embedded elementwise kernels, loaded into each context that launches them (a module
/// belongs to one context), with each function looked up on first use.
class KernelCache {
 public:
  struct Launch {
    CUfunction fn;
    int sms;
  };
  /// The kernel for (op, dt) in the current context, which is on device `dev`.
  Result<Launch> get(int dev, kernels::cuda::EwOp op, ncclDataType_t dt) {
    const Driver& d = driver();
    CUcontext ctx = nullptr;
    ATOLL_CU(d.ctxGetCurrent(&ctx), "cuCtxGetCurrent");
    std::lock_guard<std::mutex> lock(mutex_);
    Loaded* l = nullptr;
    for (Loaded& x : loaded_)
      if (x.ctx == ctx) l = &x;
    if (l == nullptr) {
      Loaded fresh;
      fresh.ctx = ctx;
      ATOLL_CU(d.moduleLoadData(&fresh.module, cudaFatbin().data()), "cuModuleLoadData (Atoll's elementwise kernels)");
      CUdevice device = 0;
      ATOLL_CU(d.deviceGet(&device, dev), "cuDeviceGet");
      ATOLL_CU(d.deviceGetAttribute(&fresh.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device), "cuDeviceGetAttribute");
      loaded_.push_back(fresh);
      l = &loaded_.back();
    }
    CUfunction& fn = l->fns[static_cast<size_t>(op) * ncclNumTypes + static_cast<size_t>(dt)];
    if (fn == nullptr) {
      const std::string name = kernels::cuda::kernelName(op, dt);
      CUresult rc = d.moduleGetFunction(&fn, l->module, name.c_str());
      if (rc != CUDA_SUCCESS) return cudaError(rc, ("cuModuleGetFunction " + name).c_str());
    }
    return Launch{fn, l->sms};
  }

 private:
  struct Loaded {
    CUcontext ctx = nullptr;
    CUmodule module = nullptr;  // kept for the process: a context's streams may still run it
    int sms = 1;
    std::array<CUfunction, kernels::cuda::kEwOps * ncclNumTypes> fns{};
  };
  std::mutex mutex_;
  std::deque<Loaded> loaded_;  // stable addresses
};
#endif

class CudaDevice final : public Device {
 public:
  Kind kind() const override { return Kind::Cuda; }
  const char* name() const override { return "cuda"; }
  Result<void*> allocate(size_t bytes) const override {
    ContextScope scope;
    ATOLL_CHECK(scope.enter(currentDevice()));
    CUdeviceptr p = 0;
    ATOLL_CU(driver().memAlloc(&p, bytes == 0 ? 1 : bytes), "cuMemAlloc");
    return reinterpret_cast<void*>(p);
  }
  Status release(void* ptr) const override {
    if (ptr == nullptr) return Status::Ok();
    ATOLL_CU(driver().memFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
    return Status::Ok();
  }
  Status synchronize(int dev, cudaStream_t stream) const override {
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    ATOLL_CHECK(checkNotCapturing(reinterpret_cast<CUstream>(stream)));
    ATOLL_CU(driver().streamSynchronize(reinterpret_cast<CUstream>(stream)), "cuStreamSynchronize");
    return Status::Ok();
  }
  bool streamOrdered() const override { return true; }
  bool needsStaging(const void* ptr) const override {
    // Device and managed memory are staged; pinned host memory (cudaHostAlloc, registered) and
    // plain host memory, which the driver does not know (an error here), are read in place.
    unsigned int type = 0;
    CUresult rc = driver().pointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(ptr));
    return rc == CUDA_SUCCESS && type == CU_MEMORYTYPE_DEVICE;
  }
  int currentDevice() const override {
    const Driver& d = driver();
    CUcontext cur = nullptr;
    CUdevice dev = 0;
    if (d.ctxGetCurrent(&cur) == CUDA_SUCCESS && cur != nullptr && d.ctxGetDevice(&dev) == CUDA_SUCCESS) return dev;
    return 0;
  }
  Status copy(int dev, void* dst, const void* src, size_t bytes, cudaStream_t stream) const override {
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    CUstream s = reinterpret_cast<CUstream>(stream);
    ATOLL_CHECK(checkNotCapturing(s));
    ATOLL_CU(driver().memcpyAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes, s),
             "cuMemcpyAsync");
    ATOLL_CU(driver().streamSynchronize(s), "cuStreamSynchronize");
    return Status::Ok();
  }
  Status copyAsync(int dev, void* dst, const void* src, size_t bytes, cudaStream_t stream) const override {
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    ATOLL_CU(driver().memcpyAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes,
                                  reinterpret_cast<CUstream>(stream)),
             "cuMemcpyAsync");
    return Status::Ok();
  }
#if defined(ATOLL_HAVE_CUDA_KERNELS)
  bool hasKernels() const override { return true; }
#endif
  Status elementwise(int dev, const EwCall& call, cudaStream_t stream) const override {
    ATOLL_CHECK(validate(call));
    if (call.count == 0) return Status::Ok();
#if defined(ATOLL_HAVE_CUDA_KERNELS)
    using namespace kernels::cuda;
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    ATOLL_ASSIGN_OR_RETURN(KernelCache::Launch k, kernels_.get(dev, call.op, call.dt));
    const size_t elem = kernels::dtypeSize(call.dt);
    EwArgs x = launchArgs(call);
    // Four blocks of 512 per SM fill an SM's 2048 threads; the grid stride covers the rest.
    const unsigned blocks = blocksFor(x, elem, kBlockThreads, static_cast<uint32_t>(k.sms) * 4);
    void* params[] = {&x};
    ATOLL_CU(driver().launchKernel(k.fn, blocks, 1, 1, kBlockThreads, 1, 1, 0, reinterpret_cast<CUstream>(stream),
                                   params, nullptr),
             "cuLaunchKernel");
    return Status::Ok();
#else
    (void)dev;
    (void)stream;
    return ATOLL_ERROR(ncclInvalidUsage,
                       "this build of Atoll has no CUDA kernels (nvcc was not found when it was configured)");
#endif
  }
  Result<IpcHandle> exportMemory(const void* ptr) const override {
    const Driver& d = driver();
    const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(ptr);
    CUdeviceptr base = 0;
    size_t size = 0;
    int ordinal = 0;
    ATOLL_CU(d.pointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p), "cuPointerGetAttribute(range start)");
    ATOLL_CU(d.pointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p), "cuPointerGetAttribute(range size)");
    ATOLL_CU(d.pointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p), "cuPointerGetAttribute(device)");
    ContextScope scope;
    ATOLL_CHECK(scope.enter(ordinal));
    CUipcMemHandle raw;
    ATOLL_CU(d.ipcGetMemHandle(&raw, base), "cuIpcGetMemHandle");
    IpcHandle h;
    static_assert(sizeof(raw) == sizeof(h.cuda));
    h.backend = static_cast<uint8_t>(Kind::Cuda);
    h.pid = static_cast<int32_t>(::getpid());
    h.size = size;
    h.offset = p - base;
    std::memcpy(h.cuda, &raw, sizeof(raw));
    return h;
  }
  Result<void*> importMemory(const IpcHandle& h) const override {
    ATOLL_CHECK(validate(h, *this));
    const int dev = currentDevice();
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    CUipcMemHandle raw;
    std::memcpy(&raw, h.cuda, sizeof(raw));
    CUdeviceptr base = 0;
    // Lazy peer access: a peer allocation on another GPU is reached over NVLink/PCIe once touched.
    ATOLL_CU(driver().ipcOpenMemHandle(&base, raw, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
    std::lock_guard<std::mutex> lock(importMutex_);
    imported_.push_back({base, h.size, dev});
    return reinterpret_cast<void*>(base + h.offset);
  }
  Status enablePeerAccess(int dev, int peerDev) const override {
    if (dev == peerDev) return Status::Ok();
    const Driver& d = driver();
    CUdevice a = 0, b = 0;
    int can = 0;
    ATOLL_CU(d.deviceGet(&a, dev), "cuDeviceGet");
    ATOLL_CU(d.deviceGet(&b, peerDev), "cuDeviceGet");
    ATOLL_CU(d.deviceCanAccessPeer(&can, a, b), "cuDeviceCanAccessPeer");
    if (can == 0)
      return ATOLL_ERROR(ncclSystemError, "CUDA device %d cannot reach device %d's memory (no peer access between them)",
                         dev, peerDev);
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    // Allocations are made in the primary context (or the caller's on that device, which shares
    // the primary context's peer mappings only when it is the primary one).
    ATOLL_ASSIGN_OR_RETURN(CUcontext peer, ContextScope::primaryContext(peerDev));
    const CUresult rc = d.ctxEnablePeerAccess(peer, 0);
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return cudaError(rc, "cuCtxEnablePeerAccess");
    return Status::Ok();
  }
  Status closeImported(void* ptr) const override {
    const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(ptr);
    CUdeviceptr base = 0;
    int dev = 0;
    {
      std::lock_guard<std::mutex> lock(importMutex_);
      auto it = std::find_if(imported_.begin(), imported_.end(),
                             [&](const Imported& m) { return p >= m.base && p < m.base + m.size; });
      if (it == imported_.end())
        return ATOLL_ERROR(ncclInvalidArgument, "%p is not memory imported with importMemory", ptr);
      base = it->base;
      dev = it->dev;
      imported_.erase(it);
    }
    ContextScope scope;  // the context it was opened in
    ATOLL_CHECK(scope.enter(dev));
    ATOLL_CU(driver().ipcCloseMemHandle(base), "cuIpcCloseMemHandle");
    return Status::Ok();
  }
  Result<void*> allocateStaging(size_t bytes) const override {
    ATOLL_ASSIGN_OR_RETURN(void* p, host().allocate(bytes));
    // Pinned, a copy runs at the link's speed and needs no bounce buffer in the driver; unpinned
    // it still works, so a refusal (a locked-memory limit) is only logged.
    CUresult rc = driver().memHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE);
    if (rc != CUDA_SUCCESS) {
      const char* name = nullptr;
      driver().getErrorName(rc, &name);
      ATOLL_INFO(log::kAlloc, "cuMemHostRegister of %zu staging bytes failed (%s): copies go through pageable memory",
                 bytes, name ? name : "?");
    }
    return p;
  }
  Status releaseStaging(void* ptr) const override {
    (void)driver().memHostUnregister(ptr);  // fails harmlessly where the register did
    return host().release(ptr);
  }
  Result<void*> mark(int dev, cudaStream_t stream) const override {
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    CUstream s = reinterpret_cast<CUstream>(stream);
    ATOLL_CHECK(checkNotCapturing(s));
    CUevent ev = nullptr;
    ATOLL_CU(driver().eventCreate(&ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    CUresult rc = driver().eventRecord(ev, s);
    if (rc != CUDA_SUCCESS) {
      (void)driver().eventDestroy(ev);
      return cudaError(rc, "cuEventRecord");
    }
    return static_cast<void*>(ev);
  }
  Result<bool> markPassed(int dev, void* marker) const override {
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    CUresult rc = driver().eventQuery(static_cast<CUevent>(marker));
    if (rc == CUDA_SUCCESS) return true;
    if (rc == CUDA_ERROR_NOT_READY) return false;
    return cudaError(rc, "cuEventQuery");
  }
  void releaseMark(int dev, void* marker) const override {
    ContextScope scope;
    if (scope.enter(dev).ok()) (void)driver().eventDestroy(static_cast<CUevent>(marker));  // freed once it completes
  }
  Result<uint32_t*> takeCounter(int dev) const override {
    {
      std::lock_guard<std::mutex> lock(counterMutex_);
      if (!freeCounters_.empty()) {
        uint32_t* c = freeCounters_.back();
        freeCounters_.pop_back();
        return c;
      }
    }
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    void* p = nullptr;
    // Mapped, so a stream can watch it; portable, so any context can.
    ATOLL_CU(driver().memHostAlloc(&p, 64, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
    std::memset(p, 0, 64);
    return static_cast<uint32_t*>(p);
  }
  void returnCounter(uint32_t* counter) const override {
    std::lock_guard<std::mutex> lock(counterMutex_);
    freeCounters_.push_back(counter);
  }
  bool streamWaitCounter(int dev, cudaStream_t stream, const uint32_t* counter, uint32_t value) const override {
    const Driver& d = driver();
    if (d.streamWaitValue32 == nullptr) return false;
    ContextScope scope;
    if (!scope.enter(dev).ok()) return false;
    CUdeviceptr addr = 0;
    if (d.memHostGetDevicePointer(&addr, const_cast<uint32_t*>(counter), 0) != CUDA_SUCCESS) return false;
    return d.streamWaitValue32(reinterpret_cast<CUstream>(stream), addr, value, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS;
  }
  Result<cudaStream_t> createStream(int dev) const override {
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    CUstream s = nullptr;
    // Non-blocking: a user working on the legacy NULL stream must not serialise with it.
    ATOLL_CU(driver().streamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    return reinterpret_cast<cudaStream_t>(s);
  }
  Status destroyStream(int dev, cudaStream_t stream) const override {
    ContextScope scope;
    ATOLL_CHECK(scope.enter(dev));
    ATOLL_CU(driver().streamDestroy(reinterpret_cast<CUstream>(stream)), "cuStreamDestroy");
    return Status::Ok();
  }

 private:
#if defined(ATOLL_HAVE_CUDA_KERNELS)
  mutable KernelCache kernels_;
#endif
  struct Imported {
    CUdeviceptr base;
    uint64_t size;
    int dev;
  };
  mutable std::mutex importMutex_;
  mutable std::vector<Imported> imported_;
  mutable std::mutex counterMutex_;
  mutable std::vector<uint32_t*> freeCounters_;
};

}  // namespace

bool cudaPresent() { return driver().why.empty(); }

std::string cudaAbsence() { return driver().why; }

Result<const Device*> cuda() {
  const Driver& d = driver();
  if (!d.why.empty()) return ATOLL_ERROR(ncclInvalidUsage, "ATOLL_DEVICE=cuda: %s", d.why.c_str());
  static const CudaDevice device;
  return &device;
}

}  // namespace atl::device
