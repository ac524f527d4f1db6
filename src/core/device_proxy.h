// Stream semantics for communicators on a stream-ordered device (CUDA, emu), as NCCL has them: a
// call enqueues its work and returns; the work starts after the work its stream held before the
// call, and work enqueued on the stream after the call waits for it.
//
// Each such communicator has a proxy thread that runs its calls, group by group, in issue order:
// - at the call, the user thread marks each stream the group uses (an event) and makes the stream
//   wait for the communicator's completion counter to reach the group's sequence number
//   (cuStreamWaitValue32 on a mapped host word; the emulator polls it);
// - the proxy waits for the marks, runs the group as the host path would (staging device buffers
//   on its own stream, core/device_staging.h), then stores the sequence number, which releases the
//   streams. A failed group stores it too, so no stream waits forever; the error is the
//   communicator's asynchronous error (ncclCommGetAsyncError), and later calls are refused.
// A group that touches no device memory (host buffers on a GPU communicator), that uses a default
// stream (shared by every rank of the process or thread, so one rank's wait would block the next
// rank's start), or whose streams cannot wait on a counter, is complete when the call returns.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "base/status.h"
#include "core/group.h"

namespace atl {

class DeviceProxy {
 public:
  explicit DeviceProxy(ncclComm* comm) : comm_(comm) {}
  /// Runs what is queued, then stops the thread (an aborted communicator's calls fail fast).
  ~DeviceProxy();
  DeviceProxy(const DeviceProxy&) = delete;
  DeviceProxy& operator=(const DeviceProxy&) = delete;

  /// Queues `ops` (this communicator's ops of one group, validated). Sets `*ticket` to the
  /// group's sequence number when the caller must wait for it (wait()), to 0 when not.
  Status submit(std::span<const OpDesc> ops, uint32_t* ticket);
  /// Blocks until group `ticket` has run; returns its result.
  Status wait(uint32_t ticket);
  /// Blocks until every queued group has run; returns the first error among those no caller
  /// waited for, if any (once).
  Status drain();

 private:
  struct Job {
    std::vector<OpDesc> ops;
    std::vector<void*> marks;  // one per distinct stream, waited for before the ops run
    uint32_t seq = 0;
    bool waited = false;  // its caller waits for it and gets its error
  };
  Status start();
  void run();
  Status runJob(Job& job);

  ncclComm* comm_;
  uint32_t* counter_ = nullptr;      // mapped host word the user streams wait on
  cudaStream_t copyStream_ = nullptr;
  uint32_t issued_ = 0;              // sequence of the last submitted group (written under mutex_)
  std::mutex mutex_;
  std::condition_variable cv_, doneCv_;
  std::deque<Job> jobs_;
  uint32_t finished_ = 0;            // sequence of the last group run (under mutex_)
  std::vector<std::pair<uint32_t, Status>> results_;  // of groups a caller waits for
  Status firstError_;
  bool stop_ = false;
  std::thread thread_;
};

/// Waits for the calls queued on `comm`'s proxy, if it has one (before destroy, finalize, split,
/// registration: anything that must not run beside the proxy's use of the communicator).
Status drainDeviceCalls(ncclComm* comm);

}  // namespace atl
