#include "core/call_report.h"

#include "base/debug.h"
#include "core/comm.h"
#include "engine/plan.h"
#include "kernels/host/reduce.h"

namespace atl {

namespace {

void record(ncclComm* comm, CallReport r) {
  r.seq = comm->lastCall ? comm->lastCall->seq + 1 : 1;
  comm->lastCall = r;
  ATOLL_INFO(log::kTune, "%s: count %zu %s algorithm %s protocol %s channels %d%s (comm %p rank %d nranks %d)",
             algo::collName(r.coll), r.count, kernels::dtypeName(r.dtype), algo::algoName(r.algo), r.proto,
             r.nchannels, r.fromCache ? " cached plan" : "", static_cast<void*>(comm), comm->rank, comm->nranks);
}

}  // namespace

void reportCall(ncclComm* comm, algo::Coll coll, size_t count, const engine::Plan& plan, bool fromCache) {
  record(comm, CallReport{coll, count, plan.dtype, plan.algo, plan.proto, plan.nchannels, fromCache});
}

void reportPath(ncclComm* comm, algo::Coll coll, size_t count, ncclDataType_t dtype, algo::Algo algo,
                const char* proto) {
  record(comm, CallReport{coll, count, dtype, algo, proto});
}

std::optional<CallReport> lastCall(const ncclComm* comm) { return comm->lastCall; }

}  // namespace atl
