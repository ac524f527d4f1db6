// Windows (ncclCommWindowRegister) and the one-sided operations on them.
//
// On the host backend a window is the user's buffer recorded by its communicator: like a
// registration, it needs no pinning, and the handle is a serial number, so a stale or foreign
// window is rejected rather than dereferenced.
#include "core/comm.h"
#include "core/nccl_api.h"

using namespace atl;

namespace {

constexpr int kKnownWinFlags = NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING;

Status findWindow(ncclComm* comm, ncclWindow_t win, const char* fn, RegistrationTable::Entry* out) {
  if (win == nullptr || !comm->windows.find(win, out))
    return ATOLL_ERROR(ncclInvalidArgument, "%s: %p is not a window of this communicator", fn, static_cast<void*>(win));
  return Status::Ok();
}

// Until one-sided transfers exist on the host transports, these fail loudly instead of moving
// nothing: a caller must never believe data arrived.
Status oneSidedUnsupported(ncclComm* comm, const char* fn) {
  ATOLL_CHECK(checkCommUsable(comm, fn));
  return ATOLL_ERROR(ncclInvalidUsage,
                     "%s: one-sided operations (ncclPutSignal, ncclSignal, ncclWaitSignal) are not available on the "
                     "host backend yet; use ncclSend/ncclRecv",
                     fn);
}

}  // namespace

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
         int winFlags) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkCommUsable(comm, "ncclCommWindowRegister"));
    if (win == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommWindowRegister: win is NULL");
    if (buff == nullptr || size == 0)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommWindowRegister: empty buffer (%p, %zu bytes)", buff, size);
    if ((winFlags & ~kKnownWinFlags) != 0)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommWindowRegister: unknown winFlags 0x%x", winFlags);
    *win = static_cast<ncclWindow_t>(comm->windows.add(buff, size, winFlags));
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommWindowDeregister"));
    if (win == nullptr || !comm->windows.remove(win))
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommWindowDeregister: %p is not a window of this communicator",
                         static_cast<void*>(win));
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclWinGetUserPtr"));
    if (outUserPtr == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclWinGetUserPtr: outUserPtr is NULL");
    RegistrationTable::Entry e;
    ATOLL_CHECK(findWindow(comm, win, "ncclWinGetUserPtr", &e));
    *outUserPtr = const_cast<void*>(e.buff);
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard(__func__, [&]() -> Status {
    (void)localbuff, (void)count, (void)datatype, (void)peer, (void)peerWin, (void)peerWinOffset, (void)sigIdx;
    (void)ctx, (void)flags, (void)stream;
    return oneSidedUnsupported(comm, "ncclPutSignal");
  });
}

NCCL_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard(__func__, [&]() -> Status {
    (void)peer, (void)sigIdx, (void)ctx, (void)flags, (void)stream;
    return oneSidedUnsupported(comm, "ncclSignal");
  });
}

NCCL_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
         cudaStream_t stream) {
  return apiGuard(__func__, [&]() -> Status {
    (void)nDesc, (void)signalDescs, (void)stream;
    return oneSidedUnsupported(comm, "ncclWaitSignal");
  });
}
