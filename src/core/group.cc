#include "core/group.h"

#include <algorithm>
#include <span>
#include <thread>
#include <vector>

#include "base/debug.h"
#include "base/params.h"
#include "base/per_thread.h"
#include "core/call_check.h"
#include "core/call_report.h"
#include "core/comm.h"
#include "core/connect.h"
#include "core/fault_notice.h"
#include "core/plan_builder.h"
#include "core/plan_cache.h"
#include "engine/executor.h"

namespace atl {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<OpDesc> ops;
  std::vector<std::function<Status()>> inits;
};

/// Several inits queued by one thread rendezvous with each other, so each needs its own thread.
// Not inlined: GCC 12 inlines it into groupEnd and then raises a false -Wfree-nonheap-object.
[[gnu::noinline]] Status runInits(std::vector<std::function<Status()>>& inits) {
  if (inits.size() == 1) return inits[0]();
  std::vector<Status> results(inits.size());
  std::vector<std::thread> threads;
  threads.reserve(inits.size());
  for (size_t i = 0; i < inits.size(); ++i) threads.emplace_back([&, i] { results[i] = inits[i](); });
  for (std::thread& t : threads) t.join();
  for (Status s : results)
    if (!s.ok()) return s;
  return Status::Ok();
}

/// What one batch needs besides its plans, kept by the thread so that a steady stream of calls
/// allocates nothing once warm (vectors keep their capacity across clear()).
struct BatchStorage {
  std::vector<ncclComm*> comms;
  std::vector<engine::CommQueue> queues;
  std::vector<std::unique_ptr<engine::Plan>> owned;  // plans the caches did not take
};

/// The calling thread's group and batch (base/per_thread.h: fetched once per call, passed down).
struct ThreadCalls {
  GroupState group;
  BatchStorage batch;
};
ThreadCalls& threadCalls() { return perThread<ThreadCalls>(); }

/// ATOLL_CHECK: compare the batch's fingerprints before any of its data moves (core/call_check.h).
/// A failed check (dead peer, timeout) or a mismatch lands in the communicator's queue result,
/// where runOps treats it like the failure of a real plan.
Status checkCalls(std::span<ncclComm* const> comms, std::span<const OpDesc> ops, std::span<engine::CommQueue> queues,
                  const engine::ExecOptions& opts) {
  std::vector<CheckOutcome> outcomes = checkBatch(comms, ops, opts.timeoutMs);
  Status result;
  for (size_t i = 0; i < comms.size(); ++i) {
    queues[i].result = outcomes[i].result;
    queues[i].failedPeer = outcomes[i].failedPeer;
    queues[i].timedOut = outcomes[i].timedOut;
    if (outcomes[i].desync) fault::breakOff(comms[i], queues[i].result);
    if (!queues[i].result.ok() && result.ok()) result = queues[i].result;
  }
  return result;
}

/// Makes the links the queued plans use that the communicators lack (core/connect.h). A queue whose
/// links cannot be made fails like a plan would.
Status connectFor(std::span<ncclComm* const> comms, std::span<engine::CommQueue> queues) {
  // The common case first, touching nothing but the plans: cached plans whose links all existed
  // at the table's current generation.
  bool checked = true;
  for (size_t i = 0; i < comms.size() && checked; ++i)
    for (const engine::Plan* plan : queues[i].plans)
      if (plan->linksPresentAt != comms[i]->links.table.generation()) checked = false;
  if (checked) return Status::Ok();
  thread_local std::vector<std::vector<engine::LinkKey>> needed;
  needed.resize(comms.size());
  bool missing = false;
  for (size_t i = 0; i < comms.size(); ++i) {
    needed[i].clear();
    const engine::ConnTable& table = comms[i]->links.table;
    for (engine::Plan* plan : queues[i].plans) {
      if (!plan->linksKnown) {
        plan->links = scheduleLinks(plan->schedule);
        plan->linksKnown = true;
      }
      bool present = true;
      for (const engine::LinkKey& k : plan->links)
        if (!table.has(k)) needed[i].push_back(k), missing = true, present = false;
      if (present) plan->linksPresentAt = table.generation();
    }
  }
  if (!missing) return Status::Ok();
  std::vector<Status> made = ensureLinks(comms, std::span<const std::vector<engine::LinkKey>>(needed.data(), comms.size()));
  Status first;
  for (size_t i = 0; i < comms.size(); ++i) {
    if (made[i].ok()) continue;
    queues[i].result = made[i];
    if (first.ok()) first = made[i];
  }
  return first;
}

/// Points `q` at `comm`, empty and ready for this call's plans.
void resetQueue(engine::CommQueue& q, ncclComm* comm) {
  q.rank = comm->rank;
  q.conns = &comm->links.table;
  q.abort = &comm->abortFlag;
  q.plans.clear();
  q.next = 0;
  q.result = Status::Ok();
}

/// After a communicator's queue ran: a failure other than a refused argument leaves the
/// communicator failed, its peers told and its links broken.
void settle(ncclComm* comm, const engine::CommQueue& q) {
  const Status s = q.result;
  if (s.ok() || s.code() == ncclInvalidArgument || s.code() == ncclInvalidUsage) return;
  ncclResult_t expected = ncclSuccess;
  comm->asyncError.compare_exchange_strong(expected, s.code());
  // Tell the peers which rank failed before they see this rank's links break (fault_notice.h).
  fault::spreadFailure(comm, q.failedPeer, q.timedOut, s);
  // A failed collective leaves peers mid-stream; break the links so every survivor fails in a hop
  // or two instead of at its timeout. The communicator is unusable from here (as in NCCL after an
  // asynchronous error): abort or destroy it, or shrink it.
  comm->links.table.shutdownAll();
}

/// `b`: the calling thread's (threadCalls()), passed down so it is looked up once per call.
/// `remember`: a lone call whose cached plan ran may be remembered for its repeats (only where
/// the caller would look for it: not for a device proxy's calls).
Status runOps(std::span<const OpDesc> ops, BatchStorage& b, bool remember) {
  // One queue per communicator, in order of first appearance; within it the collectives in call
  // order, then the group's send/recv batch.
  std::vector<ncclComm*>& comms = b.comms;
  std::vector<std::unique_ptr<engine::Plan>>& owned = b.owned;
  comms.clear();
  for (const OpDesc& op : ops)
    if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
  if (b.queues.size() < comms.size()) b.queues.resize(comms.size());
  std::span<engine::CommQueue> queues(b.queues.data(), comms.size());
  // Cached plans go back to their caches, and the others are freed, however this call ends.
  struct Release {
    BatchStorage& b;
    ~Release() {
      for (ncclComm* c : b.comms) c->plans.releaseAll();
      b.owned.clear();
    }
  } release{b};
  const params::Numbers settings = params::numbers();
  engine::Plan* rememberable = nullptr;  // the cached plan of a lone call
  for (size_t i = 0; i < comms.size(); ++i) {
    ncclComm* comm = comms[i];
    engine::CommQueue& q = queues[i];
    resetQueue(q, comm);
    const size_t cacheCapacity = static_cast<size_t>(std::max<int64_t>(0, settings[params::Id::PlanCacheSize]));
    std::vector<const OpDesc*> p2p;
    for (const OpDesc& op : ops) {
      if (op.comm != comm) continue;
      if (op.coll == algo::Coll::SendRecv) {
        p2p.push_back(&op);
        continue;
      }
      if (op.count == 0) continue;
      PlanKey key = collectiveKey(op);
      engine::Plan* plan = cacheable(op) ? comm->plans.acquire(key) : nullptr;
      const bool fromCache = plan != nullptr;
      if (plan != nullptr) {
        bindBuffers(*plan, op);
      } else {
        ATOLL_ASSIGN_OR_RETURN(auto built, buildCollectivePlan(op, key));
        if (!built) continue;
        if (cacheable(op)) plan = comm->plans.insert(key, built, cacheCapacity);
        if (plan == nullptr) {
          plan = built.get();
          owned.push_back(std::move(built));
        }
      }
      plan->staging = op.staging;
      if (owned.empty() || owned.back().get() != plan) rememberable = plan;  // not freed with the batch
      reportCall(comm, op.coll, op.count, *plan, fromCache);
      q.plans.push_back(plan);
    }
    if (!p2p.empty()) {
      ATOLL_ASSIGN_OR_RETURN(auto plan, buildP2PPlan(comm, p2p));
      if (plan) {
        plan->staging = p2p.front()->staging;
        q.plans.push_back(plan.get());
        owned.push_back(std::move(plan));
      }
    }
  }
  for (ncclComm* c : comms) c->activeCalls.fetch_add(1);
  engine::ExecOptions opts;
  opts.timeoutMs = settings[params::Id::TimeoutMs];
  opts.spinCount = static_cast<int>(settings[params::Id::SpinCount]);
  if (opts.spinCount < 0) {
    // Oversubscribed, the peer a rank waits for may need this very core: yield soon, as Open MPI
    // does (mpi_yield_when_idle). On 4 ranks and 2 cores an 8-byte all-reduce took 7.8 us with
    // 200 polls, 5.3 with 20 (medians of 5).
    const bool crowded = std::any_of(comms.begin(), comms.end(), [](const ncclComm* c) { return c->topology.oversubscribed; });
    opts.spinCount = crowded ? 20 : 200;
  }
  Status result = settings[params::Id::Check] != 0 ? checkCalls(comms, ops, queues, opts) : Status::Ok();
  if (result.ok()) result = connectFor(comms, queues);
  if (result.ok()) result = engine::execute(queues, opts);
  if (remember && result.ok() && ops.size() == 1 && rememberable != nullptr && settings[params::Id::Check] == 0)
    ops[0].comm->repeat.remember(ops[0], rememberable, settings.values, opts);
  for (size_t i = 0; i < comms.size(); ++i) {
    settle(comms[i], queues[i]);
    // Last touch of the communicator: once activeCalls drops, ncclCommAbort may free it.
    comms[i]->plans.releaseAll();
    comms[i]->activeCalls.fetch_sub(1);
  }
  comms.clear();  // so the release guard does not touch them again
  return result;
}

/// The remembered plan of a lone call run again (core/repeat_call.h): what runOps does for it,
/// less finding the plan.
Status runRepeat(const OpDesc& op, engine::Plan& plan, BatchStorage& b) {
  ncclComm* comm = op.comm;
  comm->plans.countHit();
  bindBuffers(plan, op);
  plan.staging = op.staging;
  reportCall(comm, op.coll, op.count, plan, true);
  if (b.queues.empty()) b.queues.resize(1);
  engine::CommQueue& q = b.queues[0];
  resetQueue(q, comm);
  q.plans.push_back(&plan);
  comm->activeCalls.fetch_add(1);
  Status result = engine::execute(std::span<engine::CommQueue>(&q, 1), comm->repeat.options());
  if (!result.ok()) comm->repeat.forget();
  settle(comm, q);
  comm->activeCalls.fetch_sub(1);  // last touch of the communicator, as in runOps
  return result;
}

/// Hands the ops of communicators on stream-ordered devices to their proxies (device_proxy.h),
/// which run them after their streams' earlier work; runs the others here. Waits only for the
/// proxies' groups that must be complete on return (host memory, or streams that cannot wait).
Status dispatchOps(std::span<const OpDesc> ops, BatchStorage& b) {
  bool any = false;
  for (const OpDesc& op : ops) any = any || stagesCalls(op.comm);
  if (!any) return runOps(ops, b, true);
  std::vector<OpDesc> here;
  std::vector<ncclComm*> proxied;
  for (const OpDesc& op : ops) {
    if (!stagesCalls(op.comm)) {
      here.push_back(op);
    } else if (std::find(proxied.begin(), proxied.end(), op.comm) == proxied.end()) {
      proxied.push_back(op.comm);
    }
  }
  Status first;
  std::vector<std::pair<ncclComm*, uint32_t>> waits;
  std::vector<OpDesc> mine;
  for (ncclComm* comm : proxied) {
    mine.clear();
    for (const OpDesc& op : ops)
      if (op.comm == comm) mine.push_back(op);
    if (!comm->proxy) comm->proxy = std::make_unique<DeviceProxy>(comm);
    uint32_t ticket = 0;
    Status s = comm->proxy->submit(mine, &ticket);
    if (!s.ok() && first.ok()) first = s;
    if (ticket != 0) waits.emplace_back(comm, ticket);
  }
  if (!here.empty()) {
    Status s = runOps(here, b, false);
    if (first.ok()) first = s;
  }
  for (auto& [comm, ticket] : waits) {
    Status s = comm->proxy->wait(ticket);
    if (first.ok()) first = s;
  }
  return first;
}

}  // namespace

Status runBatch(std::span<const OpDesc> ops) { return runOps(ops, threadCalls().batch, false); }

bool inGroup() { return threadCalls().group.depth > 0; }

Status groupStart() {
  ++threadCalls().group.depth;
  return Status::Ok();
}

Status groupEnd() {
  ThreadCalls& calls = threadCalls();
  GroupState& group = calls.group;
  if (group.depth == 0) return ATOLL_ERROR(ncclInvalidUsage, "ncclGroupEnd called without a matching ncclGroupStart");
  if (--group.depth > 0) return Status::Ok();
  std::vector<std::function<Status()>> inits = std::move(group.inits);
  std::vector<OpDesc> ops = std::move(group.ops);
  group.inits.clear();
  group.ops.clear();
  Status initResult = inits.empty() ? Status::Ok() : runInits(inits);
  if (!initResult.ok()) return initResult;
  if (ops.empty()) return Status::Ok();
  return dispatchOps(ops, calls.batch);
}

Status enqueueOp(const OpDesc& op) {
  ThreadCalls& calls = threadCalls();
  if (calls.group.depth > 0) {
    calls.group.ops.push_back(op);
    return Status::Ok();
  }
  if (engine::Plan* plan = op.comm->repeat.find(op)) return runRepeat(op, *plan, calls.batch);
  return dispatchOps(std::span<const OpDesc>(&op, 1), calls.batch);
}

Status enqueueInit(std::function<Status()> init) {
  GroupState& group = threadCalls().group;
  if (group.depth > 0) {
    group.inits.push_back(std::move(init));
    return Status::Ok();
  }
  return init();
}

}  // namespace atl
