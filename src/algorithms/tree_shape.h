// The double binary tree's shape (tree_allreduce.cc), for the schedule and for the cost model,
// which prices the tree by the links its edges load.
#pragma once

namespace atl::algo {

/// A rank's neighbours in one tree: -1 where there is none (the root's parent, a leaf's children).
struct TreeNode {
  int parent = -1;
  int child[2] = {-1, -1};
};

/// Rank `rank`'s neighbours in tree `tree` (0 or 1) over n >= 3 ranks.
TreeNode treeNode(int rank, int n, int tree);

/// How many trees the all-reduce runs (one per channel, at most two).
inline int treeCount(int nranks, int nchannels) { return nranks > 2 && nchannels >= 2 ? 2 : 1; }

}  // namespace atl::algo
