// Windows (ncclCommWindowRegister) and the one-sided operations on them (core/rma.h).
//
// On the host backend a window is the user's buffer recorded by its communicator: like a
// registration, it needs no pinning, and the handle is a serial number, so a stale or foreign
// window is rejected rather than dereferenced. Registration is collective, as in NCCL: every rank
// registers its windows in the same order, so a window's sequence number names it on every rank,
// and the ranks' sizes are gathered so a put out of the target's bounds fails at its source.
//
// One-sided calls run when they are made, also inside a group: a put needs nothing from its
// target, and a wait only needs the signals it waits for.
#include <algorithm>
#include <atomic>

#include "base/params.h"
#include "base/wire_codec.h"
#include "core/comm.h"
#include "core/connect.h"
#include "core/device_proxy.h"
#include "core/group.h"
#include "core/nccl_api.h"
#include "core/rma.h"
#include "kernels/host/reduce.h"

using namespace atl;

namespace {

constexpr int kKnownWinFlags = NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING;

Status findWindow(ncclComm* comm, ncclWindow_t win, const char* fn, RegistrationTable::Entry* out) {
  if (win == nullptr || !comm->windows.find(win, out))
    return ATOLL_ERROR(ncclInvalidArgument, "%s: %p is not a window of this communicator", fn, static_cast<void*>(win));
  return Status::Ok();
}

/// The one-sided links, made with the first window: every rank registers it at the same time, so
/// all links to all peers are made in one collective step (a put's target may be any rank, and a
/// put must never wait for its target to make a link).
Status startRma(ncclComm* comm) {
  std::vector<engine::LinkKey> keys;
  for (int p = 0; p < comm->nranks; ++p)
    if (p != comm->rank) keys.push_back({rma::kChannel, p});
  ncclComm* self[] = {comm};
  std::vector<engine::LinkKey> needed[] = {keys};
  ATOLL_CHECK(ensureLinks(self, needed)[0]);
  std::vector<std::unique_ptr<transport::Connection>> links(static_cast<size_t>(comm->nranks));
  for (const engine::LinkKey& k : keys) links[static_cast<size_t>(k.peer)] = comm->links.table.take(k);
  comm->rma = std::make_unique<rma::Engine>(comm->rank, std::move(links), &comm->abortFlag,
                                            params::getInt(params::Id::TimeoutMs));
  return Status::Ok();
}

/// Marks the call as running on the communicator (ncclCommAbort waits for it and it sees the
/// abort), and records a failure that is not the caller's mistake as the asynchronous error.
template <class F>
Status runOneSided(ncclComm* comm, F&& body) {
  comm->activeCalls.fetch_add(1);
  Status s = body();
  if (!s.ok() && s.code() != ncclInvalidArgument && s.code() != ncclInvalidUsage) {
    ncclResult_t expected = ncclSuccess;
    comm->asyncError.compare_exchange_strong(expected, s.code());
  }
  comm->activeCalls.fetch_sub(1);
  return s;
}

Status checkRmaArgs(ncclComm* comm, const char* fn, int peer, int sigIdx, int ctx, unsigned flags) {
  ATOLL_CHECK(checkCommUsable(comm, fn));
  if (peer < 0 || peer >= comm->nranks)
    return ATOLL_ERROR(ncclInvalidArgument, "%s: peer %d is not a rank of this communicator (0..%d)", fn, peer,
                       comm->nranks - 1);
  // As NCCL 2.30: one signal and one context, flags reserved.
  if (sigIdx != 0 || ctx != 0 || flags != 0)
    return ATOLL_ERROR(ncclInvalidArgument, "%s: sigIdx (%d), ctx (%d) and flags (0x%x) must be 0", fn, sigIdx, ctx,
                       flags);
  if (!comm->rma)
    return ATOLL_ERROR(ncclInvalidUsage,
                       "%s: no window is registered on this communicator; one-sided links are made by "
                       "ncclCommWindowRegister",
                       fn);
  return Status::Ok();
}

}  // namespace

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
         int winFlags) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkCommUsable(comm, "ncclCommWindowRegister"));
    ATOLL_CHECK(drainDeviceCalls(comm));
    if (win == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommWindowRegister: win is NULL");
    if (buff == nullptr || size == 0)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommWindowRegister: empty buffer (%p, %zu bytes)", buff, size);
    if ((winFlags & ~kKnownWinFlags) != 0)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommWindowRegister: unknown winFlags 0x%x", winFlags);
    if (comm->device->needsStaging(buff))
      return ATOLL_ERROR(ncclInvalidUsage,
                         "ncclCommWindowRegister: %p is %s device memory; one-sided windows must be host memory (the "
                         "staged device path covers collectives and send/recv only)",
                         buff, comm->device->name());
    if (inGroup())
      return ATOLL_ERROR(ncclInvalidUsage,
                         "ncclCommWindowRegister: collective registration runs at once on the host backend; call it "
                         "outside ncclGroupStart/ncclGroupEnd (one thread per rank)");
    return runOneSided(comm, [&]() -> Status {
      if (!comm->rma) ATOLL_CHECK(startRma(comm));
      const uint64_t seq = ++comm->windowSeq;
      rma::Window window;
      window.base = static_cast<std::byte*>(buff);
      window.size = size;
      // Ready to take puts before the exchange below: a peer may put as soon as its own
      // registration returns, which can be before this rank's does.
      comm->rma->addWindow(seq, window);
      // Every rank's (sequence, size): the same sequence everywhere proves the same order.
      const size_t n = static_cast<size_t>(comm->nranks);
      std::vector<std::byte> all(n * 16);
      codec::Writer w;
      w.u64(seq);
      w.u64(size);
      std::copy(w.data().begin(), w.data().end(), all.begin() + static_cast<ptrdiff_t>(16 * comm->rank));
      Status gathered = comm->bootstrap->allGather(all, 16);
      if (!gathered.ok()) {
        comm->rma->removeWindow(seq);
        return gathered;
      }
      window.peerSizes.resize(n);
      for (size_t r = 0; r < n; ++r) {
        codec::Reader rd(std::span<const std::byte>(all).subspan(16 * r, 16));
        const uint64_t theirSeq = rd.u64();
        window.peerSizes[r] = rd.u64();
        if (theirSeq != seq) {
          comm->rma->removeWindow(seq);
          return ATOLL_ERROR(ncclInvalidUsage,
                             "ncclCommWindowRegister: rank %zu is at its window #%llu, this rank (%d) at #%llu: every "
                             "rank must register the same windows in the same order",
                             r, static_cast<unsigned long long>(theirSeq), comm->rank,
                             static_cast<unsigned long long>(seq));
        }
      }
      comm->rma->addWindow(seq, std::move(window));
      *win = static_cast<ncclWindow_t>(comm->windows.add(buff, size, winFlags, seq));
      return Status::Ok();
    });
  });
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommWindowDeregister"));
    ATOLL_CHECK(drainDeviceCalls(comm));
    RegistrationTable::Entry e;
    ATOLL_CHECK(findWindow(comm, win, "ncclCommWindowDeregister", &e));
    if (comm->rma) comm->rma->removeWindow(e.tag);
    (void)comm->windows.remove(win);
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
  (void)stream;  // host backend: the put is complete at the source when the call returns
  return apiGuard(__func__, [&]() -> Status {
    constexpr const char* fn = "ncclPutSignal";
    ATOLL_CHECK(checkRmaArgs(comm, fn, peer, sigIdx, ctx, flags));
    const int rawType = rawEnum(datatype);
    if (rawType < 0 || rawType >= ncclNumTypes)
      return ATOLL_ERROR(ncclInvalidArgument, "%s: invalid datatype %d", fn, rawType);
    const size_t esz = kernels::dtypeSize(static_cast<ncclDataType_t>(rawType));
    if (count > SIZE_MAX / esz) return ATOLL_ERROR(ncclInvalidArgument, "%s: count %zu overflows", fn, count);
    const size_t bytes = count * esz;
    if (bytes > 0 && localbuff == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "%s: localbuff is NULL", fn);
    if (bytes > 0 && comm->device->needsStaging(localbuff))
      return ATOLL_ERROR(ncclInvalidUsage, "%s: localbuff %p is %s device memory; one-sided puts read host memory only",
                         fn, localbuff, comm->device->name());
    RegistrationTable::Entry e;
    ATOLL_CHECK(findWindow(comm, peerWin, fn, &e));
    ATOLL_CHECK(comm->rma->checkTarget(fn, peer, e.tag, peerWinOffset, bytes));
    rma::Header h;
    h.kind = rma::kPut;
    h.window = e.tag;
    h.offset = peerWinOffset;
    h.bytes = bytes;
    return runOneSided(comm, [&] { return comm->rma->put(fn, peer, h, localbuff); });
  });
}

NCCL_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
         cudaStream_t stream) {
  (void)stream;
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkRmaArgs(comm, "ncclSignal", peer, sigIdx, ctx, flags));
    rma::Header h;
    h.kind = rma::kSignal;
    return runOneSided(comm, [&] { return comm->rma->put("ncclSignal", peer, h, nullptr); });
  });
}

NCCL_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
         cudaStream_t stream) {
  (void)stream;
  return apiGuard(__func__, [&]() -> Status {
    constexpr const char* fn = "ncclWaitSignal";
    ATOLL_CHECK(checkCommUsable(comm, fn));
    if (nDesc < 0 || (nDesc > 0 && signalDescs == nullptr))
      return ATOLL_ERROR(ncclInvalidArgument, "%s: %d descriptors at %p", fn, nDesc, static_cast<void*>(signalDescs));
    std::vector<rma::WaitFor> what;
    what.reserve(static_cast<size_t>(nDesc));
    for (int i = 0; i < nDesc; ++i) {
      const ncclWaitSignalDesc_t& d = signalDescs[i];
      ATOLL_CHECK(checkRmaArgs(comm, fn, d.peer, d.sigIdx, d.ctx, 0));
      if (d.opCnt < 0)
        return ATOLL_ERROR(ncclInvalidArgument, "%s: descriptor %d waits for %d signals", fn, i, d.opCnt);
      what.push_back({d.peer, static_cast<uint64_t>(d.opCnt)});
    }
    if (what.empty()) return Status::Ok();
    return runOneSided(comm, [&] { return comm->rma->wait(what); });
  });
}
