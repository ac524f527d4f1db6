// Device HAL. Three backends share one interface:
// - host: buffers are CPU memory, streams are ignored (a call is complete when it returns);
// - cuda: GPU memory and cudaStream_t through the driver API, loaded at run time (cuda_driver.h),
//   so the library loads and the host backend runs on machines without a driver;
// - emu: an emulated GPU for tests (emu_device.h). Its memory is unreadable by the host and its
//   streams run on threads, so every stream-ordering and staging path of the cuda backend runs,
//   and fails loudly when wrong, on a machine without a GPU.
// The engine never sees device memory: the core stages it through host memory (core/device_staging.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/elementwise.h"
#include "nccl.h"

namespace atl::device {

enum class Kind { Host, Cuda, Emu };

/// One elementwise kernel (kernels/cuda/elementwise.h) over `count` elements of `dt`:
/// dst = a op b (Sum, Prod, Max, Min), a * scalar (Scale) or a / divisor (Divide).
struct EwCall {
  kernels::cuda::EwOp op = kernels::cuda::EwOp::Sum;
  ncclDataType_t dt = ncclFloat32;
  void* dst = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;  // Sum, Prod, Max, Min only
  size_t count = 0;
  uint64_t scalar = 0;  // Scale: the multiplier, an element of dt in the low bytes
  int divisor = 1;      // Divide: >= 1
};
/// Why `call` cannot run (bad type, op or divisor, or a null buffer), or Ok.
Status validate(const EwCall& call);
/// The kernel's arguments for `call` (validated), split into head, packs and tail at its addresses.
kernels::cuda::EwArgs launchArgs(const EwCall& call);

/// A device allocation as another process of the node opens it (CUDA IPC; the emulator's memfd).
/// Sent as these bytes over the bootstrap, between processes of one build: fixed layout, checked
/// on arrival (magic, version, backend).
struct IpcHandle {
  static constexpr uint32_t kMagic = 0x43504941;  // "AIPC"
  static constexpr uint16_t kVersion = 1;
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint8_t backend = 0;  // Kind of the exporter
  uint8_t reserved = 0;
  int32_t pid = 0;       // exporter
  int32_t fd = -1;       // emu: the exporter's memfd
  uint64_t size = 0;     // of the whole allocation
  uint64_t offset = 0;   // of the exported pointer within it
  uint8_t cuda[64] = {};  // CUipcMemHandle; emu: the allocation's identity (process nonce, serial)
};
static_assert(sizeof(IpcHandle) == 96, "IpcHandle is wire format");
class Device;
/// Why `importer` cannot open `handle` (not a handle, another backend's, bad bounds), or Ok.
Status validate(const IpcHandle& handle, const Device& importer);

class Device {
 public:
  virtual ~Device() = default;
  virtual Kind kind() const = 0;
  virtual const char* name() const = 0;
  /// ncclMemAlloc: memory collectives may use (device memory on a GPU backend).
  virtual Result<void*> allocate(size_t bytes) const = 0;
  virtual Status release(void* ptr) const = 0;
  /// Waits until work enqueued on `stream` is done; the host backend runs everything synchronously.
  virtual Status synchronize(int dev, cudaStream_t stream) const = 0;

  /// Whether calls on this backend are ordered by their stream (everything but the host).
  virtual bool streamOrdered() const { return false; }
  /// Whether the host cannot read or write `ptr` directly, so a collective must stage it.
  virtual bool needsStaging(const void* ptr) const {
    (void)ptr;
    return false;
  }
  /// The device index a communicator created by this thread belongs to (the current context's).
  virtual int currentDevice() const { return 0; }
  /// Copies after the stream's earlier work and returns once the bytes arrived, as
  /// cudaMemcpyAsync followed by cudaStreamSynchronize. `dst`/`src` may be host or device memory.
  virtual Status copy(int dev, void* dst, const void* src, size_t bytes, cudaStream_t stream) const;
  /// copy() without the wait: enqueued on `stream` after its earlier work, as cudaMemcpyAsync.
  virtual Status copyAsync(int dev, void* dst, const void* src, size_t bytes, cudaStream_t stream) const;
  /// Whether elementwise() runs on device memory (the cuda backend needs nvcc at build time).
  virtual bool hasKernels() const { return false; }
  /// Enqueues `call` on `stream` and returns, as a kernel launch does (the host backend runs it
  /// first). dst may alias a or b exactly. On the device, buffers are device memory.
  virtual Status elementwise(int dev, const EwCall& call, cudaStream_t stream) const;
  /// The handle another process opens to reach the allocation holding `ptr` (at ptr's offset).
  /// The allocation must outlive every importer's use; the host backend has no device memory.
  virtual Result<IpcHandle> exportMemory(const void* ptr) const;
  /// Maps a peer's exported allocation into this process; the pointer is the exported one's
  /// counterpart, usable as this process's device memory until closeImported.
  virtual Result<void*> importMemory(const IpcHandle& handle) const;
  virtual Status closeImported(void* ptr) const;
  /// Lets kernels and copies running on device `dev` read and write memory allocated on
  /// `peerDev` by this process (CUDA peer access, over NVLink or PCIe), for ranks of one process
  /// on different GPUs. Ok when already enabled or dev == peerDev; an error saying why not when
  /// the two devices cannot reach each other.
  virtual Status enablePeerAccess(int dev, int peerDev) const;
  /// Host memory the backend copies to and from fastest (pinned on CUDA), for staging.
  virtual Result<void*> allocateStaging(size_t bytes) const;
  virtual Status releaseStaging(void* ptr) const;

  // What the proxy thread of stream-ordered backends needs (core/device_proxy.h); the host
  // backend, whose calls finish before they return, has none of it.
  /// A point in `stream`'s work (an event). markPassed asks, without blocking, whether the stream
  /// has got past it (the proxy polls, so an abort is never stuck behind a stream that hangs);
  /// releaseMark frees it, passed or not.
  virtual Result<void*> mark(int dev, cudaStream_t stream) const;
  virtual Result<bool> markPassed(int dev, void* marker) const;
  virtual void releaseMark(int dev, void* marker) const;
  /// A 32-bit host word the device can watch, for streamWaitCounter. Counters are never freed:
  /// a stream may still be watching one after its communicator is gone, so they go back to a
  /// pool and keep counting from where they were (a new owner's values only grow).
  virtual Result<uint32_t*> takeCounter(int dev) const;
  virtual void returnCounter(uint32_t* counter) const;
  /// Makes the work enqueued on `stream` after this point wait until `*counter` reaches `value`
  /// (compared as a wrapping sequence). False when the device cannot (no stream memory
  /// operations): the caller then waits on the host instead.
  virtual bool streamWaitCounter(int dev, cudaStream_t stream, const uint32_t* counter, uint32_t value) const;
  /// A stream of the library's own, for the copies the proxy makes while user streams wait.
  virtual Result<cudaStream_t> createStream(int dev) const;
  virtual Status destroyStream(int dev, cudaStream_t stream) const;
};

/// The backend chosen by ATOLL_DEVICE (auto: CUDA if a driver and a GPU are present, else host).
Result<const Device*> select();
const Device& host();

}  // namespace atl::device
