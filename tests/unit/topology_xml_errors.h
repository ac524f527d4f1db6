// Topology XML that must be refused: each text fails to load with ncclInvalidArgument and an
// error that contains the expected words.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <string>

#include "base/status.h"
#include "topology/topo_xml.h"

namespace atl::topo::test {

struct XmlErrorCase {
  const char* text;
  const char* expect;
};

inline void expectXmlErrors(std::span<const XmlErrorCase> cases) {
  for (const XmlErrorCase& c : cases) {
    atl::clearLastError();
    auto g = loadTopology(c.text);
    EXPECT_FALSE(g.ok()) << c.text;
    EXPECT_EQ(g.status().code(), ncclInvalidArgument) << c.text;
    EXPECT_NE(atl::lastErrorMessage().find(c.expect), std::string::npos) << c.text << " -> " << atl::lastErrorMessage();
  }
}

}  // namespace atl::topo::test
