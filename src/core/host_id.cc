#include "core/host_id.h"

#include <unistd.h>

#include <fstream>

#include "core/params.h"

namespace atl {
namespace {
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
}  // namespace

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
