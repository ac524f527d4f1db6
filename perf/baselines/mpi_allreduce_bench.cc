// mpi_allreduce_bench: MPI_Allreduce (float sum) measured exactly as all_reduce_perf measures
// ncclAllReduce: same flags, timing, verification, table and -J JSON (perf/baselines/peer_sweep.h).
// The MPI library picks its own algorithm; nothing here forces one.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "perf/baselines/peer_sweep.h"

namespace {

using atl::perf::baseline::Peer;
using atl::perf::baseline::Place;

constexpr int kLineBytes = 192;

MPI_Op mpiOp(ncclRedOp_t op) {
  switch (op) {
    case ncclMin:
      return MPI_MIN;
    case ncclMax:
      return MPI_MAX;
    default:
      return MPI_SUM;
  }
}

class MpiPeer final : public Peer {
 public:
  MpiPeer() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void prepare(Place place, const float* send, float* recv, size_t count) override {
    send_ = place == Place::InPlace ? MPI_IN_PLACE : send;
    recv_ = recv;
    count_ = static_cast<int>(count);
  }

  void allreduce() override { check(MPI_Allreduce(send_, recv_, count_, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)); }

  void reduceDoubles(double* values, int n, ncclRedOp_t op) override {
    check(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, mpiOp(op), MPI_COMM_WORLD));
  }

  std::vector<std::string> gatherLines(const std::string& mine) override {
    std::vector<char> line(kLineBytes, '\0');
    std::strncpy(line.data(), mine.c_str(), kLineBytes - 1);
    std::vector<char> all(static_cast<size_t>(kLineBytes) * static_cast<size_t>(size_));
    check(MPI_Gather(line.data(), kLineBytes, MPI_CHAR, all.data(), kLineBytes, MPI_CHAR, 0, MPI_COMM_WORLD));
    std::vector<std::string> lines;
    for (int r = 0; r < size_; ++r) lines.emplace_back(&all[static_cast<size_t>(r) * kLineBytes]);
    return lines;
  }

 private:
  static void check(int rc) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    std::fprintf(stderr, "mpi_allreduce_bench: MPI call failed: %s\n", text);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }

  int rank_ = 0, size_ = 1;
  const void* send_ = nullptr;
  void* recv_ = nullptr;
  int count_ = 0;
};

std::string libraryVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text, static_cast<size_t>(len));
  const size_t eol = v.find_first_of("\r\n");
  return eol == std::string::npos ? v : v.substr(0, eol);
}

}  // namespace

int main(int argc, char** argv) {
  const char* tool = "mpi_allreduce_bench";
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  atl::perf::Options options;
  int status = atl::perf::baseline::parsePeerOptions(argc, argv, tool, rank == 0, &options);
  if (status < 0 && options.maxBytes / sizeof(float) > 0x7fffffffu) {
    if (rank == 0) std::fprintf(stderr, "%s: -e is too large for an MPI int count\n", tool);
    status = 2;
  }
  if (status < 0) {
    MpiPeer peer;
    atl::perf::baseline::PeerTool info{tool, "mpi", {"library: " + libraryVersion(), "MPI_Allreduce float sum"}};
    status = atl::perf::baseline::runPeerSweep(options, info, peer);
  }
  MPI_Finalize();
  return status;
}
