// Unique id creation. A normal id starts a root server in this process; an NCCL_COMM_ID id is a pure
// function of the environment so every process can compute it without talking to anyone.
#include "bootstrap/unique_id.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>

#include "base/debug.h"
#include "base/params.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/root.h"

namespace atl::bootstrap {

ncclUniqueId encodeId(const IdLayout& layout) {
  ncclUniqueId id;
  std::memcpy(&id, &layout, sizeof(id));
  return id;
}

IdLayout decodeId(const ncclUniqueId& id) {
  IdLayout layout;
  std::memcpy(&layout, &id, sizeof(layout));
  return layout;
}

Secret deriveCommIdSecret(const std::string& commId, const std::string& extraSecret) {
  // NUL separators keep ("ab","c") and ("a","bc") distinct.
  std::string material = "atoll-comm-id";
  material.push_back('\0');
  material += commId;
  material.push_back('\0');
  material += extraSecret;
  return sha256({reinterpret_cast<const uint8_t*>(material.data()), material.size()});
}

bool isValidUniqueId(const ncclUniqueId& id) {
  IdLayout l = decodeId(id);
  return l.magic == kIdMagic && l.version == kIdVersion && (l.root.family == AF_INET || l.root.family == AF_INET6);
}

namespace {

/// The NCCL_COMM_ID secret: ATOLL_BOOTSTRAP_SECRET or the contents of ATOLL_BOOTSTRAP_SECRET_FILE.
Result<std::string> commIdSecret(const std::string& commId) {
  const std::string& inline_ = params::getString(params::Id::BootstrapSecret);
  const std::string& path = params::getString(params::Id::BootstrapSecretFile);
  if (!inline_.empty() && !path.empty())
    return ATOLL_ERROR(ncclInvalidUsage, "set ATOLL_BOOTSTRAP_SECRET or ATOLL_BOOTSTRAP_SECRET_FILE, not both");
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return ATOLL_ERROR(ncclInvalidUsage, "ATOLL_BOOTSTRAP_SECRET_FILE=%s cannot be read", path.c_str());
    std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
    if (secret.empty()) return ATOLL_ERROR(ncclInvalidUsage, "ATOLL_BOOTSTRAP_SECRET_FILE=%s is empty", path.c_str());
    return secret;
  }
  if (inline_.empty()) {
    static std::once_flag once;
    std::call_once(once, [&] {
      ATOLL_WARN("NCCL_COMM_ID=%s without ATOLL_BOOTSTRAP_SECRET or ATOLL_BOOTSTRAP_SECRET_FILE: the job is "
                 "UNAUTHENTICATED, anyone who can reach that port can join it or read what ranks publish",
                 commId.c_str());
    });
  }
  return inline_;
}

}  // namespace

Result<ncclUniqueId> generateUniqueId(bool ignoreCommIdEnv) {
  IdLayout l{};
  l.magic = kIdMagic;
  l.version = kIdVersion;
  const std::string& commId = params::getString(params::Id::CommId);
  if (!ignoreCommIdEnv && !commId.empty()) {
    ATOLL_ASSIGN_OR_RETURN(net::SockAddr addr, net::parseHostPort(commId));
    if (addr.port() == 0) return ATOLL_ERROR(ncclInvalidUsage, "NCCL_COMM_ID=%s: port must not be 0", commId.c_str());
    l.flags = kIdFlagCommId;
    l.root = net::pack(addr);
    ATOLL_ASSIGN_OR_RETURN(std::string extra, commIdSecret(commId));
    Secret s = deriveCommIdSecret(commId, extra);
    std::memcpy(l.secret, s.data(), s.size());
    ATOLL_INFO(log::kBootstrap, "bootstrap: unique id from NCCL_COMM_ID=%s (root served by rank 0)",
               addr.toString().c_str());
    return encodeId(l);
  }

  Secret s;
  randomBytes(s);
  std::memcpy(l.secret, s.data(), s.size());
  std::string ifname;
  ATOLL_ASSIGN_OR_RETURN(net::SockAddr where,
                         net::findInterfaceAddress(params::getString(params::Id::SocketIfname), &ifname));
  net::SockAddr bound;
  ATOLL_ASSIGN_OR_RETURN(net::Fd listenFd, net::listenOn(where, SOMAXCONN, &bound));
  l.root = net::pack(bound);
  ATOLL_CHECK(startRoot(std::move(listenFd), bound, s, params::getInt(params::Id::BootstrapTimeoutMs)));
  ATOLL_INFO(log::kBootstrap, "bootstrap: root listening on %s (%s)", bound.toString().c_str(), ifname.c_str());
  return encodeId(l);
}

}  // namespace atl::bootstrap
