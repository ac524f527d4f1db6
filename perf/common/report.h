// Output of the perf tools on the rank that holds rank 0: the nccl-tests text table on stdout and,
// with -J, the same results as JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf/common/collectives.h"
#include "perf/common/options.h"
#include "perf/common/world.h"

namespace atl::perf {

struct Measurement {
  double timeUs = 0;
  double algBw = 0;    // GB/s
  double busBw = 0;    // GB/s
  int64_t wrong = -1;  // -1: not checked
};

struct Row {
  size_t bytes = 0;
  size_t count = 0;
  ncclDataType_t type = ncclFloat;
  const char* op = "none";
  int root = -1;
  Measurement outOfPlace, inPlace;
};

class Report {
 public:
  Report(const Options& options, const CollInfo& coll, const World& world, int nranks);

  void printPreamble() const;
  /// One "#  Rank ..." line per rank, in rank order, followed by the table header.
  void printRanks(const std::vector<std::string>& rankLines) const;
  void addRow(const Row& row);
  /// Summary lines and the JSON file; returns the total number of wrong elements.
  int64_t finish();

 private:
  bool writeJson(int64_t wrong, double avgBusBw) const;

  const Options& options_;
  const CollInfo& coll_;
  const World& world_;
  int nranks_;
  std::vector<Row> rows_;
};

}  // namespace atl::perf
