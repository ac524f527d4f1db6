// Collectives on memory the host cannot address (GPU buffers): the host-driven CUDA path of
// DESIGN.md in its first form. Each call's device buffers are copied to host staging memory
// before its plan starts and its results copied back once the plan ends, so the schedules, the
// engine and every transport run unchanged. The copies run on the proxy's own stream
// (core/device_proxy.h), which has already waited for the user streams' earlier work.
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
  /// `copyStream`: where every copy goes (the proxy's stream).
  DeviceStaging(const device::Device& device, int cudaDev, cudaStream_t copyStream)
      : device_(device), cudaDev_(cudaDev), copyStream_(copyStream) {}
  ~DeviceStaging();
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;

  /// Rewrites the ops of `ops` (all on `comm`) to address staging memory where they named device
  /// memory, and sets each one's `staging`: its copies (the point-to-point ops of the batch share
  /// one, as they share a plan). The previous batch's state is dropped.
  Status stage(const ncclComm* comm, std::span<OpDesc> ops);

 private:
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  class Calls final : public engine::CallStaging {
   public:
    Calls(const DeviceStaging& owner) : owner_(owner) {}
    Status in() override;
    Status out() override;
    std::vector<Copy> inputs, outputs;

   private:
    const DeviceStaging& owner_;
  };

  const device::Device& device_;
  int cudaDev_;
  cudaStream_t copyStream_;
  std::byte* arena_ = nullptr;
  size_t capacity_ = 0;
  std::deque<Calls> calls_;  // stable addresses: plans point at them
  Calls* p2p_ = nullptr;
  /// What stage() found each op of the batch needs, so each pointer is asked about once.
  struct Need {
    bool send = false, recv = false;
    const void* scalar = nullptr;  // a PreMulSum scalar in device memory
  };
  std::vector<Need> needs_;
};

/// Whether a call on `comm` goes through DeviceStaging (its device orders calls by streams).
bool stagesCalls(const ncclComm* comm);
/// Whether `op` reads or writes memory the host cannot address (so it needs staging).
bool touchesDeviceMemory(const ncclComm* comm, const OpDesc& op);

}  // namespace atl
