// The topology and fabric file parsers (NCCL_TOPO_FILE, ATOLL_FABRIC_FILE) on arbitrary text: no
// crash, no unbounded allocation, a fabric that parses formats back to itself, an XML tree that
// writes back to itself, and a loaded graph that is sane and survives its own dump.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "topology/fabric.h"
#include "topology/topo_xml.h"
#include "topology/xml.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void checkGraph(const atl::topo::Graph& g) {
  for (const atl::topo::Link& l : g.links())
    check(l.a != l.b && l.count >= 1 && std::isfinite(l.bwGBs) && l.bwGBs >= 0 && std::isfinite(l.latUs) &&
          l.latUs >= 0);
  for (const atl::topo::Node& n : g.nodes()) check(!n.id.empty() && std::isfinite(n.speedMbps));
  // A dump must load again (NCCL_TOPO_DUMP_FILE -> NCCL_TOPO_FILE) with every node and link.
  auto again = atl::topo::loadTopology(atl::topo::dumpTopology(g));
  check(again.ok() && again->nodes().size() == g.nodes().size() && again->links().size() == g.links().size());
  for (size_t i = 0; i < g.nodes().size() && i < 4; ++i) (void)g.path(0, static_cast<int>(i));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    auto f = atl::topo::parseFabric(text);
    if (f.ok()) {
      const std::string once = atl::topo::formatFabric(*f);
      auto again = atl::topo::parseFabric(once);
      check(again.ok() && atl::topo::formatFabric(*again) == once);
    }
  } else {
    auto x = atl::topo::parseXml(text);
    if (!x.ok()) return 0;
    auto back = atl::topo::parseXml(atl::topo::writeXml(*x));
    check(back.ok() && *back == *x);
    auto g = atl::topo::graphFromXml(*x);
    if (g.ok()) checkGraph(*g);
  }
  return 0;
}
