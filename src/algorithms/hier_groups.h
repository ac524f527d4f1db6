// Island geometry shared by the hierarchical generators: which island a rank is on, its index
// inside it, and the cross-island group of a local index.
//
// Islands may differ in size. With L the smallest island size, local indices q < L exist in every
// island and form the cross-island groups; a member at index e >= L ("extra") is hosted by the
// member at e mod L of its island, which carries the extra's data across islands for it.
#pragma once

#include <vector>

#include "algorithms/schedule.h"

namespace atl::algo {

/// True when spec.islands has >= 2 islands, each rank in exactly one, members ascending and
/// consistent with islandOf. Generators fall back to ring/chain schedules otherwise.
bool usableIslands(const CollSpec& s);

struct IslandPlace {
  int island = 0;    // index into IslandMap::members
  int local = 0;     // position in that island's member list
  int smallest = 0;  // L: size of the smallest island
};
IslandPlace placeOf(const topo::IslandMap& m, int rank);

/// Member q (< L) of every island, in island order.
std::vector<int> crossGroup(const topo::IslandMap& m, int q);

/// Island j's blocks that its member q (< L) carries across islands: its own and its extras'
/// (members q+L, q+2L, ...), ascending.
std::vector<int> hostedBlocks(const topo::IslandMap& m, int j, int q, int L);

/// What hierarchical all-gather and reduce-scatter share: this rank's place, its neighbours in the
/// in-island ring and (hosts only) in the cross-island ring, and the channel split. Laid out for a
/// structured binding.
struct BlockRings {
  int n, p;                     // ranks; this rank
  int island, local;            // i, e
  int size, L, nIslands;        // this island's size, the smallest island's, the island count
  bool host;                    // local < L: in a cross-island ring
  int nch;                      // channels (0 and 1 only)
  bool merge;                   // one channel: runs of consecutive blocks travel as one message
  int islandNext, islandPrev;   // in-island ring
  int crossNext, crossPrev;     // cross-island ring (-1 for extras)
  std::vector<int> mine;        // this island's members
};
BlockRings blockRings(const CollSpec& s);

/// The blocks member e of island i owns in the in-island ring of all-gather / reduce-scatter: its
/// own block, plus for a host (e < L) hostedBlocks(j, e) of every other island j. The pieces of
/// one island partition all ranks. Ascending.
std::vector<int> islandPiece(const topo::IslandMap& m, int i, int e, int L);

}  // namespace atl::algo
