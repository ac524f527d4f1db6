// Bootstrap::create: the rank side of the rendezvous.
#include "bootstrap/bootstrap.h"

#include <cstring>

#include "bootstrap/messaging.h"
#include "bootstrap/root.h"
#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "core/debug.h"
#include "core/params.h"

namespace atl::bootstrap {
namespace {

// A rank waits this much longer than the root for the table, so the root's explanation of a timeout
// (which ranks are missing) arrives before the rank gives up on its own.
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

Result<BootstrapImpl::Table> join(const net::SockAddr& root, const Secret& secret, int rank, int nranks,
                                  std::span<const std::byte> myInfo, const net::SockAddr& myAddr,
                                  const AbortFlag* abort, int64_t timeoutMs) {
  Deadline deadline = Deadline::afterMs(timeoutMs);
  ATOLL_ASSIGN_OR_RETURN(net::Fd fd, net::connectTo(root, deadline, abort));
  wire::Nonce nonce;
  ATOLL_CHECK(net::recvAll(fd.get(), nonce.data(), nonce.size(), deadline, abort));
  wire::JoinHeader h{};
  h.magic = wire::kJoinMagic;
  h.version = wire::kVersion;
  h.rank = rank;
  h.nranks = nranks;
  h.infoSize = static_cast<uint32_t>(myInfo.size());
  h.listenAddr = net::pack(myAddr);
  Digest proof = wire::joinProof(secret, nonce, h);
  std::memcpy(h.proof, proof.data(), proof.size());
  ATOLL_CHECK(net::sendAll(fd.get(), &h, sizeof(h), deadline, abort));
  ATOLL_CHECK(net::sendAll(fd.get(), myInfo.data(), myInfo.size(), deadline, abort));

  Deadline replyDeadline = Deadline::afterMs(timeoutMs > 0 ? timeoutMs + kReplyGraceMs : 0);
  wire::ReplyHeader rh;
  Status s = net::recvAll(fd.get(), &rh, sizeof(rh), replyDeadline, abort);
  if (!s.ok())
    return ATOLL_ERROR(s.code(), "bootstrap: rank %d of %d got no rendezvous reply from root %s", rank, nranks,
                       root.toString().c_str());
  if (rh.magic != wire::kReplyMagic)
    return ATOLL_ERROR(ncclSystemError, "bootstrap: root %s sent a malformed reply", root.toString().c_str());
  if (rh.status != ncclSuccess) {
    std::string msg(std::min<uint32_t>(rh.msgLen, 4096), '\0');
    ATOLL_CHECK(net::recvAll(fd.get(), msg.data(), msg.size(), replyDeadline, abort));
    return ATOLL_ERROR(toResult(rh.status), "bootstrap: rank %d of %d: %s", rank, nranks, msg.c_str());
  }
  if (rh.nranks != nranks || rh.infoSize != myInfo.size())
    return ATOLL_ERROR(ncclSystemError, "bootstrap: root %s sent a table for %d ranks x %u bytes, expected %d x %zu",
                       root.toString().c_str(), rh.nranks, rh.infoSize, nranks, myInfo.size());
  std::vector<net::PackedAddr> packed(static_cast<size_t>(nranks));
  ATOLL_CHECK(net::recvAll(fd.get(), packed.data(), packed.size() * sizeof(net::PackedAddr), replyDeadline, abort));
  BootstrapImpl::Table t;
  t.infoSize = myInfo.size();
  t.infos.resize(static_cast<size_t>(nranks) * myInfo.size());
  ATOLL_CHECK(net::recvAll(fd.get(), t.infos.data(), t.infos.size(), replyDeadline, abort));
  for (const auto& p : packed) t.addrs.push_back(net::unpack(p));
  return t;
}

}  // namespace

Result<std::unique_ptr<Bootstrap>> Bootstrap::create(const ncclUniqueId& id, int rank, int nranks,
                                                     std::span<const std::byte> myInfo, const AbortFlag* abort) {
  if (nranks < 1 || nranks > wire::kMaxRanks)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap: nranks %d out of range [1,%d]", nranks, wire::kMaxRanks);
  if (rank < 0 || rank >= nranks)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap: rank %d out of range [0,%d)", rank, nranks);
  if (myInfo.size() > wire::kMaxInfoSize)
    return ATOLL_ERROR(ncclInvalidArgument, "bootstrap: info of %zu bytes exceeds %u", myInfo.size(),
                       wire::kMaxInfoSize);
  if (!isValidUniqueId(id)) return ATOLL_ERROR(ncclInvalidArgument, "bootstrap: invalid unique id");

  IdLayout l = decodeId(id);
  Secret secret;
  std::memcpy(secret.data(), l.secret, secret.size());
  net::SockAddr root = net::unpack(l.root);
  const int64_t timeoutMs = params::getInt(params::Id::BootstrapTimeoutMs);

  if ((l.flags & kIdFlagCommId) != 0 && rank == 0) {
    net::SockAddr bound;
    ATOLL_ASSIGN_OR_RETURN(net::Fd rootFd, net::listenOn(root, 1024, &bound));
    ATOLL_CHECK(startRoot(std::move(rootFd), bound, secret, timeoutMs));
    ATOLL_INFO(log::kBootstrap, "bootstrap: rank 0 serving the NCCL_COMM_ID root at %s", bound.toString().c_str());
  }

  ATOLL_ASSIGN_OR_RETURN(net::SockAddr here, net::findInterfaceAddress(params::getString(params::Id::SocketIfname)));
  net::SockAddr myAddr;
  ATOLL_ASSIGN_OR_RETURN(net::Fd listenFd, net::listenOn(here, 1024, &myAddr));

  ATOLL_ASSIGN_OR_RETURN(BootstrapImpl::Table table,
                         join(root, secret, rank, nranks, myInfo, myAddr, abort, timeoutMs));
  Digest idHash = sha256({reinterpret_cast<const uint8_t*>(&id), sizeof(id)});
  uint64_t commHash;
  std::memcpy(&commHash, idHash.data(), sizeof(commHash));
  auto impl = std::make_unique<BootstrapImpl>(rank, nranks, std::move(table), secret, commHash, abort, timeoutMs);
  ATOLL_CHECK(impl->start(std::move(listenFd)));
  ATOLL_INFO(log::kBootstrap, "bootstrap: rank %d of %d ready, listening on %s", rank, nranks,
             myAddr.toString().c_str());
  return std::unique_ptr<Bootstrap>(std::move(impl));
}

}  // namespace atl::bootstrap
