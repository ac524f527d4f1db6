// Direct schedules: every rank talks to its peers without relaying. AlltoAll walks peer offsets
// i = 1..n-1 (send to p+i while receiving from p-i), which keeps every step matched across ranks;
// Gather/Scatter give the root one program per peer so all peers stream at once.
#include "algorithms/ring.h"

namespace atl::algo {

Schedule directAlltoAll(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks, p = s.rank;
  const size_t block = s.count;
  if (block == 0) return out;
  Program prog;
  // In place, a block would be overwritten before it is sent: send from a scratch copy instead.
  const BufId from = s.inPlace ? kScratchBuf : kSendBuf;
  if (s.inPlace) {
    out.scratchElems = block * static_cast<size_t>(n);
    addCopy(prog, sendAt(0), scratchAt(0), block * static_cast<size_t>(n));
  } else {
    addCopy(prog, sendAt(static_cast<size_t>(p) * block), recvAt(static_cast<size_t>(p) * block), block);
  }
  for (int i = 1; i < n; ++i) {
    int to = mod(p + i, n), fromRank = mod(p - i, n);
    addTransfer(prog, to, Ref{from, static_cast<size_t>(to) * block}, block, fromRank,
                recvAt(static_cast<size_t>(fromRank) * block), block);
  }
  out.programs.push_back(std::move(prog));
  return out;
}

Schedule directGather(const CollSpec& s) {
  Schedule out;
  const size_t block = s.count;
  if (block == 0) return out;
  if (s.rank != s.root) {
    Program prog;
    addTransfer(prog, s.root, sendAt(0), block, -1, {}, 0);
    out.programs.push_back(std::move(prog));
    return out;
  }
  for (int peer = 0; peer < s.nranks; ++peer) {
    Program prog;
    const size_t at = static_cast<size_t>(peer) * block;
    if (peer == s.rank) {
      if (!s.inPlace) addCopy(prog, sendAt(0), recvAt(at), block);
    } else {
      addTransfer(prog, -1, {}, 0, peer, recvAt(at), block);
    }
    if (!prog.steps.empty()) out.programs.push_back(std::move(prog));
  }
  return out;
}

Schedule directScatter(const CollSpec& s) {
  Schedule out;
  const size_t block = s.count;
  if (block == 0) return out;
  if (s.rank != s.root) {
    Program prog;
    addTransfer(prog, -1, {}, 0, s.root, recvAt(0), block);
    out.programs.push_back(std::move(prog));
    return out;
  }
  for (int peer = 0; peer < s.nranks; ++peer) {
    Program prog;
    const size_t at = static_cast<size_t>(peer) * block;
    if (peer == s.rank) {
      if (!s.inPlace) addCopy(prog, sendAt(at), recvAt(0), block);
    } else {
      addTransfer(prog, peer, sendAt(at), block, -1, {}, 0);
    }
    if (!prog.steps.empty()) out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
