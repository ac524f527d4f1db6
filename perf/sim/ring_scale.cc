// sim_ring_scale NODES: how long atoll-sim takes to generate and simulate a flat ring all-reduce of
// 1 GiB over NODES synthetic hosts (8 GPUs, 4 rail NICs, 16 hosts per leaf, 8 leaves per island),
// with the simulated time and busbw. The scaling check for issue 15's 32k and 100k targets.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include "algorithms/schedule.h"
#include "perf/sim/executor.h"
int main(int argc, char** argv) {
  if (argc != 2 || std::atoi(argv[1]) < 1) {
    std::fprintf(stderr, "usage: sim_ring_scale NODES\n");
    return 2;
  }
  const int nodes = std::atoi(argv[1]);
  atl::topo::ClusterSpec c; c.nodes = nodes; c.nodesPerLeaf = 16; c.leavesPerIsland = 8;
  atl::sim::Network net(c);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<atl::sim::CompressedProgram>> progs;
  for (int r = 0; r < net.gpus(); ++r) {
    atl::algo::CollSpec s; s.nranks = net.gpus(); s.rank = r; s.count = size_t{1} << 28; s.nchannels = 1; s.chunkElems = 1 << 20; s.algo = atl::algo::Algo::Ring;
    progs.push_back(atl::sim::compress(atl::algo::buildSchedule(s)));
  }
  auto t1 = std::chrono::steady_clock::now();
  auto r = atl::sim::simulate(net, progs, {});
  auto t2 = std::chrono::steady_clock::now();
  std::printf("%d GPUs: gen %.2f s, sim %.2f s, %.0f us simulated, busbw %.1f GB/s, solves %lu, complete %d\n", net.gpus(),
              std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count(), r.timeUs,
              (1 << 30) * 2.0 * (net.gpus() - 1) / net.gpus() / (r.timeUs * 1e3), (unsigned long)r.solves, r.complete);
}
