#include "device/emu_device.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/debug.h"
#include "kernels/cuda/elementwise_host.h"
#include "kernels/host/reduce.h"

namespace atl::device {
namespace {

/// One allocation: `size` bytes reserved without access at the device address, held at `bytes`,
/// a shared mapping of the memfd `fd` so that another process can map it too (IPC). An imported
/// region is a peer's allocation mapped here; it has no fd of its own.
struct Region {
  size_t size = 0;
  std::byte* bytes = nullptr;
  int fd = -1;
  bool imported = false;
  uint64_t serial = 0;  // own allocations: which one, so a handle names it and not just its fd number
};

/// Makes an allocation's identity unique across processes and pid reuse (IpcHandle::cuda's bytes,
/// which importers compare to tell a new allocation from an old one at a reused fd).
uint64_t processNonce() {
  static const uint64_t nonce = [] {
    uint64_t v = 0;
    const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (::read(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) v = 0;
      ::close(fd);
    }
    return v ^ static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
           (static_cast<uint64_t>(::getpid()) << 40);
  }();
  return nonce;
}

class Memory {
 public:
  Result<void*> allocate(size_t bytes) {
    const size_t size = (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096;
    const int fd = ::memfd_create("atoll-emu-device", MFD_CLOEXEC);
    if (fd < 0) return ATOLL_ERROR(ncclSystemError, "emu: memfd_create failed: %s", std::strerror(errno));
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      ::close(fd);
      return ATOLL_ERROR(ncclSystemError, "emu: cannot allocate %zu bytes of device memory", bytes);
    }
    Result<void*> addr = map(fd, size, false);
    if (!addr.ok()) ::close(fd);
    return addr;
  }

  /// Maps `size` bytes of `fd` as a region: device addresses without access, and the view.
  Result<void*> map(int fd, size_t size, bool imported) {
    void* addr = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (addr == MAP_FAILED) return ATOLL_ERROR(ncclSystemError, "emu: cannot reserve %zu bytes of device addresses", size);
    void* view = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (view == MAP_FAILED) {
      munmap(addr, size);
      return ATOLL_ERROR(ncclSystemError, "emu: cannot map %zu bytes of device memory: %s", size, std::strerror(errno));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    regions_[reinterpret_cast<uintptr_t>(addr)] =
        Region{size, static_cast<std::byte*>(view), imported ? -1 : fd, imported, imported ? 0 : ++serials_};
    return addr;
  }

  /// Unmaps the region starting at `ptr`; `imported` says which kind the caller means to free.
  Status release(void* ptr, bool imported) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = regions_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == regions_.end() || it->second.imported != imported) {
      return imported ? ATOLL_ERROR(ncclInvalidArgument, "emu: %p is not memory imported with importMemory", ptr)
                      : ATOLL_ERROR(ncclInvalidArgument, "emu: %p is not device memory from ncclMemAlloc", ptr);
    }
    munmap(ptr, it->second.size);
    munmap(it->second.bytes, it->second.size);
    if (it->second.fd >= 0) ::close(it->second.fd);
    regions_.erase(it);
    return Status::Ok();
  }

  /// The region holding `ptr`, if any.
  bool find(const void* ptr, uintptr_t* base, Region* region) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = regions_.upper_bound(p);
    if (it == regions_.begin()) return false;
    --it;
    if (p >= it->first + it->second.size) return false;
    *base = it->first;
    *region = it->second;
    return true;
  }

 private:
  std::mutex mutex_;
  std::map<uintptr_t, Region> regions_;
  uint64_t serials_ = 0;
};

Memory& memory() {
  static Memory* m = new Memory();  // outlives every stream thread that may still translate
  return *m;
}

/// A stream: a thread running its queue in order.
class Stream {
 public:
  Stream() : thread_([this] { run(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void enqueue(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(work));
    }
    cv_.notify_all();
  }

  /// Runs `work` after everything queued before it and returns when it has run.
  void runAndWait(std::function<void()> work) {
    bool done = false;
    enqueue([&] {
      work();
      std::lock_guard<std::mutex> lock(mutex_);
      done = true;
      doneCv_.notify_all();
    });
    std::unique_lock<std::mutex> lock(mutex_);
    doneCv_.wait(lock, [&] { return done; });
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      work();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_, doneCv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest exists
};

class Streams {
 public:
  Result<Stream*> get(cudaStream_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (handle == nullptr) {
      if (!default_) default_ = std::make_unique<Stream>();
      return default_.get();
    }
    auto* s = reinterpret_cast<Stream*>(handle);
    if (live_.count(s) == 0)
      return ATOLL_ERROR(ncclInvalidArgument, "emu: stream %p was not made by the emulated device (or was destroyed)",
                         static_cast<void*>(handle));
    return s;
  }
  cudaStream_t create() {
    auto* s = new Stream();
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(s);
    return reinterpret_cast<cudaStream_t>(s);
  }
  Status destroy(cudaStream_t handle) {
    auto* s = reinterpret_cast<Stream*>(handle);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (live_.erase(s) == 0)
        return ATOLL_ERROR(ncclInvalidArgument, "emu: stream %p is not a live stream", static_cast<void*>(handle));
    }
    delete s;  // runs what is queued first, as cudaStreamDestroy lets it
    return Status::Ok();
  }

 private:
  std::mutex mutex_;
  std::set<Stream*> live_;
  std::unique_ptr<Stream> default_;
};

Streams& streams() {
  static Streams s;
  return s;
}

/// The bytes behind [ptr, ptr + bytes): the emulator's view for device memory, `ptr` itself for
/// host memory; nullptr when the range starts in device memory and runs past its allocation.
std::byte* resolve(const void* ptr, size_t bytes) {
  uintptr_t base = 0;
  Region r;
  if (!memory().find(ptr, &base, &r)) return static_cast<std::byte*>(const_cast<void*>(ptr));
  const size_t off = reinterpret_cast<uintptr_t>(ptr) - base;
  if (bytes > r.size - off) return nullptr;
  return r.bytes + off;
}

/// Counters handed out and returned (Device::takeCounter: never freed, since a stream may still
/// be watching one).
class CounterPool {
 public:
  uint32_t* take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      uint32_t* c = free_.back();
      free_.pop_back();
      return c;
    }
    all_.push_back(std::make_unique<uint32_t>(0));
    return all_.back().get();
  }
  void give(uint32_t* c) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(c);
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<uint32_t>> all_;
  std::vector<uint32_t*> free_;
};

CounterPool& counters() {
  static CounterPool* p = new CounterPool();  // stream threads may read counters during exit
  return *p;
}

/// A point in a stream's work, shared by the stream's item that passes it and the proxy that
/// asks about it.
struct Mark {
  std::atomic<bool> passed{false};  // first: markPassed reads it through the handle
  std::atomic<int> owners{2};
};

/// Polls with a short sleep: these waits last as long as a collective, and a spinning stream
/// thread would take a core from the ranks it waits for.
template <class Done>
void pollUntil(Done done) {
  while (!done()) std::this_thread::sleep_for(std::chrono::microseconds(20));
}

/// The emulated grid of an elementwise launch: at most kEmuBlocks blocks of kEmuBlockThreads.
constexpr uint32_t kEmuBlockThreads = 32;
constexpr uint32_t kEmuBlocks = 3;

class EmuDevice final : public Device {
 public:
  Kind kind() const override { return Kind::Emu; }
  const char* name() const override { return "emu"; }
  Result<void*> allocate(size_t bytes) const override {
    if (bytes > (SIZE_MAX >> 1)) return ATOLL_ERROR(ncclSystemError, "emu: allocation of %zu bytes failed", bytes);
    return memory().allocate(bytes);
  }
  Status release(void* ptr) const override { return memory().release(ptr, false); }
  Result<IpcHandle> exportMemory(const void* ptr) const override {
    uintptr_t base = 0;
    Region r;
    if (!memory().find(ptr, &base, &r) || r.imported)
      return ATOLL_ERROR(ncclInvalidArgument, "emu: %p is not device memory allocated by this process", ptr);
    IpcHandle h;
    h.backend = static_cast<uint8_t>(Kind::Emu);
    h.pid = static_cast<int32_t>(::getpid());
    h.fd = r.fd;
    h.size = r.size;
    h.offset = reinterpret_cast<uintptr_t>(ptr) - base;
    const uint64_t id[2] = {processNonce(), r.serial};
    std::memcpy(h.cuda, id, sizeof id);
    return h;
  }
  Result<void*> importMemory(const IpcHandle& h) const override {
    ATOLL_CHECK(validate(h, *this));
    // The exporter's memfd, through procfs: the same pages, no copy.
    const std::string path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0)
      return ATOLL_ERROR(ncclRemoteError, "emu: cannot open the device memory of process %d (%s: %s); has it exited?",
                         h.pid, path.c_str(), std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < h.size) {
      ::close(fd);
      return ATOLL_ERROR(ncclRemoteError, "emu: %s is not the %llu-byte allocation the handle describes", path.c_str(),
                         static_cast<unsigned long long>(h.size));
    }
    Result<void*> addr = memory().map(fd, h.size, true);
    ::close(fd);  // the mapping keeps the pages
    if (!addr.ok()) return addr;
    return static_cast<void*>(static_cast<std::byte*>(*addr) + h.offset);
  }
  Status closeImported(void* ptr) const override {
    uintptr_t base = 0;
    Region r;
    if (!memory().find(ptr, &base, &r) || !r.imported)
      return ATOLL_ERROR(ncclInvalidArgument, "emu: %p is not memory imported with importMemory", ptr);
    return memory().release(reinterpret_cast<void*>(base), true);
  }
  // The emulated devices share one memory: every device reaches every other's.
  Status enablePeerAccess(int, int) const override { return Status::Ok(); }
  Status synchronize(int, cudaStream_t stream) const override {
    ATOLL_ASSIGN_OR_RETURN(Stream * s, streams().get(stream));
    s->runAndWait([] {});
    return Status::Ok();
  }
  bool streamOrdered() const override { return true; }
  bool needsStaging(const void* ptr) const override {
    uintptr_t base = 0;
    Region r;
    return memory().find(ptr, &base, &r);
  }
  Status copy(int, void* dst, const void* src, size_t bytes, cudaStream_t stream) const override {
    return copyOn(dst, src, bytes, stream, true);
  }
  Status copyAsync(int, void* dst, const void* src, size_t bytes, cudaStream_t stream) const override {
    return copyOn(dst, src, bytes, stream, false);
  }
  bool hasKernels() const override { return true; }
  Status elementwise(int, const EwCall& call, cudaStream_t stream) const override {
    using namespace kernels::cuda;
    ATOLL_CHECK(validate(call));
    if (call.count == 0) return Status::Ok();
    const size_t elem = kernels::dtypeSize(call.dt);
    const bool binary = isBinary(call.op);
    // Split on the device addresses, as the GPU kernel is launched; the views keep every
    // address's offset within its page, so the packs stay aligned.
    EwArgs x = launchArgs(call);
    const size_t bytes = call.count * elem;
    x.dst = resolve(call.dst, bytes);
    x.a = resolve(call.a, bytes);
    if (binary) x.b = resolve(call.b, bytes);
    if (x.dst == nullptr || x.a == nullptr || (binary && x.b == nullptr))
      return ATOLL_ERROR(ncclInvalidArgument, "emu: %s of %zu elements (%p, %p, %p) runs past a device allocation",
                         opName(call.op), call.count, call.dst, call.a, call.b);
    // A small grid of the kernel's shape: several blocks, so the grid stride is exercised.
    const uint64_t threads = uint64_t{blocksFor(x, elem, kEmuBlockThreads, kEmuBlocks)} * kEmuBlockThreads;
    ATOLL_ASSIGN_OR_RETURN(Stream * s, streams().get(stream));
    const EwOp op = call.op;
    const ncclDataType_t dt = call.dt;
    s->enqueue([x, op, dt, threads] { (void)runGridOnHost(op, dt, x, threads); });
    return Status::Ok();
  }
  Result<void*> mark(int, cudaStream_t stream) const override {
    ATOLL_ASSIGN_OR_RETURN(Stream * s, streams().get(stream));
    auto* m = new Mark();
    s->enqueue([m] {
      m->passed.store(true, std::memory_order_release);
      if (m->owners.fetch_sub(1, std::memory_order_acq_rel) == 1) delete m;
    });
    return static_cast<void*>(m);
  }
  Result<bool> markPassed(int, void* marker) const override {
    return static_cast<Mark*>(marker)->passed.load(std::memory_order_acquire);
  }
  void releaseMark(int, void* marker) const override {
    // The stream may not have reached it yet: the stream's item frees it, or this does, whichever
    // comes second.
    auto* m = static_cast<Mark*>(marker);
    if (m->owners.fetch_sub(1, std::memory_order_acq_rel) == 1) delete m;
  }
  Result<uint32_t*> takeCounter(int) const override { return counters().take(); }
  void returnCounter(uint32_t* counter) const override { counters().give(counter); }
  bool streamWaitCounter(int, cudaStream_t stream, const uint32_t* counter, uint32_t value) const override {
    Result<Stream*> s = streams().get(stream);
    if (!s.ok()) return false;
    (*s)->enqueue([counter, value] {
      pollUntil([&] { return static_cast<int32_t>(__atomic_load_n(counter, __ATOMIC_ACQUIRE) - value) >= 0; });
    });
    return true;
  }
  Result<cudaStream_t> createStream(int) const override { return emuStreamCreate(); }
  Status destroyStream(int, cudaStream_t stream) const override { return emuStreamDestroy(stream); }

 private:
  /// A copy on `stream`; `wait`: return once it ran, as copy() does.
  static Status copyOn(void* dst, const void* src, size_t bytes, cudaStream_t stream, bool wait) {
    std::byte* to = resolve(dst, bytes);
    const std::byte* from = resolve(src, bytes);
    if (to == nullptr || from == nullptr)
      return ATOLL_ERROR(ncclInvalidArgument, "emu: copy of %zu bytes from %p to %p runs past a device allocation", bytes,
                         src, dst);
    ATOLL_ASSIGN_OR_RETURN(Stream * s, streams().get(stream));
    auto work = [=] { std::memcpy(to, from, bytes); };
    if (wait) {
      s->runAndWait(work);
    } else {
      s->enqueue(work);
    }
    return Status::Ok();
  }
};

}  // namespace

const Device& emu() {
  static const EmuDevice device;
  return device;
}

Result<cudaStream_t> emuStreamCreate() { return streams().create(); }

Status emuStreamDestroy(cudaStream_t stream) { return streams().destroy(stream); }

Status emuEnqueue(cudaStream_t stream, std::function<void()> work) {
  ATOLL_ASSIGN_OR_RETURN(Stream * s, streams().get(stream));
  s->enqueue(std::move(work));
  return Status::Ok();
}

void* emuHostView(const void* ptr, size_t bytes) {
  uintptr_t base = 0;
  Region r;
  if (!memory().find(ptr, &base, &r)) return nullptr;
  return resolve(ptr, bytes);
}

}  // namespace atl::device
