#include "perf/common/options.h"

#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "perf/common/values.h"

namespace atl::perf {
namespace {

bool parseLong(const char* text, long min, long max, long* out) {
  if (text == nullptr || *text == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

template <class T>
bool parseIntArg(const char* text, long min, long max, T* out) {
  long v = 0;
  if (!parseLong(text, min, max, &v)) return false;
  *out = static_cast<T>(v);
  return true;
}

bool parseOps(const std::string& text, std::vector<ncclRedOp_t>* out) {
  static constexpr ncclRedOp_t kAll[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  out->clear();
  if (text == "all") {
    out->assign(std::begin(kAll), std::end(kAll));
    return true;
  }
  for (ncclRedOp_t op : kAll) {
    if (text == opName(op)) {
      out->push_back(op);
      return true;
    }
  }
  return false;
}

bool parseTypes(const std::string& text, std::vector<ncclDataType_t>* out) {
  out->clear();
  if (text == "all") {
    for (const TypeInfo& t : allTypes()) out->push_back(t.type);
    return true;
  }
  ncclDataType_t type;
  if (!parseTypeName(text, &type)) return false;
  out->push_back(type);
  return true;
}

constexpr option kLongOptions[] = {
    {"minbytes", required_argument, nullptr, 'b'},
    {"maxbytes", required_argument, nullptr, 'e'},
    {"stepbytes", required_argument, nullptr, 'i'},
    {"stepfactor", required_argument, nullptr, 'f'},
    {"iters", required_argument, nullptr, 'n'},
    {"agg_iters", required_argument, nullptr, 'm'},
    {"warmup_iters", required_argument, nullptr, 'w'},
    {"check", required_argument, nullptr, 'c'},
    {"op", required_argument, nullptr, 'o'},
    {"datatype", required_argument, nullptr, 'd'},
    {"root", required_argument, nullptr, 'r'},
    {"blocking", required_argument, nullptr, 'z'},
    {"local_register", required_argument, nullptr, 'R'},
    {"device_buffers", required_argument, nullptr, 'D'},
    {"average", required_argument, nullptr, 'a'},
    {"nthreads", required_argument, nullptr, 't'},
    {"ngpus", required_argument, nullptr, 'g'},
    {"run_cycles", required_argument, nullptr, 'N'},
    {"report_cputime", required_argument, nullptr, 'C'},
    {"output_file", required_argument, nullptr, 'J'},
    {"verbose", no_argument, nullptr, 'v'},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

}  // namespace

const char* opName(ncclRedOp_t op) {
  switch (op) {
    case ncclSum:
      return "sum";
    case ncclProd:
      return "prod";
    case ncclMax:
      return "max";
    case ncclMin:
      return "min";
    case ncclAvg:
      return "avg";
    default:
      return "none";
  }
}

ParseOutcome parseOptions(int argc, char** argv, Options* out, std::string* error) {
  Options o;
  optind = 1;
  opterr = 0;
  int c = 0;
  auto bad = [&](const char* what) {
    *error = std::string("invalid value '") + (optarg ? optarg : "") + "' for " + what;
    return ParseOutcome::Error;
  };
  while ((c = getopt_long(argc, argv, ":b:e:i:f:n:m:w:c:o:d:r:z:R:D:a:t:g:N:C:J:vh", kLongOptions, nullptr)) != -1) {
    switch (c) {
      case 'b':
        if (!parseByteSize(optarg, &o.minBytes)) return bad("-b (minbytes)");
        break;
      case 'e':
        if (!parseByteSize(optarg, &o.maxBytes)) return bad("-e (maxbytes)");
        break;
      case 'i':
        if (!parseByteSize(optarg, &o.stepBytes) || o.stepBytes == 0) return bad("-i (stepbytes)");
        break;
      case 'f': {
        char* end = nullptr;
        errno = 0;
        o.stepFactor = std::strtod(optarg, &end);
        if (errno != 0 || *end != '\0' || !std::isfinite(o.stepFactor) || o.stepFactor < 1.0)
          return bad("-f (stepfactor, >= 1)");
        break;
      }
      case 'n':
        if (!parseIntArg(optarg, 1, 1 << 30, &o.iters)) return bad("-n (iters)");
        break;
      case 'm':
        if (!parseIntArg(optarg, 1, 1 << 20, &o.aggIters)) return bad("-m (agg_iters)");
        break;
      case 'w':
        if (!parseIntArg(optarg, 0, 1 << 30, &o.warmupIters)) return bad("-w (warmup_iters)");
        break;
      case 'c': {
        int v = 0;
        if (!parseIntArg(optarg, 0, 1, &v)) return bad("-c (check, 0 or 1)");
        o.check = v != 0;
        break;
      }
      case 'o':
        o.opArg = optarg;
        if (!parseOps(o.opArg, &o.ops)) return bad("-o (sum, prod, min, max, avg or all)");
        break;
      case 'd':
        o.typeArg = optarg;
        if (!parseTypes(o.typeArg, &o.types)) return bad("-d (datatype)");
        break;
      case 'r':
        if (!parseIntArg(optarg, 0, std::numeric_limits<int>::max(), &o.root)) return bad("-r (root)");
        break;
      case 'z': {
        int v = 0;
        if (!parseIntArg(optarg, 0, 1, &v)) return bad("-z (blocking, 0 or 1)");
        o.blocking = v != 0;
        break;
      }
      case 'R': {
        int v = 0;
        if (!parseIntArg(optarg, 0, 1, &v)) return bad("-R (local_register, 0 or 1)");
        o.localRegister = v != 0;
        break;
      }
      case 'D': {
        int v = 0;
        if (!parseIntArg(optarg, 0, 1, &v)) return bad("-D (device_buffers, 0 or 1)");
        o.deviceBuffers = v != 0;
        break;
      }
      case 'a': {
        int v = 0;
        if (!parseIntArg(optarg, 0, 3, &v)) return bad("-a (average, 0..3)");
        o.average = static_cast<TimeReduce>(v);
        break;
      }
      case 't':
        if (!parseIntArg(optarg, 1, 1024, &o.threads)) return bad("-t (threads)");
        break;
      case 'g':
        if (!parseIntArg(optarg, 1, 1024, &o.ranksPerThread)) return bad("-g (ranks per thread)");
        break;
      case 'N':
        if (!parseIntArg(optarg, 0, 1 << 30, &o.cycles)) return bad("-N (run cycles)");
        break;
      case 'C': {
        int v = 0;
        if (!parseIntArg(optarg, 0, 1, &v)) return bad("-C (report cputime, 0 or 1)");
        o.cpuTime = v != 0;
        break;
      }
      case 'J':
        if (*optarg == '\0') return bad("-J (json file)");
        o.jsonPath = optarg;
        break;
      case 'v':
        o.verbose = true;
        break;
      case 'h':
        return ParseOutcome::Help;
      case ':':
        *error = std::string("option ") + (optopt ? std::string("-") + static_cast<char>(optopt) : argv[optind - 1]) +
                 " needs a value";
        return ParseOutcome::Error;
      default:
        *error = std::string("unknown option ") +
                 (optopt ? std::string("-") + static_cast<char>(optopt) : std::string(argv[optind - 1]));
        return ParseOutcome::Error;
    }
  }
  if (optind < argc) {
    *error = std::string("unexpected argument '") + argv[optind] + "'";
    return ParseOutcome::Error;
  }
  if (o.minBytes > o.maxBytes) {
    *error = "-b (minbytes) is larger than -e (maxbytes)";
    return ParseOutcome::Error;
  }
  *out = std::move(o);
  return ParseOutcome::Run;
}

void printUsage(const char* prog, bool hasOp, bool hasRoot) {
  std::fprintf(stderr,
               "usage: %s [options]\n"
               "  -b,--minbytes <size>        smallest message (default 32M; suffixes K, M, G)\n"
               "  -e,--maxbytes <size>        largest message (default 32M)\n"
               "  -i,--stepbytes <size>       additive step (default 1M)\n"
               "  -f,--stepfactor <factor>    multiplicative step (default off)\n"
               "  -n,--iters <n>              timed iterations per size (default 20)\n"
               "  -m,--agg_iters <n>          operations aggregated in one group per iteration (default 1)\n"
               "  -w,--warmup_iters <n>       warm-up iterations (default 1)\n"
               "  -c,--check <0/1>            verify results (default 1)\n"
               "%s"
               "  -d,--datatype <type>        int8 uint8 int32 uint32 int64 uint64 half float double bfloat16\n"
               "                              f8e4m3 f8e5m2 or all (default float)\n"
               "%s"
               "  -z,--blocking <0/1>         blocking collectives (accepted; host calls always complete)\n"
               "  -R,--local_register <0/1>   buffers from ncclMemAlloc, registered with ncclCommRegister: shm\n"
               "                              links between processes then move them in a single copy (default 0)\n"
               "  -D,--device_buffers <0/1>   buffers in device memory (ncclMemAlloc on ATOLL_DEVICE=cuda or emu)\n"
               "                              and a stream per rank, as nccl-tests has them (default 0: host)\n"
               "  -a,--average <0..3>         combine rank times: 0 min, 1 avg, 2 max, 3 sum (default 1)\n"
               "  -t,--nthreads <n>           threads per process (default 1)\n"
               "  -g,--ngpus <n>              ranks per thread (default 1)\n"
               "  -N,--run_cycles <n>         repeat the sweep n times, 0 = forever (default 1)\n"
               "  -C,--report_cputime <0/1>   report process CPU time instead of wall time\n"
               "  -J,--output_file <file>     also write the results as JSON\n"
               "  -v,--verbose                show the running size on stderr\n"
               "  -h,--help                   this message\n"
               "exit status: 0 ok, 1 wrong results, 2 usage or environment error, 3 library error\n",
               prog, hasOp ? "  -o,--op <op>                sum prod min max avg or all (default sum)\n" : "",
               hasRoot ? "  -r,--root <rank>            root rank (default 0)\n" : "");
}

std::vector<size_t> messageSizes(const Options& o) {
  std::vector<size_t> sizes;
  for (size_t s = o.minBytes; s <= o.maxBytes;) {
    sizes.push_back(s);
    size_t next = o.stepFactor > 1 ? static_cast<size_t>(static_cast<double>(s) * o.stepFactor) : s + o.stepBytes;
    if (next <= s) next = s + 1;
    s = next;
  }
  return sizes;
}

}  // namespace atl::perf
