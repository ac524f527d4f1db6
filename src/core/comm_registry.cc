#include <unistd.h>

#include <mutex>
#include <unordered_set>

#include "core/comm.h"

namespace atl {
namespace {
std::mutex gMutex;
std::unordered_set<const ncclComm*>& live() {
  static auto* set = new std::unordered_set<const ncclComm*>();  // never destroyed: usable during exit
  return *set;
}
}  // namespace

void registerComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  live().insert(comm);
}
void unregisterComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  live().erase(comm);
}
bool isLiveComm(const ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  return live().count(comm) != 0;
}

Status abortActiveCalls(ncclComm* comm, const char* caller) {
  comm->abortFlag.store(true, std::memory_order_release);
  for (int i = 0; i < 10000 && comm->activeCalls.load() > 0; ++i) usleep(1000);
  if (comm->activeCalls.load() > 0)
    return ATOLL_ERROR(ncclInternalError, "%s: a call did not leave the communicator within 10 s", caller);
  return Status::Ok();
}

Status checkCommUsable(const ncclComm* comm, const char* caller) {
  ATOLL_CHECK(checkComm(comm, caller));
  if (comm->suspended.load(std::memory_order_acquire))
    return ATOLL_ERROR(ncclInvalidUsage, "%s: the communicator is suspended (ncclCommSuspend); call ncclCommResume first",
                       caller);
  if (comm->revoke.load(std::memory_order_acquire) != RevokeState::Live)
    return ATOLL_ERROR(ncclInvalidUsage,
                       "%s: the communicator was revoked (ncclCommRevoke); only destroy, abort, split or shrink may "
                       "follow",
                       caller);
  return Status::Ok();
}

Status checkComm(const ncclComm* comm, const char* caller) {
  if (comm == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "%s: comm is NULL", caller);
  if (!isLiveComm(comm))
    return ATOLL_ERROR(ncclInvalidArgument, "%s: %p is not a live communicator (destroyed or never created)", caller,
                       static_cast<const void*>(comm));
  switch (comm->state.load(std::memory_order_acquire)) {
    case CommState::Ready: return Status::Ok();
    case CommState::Initializing:
      return ATOLL_ERROR(ncclInvalidUsage, "%s: communicator initialisation has not completed", caller);
    case CommState::Failed:
      return ATOLL_ERROR(ncclInvalidUsage, "%s: communicator failed to initialise or was aborted", caller);
  }
  return Status::Ok();
}

}  // namespace atl
