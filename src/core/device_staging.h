// Collectives on memory the host cannot address (GPU buffers): the host-driven CUDA path of
// DESIGN.md in its first form. Each call's device buffers are copied to host staging memory
// before its plan starts, after the user stream's earlier work, and its results are copied back
// once the plan ends, so the schedules, the engine and every transport run unchanged. A call
// returns when its results are in the user's buffers: later work on the stream sees them.
#pragma once

#include <cstddef>
#include <deque>
#include <span>
#include <vector>

#include "base/status.h"
#include "core/group.h"
#include "device/device.h"
#include "engine/plan.h"

namespace atl {

/// Per communicator: the staging memory (kept across calls) and this batch's copies.
class DeviceStaging {
 public:
  DeviceStaging(const device::Device& device, int cudaDev) : device_(device), cudaDev_(cudaDev) {}
  ~DeviceStaging();
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;

  /// Rewrites the ops of `ops` on `comm` to address staging memory where they named device
  /// memory, and sets each one's `staging`: its copies and stream waits (the point-to-point ops
  /// of the batch share one, as they share a plan). The previous batch's state is dropped.
  Status stage(const ncclComm* comm, std::span<OpDesc> ops);
  /// The staging shared by this batch's point-to-point plan, or null when it has none.
  engine::CallStaging* p2p() { return p2p_; }
  size_t capacity() const { return capacity_; }

 private:
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
    cudaStream_t stream;
  };
  class Calls final : public engine::CallStaging {
   public:
    Calls(const device::Device& device, int cudaDev) : device_(device), cudaDev_(cudaDev) {}
    Status in() override;
    Status out() override;
    std::vector<cudaStream_t> streams;  // waited for before any input is read
    std::vector<Copy> inputs, outputs;

   private:
    const device::Device& device_;
    int cudaDev_;
  };

  const device::Device& device_;
  int cudaDev_;
  std::byte* arena_ = nullptr;
  size_t capacity_ = 0;
  std::deque<Calls> calls_;  // stable addresses: plans point at them
  Calls* p2p_ = nullptr;
};

/// Whether a call on `comm` goes through DeviceStaging (its device orders calls by streams).
bool stagesCalls(const ncclComm* comm);

}  // namespace atl
