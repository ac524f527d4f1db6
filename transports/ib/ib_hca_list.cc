#include "transports/ib/ib_hca_list.h"

#include <cstdlib>

namespace atl::net::ib {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

bool HcaFilter::allows(const std::string& device, int port) const {
  if (entries.empty()) return true;
  bool listed = false;
  for (const Entry& e : entries) {
    const bool nameMatches = exact ? device == e.name : device.compare(0, e.name.size(), e.name) == 0;
    if (nameMatches && (e.port < 0 || e.port == port)) listed = true;
  }
  return exclude ? !listed : listed;
}

bool parseHcaList(const std::string& text, HcaFilter* out, std::string* why) {
  *out = HcaFilter{};
  std::string s = trim(text);
  if (!s.empty() && s[0] == '^') {
    out->exclude = true;
    s = trim(s.substr(1));
  }
  if (!s.empty() && s[0] == '=') {
    out->exact = true;
    s = trim(s.substr(1));
  }
  if (s.empty()) {
    if (out->exclude || out->exact) {
      *why = "NCCL_IB_HCA '" + text + "' names no HCA after its prefix";
      return false;
    }
    return true;
  }
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = trim(s.substr(start, comma - start));
    start = comma + 1;
    HcaFilter::Entry e;
    const size_t colon = item.find(':');
    e.name = trim(item.substr(0, colon));
    if (e.name.empty()) {
      *why = "NCCL_IB_HCA '" + text + "' has an entry without an HCA name";
      return false;
    }
    if (colon != std::string::npos) {
      const std::string port = trim(item.substr(colon + 1));
      char* end = nullptr;
      const long p = std::strtol(port.c_str(), &end, 10);
      if (port.empty() || *end != '\0' || p < 1 || p > 255) {
        *why = "NCCL_IB_HCA '" + text + "': port '" + port + "' of " + e.name + " is not a port number (1-255)";
        return false;
      }
      e.port = static_cast<int>(p);
    }
    out->entries.push_back(std::move(e));
  }
  return true;
}

}  // namespace atl::net::ib
