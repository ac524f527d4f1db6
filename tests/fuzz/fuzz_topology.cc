// The topology and fabric file parsers (NCCL_TOPO_FILE, ATOLL_FABRIC_FILE) on arbitrary text: no
// crash, no unbounded allocation, and a fabric that parses formats back to itself.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "topology/fabric.h"
#include "topology/topo_xml.h"
#include "topology/xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    auto f = atl::topo::parseFabric(text);
    if (f.ok()) {
      const std::string once = atl::topo::formatFabric(*f);
      auto again = atl::topo::parseFabric(once);
      if (!again.ok() || atl::topo::formatFabric(*again) != once) std::abort();
    }
  } else {
    auto x = atl::topo::parseXml(text);
    if (x.ok()) (void)atl::topo::graphFromXml(*x);
  }
  return 0;
}
