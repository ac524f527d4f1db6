// Bootstrap::create: the rank side of the rendezvous.
//
// A rank joins the root that serves its block (one root unless ncclCommInitRankScalable passed
// several ids), gets back the listen addresses of its Bruck partners that root serves, looks up
// the others at the roots that serve them, and then gathers every rank's info with its peers in
// ceil(log2 n) rounds (messaging.cc). No step costs the root, or any rank, n sequential sends.
#include "bootstrap/bootstrap.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "base/debug.h"
#include "base/fd_limit.h"
#include "base/params.h"
#include "bootstrap/messaging.h"
#include "bootstrap/root.h"
#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"

namespace atl::bootstrap {
namespace {

// A rank waits this much longer than the root for its reply, so the root's explanation of a
// timeout (which ranks are missing) arrives before the rank gives up on its own.
constexpr int64_t kReplyGraceMs = 2000;

ncclResult_t toResult(int32_t code) {
  switch (code) {
    case ncclUnhandledCudaError:
    case ncclSystemError:
    case ncclInternalError:
    case ncclInvalidArgument:
    case ncclInvalidUsage:
    case ncclRemoteError:
      return static_cast<ncclResult_t>(code);
    default:
      return ncclInternalError;
  }
}

struct Root {
  net::SockAddr addr;
  Secret secret;
  int index = 0;
  int count = 1;
};

Root rootOf(const ncclUniqueId& id, int index, int count) {
  IdLayout l = decodeId(id);
  Root r;
  r.addr = net::unpack(l.root);
  std::memcpy(r.secret.data(), l.secret, r.secret.size());
  r.index = index;
  r.count = count;
  return r;
}

/// One request to a root: a join (no body) or a lookup of `ranks`; returns the entries it answers.
Result<std::vector<wire::AddrEntry>> ask(const Root& root, wire::JoinKind kind, int rank, int nranks, uint32_t infoSize,
                                         const net::SockAddr& myAddr, const std::vector<int32_t>& ranks,
                                         const AbortFlag* abort, int64_t timeoutMs) {
  Deadline deadline = Deadline::afterMs(timeoutMs);
  net::Fd fd;
  wire::Nonce nonce;
  // A root that closes a connection before its challenge has not read anything from it (a full
  // accept queue, a listener that ran out of descriptors): try again, with backoff, until the
  // deadline. Admission limits may delay a rank, never fail it.
  for (auto backoff = std::chrono::milliseconds(10);; backoff = std::min(backoff * 2, std::chrono::milliseconds(500))) {
    auto dialled = net::connectTo(root.addr, deadline, abort);
    if (!dialled.ok())
      return ATOLL_ERROR(dialled.status().code(), "bootstrap: rank %d of %d: cannot reach root %d (%s): %s%s", rank,
                         nranks, root.index, root.addr.toString().c_str(), lastErrorMessage().c_str(),
                         net::fdPressureHint().c_str());
    fd = std::move(*dialled);
    Status s = net::recvAll(fd.get(), nonce.data(), nonce.size(), deadline, abort);
    if (s.ok()) break;
    if (s.code() != ncclRemoteError || deadline.expired() || aborted(abort))
      return ATOLL_ERROR(s.code(), "bootstrap: rank %d of %d: root %d (%s) did not answer: %s%s", rank, nranks,
                         root.index, root.addr.toString().c_str(), lastErrorMessage().c_str(),
                         net::fdPressureHint().c_str());
    ATOLL_INFO(log::kBootstrap, "bootstrap: rank %d: root %d closed the connection before its challenge; retrying",
               rank, root.index);
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(backoff, std::chrono::milliseconds(deadline.remainingMs(500))));
  }
  wire::JoinHeader h{};
  h.magic = wire::kJoinMagic;
  h.version = wire::kVersion;
  h.rank = rank;
  h.nranks = nranks;
  h.infoSize = infoSize;
  h.kind = static_cast<uint32_t>(kind);
  h.nroots = root.count;
  h.rootIndex = root.index;
  h.count = static_cast<uint32_t>(ranks.size());
  h.listenAddr = net::pack(myAddr);
  Digest proof = wire::joinProof(root.secret, nonce, h);
  std::memcpy(h.proof, proof.data(), proof.size());
  const auto* body = reinterpret_cast<const uint8_t*>(ranks.data());
  const Digest mac = wire::bodyMac(root.secret, wire::kMacJoin, nonce, {reinterpret_cast<const uint8_t*>(&h), sizeof(h)},
                                   {body, ranks.size() * sizeof(int32_t)});
  ATOLL_CHECK(net::sendAll(fd.get(), &h, sizeof(h), deadline, abort));
  ATOLL_CHECK(net::sendAll(fd.get(), ranks.data(), ranks.size() * sizeof(int32_t), deadline, abort));
  ATOLL_CHECK(net::sendAll(fd.get(), mac.data(), mac.size(), deadline, abort));

  Deadline replyDeadline = Deadline::afterMs(timeoutMs > 0 ? timeoutMs + kReplyGraceMs : 0);
  const char* what = kind == wire::JoinKind::Join ? "rendezvous reply" : "lookup answer";
  wire::ReplyHeader rh;
  Status s = net::recvAll(fd.get(), &rh, sizeof(rh), replyDeadline, abort);
  if (!s.ok())
    return ATOLL_ERROR(s.code(), "bootstrap: rank %d of %d got no %s from root %d (%s)", rank, nranks, what, root.index,
                       root.addr.toString().c_str());
  const bool failed = rh.status != ncclSuccess;
  if (rh.magic != wire::kReplyMagic || (failed ? rh.msgLen > 4096 : rh.count > wire::kMaxLookup))
    return ATOLL_ERROR(ncclSystemError, "bootstrap: root %s sent a malformed %s", root.addr.toString().c_str(), what);
  // The whole reply is authenticated before any of it is believed (wire.h: bodyMac).
  std::vector<uint8_t> reply(failed ? rh.msgLen : rh.count * sizeof(wire::AddrEntry));
  Digest got;
  ATOLL_CHECK(net::recvAll(fd.get(), reply.data(), reply.size(), replyDeadline, abort));
  ATOLL_CHECK(net::recvAll(fd.get(), got.data(), got.size(), replyDeadline, abort));
  const Digest want =
      wire::bodyMac(root.secret, wire::kMacReply, nonce, {reinterpret_cast<const uint8_t*>(&rh), sizeof(rh)}, reply);
  if (!constantTimeEqual(want, got))
    return ATOLL_ERROR(ncclSystemError,
                       "bootstrap: rank %d of %d: the %s from root %d (%s) failed authentication (altered in transit, "
                       "or not our root)", rank, nranks, what, root.index, root.addr.toString().c_str());
  if (failed)
    return ATOLL_ERROR(toResult(rh.status), "bootstrap: rank %d of %d: %s", rank, nranks,
                       std::string(reply.begin(), reply.end()).c_str());
  if (rh.nranks != nranks)
    return ATOLL_ERROR(ncclSystemError, "bootstrap: root %s answered for %d ranks with %u entries (expected %d ranks)",
                       root.addr.toString().c_str(), rh.nranks, rh.count, nranks);
  std::vector<wire::AddrEntry> entries(rh.count);
  if (!reply.empty()) std::memcpy(entries.data(), reply.data(), reply.size());
  for (const wire::AddrEntry& e : entries)
    if (e.rank < 0 || e.rank >= nranks)
      return ATOLL_ERROR(ncclSystemError, "bootstrap: root %s answered with rank %d of %d", root.addr.toString().c_str(),
                         e.rank, nranks);
  return entries;
}

/// The listen addresses of this rank's Bruck partners: from its own root, then from the roots that
/// serve the others (one lookup per root).
Result<std::vector<net::SockAddr>> partnerAddresses(std::span<const ncclUniqueId> ids, int rank, int nranks,
                                                     uint32_t infoSize, const net::SockAddr& myAddr,
                                                     const AbortFlag* abort, int64_t timeoutMs, int* messages) {
  const int nroots = static_cast<int>(ids.size());
  std::vector<net::SockAddr> addrs(static_cast<size_t>(nranks));
  const int mine = wire::rootOfRank(rank, nranks, nroots);
  std::map<int, std::vector<int32_t>> elsewhere;  // root -> partners it serves
  for (int p : wire::bruckPartners(rank, nranks)) {
    int root = wire::rootOfRank(p, nranks, nroots);
    if (root != mine) elsewhere[root].push_back(p);
  }
  ATOLL_ASSIGN_OR_RETURN(auto joined, ask(rootOf(ids[static_cast<size_t>(mine)], mine, nroots), wire::JoinKind::Join,
                                          rank, nranks, infoSize, myAddr, {}, abort, timeoutMs));
  ++*messages;
  for (const wire::AddrEntry& e : joined) addrs[static_cast<size_t>(e.rank)] = net::unpack(e.addr);
  for (const auto& [root, ranks] : elsewhere) {
    ATOLL_ASSIGN_OR_RETURN(auto found, ask(rootOf(ids[static_cast<size_t>(root)], root, nroots), wire::JoinKind::Lookup,
                                           rank, nranks, infoSize, myAddr, ranks, abort, timeoutMs));
    ++*messages;
    for (const wire::AddrEntry& e : found) addrs[static_cast<size_t>(e.rank)] = net::unpack(e.addr);
  }
  for (int p : wire::bruckPartners(rank, nranks))
    if (!addrs[static_cast<size_t>(p)].valid())
      return ATOLL_ERROR(ncclSystemError, "bootstrap: rank %d: no root answered with the address of rank %d", rank, p);
  return addrs;
}

}  // namespace

Result<std::unique_ptr<Bootstrap>> Bootstrap::create(const ncclUniqueId& id, int rank, int nranks,
                                                     std::span<const std::byte> myInfo, const AbortFlag* abort) {
  return create(std::span<const ncclUniqueId>(&id, 1), rank, nranks, myInfo, abort);
}

Result<std::unique_ptr<Bootstrap>> Bootstrap::create(std::span<const ncclUniqueId> ids, int rank, int nranks,
                                                     std::span<const std::byte> myInfo, const AbortFlag* abort) {
  if (nranks < 1 || nranks > wire::kMaxRanks)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap: nranks %d out of range [1,%d]", nranks, wire::kMaxRanks);
  if (rank < 0 || rank >= nranks)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap: rank %d out of range [0,%d)", rank, nranks);
  if (ids.empty() || static_cast<int>(ids.size()) > nranks)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap: %zu unique ids for %d ranks (need 1 to nranks)", ids.size(),
                       nranks);
  if (myInfo.size() > wire::kMaxInfoSize)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap: info of %zu bytes exceeds %u", myInfo.size(),
                       wire::kMaxInfoSize);
  for (const ncclUniqueId& id : ids)
    if (!isValidUniqueId(id)) return ATOLL_ERROR(ncclInvalidArgument, "bootstrap: invalid unique id");

  // Rank to rank, the first id's secret authenticates (every rank holds every id).
  IdLayout first = decodeId(ids[0]);
  Secret secret;
  std::memcpy(secret.data(), first.secret, secret.size());
  const int64_t timeoutMs = params::getInt(params::Id::BootstrapTimeoutMs);

  if ((first.flags & kIdFlagCommId) != 0 && rank == 0) {
    net::SockAddr bound;
    ATOLL_ASSIGN_OR_RETURN(net::Fd rootFd, net::listenOn(net::unpack(first.root), SOMAXCONN, &bound));
    ATOLL_CHECK(startRoot(std::move(rootFd), bound, secret, timeoutMs));
    ATOLL_INFO(log::kBootstrap, "bootstrap: rank 0 serving the NCCL_COMM_ID root at %s", bound.toString().c_str());
  }

  ATOLL_ASSIGN_OR_RETURN(net::SockAddr here, net::findInterfaceAddress(params::getString(params::Id::SocketIfname)));
  net::SockAddr myAddr;
  ATOLL_ASSIGN_OR_RETURN(net::Fd listenFd, net::listenOn(here, 1024, &myAddr));

  int rootMessages = 0;
  ATOLL_ASSIGN_OR_RETURN(std::vector<net::SockAddr> partners,
                         partnerAddresses(ids, rank, nranks, static_cast<uint32_t>(myInfo.size()), myAddr, abort,
                                          timeoutMs, &rootMessages));
  Digest idHash = sha256({reinterpret_cast<const uint8_t*>(ids.data()), ids.size_bytes()});
  uint64_t commHash;
  std::memcpy(&commHash, idHash.data(), sizeof(commHash));
  auto impl = std::make_unique<BootstrapImpl>(rank, nranks, std::move(partners), secret, commHash, abort, timeoutMs);
  ATOLL_CHECK(impl->start(std::move(listenFd)));
  ATOLL_CHECK(impl->gatherTable(myAddr, myInfo, rootMessages));
  ATOLL_INFO(log::kBootstrap, "bootstrap: rank %d of %d ready, listening on %s (%zu root(s))", rank, nranks,
             myAddr.toString().c_str(), ids.size());
  return std::unique_ptr<Bootstrap>(std::move(impl));
}

}  // namespace atl::bootstrap
