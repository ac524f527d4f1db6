// The communicator, split into the parts each layer owns (STYLE.md: no 274-line struct).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "core/call_check_inbox.h"
#include "core/call_report.h"
#include "core/comm_topology.h"
#include "core/device_proxy.h"
#include "core/device_staging.h"
#include "core/plan_cache.h"
#include "core/redop.h"
#include "core/repeat_call.h"
#include "core/registrations.h"
#include "core/rma.h"
#include "device/device.h"
#include "engine/connections.h"
#include "nccl.h"
#include "transports/transport.h"

namespace atl {

enum class CommState : int { Initializing, Ready, Failed };
/// ncclCommRevoke: Revoking while in-flight calls are being stopped (ncclCommGetAsyncError says
/// ncclInProgress), then Revoked: only destroy, abort, split and shrink remain.
enum class RevokeState : int { Live, Revoking, Revoked };

/// Links to peers and the transports that made them.
struct CommLinks {
  std::unique_ptr<transport::Transport> shm;
  std::unique_ptr<transport::Transport> socket;
  std::unique_ptr<transport::Transport> net;  // a plugin net (net/net_transport.h); replaces socket when set
  const net::DeviceProps* netDevice = nullptr;  // its device (the plugin outlives every communicator)
  std::shared_ptr<transport::Context> contextPtr = std::make_shared<transport::Context>();
  transport::Context& context = *contextPtr;  // shared with the transports (transport.h: attach)
  engine::ConnTable table;
  int nchannels = 1;
  /// What carries the links that are not shared memory.
  transport::Transport& remote() const { return net ? *net : *socket; }
};

}  // namespace atl

struct ncclComm {
  int rank = 0;
  int nranks = 0;
  int cudaDev = 0;
  ncclConfig_t config{};
  std::string name;
  std::atomic<atl::CommState> state{atl::CommState::Initializing};
  std::atomic<ncclResult_t> asyncError{ncclSuccess};
  atl::AbortFlag abortFlag{false};
  std::atomic<int> activeCalls{0};  // API calls currently inside the engine (abort waits for them)
  std::atomic<atl::RevokeState> revoke{atl::RevokeState::Live};
  uint32_t splitSeq = 0;
  uint64_t checkSeq = 0;    // collective launches fingerprinted under ATOLL_CHECK (core/call_check.h)
  atl::CheckInbox checkInbox;  // ATOLL_CHECK messages ahead of their launch
  std::thread initThread;  // non-blocking init (config.blocking = 0) runs here

  std::unique_ptr<atl::bootstrap::Bootstrap> bootstrap;
  atl::CommLinks links;
  atl::RedOpTable redops;
  atl::RegistrationTable registrations;  // ncclCommRegister; freed with the communicator
  atl::RegistrationTable windows;        // ncclCommWindowRegister; likewise
  std::atomic<bool> suspended{false};    // ncclCommSuspend .. ncclCommResume
  std::atomic<bool> suspendedMem{false};  // suspended with NCCL_SUSPEND_MEM: cached plans released
  std::atomic<bool> growIdPending{false};  // ncclCommGetUniqueId handed out an id no grow has used yet
  atl::CommTopology topology;
  atl::PlanCache plans;  // used only by the thread issuing calls on this communicator
  std::optional<atl::CallReport> lastCall;  // likewise (core/call_report.h)
  atl::RepeatCall repeat;                   // likewise: the last lone call's plan
  const atl::device::Device* device = nullptr;
  std::unique_ptr<atl::DeviceStaging> staging;  // calls on device memory (made by the first one)
  std::atomic<uint64_t> deviceIntraNodeCalls{0};  // collectives core/device_intranode.h ran
  uint64_t windowSeq = 0;  // windows registered so far (collective, so equal on every rank)
  // Runs the calls of a stream-ordered device (core/device_proxy.h). Destroyed before everything
  // above it, so its thread has stopped before anything it touches goes.
  std::unique_ptr<atl::DeviceProxy> proxy;
  // One-sided engine, made with the first window. Last member: destroyed first, so its progress
  // thread stops before anything it could touch goes.
  std::unique_ptr<atl::rma::Engine> rma;
};

namespace atl {

/// Live communicators: API calls validate handles against this so a destroyed or garbage handle
/// yields ncclInvalidArgument instead of a crash.
void registerComm(ncclComm* comm);
void unregisterComm(ncclComm* comm);
bool isLiveComm(const ncclComm* comm);

/// Sets the abort flag and waits (bounded, 10 s) until no call is inside the engine: blocked calls
/// see the flag within one poll and return their error.
Status abortActiveCalls(ncclComm* comm, const char* caller);

/// Checks that `comm` is a live, initialised communicator.
Status checkComm(const ncclComm* comm, const char* caller);
/// checkComm, and not revoked: for calls that move data or finalize.
Status checkCommUsable(const ncclComm* comm, const char* caller);

}  // namespace atl
