#include "base/host_id.h"

#include <unistd.h>

#include <fstream>

#include "base/fnv1a.h"
#include "base/params.h"

namespace atl {
std::string hostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

uint64_t hostHash() {
  const std::string& forced = params::getString(params::Id::HostId);
  if (!forced.empty()) return fnv1a(forced);
  std::string bootId;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> bootId;
  return fnv1a(hostName() + bootId);
}

}  // namespace atl
