// Point-to-point batches: the ncclSend/ncclRecv calls of one group on one communicator. Sends to
// a peer keep their call order on that peer's connection, and so do receives, so matching is by
// order exactly as in NCCL; each (peer, direction) is its own program so all of them overlap.
#pragma once

#include <vector>

#include "algorithms/schedule.h"

namespace atl::algo {

struct P2POp {
  bool isSend = false;
  int peer = 0;
  size_t bytes = 0;
  BufId buf = kFirstUserBuf;  // the plan's buffer slot holding this op's user pointer
};

/// Byte-granular schedule (elements are bytes). Sends and receives to/from `self` are matched in
/// order and become local copies.
Schedule buildP2P(const std::vector<P2POp>& ops, int self);

}  // namespace atl::algo
