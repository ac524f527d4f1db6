// Moving sets of blocks (one block per rank, `count` elements each) through rings, for the
// hierarchical all-gather and reduce-scatter: a ring position owns a set of blocks rather than a
// contiguous chunk, so one ring step becomes a few transfers.
#pragma once

#include <vector>

#include "algorithms/schedule.h"

namespace atl::algo {

/// Blocks of ranks first .. first+blocks-1, sent as one message.
struct BlockRun {
  int first = 0;
  int blocks = 1;
};

/// The messages that move `set` (ranks ascending). A channel carrying whole blocks (`merge`) sends
/// each run of consecutive ranks as one message; otherwise each block is its own message, since
/// the channel's share of consecutive blocks is not contiguous.
std::vector<BlockRun> runsOf(const std::vector<int>& set, bool merge);

/// Where a rank's block lives: at buf + base + index(r) * count, index(r) being r itself or, with
/// `order`, r's position in that ascending set (a dense copy of just those blocks). A run of
/// consecutive ranks inside `order` stays contiguous, so any run addresses one region.
struct BlockSpace {
  BufId buf = kRecvBuf;
  size_t base = 0;
  const std::vector<int>* order = nullptr;
  Ref at(int rank, size_t count, Span seg) const;
};

/// One ring step on channel share `seg` of every block: `out` goes to `next` from `from` while `in`
/// arrives from `prev` into `to` (dst = acc (op) incoming when `acc` is set). The k-th outgoing
/// message shares a transfer with the k-th incoming one; both ends derive the same runs for a set,
/// so every connection still carries the same messages in the same order.
void exchangeRuns(Program& prog, int next, const std::vector<BlockRun>& out, const BlockSpace& from, int prev,
                  const std::vector<BlockRun>& in, const BlockSpace& to, size_t count, Span seg,
                  const BlockSpace* acc = nullptr);

}  // namespace atl::algo
