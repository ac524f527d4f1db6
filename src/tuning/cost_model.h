// Alpha-beta estimates of one collective's time under each algorithm. Inputs are a handful of
// fabric numbers (topology/ or the defaults below), so the model stays cheap enough to evaluate on
// every plan-cache miss and simple enough to read next to the measurements it was calibrated on.
#pragma once

#include <cstddef>

#include "algorithms/schedule.h"

namespace atl::tuning {

/// One kind of link: bandwidth as the bus bandwidth a ring achieves over it with the default
/// channel count, latency as the one-hop time minus the per-step software overhead.
struct LinkParams {
  double bwGBs = 0;
  double latUs = 0;
};

/// Everything the model is calibrated on. The values live in the parameter registry
/// (ATOLL_MODEL_*, base/param_list.h), whose defaults are what `atoll-calibrate` measured on the
/// development host; a calibration file (NCCL_CONF_FILE) or the environment replaces them.
struct ModelParams {
  LinkParams shm;
  LinkParams socket;
  double stepOverheadUs = 0;  // software cost of one schedule step, paid per hop and per peer
  // Bandwidth-term multipliers relative to the ring's (which has the link's full busbw): the tree's
  // interior nodes split their link between two children, halving/doubling cannot overlap one
  // step's reduction with the next transfer, recursive doubling reduces the whole buffer per hop.
  double treeBwPenalty = 1;
  double rhdBwPenalty = 1;
  double rdBwPenalty = 1;
};
/// The registry's current values.
ModelParams modelParams();

/// Direct sends the whole buffer to every peer: only worth it while n * bytes stays small.
inline constexpr size_t kDirectMaxTotalBytes = size_t{1} << 20;

struct SelectInput {
  algo::Coll coll = algo::Coll::AllReduce;
  size_t bytes = 0;  // the full buffer: all-reduce count*size, all-gather output, reduce-scatter input
  int nranks = 1;
  int nIslands = 1;
  int minIslandSize = 1;
  int maxIslandSize = 1;
  // Filled by Selector::create from ModelParams and the topology; the zeros here mean "unset".
  double intraBwGBs = 0;
  double intraLatUs = 0;
  double interBwGBs = 0;
  double interLatUs = 0;
  double stepOverheadUs = 0;
  // How many ranks of a host share its link out of the island (ranks per host / NICs per host): the
  // inter-island bandwidth is per host, so algorithms whose ranks all cross at once (hierarchical's
  // middle phase, rd and rhd across islands) get a share of it each. 1: a NIC per rank (rails).
  double interSharers = 1;
  // The same inside islands that span hosts (their links are NICs): recursive doubling and halving
  // have every rank exchange with a partner at once, mostly on other hosts, so a host's ranks share
  // its NICs there too; the ring crosses each host boundary once. 1: islands inside one host.
  double intraSharers = 1;
  // Hosts in the smallest island. The inter-island bandwidth is each host's share of its island's
  // uplink, but a flow that crosses alone draws on the whole uplink, up to its own link's speed: the
  // ring (and the chain) crosses each island boundary once per channel. 1: islands inside one host.
  int islandHosts = 1;
  // Ranks per host where islands span hosts that hold several ranks each (1 otherwise: the island
  // level is then the host level), and the link between ranks of one host. A ring's steps wait on
  // each other around the ring, so its latency is its hops' mean, and most hops are inside hosts;
  // recursive doubling's and halving's steps at distances below hostRanks, and the tree's lowest
  // levels, stay inside a host.
  int hostRanks = 1;
  double hostBwGBs = 0;
  double hostLatUs = 0;
  // Dragonfly+ groups the ranks span (contiguous, equal), 1 otherwise. The inter-island figures are
  // then the global level's per-host share, split over direct links to every other group: where
  // every group sends to one other group at once (recursive doubling's and halving's crossing
  // steps, hierarchical's ring of islands), it gets 1/(groups-1) of its global bandwidth (minimal
  // routing, as atoll-sim's network has it). Islands of one group meet at the group link.
  int groups = 1;
  double groupBwGBs = 0;
  double groupLatUs = 0;
  // Where islands span hosts: the most tree edges that leave their host through one NIC in one
  // direction, over the trees together (treeNicChunks); each moves a chunk per pipeline step. 0:
  // not counted (an inner node's two children's chunks then set the pace).
  double treeNicLoad = 0;
  double treeBwPenalty = 1;
  double rhdBwPenalty = 1;
  double rdBwPenalty = 1;
  int maxChannels = 1;
  // Pipelining granularity of the chunked schedules (ATOLL_CHUNK_BYTES); 0: one chunk. The binomial
  // tree pays a step per chunk per child, so its price depends on it.
  size_t chunkBytes = 0;
};

/// Whether the algorithm can run this shape at all (rd: power-of-two n; hierarchical: >1 island;
/// direct: small n*bytes). All-reduce has ring, rd, tree, rhd, direct and hierarchical; all-gather,
/// reduce-scatter, broadcast and reduce have ring (or chain) and hierarchical, broadcast and reduce
/// also the binomial tree and all-gather Bruck's algorithm; the other collectives only their one
/// schedule.
bool applicable(algo::Algo a, const SelectInput& in);
/// Whether the collective has a hierarchical schedule (src/algorithms/hier_*.cc).
bool hasHierarchical(algo::Coll c);

/// The double binary tree's busiest NIC (SelectInput::treeNicLoad): ranks in blocks of hostRanks per
/// host, nicRanks of them per NIC, `trees` trees over n ranks. O(n log n); once per communicator.
double treeNicChunks(int n, int trees, int nicRanks, int hostRanks);

/// Estimated time in microseconds; +infinity where not applicable.
double estimateUs(algo::Algo a, const SelectInput& in);

}  // namespace atl::tuning
