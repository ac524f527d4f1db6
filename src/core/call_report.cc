#include "core/call_report.h"

#include "base/debug.h"
#include "core/comm.h"
#include "engine/plan.h"
#include "kernels/host/reduce.h"

namespace atl {

void reportCall(ncclComm* comm, algo::Coll coll, size_t count, const engine::Plan& plan, bool fromCache) {
  CallReport r;
  r.coll = coll;
  r.count = count;
  r.dtype = plan.dtype;
  r.algo = plan.algo;
  r.proto = plan.proto;
  r.nchannels = plan.nchannels;
  r.fromCache = fromCache;
  r.seq = comm->lastCall ? comm->lastCall->seq + 1 : 1;
  comm->lastCall = r;
  ATOLL_INFO(log::kTune, "%s: count %zu %s algorithm %s protocol %s channels %d%s (comm %p rank %d nranks %d)",
             algo::collName(coll), count, kernels::dtypeName(plan.dtype), algo::algoName(plan.algo), plan.proto,
             plan.nchannels, fromCache ? " cached plan" : "", static_cast<void*>(comm), comm->rank, comm->nranks);
}

std::optional<CallReport> lastCall(const ncclComm* comm) { return comm->lastCall; }

}  // namespace atl
