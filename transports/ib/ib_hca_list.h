// NCCL_IB_HCA, as NCCL reads it: a comma list of HCA names, each optionally ":port"; a leading '^'
// excludes the listed HCAs instead of selecting them, and a leading '=' (after '^' if both) makes
// names match exactly instead of as prefixes ("mlx5" selects mlx5_0, mlx5_1, ...). Empty selects
// every HCA. Used to pick the ports the ibverbs net offers as devices.
#pragma once

#include <string>
#include <vector>

namespace atl::net::ib {

struct HcaFilter {
  struct Entry {
    std::string name;
    int port = -1;  // -1: every port
  };
  bool exclude = false;
  bool exact = false;
  std::vector<Entry> entries;  // empty: no filter

  /// Whether port `port` of HCA `device` is offered.
  bool allows(const std::string& device, int port) const;
};

/// Parses NCCL_IB_HCA's value. Malformed entries (an empty name, a port that is not a positive
/// number) make it fail with a message in *why; a filter that selects nothing is not malformed.
bool parseHcaList(const std::string& text, HcaFilter* out, std::string* why);

}  // namespace atl::net::ib
