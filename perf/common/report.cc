#include "perf/common/report.h"

#include <cinttypes>
#include <cstdio>

namespace atl::perf {
namespace {

std::string formatTime(double us) {
  char buf[32];
  if (us >= 10000.0)
    std::snprintf(buf, sizeof buf, "%7.0f", us);
  else if (us >= 100.0)
    std::snprintf(buf, sizeof buf, "%7.1f", us);
  else
    std::snprintf(buf, sizeof buf, "%7.2f", us);
  return buf;
}

std::string formatWrong(int64_t wrong) {
  char buf[32];
  if (wrong < 0)
    std::snprintf(buf, sizeof buf, "%5s", "N/A");
  else
    std::snprintf(buf, sizeof buf, "%5" PRId64, wrong);
  return buf;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void jsonMeasurement(FILE* f, const char* name, const Measurement& m) {
  std::fprintf(f, "\"%s\": {\"time_us\": %.3f, \"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, \"wrong\": ", name, m.timeUs,
               m.algBw, m.busBw);
  if (m.wrong < 0)
    std::fprintf(f, "null}");
  else
    std::fprintf(f, "%" PRId64 "}", m.wrong);
}

}  // namespace

Report::Report(const Options& options, const CollInfo& coll, const World& world, int nranks)
    : options_(options), coll_(coll), world_(world), nranks_(nranks) {}

void Report::printPreamble() const {
  const Options& o = options_;
  std::printf("# Collective test starting: %s\n", coll_.tool);
  std::printf(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d agg iters: %d "
      "validation: %d graph: 0\n",
      o.threads, o.ranksPerThread, o.minBytes, o.maxBytes,
      o.stepFactor > 1 ? static_cast<size_t>(o.stepFactor) : o.stepBytes, o.stepFactor > 1 ? "factor" : "bytes",
      o.warmupIters, o.iters, o.aggIters, o.check ? 1 : 0);
  if (o.blocking) std::printf("# Blocking collectives: 1 (host calls complete on return anyway)\n");
  if (o.cpuTime) std::printf("# Reporting process CPU time\n");
  std::printf("#\n# Using devices\n");
  std::fflush(stdout);
}

void Report::printRanks(const std::vector<std::string>& rankLines) const {
  for (const std::string& line : rankLines) std::printf("%s\n", line.c_str());
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
              "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
              "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
              "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

void Report::addRow(const Row& row) {
  std::printf("%12zu  %12zu  %8s  %6s  %6d", row.bytes, row.count, typeInfo(row.type).name, row.op, row.root);
  for (const Measurement* m : {&row.outOfPlace, &row.inPlace}) {
    std::printf("  %7s  %6.2f  %6.2f  %5s", formatTime(m->timeUs).c_str(), m->algBw, m->busBw,
                formatWrong(m->wrong).c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
  rows_.push_back(row);
}

int64_t Report::finish() {
  int64_t wrong = 0;
  double busBwSum = 0;
  size_t samples = 0;
  for (const Row& row : rows_) {
    for (const Measurement* m : {&row.outOfPlace, &row.inPlace}) {
      if (m->wrong > 0) wrong += m->wrong;
      busBwSum += m->busBw;
      ++samples;
    }
  }
  const double avgBusBw = samples ? busBwSum / static_cast<double>(samples) : 0.0;
  std::printf("# Out of bounds values : %" PRId64 " %s\n", wrong, wrong ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    : %g \n", avgBusBw);
  std::printf("#\n");
  std::fflush(stdout);
  if (!options_.jsonPath.empty() && !writeJson(wrong, avgBusBw)) {
    std::fprintf(stderr, "%s: cannot write %s\n", coll_.tool, options_.jsonPath.c_str());
    if (wrong == 0) wrong = -1;
  }
  return wrong;
}

bool Report::writeJson(int64_t wrong, double avgBusBw) const {
  FILE* f = std::fopen(options_.jsonPath.c_str(), "w");
  if (f == nullptr) return false;
  const Options& o = options_;
  std::fprintf(f, "{\n  \"tool\": %s,\n  \"collective\": %s,\n", jsonString(coll_.tool).c_str(),
               jsonString(coll_.name).c_str());
  std::fprintf(f, "  \"nranks\": %d,\n  \"nprocs\": %d,\n  \"launcher\": %s,\n", nranks_, world_.nprocs,
               jsonString(world_.launcher).c_str());
  std::fprintf(f,
               "  \"options\": {\"minBytes\": %zu, \"maxBytes\": %zu, \"stepBytes\": %zu, \"stepFactor\": %g, "
               "\"iters\": %d, \"warmupIters\": %d, \"aggIters\": %d, \"check\": %d, \"op\": %s, \"datatype\": %s, "
               "\"root\": %d, \"blocking\": %d, \"average\": %d, \"threads\": %d, \"ranksPerThread\": %d, "
               "\"cycles\": %d, \"cpuTime\": %d},\n",
               o.minBytes, o.maxBytes, o.stepBytes, o.stepFactor, o.iters, o.warmupIters, o.aggIters, o.check ? 1 : 0,
               jsonString(o.opArg).c_str(), jsonString(o.typeArg).c_str(), o.root, o.blocking ? 1 : 0,
               static_cast<int>(o.average), o.threads, o.ranksPerThread, o.cycles, o.cpuTime ? 1 : 0);
  std::fprintf(f, "  \"results\": [");
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    std::fprintf(f, "%s\n    {\"size\": %zu, \"count\": %zu, \"type\": %s, \"redop\": %s, \"root\": %d, ", i ? "," : "",
                 r.bytes, r.count, jsonString(typeInfo(r.type).name).c_str(), jsonString(r.op).c_str(), r.root);
    jsonMeasurement(f, "outOfPlace", r.outOfPlace);
    std::fprintf(f, ", ");
    jsonMeasurement(f, "inPlace", r.inPlace);
    std::fprintf(f, "}");
  }
  std::fprintf(f, "\n  ],\n  \"wrong\": %" PRId64 ",\n  \"avgBusBw_gbps\": %.6f\n}\n", wrong, avgBusBw);
  return std::fclose(f) == 0;
}

}  // namespace atl::perf
