// Soak: real processes run a long random mix of collectives (every collective and p2p ring, ten
// datatypes, every reduction, random roots, counts from 0 up, in place at random, some grouped), all
// checked exactly, and each rank's memory, open fds and threads must be flat from warm-up to the end,
// with nothing of the job left in /dev/shm. Inputs are small integers chosen so that every result is
// exactly representable in every type, so a wrong element is a bug, never rounding.
//
//   soak [--ranks 8] [--ops 20000] [--max-bytes 65536] [--seed 1] [--long]
//   --long: 200000 ops up to 4 MiB (hours on a laptop; for manual runs)
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/common/rank_procs.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// ASan quarantines freed memory and TSan keeps shadow and history for it, so resident memory
// climbs by design under both; ASan's leak checker judges memory there instead.
constexpr bool kCheckRss = false;
#else
constexpr bool kCheckRss = true;
#endif

namespace {

enum Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAlltoAll, kGather, kScatter, kRing, kKinds };
const char* kKindNames[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter",
                            "AlltoAll",  "Gather",    "Scatter", "SendRecvRing"};
const ncclDataType_t kTypes[] = {ncclInt8,  ncclUint8, ncclInt32, ncclUint32, ncclInt64,
                                 ncclUint64, ncclHalf, ncclFloat, ncclDouble, ncclBfloat16};

size_t sizeOf(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclHalf: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat: return 4;
    default: return 8;
  }
}

uint16_t halfOf(int k) {  // exact for 0 <= k <= 2048
  if (k == 0) return 0;
  int e = 0;
  while ((2 << e) <= k) ++e;
  return static_cast<uint16_t>(((e + 15) << 10) | ((k - (1 << e)) << (10 - e)));
}
int intOfHalf(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  return e == 0 ? 0 : static_cast<int>(std::ldexp(1.0 + m / 1024.0, e - 15));
}

void store(void* buf, ncclDataType_t t, size_t i, int v) {
  auto* b = static_cast<uint8_t*>(buf);
  switch (t) {
    case ncclInt8: reinterpret_cast<int8_t*>(b)[i] = static_cast<int8_t>(v); break;
    case ncclUint8: b[i] = static_cast<uint8_t>(v); break;
    case ncclInt32: reinterpret_cast<int32_t*>(b)[i] = v; break;
    case ncclUint32: reinterpret_cast<uint32_t*>(b)[i] = static_cast<uint32_t>(v); break;
    case ncclInt64: reinterpret_cast<int64_t*>(b)[i] = v; break;
    case ncclUint64: reinterpret_cast<uint64_t*>(b)[i] = static_cast<uint64_t>(v); break;
    case ncclHalf: reinterpret_cast<uint16_t*>(b)[i] = halfOf(v); break;
    case ncclFloat: reinterpret_cast<float*>(b)[i] = static_cast<float>(v); break;
    case ncclDouble: reinterpret_cast<double*>(b)[i] = v; break;
    case ncclBfloat16: {
      const float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      reinterpret_cast<uint16_t*>(b)[i] = static_cast<uint16_t>(bits >> 16);
      break;
    }
    default: break;
  }
}

long long load(const void* buf, ncclDataType_t t, size_t i) {
  auto* b = static_cast<const uint8_t*>(buf);
  switch (t) {
    case ncclInt8: return reinterpret_cast<const int8_t*>(b)[i];
    case ncclUint8: return b[i];
    case ncclInt32: return reinterpret_cast<const int32_t*>(b)[i];
    case ncclUint32: return reinterpret_cast<const uint32_t*>(b)[i];
    case ncclInt64: return reinterpret_cast<const int64_t*>(b)[i];
    case ncclUint64: return static_cast<long long>(reinterpret_cast<const uint64_t*>(b)[i]);
    case ncclHalf: return intOfHalf(reinterpret_cast<const uint16_t*>(b)[i]);
    case ncclFloat: return std::llround(reinterpret_cast<const float*>(b)[i]);
    case ncclDouble: return std::llround(reinterpret_cast<const double*>(b)[i]);
    case ncclBfloat16: {
      const uint32_t bits = static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(b)[i]) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return std::llround(f);
    }
    default: return -1;
  }
}

/// One random operation, the same on every rank (drawn from the seed and its index only).
struct Op {
  Kind kind;
  ncclDataType_t type;
  ncclRedOp_t red;
  int root;
  size_t count;
  bool inPlace;
  int group;  // > 1: this many all-reduces in one group
};

Op draw(uint64_t seed, int index, int nranks, size_t maxBytes) {
  std::mt19937_64 g(seed * 1000003u + static_cast<uint64_t>(index));
  Op op;
  op.kind = static_cast<Kind>(g() % kKinds);
  op.type = kTypes[g() % (sizeof(kTypes) / sizeof(kTypes[0]))];
  op.red = static_cast<ncclRedOp_t>(g() % 5);
  op.root = static_cast<int>(g() % static_cast<uint64_t>(nranks));
  const double maxCount = static_cast<double>(maxBytes / sizeOf(op.type));
  // Log-uniform from 1 with some zeros: small sizes dominate, as in training jobs.
  op.count = g() % 16 == 0 ? 0 : static_cast<size_t>(std::exp(std::log(maxCount) * (g() % 10001) / 10000.0));
  if (op.kind == kAllGather || op.kind == kReduceScatter || op.kind == kAlltoAll || op.kind == kGather ||
      op.kind == kScatter)
    op.count = std::max<size_t>(op.count / static_cast<size_t>(nranks), op.count ? 1 : 0);
  op.inPlace = g() % 2 == 0;
  op.group = g() % 50 == 0 ? 3 : 1;
  return op;
}

/// What rank r contributes at element j of op i: 1..5, or for prod 1 except a 2 now and then, and
/// for avg the same on every rank (so the average is exact).
int input(const Op& op, int i, int r, size_t j) {
  if (op.red == ncclProd) return (r == i % 8 && j % 3 == 0) ? 2 : 1;
  if (op.red == ncclAvg) return static_cast<int>((static_cast<size_t>(i) + j) % 5) + 1;
  return static_cast<int>((static_cast<size_t>(i) * 31 + static_cast<size_t>(r) * 7 + j) % 5) + 1;
}

long long reduced(const Op& op, int i, int nranks, size_t j) {
  long long acc = input(op, i, 0, j);
  for (int r = 1; r < nranks; ++r) {
    const long long v = input(op, i, r, j);
    switch (op.red) {
      case ncclSum: case ncclAvg: acc += v; break;
      case ncclProd: acc *= v; break;
      case ncclMax: acc = std::max(acc, v); break;
      default: acc = std::min(acc, v); break;
    }
  }
  return op.red == ncclAvg ? acc / nranks : acc;
}

struct Usage {
  long rssKiB = 0;
  int fds = 0;
  int threads = 0;
};
Usage usage() {
  Usage u;
  long pages = 0, resident = 0;
  if (FILE* f = fopen("/proc/self/statm", "r")) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  u.rssKiB = resident * (sysconf(_SC_PAGESIZE) / 1024);
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++u.fds;
    closedir(d);
  }
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Threads:", 0) == 0) u.threads = std::atoi(line.c_str() + 8);
  return u;
}

size_t gChecked = 0;  // elements verified by this rank

/// Runs op `i` (and its group) on this rank and checks the result; false with a message on error.
bool runOne(ncclComm_t comm, int rank, int n, int i, const Op& op, std::vector<uint8_t>& a, std::vector<uint8_t>& b) {
  const size_t esz = sizeOf(op.type), c = op.count;
  const bool reduce = op.kind == kAllReduce || op.kind == kReduce || op.kind == kReduceScatter;
  const ncclRedOp_t red = reduce ? op.red : ncclSum;
  // Input and output buffers, laid out as NCCL defines in-place for each collective.
  size_t inElems = c, outElems = c, inOffset = 0, outOffset = 0;
  switch (op.kind) {
    case kAllGather: outElems = c * n; inOffset = static_cast<size_t>(rank) * c; break;
    case kReduceScatter: inElems = c * n; outOffset = static_cast<size_t>(rank) * c; break;
    case kAlltoAll: inElems = outElems = c * n; break;
    case kGather: outElems = c * n; inOffset = static_cast<size_t>(rank) * c; break;
    case kScatter: inElems = c * n; outOffset = static_cast<size_t>(rank) * c; break;
    default: break;
  }
  const size_t span = std::max(inElems, outElems);
  a.assign((span + 1) * esz * static_cast<size_t>(op.group), 0xEE);
  b.assign((span + 1) * esz * static_cast<size_t>(op.group), 0xEE);
  auto fill = [&](uint8_t* base, size_t elems, int who, size_t first) {
    for (size_t j = 0; j < elems; ++j) store(base, op.type, j, input(op, i, who, first + j));
  };
  std::vector<void*> sends, recvs;
  for (int k = 0; k < op.group; ++k) {
    uint8_t* A = a.data() + static_cast<size_t>(k) * (span + 1) * esz;
    uint8_t* B = b.data() + static_cast<size_t>(k) * (span + 1) * esz;
    void* send = A;
    void* recv = op.inPlace ? A : B;
    if (op.inPlace && inOffset) send = A + inOffset * esz;  // allgather/gather: input is our slot
    if (op.inPlace && outOffset) recv = A + outOffset * esz;  // reducescatter/scatter: output is our slot
    // Contributions: rank r's element j of the input is input(i, r, j) in the "global" numbering.
    if (op.kind == kAlltoAll) {
      for (int p = 0; p < n; ++p)  // block p goes to rank p: value depends on (sender, receiver, j)
        for (size_t j = 0; j < c; ++j) store(send, op.type, static_cast<size_t>(p) * c + j, input(op, i, rank, p * 1000 + j));
    } else if (op.kind == kBroadcast || op.kind == kScatter) {
      if (rank == op.root) fill(static_cast<uint8_t*>(send), inElems, rank, 0);
    } else {
      fill(static_cast<uint8_t*>(send), inElems, rank, 0);
    }
    sends.push_back(send);
    recvs.push_back(recv);
  }
  ncclResult_t r = ncclSuccess;
  if (op.group > 1) ncclGroupStart();
  for (int k = 0; k < op.group && r == ncclSuccess; ++k) {
    void* s = sends[static_cast<size_t>(k)];
    void* d = recvs[static_cast<size_t>(k)];
    switch (op.kind) {
      case kAllReduce: r = ncclAllReduce(s, d, c, op.type, red, comm, nullptr); break;
      case kBroadcast: r = ncclBroadcast(s, d, c, op.type, op.root, comm, nullptr); break;
      case kReduce: r = ncclReduce(s, d, c, op.type, red, op.root, comm, nullptr); break;
      case kAllGather: r = ncclAllGather(s, d, c, op.type, comm, nullptr); break;
      case kReduceScatter: r = ncclReduceScatter(s, d, c, op.type, red, comm, nullptr); break;
      case kAlltoAll: r = ncclAlltoAll(s, d, c, op.type, comm, nullptr); break;
      case kGather: r = ncclGather(s, d, c, op.type, op.root, comm, nullptr); break;
      case kScatter: r = ncclScatter(s, d, c, op.type, op.root, comm, nullptr); break;
      case kRing:
        if (op.group == 1) ncclGroupStart();
        r = ncclSend(s, c, op.type, (rank + 1) % n, comm, nullptr);
        // In place, send and receive share the buffer (as nccl-tests' sendrecv does).
        if (r == ncclSuccess) r = ncclRecv(d, c, op.type, (rank + n - 1) % n, comm, nullptr);
        if (op.group == 1) r = r == ncclSuccess ? ncclGroupEnd() : (ncclGroupEnd(), r);
        break;
      default: break;
    }
  }
  if (op.group > 1) {
    const ncclResult_t e = ncclGroupEnd();
    if (r == ncclSuccess) r = e;
  }
  if (r != ncclSuccess) {
    fprintf(stderr, "rank %d: op %d %s failed: %s (%s)\n", rank, i, kKindNames[op.kind], ncclGetErrorString(r),
            ncclGetLastError(comm));
    return false;
  }
  // Check every element this rank holds afterwards.
  for (int k = 0; k < op.group; ++k) {
    const void* out = recvs[static_cast<size_t>(k)];
    auto bad = [&](size_t j, long long want) {
      const long long got = load(out, op.type, j);
      ++gChecked;
      if (got == want) return false;
      fprintf(stderr,
              "rank %d: op %d %s count %zu type %d red %d root %d inPlace %d: element %zu is %lld, want %lld\n", rank,
              i, kKindNames[op.kind], c, static_cast<int>(op.type), static_cast<int>(op.red), op.root, op.inPlace, j,
              got, want);
      return true;
    };
    switch (op.kind) {
      case kAllReduce:
        for (size_t j = 0; j < c; ++j) if (bad(j, reduced(op, i, n, j))) return false;
        break;
      case kReduce:
        if (rank == op.root) for (size_t j = 0; j < c; ++j) if (bad(j, reduced(op, i, n, j))) return false;
        break;
      case kBroadcast:
        for (size_t j = 0; j < c; ++j) if (bad(j, input(op, i, op.root, j))) return false;
        break;
      case kAllGather:
        for (size_t j = 0; j < c * n; ++j) if (bad(j, input(op, i, static_cast<int>(j / c), j % c))) return false;
        break;
      case kGather:
        if (rank == op.root)
          for (size_t j = 0; j < c * n; ++j) if (bad(j, input(op, i, static_cast<int>(j / c), j % c))) return false;
        break;
      case kReduceScatter:
        for (size_t j = 0; j < c; ++j) if (bad(j, reduced(op, i, n, static_cast<size_t>(rank) * c + j))) return false;
        break;
      case kScatter:
        for (size_t j = 0; j < c; ++j) if (bad(j, input(op, i, op.root, static_cast<size_t>(rank) * c + j))) return false;
        break;
      case kAlltoAll:
        for (int p = 0; p < n; ++p)
          for (size_t j = 0; j < c; ++j)
            if (bad(static_cast<size_t>(p) * c + j, input(op, i, p, static_cast<size_t>(rank) * 1000 + j))) return false;
        break;
      case kRing:
        for (size_t j = 0; j < c; ++j) if (bad(j, input(op, i, (rank + n - 1) % n, j))) return false;
        break;
      default: break;
    }
  }
  return true;
}

int rankMain(int rank, int n, int ops, size_t maxBytes, uint64_t seed, int idFd) {
  ncclUniqueId id;
  if (!atl::test::readUniqueId(idFd, &id)) return 2;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) return 3;
  std::vector<uint8_t> a, b;
  const int warm = std::min(500, ops / 4);
  Usage before, mid;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < ops; ++i) {
    if (i == warm) before = usage();
    if (i == ops / 2) mid = usage();
    Op op = draw(seed, i, n, maxBytes);
    if (op.kind == kRing) op.group = 1;  // a ring exchange is its own group
    if (op.group > 1) op.kind = kAllReduce;
    if (!runOne(comm, rank, n, i, op, a, b)) return 4;
  }
  a = {}, b = {};
  a.shrink_to_fit(), b.shrink_to_fit();
  const Usage after = usage();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("rank %d: %d ops (%zu elements checked) in %.1f s; RSS %ld -> %ld -> %ld KiB, fds %d -> %d, threads %d -> %d\n",
         rank, ops, gChecked, secs, before.rssKiB, mid.rssKiB, after.rssKiB, before.fds, after.fds, before.threads,
         after.threads);
  fflush(stdout);
  // The plan cache (64 plans, each with its scratch) fills with the shapes seen, so memory may rise
  // while it fills; in the second half it must stay put (a leak grows with the op count).
  if (after.fds != before.fds || after.threads != before.threads ||
      (kCheckRss && (after.rssKiB - before.rssKiB > 16 * 1024 || after.rssKiB - mid.rssKiB > 4 * 1024))) {
    fprintf(stderr, "rank %d: resources grew\n", rank);
    return 5;
  }
  return ncclCommDestroy(comm) == ncclSuccess ? 0 : 6;
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 8, ops = 20000, childRank = -1, idFd = -1;
  size_t maxBytes = 64 << 10;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--long") {
      ops = 200000, maxBytes = 4 << 20;
      continue;
    }
    if (i + 1 >= argc) return fprintf(stderr, "missing value for %s\n", a.c_str()), 2;
    if (a == "--ranks") nranks = atoi(argv[++i]);
    else if (a == "--ops") ops = atoi(argv[++i]);
    else if (a == "--max-bytes") maxBytes = strtoull(argv[++i], nullptr, 0);
    else if (a == "--seed") seed = strtoull(argv[++i], nullptr, 0);
    else if (a == "--rank") childRank = atoi(argv[++i]);
    else if (a == "--id-fd") idFd = atoi(argv[++i]);
    else return fprintf(stderr, "unknown argument %s\n", a.c_str()), 2;
  }
  if (nranks < 1 || ops < 1 || maxBytes < 8) return fprintf(stderr, "bad --ranks/--ops/--max-bytes\n"), 2;
  if (childRank >= 0) return rankMain(childRank, nranks, ops, maxBytes, seed, idFd);

  atl::test::RankProcs procs;
  ncclUniqueId id;
  if (!atl::test::spawnRanks(nranks, argv[0],
                             {"--ranks", std::to_string(nranks), "--ops", std::to_string(ops), "--max-bytes",
                              std::to_string(maxBytes), "--seed", std::to_string(seed)},
                             &procs) ||
      ncclGetUniqueId(&id) != ncclSuccess || !atl::test::sendUniqueId(procs, id))
    return 2;
  const std::vector<pid_t>& pids = procs.pids;
  const auto start = std::chrono::steady_clock::now();
  int failures = 0;
  for (int r = 0; r < nranks; ++r) {
    int status = 0;
    waitpid(pids[static_cast<size_t>(r)], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      printf("FAIL rank %d: %s %d\n", r, WIFEXITED(status) ? "exit" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      ++failures;
    }
  }
  if (std::system("ls /dev/shm | grep -q '^atoll-'") == 0) {
    printf("FAIL: atoll-* segments left in /dev/shm\n");
    ++failures;
  }
  printf("soak: %d ranks x %d ops (up to %zu bytes, seed %llu) in %.1f s: %s\n", nranks, ops, maxBytes,
         static_cast<unsigned long long>(seed),
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
