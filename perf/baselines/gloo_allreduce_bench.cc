// gloo_allreduce_bench: Gloo's AllreduceRing or AllreduceHalvingDoubling (float sum) over its TCP
// transport on 127.0.0.1, measured exactly as all_reduce_perf measures ncclAllReduce (same flags,
// timing, verification, table and -J JSON; perf/baselines/peer_sweep.h).
//
// Launch: rank and size come from RANK/WORLD_SIZE (build/bin/atollrun sets them); the ranks meet
// through a gloo::rendezvous::FileStore in -S DIR (or $GLOO_BENCH_STORE_DIR), under a key prefix
// taken from ATOLL_UNIQUE_ID (else MASTER_PORT, else the parent pid) so that reruns in one
// directory do not meet stale keys.
// Extra flags: -A ring|hd picks the algorithm (default ring), -S DIR the store directory.
#include <gloo/allgather_ring.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "perf/baselines/peer_sweep.h"

namespace {

using atl::perf::baseline::Peer;
using atl::perf::baseline::Place;

constexpr const char* kTool = "gloo_allreduce_bench";
constexpr int kLineBytes = 192;
constexpr auto kTimeout = std::chrono::seconds(300);

enum class Algo { Ring, HalvingDoubling };

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

bool parseRank(const char* text, int* out) {
  if (text == nullptr) return false;
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < 0 || v > (1 << 20)) return false;
  *out = static_cast<int>(v);
  return true;
}

const gloo::ReductionFunction<double>* doubleFn(ncclRedOp_t op) {
  switch (op) {
    case ncclMin:
      return gloo::ReductionFunction<double>::min;
    case ncclMax:
      return gloo::ReductionFunction<double>::max;
    default:
      return gloo::ReductionFunction<double>::sum;
  }
}

class GlooPeer final : public Peer {
 public:
  GlooPeer(int rank, int size, Algo algo, const std::string& storeDir, const std::string& prefix)
      : rank_(rank), size_(size), algo_(algo) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    device_ = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore files(storeDir);
    gloo::rendezvous::PrefixStore store(prefix, files);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(kTimeout);
    context->connectFullMesh(store, device_);
    context_ = context;
    keyFiles_ = files.getAllKeyFilePaths();
  }

  // Every rank has connected once this runs, so no one still needs the rendezvous keys.
  void removeKeyFiles() {
    for (const std::string& path : keyFiles_) std::remove(path.c_str());
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void prepare(Place place, const float* send, float* recv, size_t count) override {
    op_.reset();
    send_ = place == Place::InPlace ? nullptr : send;
    recv_ = recv;
    count_ = count;
    const std::vector<float*> ptrs{recv};
    if (algo_ == Algo::Ring)
      op_ = std::make_unique<gloo::AllreduceRing<float>>(context_, ptrs, static_cast<int>(count));
    else
      op_ = std::make_unique<gloo::AllreduceHalvingDoubling<float>>(context_, ptrs, static_cast<int>(count));
    // The algorithm object mallocs its own staging buffers per size; one untimed run faults them in,
    // as a Gloo user reusing the object would see (Atoll's and MPI's staging persists across sizes).
    op_->run();
  }

  // Gloo's algorithms reduce in place only; out of place is the copy a Gloo user must make first.
  void allreduce() override {
    if (send_ != nullptr) std::memcpy(recv_, send_, count_ * sizeof(float));
    op_->run();
  }

  // Gloo's algorithms (except the all-reduces) need a peer, so one rank answers locally.
  void reduceDoubles(double* values, int n, ncclRedOp_t op) override {
    if (size_ == 1) return;
    gloo::AllreduceRing<double> reduce(context_, std::vector<double*>{values}, n, doubleFn(op));
    reduce.run();
  }

  std::vector<std::string> gatherLines(const std::string& mine) override {
    if (size_ == 1) return {mine};
    std::vector<char> line(kLineBytes, '\0');
    std::strncpy(line.data(), mine.c_str(), kLineBytes - 1);
    std::vector<char> all(static_cast<size_t>(kLineBytes) * static_cast<size_t>(size_));
    gloo::AllgatherRing<char> gather(context_, std::vector<const char*>{line.data()}, all.data(), kLineBytes);
    gather.run();
    std::vector<std::string> lines;
    for (int r = 0; r < size_; ++r) lines.emplace_back(&all[static_cast<size_t>(r) * kLineBytes]);
    return lines;
  }

 private:
  int rank_, size_;
  Algo algo_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  std::vector<std::string> keyFiles_;
  std::unique_ptr<gloo::Algorithm> op_;
  const float* send_ = nullptr;
  float* recv_ = nullptr;
  size_t count_ = 0;
};

// Takes -A and -S out of argv; everything else goes to the nccl-tests flag parser.
bool splitOwnFlags(int argc, char** argv, Algo* algo, std::string* storeDir, std::vector<char*>* rest) {
  rest->push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool isAlgo = a == "-A" || a == "--algorithm", isStore = a == "-S" || a == "--store";
    if (!isAlgo && !isStore) {
      rest->push_back(argv[i]);
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s needs a value\n", kTool, a.c_str());
      return false;
    }
    const std::string v = argv[++i];
    if (isStore) {
      *storeDir = v;
    } else if (v == "ring") {
      *algo = Algo::Ring;
    } else if (v == "hd" || v == "halving_doubling") {
      *algo = Algo::HalvingDoubling;
    } else {
      std::fprintf(stderr, "%s: -A takes ring or hd, not '%s'\n", kTool, v.c_str());
      return false;
    }
  }
  rest->push_back(nullptr);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, size = 0;
  const bool haveRank =
      parseRank(env("RANK"), &rank) && parseRank(env("WORLD_SIZE"), &size) && size >= 1 && rank < size;
  Algo algo = Algo::Ring;
  std::string storeDir = env("GLOO_BENCH_STORE_DIR") ? env("GLOO_BENCH_STORE_DIR") : "/tmp/gloo_allreduce_bench";
  std::vector<char*> rest;
  if (!splitOwnFlags(argc, argv, &algo, &storeDir, &rest)) return 2;
  atl::perf::Options options;
  const int parsed =
      atl::perf::baseline::parsePeerOptions(static_cast<int>(rest.size()) - 1, rest.data(), kTool, rank == 0, &options);
  if (parsed >= 0) {
    if (rank == 0)
      std::fprintf(
          stderr,
          "  -A,--algorithm ring|hd       gloo::AllreduceRing or gloo::AllreduceHalvingDoubling (default ring)\n"
          "  -S,--store <dir>            FileStore rendezvous directory (default $GLOO_BENCH_STORE_DIR or\n"
          "                              /tmp/gloo_allreduce_bench)\n"
          "  RANK, WORLD_SIZE            this rank and the rank count (atollrun -np N sets both)\n");
    return parsed;
  }
  if (!haveRank) {
    std::fprintf(stderr, "%s: needs RANK and WORLD_SIZE in the environment (start it with atollrun -np N)\n", kTool);
    return 2;
  }
  if (options.maxBytes / sizeof(float) > 0x7fffffffu) {
    std::fprintf(stderr, "%s: -e is too large for Gloo's int count\n", kTool);
    return 2;
  }
  // Ranks of one job agree on the prefix without talking: atollrun's id, else the port, else the
  // launching shell (ranks started side by side share their parent).
  std::string prefix = "gloo-ppid" + std::to_string(getppid());
  if (const char* id = env("ATOLL_UNIQUE_ID"))
    prefix = std::string(id).substr(0, 32);
  else if (const char* port = env("MASTER_PORT"))
    prefix = std::string("gloo-port") + port;
  std::error_code ec;
  std::filesystem::create_directories(storeDir, ec);
  try {
    GlooPeer peer(rank, size, algo, storeDir, prefix);
    const char* name = algo == Algo::Ring ? "gloo::AllreduceRing" : "gloo::AllreduceHalvingDoubling";
    atl::perf::baseline::PeerTool info{
        kTool,
        env("ATOLL_UNIQUE_ID") ? "atollrun" : "env",
        {"library: Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
             std::to_string(GLOO_VERSION_PATCH) + ", transport tcp on 127.0.0.1",
         std::string(name) + "<float> sum (in place; out of place = memcpy to the output, then in place)"}};
    const int status = atl::perf::baseline::runPeerSweep(options, info, peer);
    peer.removeKeyFiles();
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", kTool, rank, e.what());
    return 3;
  }
}
