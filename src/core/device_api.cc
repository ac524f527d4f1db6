// The host side of NCCL 2.30's device API (nccl_device/core.h and friends). Those declarations need
// the CUDA toolkit, so the types this file needs are restated here with NVIDIA's layouts (the ABI
// test compares them against NVIDIA's headers where they are installed).
//
// What has a meaning without a GPU is answered: communicator properties and the team arithmetic
// (world, LSA = the ranks of one host, rail). What builds device-side state (device communicators,
// symmetric and multimem pointers, GIN and LSA barrier requirements) fails with ncclInvalidUsage
// and says so, until the CUDA backend serves it.
#include <cstddef>

#include "core/comm.h"
#include "core/nccl_api.h"

using namespace atl;

namespace {

// nccl_device/core.h
struct Team {
  int nRanks, rank, stride;
};
enum GinType : int { kGinTypeNone = 0 };
struct CommProperties {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int rank;
  int nRanks;
  int cudaDev;
  int nvmlDev;
  bool deviceApiSupport;
  bool multimemSupport;
  GinType ginType;
  int nLsaTeams;
  bool hostRmaSupport;
  GinType railedGinType;
};
static_assert(sizeof(CommProperties) == 56 && offsetof(CommProperties, railedGinType) == 48, "ncclCommProperties_t layout (x86-64)");
struct DevComm;
struct DevCommRequirements;
struct DevResourceRequirements;
struct TeamRequirements;
using ResourceHandle = uint32_t;
struct MultimemHandle {
  void* mcBasePtr;
};
struct GinOutboxHandle;
struct GinInboxA2AHandle;
struct LsaBarrierHandle;
struct GinBarrierHandle;
struct LLA2AHandle;

Status needsCuda(const char* fn) {
  return ATOLL_ERROR(ncclInvalidUsage,
                     "%s: NCCL's device API needs the CUDA backend; this communicator runs on the host backend", fn);
}

Team lsaTeam(const ncclComm* comm) {
  const int size = comm->topology.lsaSize;
  return {size, comm->rank % size, 1};
}

}  // namespace

extern "C" {

NCCL_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, CommProperties* props) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommQueryProperties"));
    if (props == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommQueryProperties: props is NULL");
    if (props->magic != NCCL_API_MAGIC || props->size < sizeof(CommProperties))
      return ATOLL_ERROR(ncclInvalidArgument,
                         "ncclCommQueryProperties: props not initialised with NCCL_COMM_PROPERTIES_INITIALIZER "
                         "(magic 0x%x, size %zu)",
                         props->magic, props->size);
    props->rank = comm->rank;
    props->nRanks = comm->nranks;
    props->cudaDev = comm->cudaDev;
    props->nvmlDev = -1;
    props->deviceApiSupport = false;
    props->multimemSupport = false;
    props->ginType = kGinTypeNone;
    props->nLsaTeams = comm->nranks / comm->topology.lsaSize;
    props->hostRmaSupport = false;  // ncclPutSignal and friends: not on the host backend yet
    props->railedGinType = kGinTypeNone;
    return Status::Ok();
  });
}

// The team functions return values, not status: a bad communicator yields an empty team (and -1
// ranks) after logging why, since there is nowhere else to say it.
NCCL_API(Team, ncclTeamWorld, ncclComm_t comm) {
  if (!checkComm(comm, "ncclTeamWorld").ok()) return {0, -1, 1};
  return {comm->nranks, comm->rank, 1};
}

NCCL_API(Team, ncclTeamLsa, ncclComm_t comm) {
  if (!checkComm(comm, "ncclTeamLsa").ok()) return {0, -1, 1};
  return lsaTeam(comm);
}

// The outer factor of the LSA team: the ranks with this rank's index on every host.
NCCL_API(Team, ncclTeamRail, ncclComm_t comm) {
  if (!checkComm(comm, "ncclTeamRail").ok()) return {0, -1, 1};
  const int size = comm->topology.lsaSize;
  return {comm->nranks / size, comm->rank / size, size};
}

NCCL_API(int, ncclTeamRankToWorld, ncclComm_t comm, Team team, int rank) {
  if (!checkComm(comm, "ncclTeamRankToWorld").ok()) return -1;
  return comm->rank + (rank - team.rank) * team.stride;
}

NCCL_API(int, ncclTeamRankToLsa, ncclComm_t comm, Team team, int rank) {
  if (!checkComm(comm, "ncclTeamRankToLsa").ok()) return -1;
  const Team lsa = lsaTeam(comm);
  const int world = comm->rank + (rank - team.rank) * team.stride;
  const int lsaIndex = world - (comm->rank - lsa.rank);
  return lsaIndex >= 0 && lsaIndex < lsa.nRanks ? lsaIndex : -1;
}

// LL all-to-all: each 16-byte line carries 8 bytes of payload, so an element takes one slot per 8 bytes.
NCCL_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize) { return maxElts * ((maxEltSize + 7) / 8); }

NCCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const DevCommRequirements* reqs, DevComm* outDevComm) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclDevCommCreate"));
    (void)reqs, (void)outDevComm;
    return needsCuda("ncclDevCommCreate");
  });
}

NCCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const DevComm* devComm) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclDevCommDestroy"));
    (void)devComm;
    return needsCuda("ncclDevCommDestroy");
  });
}

NCCL_API(ncclResult_t, ncclGetLsaMultimemDevicePointer, ncclWindow_t window, size_t offset, void** outPtr) {
  return apiGuard(__func__, [&]() -> Status {
    (void)window, (void)offset, (void)outPtr;
    return needsCuda("ncclGetLsaMultimemDevicePointer");
  });
}

NCCL_API(ncclResult_t, ncclGetMultimemDevicePointer, ncclWindow_t window, size_t offset, MultimemHandle multimem,
         void** outPtr) {
  return apiGuard(__func__, [&]() -> Status {
    (void)window, (void)offset, (void)multimem, (void)outPtr;
    return needsCuda("ncclGetMultimemDevicePointer");
  });
}

NCCL_API(ncclResult_t, ncclGetLsaDevicePointer, ncclWindow_t window, size_t offset, int lsaRank, void** outPtr) {
  return apiGuard(__func__, [&]() -> Status {
    (void)window, (void)offset, (void)lsaRank, (void)outPtr;
    return needsCuda("ncclGetLsaDevicePointer");
  });
}

NCCL_API(ncclResult_t, ncclGetPeerDevicePointer, ncclWindow_t window, size_t offset, int peer, void** outPtr) {
  return apiGuard(__func__, [&]() -> Status {
    (void)window, (void)offset, (void)peer, (void)outPtr;
    return needsCuda("ncclGetPeerDevicePointer");
  });
}

NCCL_API(ncclResult_t, ncclLsaBarrierCreateRequirement, Team team, int nBarriers, LsaBarrierHandle* outHandle,
         DevResourceRequirements* outReq) {
  return apiGuard(__func__, [&]() -> Status {
    (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
    return needsCuda("ncclLsaBarrierCreateRequirement");
  });
}

NCCL_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, Team team, int nBarriers,
         GinBarrierHandle* outHandle, DevResourceRequirements* outReq) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclGinBarrierCreateRequirement"));
    (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
    return needsCuda("ncclGinBarrierCreateRequirement");
  });
}

NCCL_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, LLA2AHandle* outHandle,
         DevResourceRequirements* outReq) {
  return apiGuard(__func__, [&]() -> Status {
    (void)nBlocks, (void)nSlots, (void)outHandle, (void)outReq;
    return needsCuda("ncclLLA2ACreateRequirement");
  });
}

NCCL_API(ncclResult_t, ncclGinOutboxCreateRequirement, int nBlocks, int sizeLog2, GinOutboxHandle* outHandle,
         DevResourceRequirements* outReq) {
  return apiGuard(__func__, [&]() -> Status {
    (void)nBlocks, (void)sizeLog2, (void)outHandle, (void)outReq;
    return needsCuda("ncclGinOutboxCreateRequirement");
  });
}

NCCL_API(ncclResult_t, ncclGinInboxA2ACreateRequirement, Team peers, int nBlocks, int sizeLog2,
         GinInboxA2AHandle* outHandle, DevResourceRequirements* outReq) {
  return apiGuard(__func__, [&]() -> Status {
    (void)peers, (void)nBlocks, (void)sizeLog2, (void)outHandle, (void)outReq;
    return needsCuda("ncclGinInboxA2ACreateRequirement");
  });
}

}  // extern "C"
