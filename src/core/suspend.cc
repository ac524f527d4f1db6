// ncclCommSuspend / ncclCommResume / ncclCommMemStats on the host backend.
//
// What a communicator can give back while suspended is what it alone owns: its cached plans, with
// their scratch and staging buffers (they grow with the message sizes used). Link buffers are shared
// with the peer that holds the other end, so they stay until destroy, and MemStats reports them as
// persistent. Suspend is local, as in NCCL: a peer keeps running until it needs this rank.
#include "core/comm.h"
#include "core/device_proxy.h"
#include "core/nccl_api.h"
#include "core/rma.h"

using namespace atl;

namespace {

uint64_t linkBytes(const ncclComm* comm) {
  uint64_t bytes = 0;
  for (const engine::LinkKey& k : comm->links.table.keys()) {
    if (const transport::Connection* c = comm->links.table.get(k.channel, k.peer)) bytes += c->bufferBytes();
  }
  if (comm->rma) bytes += comm->rma->bufferBytes();
  return bytes;
}

}  // namespace

NCCL_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommSuspend"));
    ATOLL_CHECK(drainDeviceCalls(comm));
    if ((flags & ~NCCL_SUSPEND_MEM) != 0)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommSuspend: unknown flags 0x%x (only NCCL_SUSPEND_MEM)", flags);
    if (comm->activeCalls.load(std::memory_order_acquire) != 0)
      return ATOLL_ERROR(ncclInvalidUsage, "ncclCommSuspend: a call is still running on this communicator");
    if (comm->suspended.exchange(true, std::memory_order_acq_rel))
      return ATOLL_ERROR(ncclInvalidUsage, "ncclCommSuspend: the communicator is already suspended");
    if ((flags & NCCL_SUSPEND_MEM) != 0) {
      ATOLL_INFO(log::kAlloc, "comm %p rank %d: suspended, releasing %zu cached plan(s) (%zu bytes)", (void*)comm,
                 comm->rank, comm->plans.size(), comm->plans.heldBytes());
      comm->plans.clear();
      comm->suspendedMem.store(true, std::memory_order_release);
    }
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclCommResume, ncclComm_t comm) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommResume"));
    if (!comm->suspended.load(std::memory_order_acquire))
      return ATOLL_ERROR(ncclInvalidUsage, "ncclCommResume: the communicator is not suspended");
    // Released plans are rebuilt by the calls that need them, as after a cache eviction.
    comm->suspendedMem.store(false, std::memory_order_release);
    comm->suspended.store(false, std::memory_order_release);
    return Status::Ok();
  });
}

// Plans belong to the thread issuing calls on the communicator (core/plan_cache.h): ask from it.
NCCL_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommMemStats"));
    if (value == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommMemStats: value is NULL");
    switch (rawEnum(stat)) {
      case ncclStatGpuMemSuspend: *value = comm->plans.heldBytes(); break;
      case ncclStatGpuMemSuspended: *value = comm->suspendedMem.load(std::memory_order_acquire) ? 1 : 0; break;
      case ncclStatGpuMemPersist: *value = linkBytes(comm); break;
      case ncclStatGpuMemTotal: *value = comm->plans.heldBytes() + linkBytes(comm); break;
      default: return ATOLL_ERROR(ncclInvalidArgument, "ncclCommMemStats: unknown statistic %d", rawEnum(stat));
    }
    return Status::Ok();
  });
}
