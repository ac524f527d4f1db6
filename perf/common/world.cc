#include "perf/common/world.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "perf/common/tool_env.h"

namespace atl::perf {
namespace {

constexpr auto kIdFileTimeout = std::chrono::seconds(120);

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

bool parseRankValue(const char* text, int* out) {
  if (text == nullptr) return false;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > (1 << 24)) return false;
  *out = static_cast<int>(v);
  return true;
}

bool readRankPair(const char* rankVar, const char* sizeVar, World* w, std::string* error) {
  if (!parseRankValue(env(rankVar), &w->proc) || !parseRankValue(env(sizeVar), &w->nprocs) || w->nprocs < 1 ||
      w->proc >= w->nprocs) {
    *error = std::string("bad or missing ") + rankVar + "/" + sizeVar + " in the environment";
    return false;
  }
  return true;
}

int localRank(int fallback) {
  for (const char* name : {kEnvLocalRank, "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    int v = 0;
    if (parseRankValue(env(name), &v)) return v;
  }
  return fallback;
}

bool idFromLibrary(ncclUniqueId* id, std::string* error) {
  ncclResult_t res = ncclGetUniqueId(id);
  if (res != ncclSuccess) {
    *error = std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(res);
    return false;
  }
  return true;
}

// Every rank derives the same id from NCCL_COMM_ID, so nothing has to be exchanged.
bool idFromMaster(World* w, std::string* error) {
  const char* addr = env(kEnvMasterAddr);
  const char* port = env(kEnvMasterPort);
  std::string commId = std::strchr(addr, ':') ? "[" + std::string(addr) + "]" : std::string(addr);
  commId += ":" + std::string(port ? port : "29500");
  setenv("NCCL_COMM_ID", commId.c_str(), 1);
  return idFromLibrary(&w->id, error);
}

std::string jobKey() {
  for (const char* name : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PMI_JOBID", "SLURM_JOB_ID"}) {
    if (const char* v = env(name)) {
      std::string key;
      for (const char* c = v; *c; ++c) key += (std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_');
      return key;
    }
  }
  return {};
}

bool idThroughFile(World* w, std::string* error) {
  std::string key = jobKey();
  if (key.empty()) {
    *error =
        "an MPI launcher was detected but neither MASTER_ADDR nor a job id (PMIX_NAMESPACE, "
        "OMPI_MCA_ess_base_jobid, PMI_JOBID, SLURM_JOB_ID) is set";
    return false;
  }
  const std::string path = "/tmp/atoll-perf-" + key + ".id";
  if (w->proc == 0) {
    if (!idFromLibrary(&w->id, error)) return false;
    // Written aside and renamed so readers never see a partial id.
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << hexEncode(w->id) << "\n";
      if (!out) {
        *error = "cannot write " + tmp;
        return false;
      }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      *error = "cannot publish " + path + ": " + std::strerror(errno);
      return false;
    }
    w->idFile = path;
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + kIdFileTimeout;
  for (;;) {
    std::ifstream in(path);
    std::string hex;
    if (in >> hex && hexDecode(hex, &w->id)) return true;
    if (std::chrono::steady_clock::now() > deadline) {
      *error = "timed out waiting for rank 0 to publish the unique id in " + path;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

std::string hexEncode(const ncclUniqueId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof(id.internal));
  for (char c : id.internal) {
    auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

bool hexDecode(const std::string& hex, ncclUniqueId* id) {
  if (hex.size() != 2 * sizeof(id->internal)) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    id->internal[i] = static_cast<char>(hi << 4 | lo);
  }
  return true;
}

bool discoverWorld(World* w, std::string* error) {
  if (const char* hex = env(kEnvUniqueId)) {
    w->launcher = "atollrun";
    if (!readRankPair(kEnvRank, kEnvWorldSize, w, error)) return false;
    if (!hexDecode(hex, &w->id)) {
      *error = std::string(kEnvUniqueId) + " is not 256 hex digits";
      return false;
    }
  } else if (env(kEnvRank) || env(kEnvWorldSize)) {
    w->launcher = "env";
    if (!readRankPair(kEnvRank, kEnvWorldSize, w, error)) return false;
    if (!env(kEnvMasterAddr)) {
      *error =
          "RANK/WORLD_SIZE are set but neither ATOLL_UNIQUE_ID nor MASTER_ADDR is; use atollrun or set "
          "MASTER_ADDR/MASTER_PORT";
      return false;
    }
    if (!idFromMaster(w, error)) return false;
  } else if (env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE")) {
    w->launcher = "mpi";
    const bool ompi = env("OMPI_COMM_WORLD_SIZE") != nullptr;
    if (!readRankPair(ompi ? "OMPI_COMM_WORLD_RANK" : "PMI_RANK", ompi ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE", w, error))
      return false;
    if (env(kEnvMasterAddr) ? !idFromMaster(w, error) : !idThroughFile(w, error)) return false;
  } else {
    w->launcher = "single";
    if (!idFromLibrary(&w->id, error)) return false;
  }
  w->localProc = localRank(w->proc);
  return true;
}

void retireIdFile(const World& w) {
  if (!w.idFile.empty()) std::remove(w.idFile.c_str());
}

}  // namespace atl::perf
