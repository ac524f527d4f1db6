#include "core/call_report.h"

#include "base/debug.h"
#include "core/comm.h"
#include "engine/plan.h"
#include "kernels/host/reduce.h"

namespace atl {

namespace {

// Written field by field into the communicator's report. Building a CallReport and copying it in
// compiles to wide loads of the narrow stores that just built it; the failed store forwarding cost
// about a tenth of an 8-byte all-reduce on one rank.
void record(ncclComm* comm, algo::Coll coll, size_t count, ncclDataType_t dtype, algo::Algo algo, const char* proto,
            int nchannels, bool fromCache) {
  const uint64_t seq = comm->lastCall ? comm->lastCall->seq + 1 : 1;
  CallReport& r = comm->lastCall ? *comm->lastCall : comm->lastCall.emplace();
  r.coll = coll;
  r.count = count;
  r.dtype = dtype;
  r.algo = algo;
  r.proto = proto;
  r.nchannels = nchannels;
  r.fromCache = fromCache;
  r.seq = seq;
  ATOLL_INFO(log::kTune, "%s: count %zu %s algorithm %s protocol %s channels %d%s (comm %p rank %d nranks %d)",
             algo::collName(coll), count, kernels::dtypeName(dtype), algo::algoName(algo), proto, nchannels,
             fromCache ? " cached plan" : "", static_cast<void*>(comm), comm->rank, comm->nranks);
}

}  // namespace

void reportCall(ncclComm* comm, algo::Coll coll, size_t count, const engine::Plan& plan, bool fromCache) {
  record(comm, coll, count, plan.dtype, plan.algo, plan.proto, plan.nchannels, fromCache);
}

void reportPath(ncclComm* comm, algo::Coll coll, size_t count, ncclDataType_t dtype, algo::Algo algo,
                const char* proto) {
  record(comm, coll, count, dtype, algo, proto, 0, false);
}

std::optional<CallReport> lastCall(const ncclComm* comm) { return comm->lastCall; }

}  // namespace atl
