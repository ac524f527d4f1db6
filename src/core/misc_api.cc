// Query, error-reporting, memory and reduction-operator entry points.
#include <cstring>

#include "core/comm.h"
#include "core/device_proxy.h"
#include "core/nccl_api.h"
#include "kernels/host/reduce.h"

using namespace atl;

NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  return apiGuard(__func__, [&]() -> Status {
    if (version == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE;
    return Status::Ok();
  });
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (rawEnum(result)) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the Atoll developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "operation timed out";
    default: return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t) {
  // Errors are recorded per thread: the calling thread is the one that saw the failure.
  return lastErrorMessage().c_str();
}

NCCL_API(void, ncclResetDebugInit, void) { log::reset(); }
// NVIDIA 2.30 exports it (the deprecated public name forwards to it); same meaning here.
NCCL_API(void, ncclResetDebugInitInternal, void) { log::reset(); }

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  return apiGuard(__func__, [&]() -> Status {
    if (asyncError == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
    if (comm == nullptr || !isLiveComm(comm))
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommGetAsyncError: not a live communicator");
    ncclResult_t e = comm->asyncError.load();
    if (e == ncclSuccess && comm->state.load() == CommState::Initializing) e = ncclInProgress;
    if (comm->revoke.load() == RevokeState::Revoking) e = ncclInProgress;
    *asyncError = e;
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommCount"));
    if (count == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommCount: count is NULL");
    *count = comm->nranks;
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommCuDevice"));
    if (device == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
    *device = comm->cudaDev;
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommUserRank"));
    if (rank == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
    *rank = comm->rank;
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  return apiGuard(__func__, [&]() -> Status {
    if (ptr == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
    ATOLL_ASSIGN_OR_RETURN(const device::Device* dev, device::select());
    ATOLL_ASSIGN_OR_RETURN(*ptr, dev->allocate(size));
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_ASSIGN_OR_RETURN(const device::Device* dev, device::select());
    return dev->release(ptr);
  });
}

// Host buffers need no pinning for the shm/socket transports, so registration only records the
// buffer; it exists so that code written for NCCL's zero-copy paths runs unchanged. The
// communicator owns the record (core/registrations.h), so destroy and abort release it.
NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommRegister"));
    ATOLL_CHECK(drainDeviceCalls(comm));
    if (handle == nullptr || (buff == nullptr && size > 0))
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommRegister: NULL handle or buffer");
    *handle = comm->registrations.add(buff, size);
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommDeregister"));
    ATOLL_CHECK(drainDeviceCalls(comm));
    if (!comm->registrations.remove(handle))
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommDeregister: %p is not a registration of this communicator", handle);
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclRedOpCreatePreMulSum"));
    if (op == nullptr || scalar == nullptr)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: op or scalar is NULL");
    const int dt = rawEnum(datatype), where = rawEnum(residence);
    if (dt < 0 || dt >= ncclNumTypes)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid datatype %d", dt);
    if (where != ncclScalarDevice && where != ncclScalarHostImmediate)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid residence %d", where);
    PreMulSum pm;
    pm.dtype = datatype;
    pm.residence = residence;
    pm.scalarPtr = scalar;
    // A device-resident scalar is read when each call runs (staged then, core/device_staging.h);
    // only a host one may be read now.
    if (residence == ncclScalarHostImmediate || comm->device == nullptr || !comm->device->needsStaging(scalar))
      std::memcpy(pm.scalar, scalar, kernels::dtypeSize(datatype));
    *op = comm->redops.create(pm);
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclRedOpDestroy"));
    const int raw = rawEnum(op);
    if (raw < ncclNumOps)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclRedOpDestroy: %d is not a user-created operator", raw);
    if (!comm->redops.destroy(op))
      return ATOLL_ERROR(ncclInvalidArgument, "ncclRedOpDestroy: op %d was not created on this communicator", raw);
    return Status::Ok();
  });
}
