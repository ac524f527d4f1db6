#include "core/plan_builder.h"

#include <algorithm>
#include <cstring>

#include "algorithms/p2p.h"
#include "base/params.h"
#include "core/comm.h"

namespace atl {
namespace {

/// Elements of input this rank contributes to a reduction (what PreMulSum scales).
size_t reductionInputCount(const OpDesc& op, int nranks) {
  return op.coll == algo::Coll::ReduceScatter ? op.count * static_cast<size_t>(nranks) : op.count;
}

bool isPreMulSum(const OpDesc& op) { return algo::reduces(op.coll) && static_cast<int>(op.op) >= ncclNumOps; }

}  // namespace

PlanKey collectiveKey(const OpDesc& op) {
  const ncclComm* comm = op.comm;
  const size_t esz = kernels::dtypeSize(op.dtype);
  PlanKey key;
  key.dtype = op.dtype;
  key.op = op.op;
  algo::CollSpec& spec = key.spec;
  spec.coll = op.coll;
  spec.nranks = comm->nranks;
  spec.rank = comm->rank;
  spec.root = op.root;
  spec.count = op.count;
  spec.nchannels = comm->links.nchannels;
  spec.chunkElems = std::max<size_t>(1, static_cast<size_t>(params::getInt(params::Id::ChunkBytes)) / esz);
  // Rounds pay off where the ring's hops are memory copies; between hosts each round's steps would
  // only add the wire's latency.
  if (comm->topology.lsaSize == comm->nranks)
    spec.ringSliceElems = static_cast<size_t>(params::getInt(params::Id::RingSliceBytes)) / esz;
  spec.inPlace = inPlaceCall(op, comm->rank) && !isPreMulSum(op);
  // The algorithm is not part of the key: it follows from the rest, and choosing it (the cost
  // model) is left to plan-cache misses (buildCollectivePlan).
  return key;
}

bool cacheable(const OpDesc& op) { return !isPreMulSum(op); }

bool inPlaceCall(const OpDesc& op, int rank) {
  auto send = static_cast<const std::byte*>(op.sendbuff);
  auto recv = static_cast<const std::byte*>(op.recvbuff);
  // The element size only where a rank's block sits inside the other buffer: this runs on every
  // repeated call (core/repeat_call.h).
  auto block = [&op] { return op.count * kernels::dtypeSize(op.dtype); };
  switch (op.coll) {
    case algo::Coll::AllGather: return send == recv + static_cast<size_t>(rank) * block();
    case algo::Coll::ReduceScatter: return recv == send + static_cast<size_t>(rank) * block();
    case algo::Coll::Gather: return rank == op.root && send == recv + static_cast<size_t>(op.root) * block();
    case algo::Coll::Scatter: return rank == op.root && recv == send + static_cast<size_t>(op.root) * block();
    default: return send == recv;
  }
}

void bindBuffers(engine::Plan& plan, const OpDesc& op) {
  plan.buffers[algo::kSendBuf] = const_cast<std::byte*>(static_cast<const std::byte*>(op.sendbuff));
  plan.buffers[algo::kRecvBuf] = static_cast<std::byte*>(op.recvbuff);
}

Result<std::unique_ptr<engine::Plan>> buildCollectivePlan(const OpDesc& op, const PlanKey& key) {
  ncclComm* comm = op.comm;
  const size_t esz = kernels::dtypeSize(op.dtype);
  if (op.count == 0) return std::unique_ptr<engine::Plan>();
  auto plan = std::make_unique<engine::Plan>();
  plan->dtype = op.dtype;
  plan->elemSize = esz;
  plan->buffers = {nullptr, nullptr, nullptr};
  bindBuffers(*plan, op);
  algo::CollSpec spec = key.spec;
  spec.islands = comm->topology.islands;  // not in the key (plan_cache.h)
  if (comm->topology.selector) {
    // The selector's bytes: what moves per rank (the whole output for all-gather, the whole input
    // for reduce-scatter).
    size_t bytes = op.count * esz;
    if (op.coll == algo::Coll::AllGather || op.coll == algo::Coll::ReduceScatter)
      bytes *= static_cast<size_t>(comm->nranks);
    tuning::Choice choice = comm->topology.selector->choose(op.coll, bytes);
    spec.algo = choice.algo;
    spec.nchannels = std::clamp(choice.nchannels, 1, comm->links.nchannels);
    plan->proto = tuning::protoName(choice.proto);
  }
  const algo::Algo ran = algo::executedAlgo(spec);  // after the generator's fallbacks
  char what[160];
  const bool named = tuning::hasHierarchical(op.coll);  // collectives with a choice of algorithm
  snprintf(what, sizeof(what), "%s(count %zu, %s%s%s) on rank %d/%d", algo::collName(op.coll), op.count,
           kernels::dtypeName(op.dtype), named ? ", " : "", named ? algo::algoName(ran) : "", comm->rank,
           comm->nranks);
  plan->what = what;

  if (algo::reduces(op.coll)) {
    switch (op.op) {
      case ncclProd: plan->op = kernels::RedOp::Prod; break;
      case ncclMax: plan->op = kernels::RedOp::Max; break;
      case ncclMin: plan->op = kernels::RedOp::Min; break;
      default: plan->op = kernels::RedOp::Sum; break;
    }
    if (static_cast<int>(op.op) >= ncclNumOps) {
      // PreMulSum: each rank scales its own input once, then the schedule sums as usual.
      std::optional<PreMulSum> pm = comm->redops.find(op.op);
      if (!pm) return ATOLL_ERROR(ncclInvalidArgument, "reduction op %d was destroyed", static_cast<int>(op.op));
      const size_t n = reductionInputCount(op, comm->nranks);
      plan->ownedInput.reset(new std::byte[n * esz]);
      plan->ownedInputBytes = n * esz;
      plan->buffers[algo::kSendBuf] = plan->ownedInput.get();
      const void* userInput = op.sendbuff;
      PreMulSum scalar = *pm;
      // A scalar in device memory is read from its staged copy (core/device_staging.h), which
      // the call's staging fills before this runs.
      const void* staged = op.scalarHost;
      plan->prologue = [userInput, scalar, staged, n](engine::Plan& p) {
        const void* s = staged != nullptr                         ? staged
                        : scalar.residence == ncclScalarDevice ? scalar.scalarPtr
                                                                : scalar.scalar;
        kernels::scale(p.dtype, p.ownedInput.get(), userInput, s, n);
      };
    } else if (op.op == ncclAvg) {
      // Sum, then divide once on the ranks that hold results: one rounding, exact for integers.
      const bool holdsResult = op.coll != algo::Coll::Reduce || comm->rank == op.root;
      const int nranks = comm->nranks;
      const size_t n = op.count;
      if (holdsResult)
        plan->epilogue = [nranks, n](engine::Plan& p) { kernels::divide(p.dtype, p.buffers[algo::kRecvBuf], n, nranks); };
    }
  }
  plan->schedule = algo::buildSchedule(spec);
  plan->algo = ran;
  plan->nchannels = algo::channelsUsed(plan->schedule);
  return plan;
}

Result<std::unique_ptr<engine::Plan>> buildP2PPlan(ncclComm* comm, const std::vector<const OpDesc*>& ops) {
  auto plan = std::make_unique<engine::Plan>();
  plan->dtype = ncclInt8;
  plan->elemSize = 1;
  plan->buffers.assign(algo::kFirstUserBuf, nullptr);
  auto range = [](const OpDesc* op) {
    auto* p = static_cast<const std::byte*>(op->isSend ? op->sendbuff : op->recvbuff);
    return std::pair{p, p + op->count * kernels::dtypeSize(op->dtype)};
  };
  // Sends and receives of one group run concurrently, so a send whose buffer overlaps a receive
  // (nccl-tests' in-place sendrecv passes one buffer to both) is sent from a copy taken at start.
  struct Staged {
    algo::BufId slot;
    const std::byte* source;
    size_t offset;
    size_t bytes;
  };
  std::vector<Staged> staged;
  size_t stagingBytes = 0;
  std::vector<algo::P2POp> p2p;
  for (const OpDesc* op : ops) {
    algo::P2POp x;
    x.isSend = op->isSend;
    x.peer = op->root;
    x.bytes = op->count * kernels::dtypeSize(op->dtype);
    x.buf = static_cast<algo::BufId>(plan->buffers.size());
    auto [lo, hi] = range(op);
    bool overlaps = false;
    if (op->isSend)
      for (const OpDesc* other : ops)
        if (!other->isSend) {
          auto [olo, ohi] = range(other);
          overlaps = overlaps || (lo < ohi && olo < hi);
        }
    if (overlaps && x.bytes > 0) {
      staged.push_back({x.buf, lo, stagingBytes, x.bytes});
      plan->buffers.push_back(nullptr);  // set by the prologue
      stagingBytes += (x.bytes + 63) / 64 * 64;
    } else {
      plan->buffers.push_back(const_cast<std::byte*>(lo));
    }
    if (x.bytes > 0) p2p.push_back(x);
  }
  if (stagingBytes > 0) {
    plan->ownedInput.reset(new std::byte[stagingBytes]);
    plan->ownedInputBytes = stagingBytes;
    plan->prologue = [staged](engine::Plan& p) {
      for (const Staged& st : staged) {
        p.buffers[st.slot] = p.ownedInput.get() + st.offset;
        std::memcpy(p.buffers[st.slot], st.source, st.bytes);
      }
    };
  }
  char what[96];
  snprintf(what, sizeof(what), "SendRecv batch of %zu ops on rank %d/%d", ops.size(), comm->rank, comm->nranks);
  plan->what = what;
  plan->schedule = algo::buildP2P(p2p, comm->rank);
  if (plan->schedule.programs.empty()) return std::unique_ptr<engine::Plan>();
  return plan;
}

}  // namespace atl
