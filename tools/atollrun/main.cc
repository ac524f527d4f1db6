// atollrun: mpirun-like launcher for local jobs. It hosts the rendezvous root (ncclGetUniqueId) and
// hands every rank the id through ATOLL_UNIQUE_ID, with RANK, WORLD_SIZE, LOCAL_RANK and
// LOCAL_WORLD_SIZE, torchrun style.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "nccl.h"
#include "perf/common/tool_env.h"
#include "perf/common/world.h"
#include "tools/atollrun/launcher.h"

extern char** environ;

namespace {

constexpr int kExitUsage = 2;

void usage() {
  std::fprintf(stderr,
               "usage: atollrun -np N [options] program [args...]\n"
               "  -np, -n N          number of ranks (processes) to start\n"
               "  -x VAR=VALUE       set VAR for every rank (-x VAR exports the current value)\n"
               "  --timeout S        kill the job after S seconds (exit status 124)\n"
               "  --grace S          seconds between SIGTERM and SIGKILL when stopping ranks (default 3)\n"
               "  --tag-output       prefix every output line with [rank]\n"
               "  -h, --help         this message\n"
               "Each rank gets ATOLL_UNIQUE_ID, RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE.\n"
               "If a rank fails the others are stopped and atollrun exits with that rank's status\n"
               "(128+signal when it was killed).\n");
}

bool parseNumber(const char* text, double min, double max, double* out) {
  if (text == nullptr || *text == '\0') return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (errno != 0 || *end != '\0' || !(v >= min && v <= max)) return false;
  *out = v;
  return true;
}

std::string nameOf(const std::string& assignment) { return assignment.substr(0, assignment.find('=')); }

}  // namespace

int main(int argc, char** argv) {
  atl::run::LaunchSpec spec;
  spec.nranks = 0;
  std::vector<std::string> overrides;
  int i = 1;
  auto value = [&](const char* flag) -> const char* {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "atollrun: %s needs a value\n", flag);
      std::exit(kExitUsage);
    }
    return argv[++i];
  };
  for (; i < argc && argv[i][0] == '-'; ++i) {
    const std::string a = argv[i];
    double v = 0;
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-np" || a == "-n" || a == "--np") {
      if (!parseNumber(value("-np"), 1, 4096, &v) || v != static_cast<int>(v)) {
        std::fprintf(stderr, "atollrun: -np needs a rank count between 1 and 4096\n");
        return kExitUsage;
      }
      spec.nranks = static_cast<int>(v);
    } else if (a == "-x") {
      std::string x = value("-x");
      if (x.empty() || x[0] == '=') {
        std::fprintf(stderr, "atollrun: -x needs VAR=VALUE or VAR\n");
        return kExitUsage;
      }
      if (x.find('=') == std::string::npos) {
        const char* current = std::getenv(x.c_str());
        if (current == nullptr) continue;
        x += std::string("=") + current;
      }
      overrides.push_back(x);
    } else if (a == "--timeout") {
      if (!parseNumber(value("--timeout"), 0, 1e9, &spec.timeoutSec)) {
        std::fprintf(stderr, "atollrun: --timeout needs a number of seconds\n");
        return kExitUsage;
      }
    } else if (a == "--grace") {
      if (!parseNumber(value("--grace"), 0, 3600, &spec.graceSec)) {
        std::fprintf(stderr, "atollrun: --grace needs a number of seconds\n");
        return kExitUsage;
      }
    } else if (a == "--tag-output") {
      spec.tagOutput = true;
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "atollrun: unknown option %s\n", a.c_str());
      usage();
      return kExitUsage;
    }
  }
  if (spec.nranks == 0 || i >= argc) {
    std::fprintf(stderr, "atollrun: %s\n", spec.nranks == 0 ? "-np is required" : "no program given");
    usage();
    return kExitUsage;
  }
  spec.program = atl::run::resolveProgram(argv[i]);
  if (spec.program.empty()) {
    std::fprintf(stderr, "atollrun: cannot find executable '%s'\n", argv[i]);
    return kExitUsage;
  }
  spec.args.assign(argv + i, argv + argc);

  // The launcher's own variables and -x settings replace inherited ones.
  std::set<std::string> replaced{atl::perf::kEnvUniqueId, atl::perf::kEnvRank, atl::perf::kEnvWorldSize,
                                 atl::perf::kEnvLocalRank, atl::perf::kEnvLocalWorldSize};
  for (const std::string& o : overrides) replaced.insert(nameOf(o));
  for (char** e = environ; *e != nullptr; ++e) {
    if (!replaced.count(nameOf(*e))) spec.baseEnv.emplace_back(*e);
  }
  spec.baseEnv.insert(spec.baseEnv.end(), overrides.begin(), overrides.end());

  ncclUniqueId id;
  ncclResult_t res = ncclGetUniqueId(&id);
  if (res != ncclSuccess) {
    std::fprintf(stderr, "atollrun: ncclGetUniqueId failed: %s\n", ncclGetErrorString(res));
    return 1;
  }
  spec.uniqueIdHex = atl::perf::hexEncode(id);
  const int status = atl::run::launch(spec);
  std::fflush(nullptr);
  // The rendezvous root may still wait for ranks that never came; do not wait for it at exit.
  std::_Exit(status);
}
