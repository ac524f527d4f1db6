// Binomial-tree geometry shared by the broadcast and the reduce. Positions are relative to the
// root (v = rank - root mod n, so any root works the same): v's parent is v minus its lowest set
// bit, and its children are v + m for the powers of two m below that bit (below n rounded up to a
// power of two for the root) that stay under n. Every rank is reached after ceil(log2 n) rounds
// when a parent serves its children largest subtree first, which the broadcast does; the reduce
// folds them smallest first, since those finish first.
#pragma once

#include <algorithm>
#include <bit>
#include <vector>

#include "algorithms/ring.h"

namespace atl::algo {

struct BinomialNode {
  int parent = -1;          // rank; -1 at the root
  std::vector<int> children;  // ranks, largest subtree first
};

inline BinomialNode binomialNode(const CollSpec& s) {
  const int n = s.nranks;
  const int v = mod(s.rank - s.root, n);
  auto rankOf = [&](int pos) { return mod(pos + s.root, n); };
  BinomialNode node;
  const unsigned top = v == 0 ? std::bit_ceil(static_cast<unsigned>(n)) : static_cast<unsigned>(v & -v);
  if (v != 0) node.parent = rankOf(v - (v & -v));
  for (unsigned m = top / 2; m >= 1; m /= 2)
    if (static_cast<unsigned>(v) + m < static_cast<unsigned>(n)) node.children.push_back(rankOf(v + static_cast<int>(m)));
  return node;
}

/// Chunk j of [0, count) in pieces of `chunk` elements (the last one short).
inline Span chunkOf(size_t count, size_t chunk, size_t j) { return {j * chunk, std::min(chunk, count - j * chunk)}; }

}  // namespace atl::algo
