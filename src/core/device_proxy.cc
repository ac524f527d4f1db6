#include "core/device_proxy.h"

#include <algorithm>
#include <chrono>

#include "base/debug.h"
#include "core/comm.h"
#include "core/device_intranode.h"
#include "core/device_staging.h"

namespace atl {

Status DeviceProxy::start() {
  const device::Device& dev = *comm_->device;
  ATOLL_ASSIGN_OR_RETURN(counter_, dev.takeCounter(comm_->cudaDev));
  // The counter keeps counting from its last owner's value, so waits on it only ever grow.
  issued_ = finished_ = __atomic_load_n(counter_, __ATOMIC_ACQUIRE);
  Result<cudaStream_t> s = dev.createStream(comm_->cudaDev);
  if (!s.ok()) {
    dev.returnCounter(counter_);
    counter_ = nullptr;
    return s.status();
  }
  copyStream_ = *s;
  comm_->staging = std::make_unique<DeviceStaging>(dev, comm_->cudaDev, copyStream_);
  thread_ = std::thread([this] { run(); });
  return Status::Ok();
}

DeviceProxy::~DeviceProxy() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  comm_->staging.reset();
  (void)comm_->device->destroyStream(comm_->cudaDev, copyStream_);
  comm_->device->returnCounter(counter_);
}

Status DeviceProxy::submit(std::span<const OpDesc> ops, uint32_t* ticket) {
  *ticket = 0;
  if (!thread_.joinable()) ATOLL_CHECK(start());
  const ncclResult_t earlier = comm_->asyncError.load();
  if (earlier != ncclSuccess)
    return ATOLL_ERROR(earlier, "rank %d: an earlier call on this communicator failed (%s); abort or destroy it",
                       comm_->rank, ncclGetErrorString(earlier));
  const device::Device& dev = *comm_->device;
  Job job;
  job.ops.assign(ops.begin(), ops.end());
  job.seq = issued_ + 1;
  std::vector<cudaStream_t> streams;
  bool device = false;
  for (const OpDesc& op : ops) {
    if (std::find(streams.begin(), streams.end(), op.stream) == streams.end()) streams.push_back(op.stream);
    device = device || touchesDeviceMemory(comm_, op);
  }
  for (cudaStream_t s : streams) {
    Result<void*> m = dev.mark(comm_->cudaDev, s);
    if (!m.ok()) {
      for (void* made : job.marks) dev.releaseMark(comm_->cudaDev, made);
      return m.status();
    }
    job.marks.push_back(*m);
  }
  // A default stream (NULL, legacy or per-thread) is shared by every rank this process or thread
  // drives on the device: a rank's wait on it would hold up the next rank's mark behind it, and
  // ranks waiting for each other's marks never finish. Calls on those are complete on return.
  bool hostWait = !device;
  for (cudaStream_t s : streams)
    if (reinterpret_cast<uintptr_t>(s) <= 2) hostWait = true;
  // From here the group is committed: every stream is released when its sequence number is stored.
  for (size_t i = 0; i < streams.size() && !hostWait; ++i)
    if (!dev.streamWaitCounter(comm_->cudaDev, streams[i], counter_, job.seq)) hostWait = true;
  if (hostWait) *ticket = job.seq;
  job.waited = hostWait;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    issued_ = job.seq;
    if (hostWait) results_.emplace_back(job.seq, Status::Ok());
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
  return Status::Ok();
}

Status DeviceProxy::wait(uint32_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  doneCv_.wait(lock, [&] { return static_cast<int32_t>(finished_ - ticket) >= 0; });
  auto it = std::find_if(results_.begin(), results_.end(), [&](const auto& r) { return r.first == ticket; });
  if (it == results_.end()) return Status::Ok();
  Status s = it->second;
  results_.erase(it);
  return s;
}

Status DeviceProxy::drain() {
  if (!thread_.joinable()) return Status::Ok();
  std::unique_lock<std::mutex> lock(mutex_);
  doneCv_.wait(lock, [&] { return jobs_.empty() && finished_ == issued_; });
  Status s = firstError_;
  firstError_ = Status::Ok();
  return s;
}

Status DeviceProxy::runJob(Job& job) {
  const device::Device& dev = *comm_->device;
  Status result;
  for (void* m : job.marks) {
    // Yield first (the stream is usually there already or nearly), then sleep: a stream held up by
    // a long kernel must not cost a core.
    for (int polls = 0; result.ok(); ++polls) {
      Result<bool> passed = dev.markPassed(comm_->cudaDev, m);
      if (!passed.ok()) {
        result = passed.status();
      } else if (*passed) {
        break;
      } else if (comm_->abortFlag.load(std::memory_order_acquire)) {
        result = ATOLL_ERROR(ncclInvalidUsage, "rank %d: aborted while a queued call waited for its stream", comm_->rank);
      } else if (polls < 1000) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }
  for (void* m : job.marks) dev.releaseMark(comm_->cudaDev, m);
  bool direct = false;
  if (result.ok()) {
    Result<bool> ran = runDeviceIntraNode(comm_, job.ops, copyStream_);
    if (ran.ok()) direct = *ran;
    else result = ran.status();
  }
  if (result.ok() && !direct) result = comm_->staging->stage(comm_, job.ops);  // now the ops address host memory
  if (result.ok() && !direct) result = runBatch(job.ops);
  return result;
}

void DeviceProxy::run() {
  log::setThreadRank(comm_->rank);
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left to run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Status s = runJob(job);
    const bool callersMistake = s.code() == ncclInvalidArgument || s.code() == ncclInvalidUsage;
    if (!s.ok() && !(job.waited && callersMistake)) {
      // Nobody else will hear of it: it becomes the communicator's asynchronous error, as a
      // failed collective does on the host path (runBatch records those itself).
      ncclResult_t none = ncclSuccess;
      comm_->asyncError.compare_exchange_strong(none, s.code());
      ATOLL_WARN("rank %d: queued call failed: %s", comm_->rank, lastErrorMessage().c_str());
    }
    // Release the streams, failed or not: a stream waiting forever would hang the user's GPU.
    __atomic_store_n(counter_, job.seq, __ATOMIC_RELEASE);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = job.seq;
      for (auto& r : results_)
        if (r.first == job.seq) r.second = s;
      if (!s.ok() && !job.waited && firstError_.ok()) firstError_ = s;  // a waited group's caller has it
    }
    doneCv_.notify_all();
  }
}

Status drainDeviceCalls(ncclComm* comm) {
  if (comm == nullptr || !comm->proxy) return Status::Ok();
  return comm->proxy->drain();
}

}  // namespace atl
