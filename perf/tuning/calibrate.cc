// atoll-calibrate: measures this machine's all-reduce times per algorithm and link kind with the
// perf tool users run (all_reduce_perf, each algorithm forced with NCCL_ALGO, one emulated island),
// fits the cost model's parameters to them (src/tuning/calibration.h), and writes the result as
// NCCL_CONF_FILE lines. Each measurement is its own job, so every setting reaches the library the
// way a user's would: through the environment of freshly started ranks.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "perf/common/options.h"
#include "tuning/calibration.h"

extern char** environ;

namespace atl::tuning {
namespace {

using algo::Algo;

struct Args {
  int np = 4;
  size_t maxBytes = size_t{16} << 20;
  int iters = 20;
  int repeat = 3;
  std::vector<std::string> links{"shm", "socket"};
  std::string out;
  std::string launcher;
  std::string perf;
  bool verbose = false;
};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: atoll-calibrate [--np N] [--max BYTES] [--iters N] [--repeat R] [--links shm,socket]\n"
               "                       [--out FILE] [--launcher PATH] [--perf PATH] [-v]\n"
               "  Runs all_reduce_perf on N local ranks (default 4) for every all-reduce algorithm over each\n"
               "  link kind, 8 B to BYTES (default 16M) in steps of 8x, R times (default 3; the fastest run of\n"
               "  each size counts, since noise only adds time), fits the cost model to the times and\n"
               "  writes ATOLL_MODEL_* lines for NCCL_CONF_FILE to FILE (default: stdout). The fit report\n"
               "  (measured vs. model before and after) goes to stderr.\n");
}

std::string selfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

bool parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= argc) return std::fprintf(stderr, "atoll-calibrate: %s needs a value\n", f.c_str()), false;
      *v = argv[++i];
      return true;
    };
    std::string v;
    if (f == "-h" || f == "--help") {
      usage(stdout);
      std::exit(0);
    } else if (f == "-v") {
      a->verbose = true;
    } else if (f == "--np" || f == "--iters" || f == "--repeat") {
      if (!value(&v)) return false;
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < (f == "--np" ? 2 : 1) || n > 4096)
        return std::fprintf(stderr, "atoll-calibrate: bad %s '%s'\n", f.c_str(), v.c_str()), false;
      (f == "--np" ? a->np : f == "--iters" ? a->iters : a->repeat) = static_cast<int>(n);
    } else if (f == "--max") {
      if (!value(&v)) return false;
      if (!perf::parseByteSize(v, &a->maxBytes) || a->maxBytes < 4096)
        return std::fprintf(stderr, "atoll-calibrate: bad --max '%s' (at least 4K)\n", v.c_str()), false;
    } else if (f == "--links") {
      if (!value(&v)) return false;
      a->links.clear();
      std::stringstream ss(v);
      for (std::string l; std::getline(ss, l, ',');) {
        if (l != "shm" && l != "socket")
          return std::fprintf(stderr, "atoll-calibrate: unknown link '%s' (shm, socket)\n", l.c_str()), false;
        a->links.push_back(l);
      }
      if (a->links.empty()) return std::fprintf(stderr, "atoll-calibrate: --links is empty\n"), false;
    } else if (f == "--out") {
      if (!value(&a->out)) return false;
    } else if (f == "--launcher") {
      if (!value(&a->launcher)) return false;
    } else if (f == "--perf") {
      if (!value(&a->perf)) return false;
    } else {
      std::fprintf(stderr, "atoll-calibrate: unknown option '%s'\n", f.c_str());
      usage(stderr);
      return false;
    }
  }
  const std::string dir = selfDir();
  if (a->launcher.empty()) a->launcher = dir + "/atollrun";
  if (a->perf.empty()) a->perf = dir + "/../perf/all_reduce_perf";
  return true;
}

/// Runs argv with stdout and stderr in `log`; the exit status, or -1 if it could not start.
int run(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> cargv;
  for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// The per-size times of one all_reduce_perf -J file: the mean of out-of-place and in-place, since
/// the selector serves both.
bool readSamples(const std::string& path, Algo a, std::vector<Sample>* out) {
  std::ifstream in(path);
  if (!in) return false;
  bool any = false;
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find("{\"size\": ");
    if (at == std::string::npos) continue;
    unsigned long long size = 0;
    double oop = 0, ip = 0;
    const size_t o = line.find("\"outOfPlace\": {\"time_us\": "), i = line.find("\"inPlace\": {\"time_us\": ");
    if (std::sscanf(line.c_str() + at, "{\"size\": %llu", &size) != 1 || o == std::string::npos ||
        i == std::string::npos || std::sscanf(line.c_str() + o, "\"outOfPlace\": {\"time_us\": %lf", &oop) != 1 ||
        std::sscanf(line.c_str() + i, "\"inPlace\": {\"time_us\": %lf", &ip) != 1)
      return false;
    out->push_back({a, static_cast<size_t>(size), (oop + ip) / 2});
    any = true;
  }
  return any;
}

void report(const char* link, const std::vector<Sample>& samples, int np, const LinkParams& before,
            const ModelParams& mBefore, const LinkParams& after, const ModelParams& mAfter) {
  std::fprintf(stderr, "# %s, %d ranks: all-reduce time, measured vs. model (registry values before, fit after)\n",
               link, np);
  std::fprintf(stderr, "# %-13s %10s %12s %12s %8s %12s %8s\n", "algorithm", "bytes", "measured_us", "before_us",
               "err", "after_us", "err");
  double errBefore = 0, errAfter = 0;
  int n = 0;
  for (const Sample& s : samples) {
    const double b = predictUs(s, np, before, mBefore), a = predictUs(s, np, after, mAfter);
    if (!std::isfinite(b) || !std::isfinite(a)) continue;
    const double eb = (b - s.us) / s.us, ea = (a - s.us) / s.us;
    std::fprintf(stderr, "  %-13s %10zu %12.2f %12.2f %+7.0f%% %12.2f %+7.0f%%\n", algo::algoName(s.algo), s.bytes,
                 s.us, b, 100 * eb, a, 100 * ea);
    errBefore += std::fabs(eb), errAfter += std::fabs(ea), ++n;
  }
  if (n > 0)
    std::fprintf(stderr, "# %s: mean |error| %.0f%% before, %.0f%% after (%d samples)\n", link, 100 * errBefore / n,
                 100 * errAfter / n, n);
}

int main(int argc, char** argv) {
  Args args;
  if (!parseArgs(argc, argv, &args)) return 2;
  for (const std::string& p : {args.launcher, args.perf}) {
    if (access(p.c_str(), X_OK) != 0) {
      std::fprintf(stderr, "atoll-calibrate: %s is not executable (use --launcher / --perf)\n", p.c_str());
      return 2;
    }
  }
  char tmpl[] = "/tmp/atoll-calibrate-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return std::perror("atoll-calibrate: mkdtemp"), 1;
  const std::string tmp = tmpl;

  const ModelParams before = modelParams();
  ModelParams after = before;
  bool shmFitted = false;
  std::vector<std::string> lines;
  int status = 0;
  for (const std::string& link : args.links) {
    const bool shm = link == "shm";
    std::vector<Algo> algos{Algo::Ring, Algo::Tree, Algo::RecursiveHalvingDoubling};
    if ((args.np & (args.np - 1)) == 0) algos.push_back(Algo::RecursiveDoubling);
    // One-shot separates the per-step overhead from the hop latency; that is a software figure,
    // so it is fitted once, on shared memory.
    if (shm && args.np >= 3) algos.push_back(Algo::Direct);
    std::vector<Sample> samples;
    for (Algo a : algos) {
      const std::string base = tmp + "/" + link + "-" + algo::algoName(a);
      size_t maxBytes = args.maxBytes;
      if (a == Algo::Direct) maxBytes = std::min(maxBytes, kDirectMaxTotalBytes / static_cast<size_t>(args.np));
      std::vector<std::string> cmd{args.launcher, "-np", std::to_string(args.np), "--timeout", "600",
                                   "-x", std::string("NCCL_ALGO=allreduce:") + algo::algoName(a),
                                   "-x", std::string("NCCL_SHM_DISABLE=") + (shm ? "0" : "1"),
                                   "-x", "ATOLL_ISLAND_SIZE=" + std::to_string(args.np),
                                   args.perf, "-b", "8", "-e", std::to_string(maxBytes), "-f", "8",
                                   "-n", std::to_string(args.iters), "-w", "3", "-c", "0", "-a", "2",
                                   "-J", base + ".json"};
      if (args.verbose) {
        std::string line;
        for (const std::string& c : cmd) line += c + " ";
        std::fprintf(stderr, "atoll-calibrate: %s\n", line.c_str());
      }
      std::vector<Sample> best;
      for (int r = 0; r < args.repeat; ++r) {
        std::vector<Sample> got;
        const int rc = run(cmd, base + ".log");
        if (rc != 0 || !readSamples(base + ".json", a, &got)) {
          std::fprintf(stderr, "atoll-calibrate: %s %s failed (exit %d); its output is in %s.log\n", link.c_str(),
                       algo::algoName(a), rc, base.c_str());
          return 1;
        }
        if (best.empty()) best = got;
        for (size_t i = 0; i < got.size() && i < best.size(); ++i) best[i].us = std::min(best[i].us, got[i].us);
      }
      samples.insert(samples.end(), best.begin(), best.end());
    }
    LinkFit fit;
    std::string error;
    const double priorOverhead = shmFitted ? after.stepOverheadUs : before.stepOverheadUs;
    if (!fitLink(samples, args.np, priorOverhead, &fit, &error)) {
      std::fprintf(stderr, "atoll-calibrate: %s: %s\n", link.c_str(), error.c_str());
      return 1;
    }
    if (shm) {
      after.shm = fit.link;
      after.stepOverheadUs = fit.stepOverheadUs;
      if (fit.treeBwPenalty > 0) after.treeBwPenalty = fit.treeBwPenalty;
      if (fit.rhdBwPenalty > 0) after.rhdBwPenalty = fit.rhdBwPenalty;
      if (fit.rdBwPenalty > 0) after.rdBwPenalty = fit.rdBwPenalty;
      shmFitted = true;
    } else {
      after.socket = fit.link;
    }
    report(link.c_str(), samples, args.np, shm ? before.shm : before.socket, before, fit.link, after);
  }

  auto nsOf = [](double us) { return static_cast<long long>(std::llround(us * 1e3)); };
  auto mbsOf = [](double gbs) { return static_cast<long long>(std::llround(gbs * 1e3)); };
  auto pctOf = [](double x) { return static_cast<long long>(std::llround(x * 100)); };
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  char when[64];
  const time_t now = time(nullptr);
  strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&now));
  std::string text;
  char line[256];
  snprintf(line, sizeof(line), ": %d ranks, 8 B..%zu B, %d iterations, best of %d, links ", args.np, args.maxBytes,
           args.iters, args.repeat);
  text += std::string("# atoll-calibrate on ") + host + ", " + when + line +
          (args.links.size() == 2 ? "shm+socket" : args.links[0]) + "\n";
  text += "# Use it with NCCL_CONF_FILE=<this file>, or append it to ~/.nccl.conf.\n";
  auto emit = [&](const char* name, long long v) {
    snprintf(line, sizeof(line), "%s=%lld\n", name, v);
    text += line;
  };
  for (const std::string& link : args.links) {
    if (link == "shm") {
      emit("ATOLL_MODEL_SHM_BW_MBS", mbsOf(after.shm.bwGBs));
      emit("ATOLL_MODEL_SHM_LAT_NS", nsOf(after.shm.latUs));
      emit("ATOLL_MODEL_STEP_NS", nsOf(after.stepOverheadUs));
      emit("ATOLL_MODEL_TREE_BW_PCT", pctOf(after.treeBwPenalty));
      emit("ATOLL_MODEL_RHD_BW_PCT", pctOf(after.rhdBwPenalty));
      emit("ATOLL_MODEL_RD_BW_PCT", pctOf(after.rdBwPenalty));
    } else {
      emit("ATOLL_MODEL_SOCKET_BW_MBS", mbsOf(after.socket.bwGBs));
      emit("ATOLL_MODEL_SOCKET_LAT_NS", nsOf(after.socket.latUs));
    }
  }
  if (args.out.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    std::ofstream f(args.out);
    f << text;
    if (!f) return std::fprintf(stderr, "atoll-calibrate: cannot write %s\n", args.out.c_str()), 1;
  }
  std::string rm = "rm -rf '" + tmp + "'";
  if (std::system(rm.c_str()) != 0) status = 1;
  return status;
}

}  // namespace
}  // namespace atl::tuning

int main(int argc, char** argv) { return atl::tuning::main(argc, argv); }
