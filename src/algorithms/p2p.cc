#include "algorithms/p2p.h"

#include <algorithm>
#include <map>

namespace atl::algo {

Schedule buildP2P(const std::vector<P2POp>& ops, int self) {
  Schedule out;
  std::map<std::pair<int, bool>, Program> byPeer;  // (peer, isSend), ordered for determinism
  std::vector<const P2POp*> selfSends, selfRecvs;
  for (const P2POp& op : ops) {
    if (op.peer == self) {
      (op.isSend ? selfSends : selfRecvs).push_back(&op);
      continue;
    }
    Program& prog = byPeer[{op.peer, op.isSend}];
    if (op.isSend) addTransfer(prog, op.peer, Ref{op.buf, 0}, op.bytes, -1, {}, 0);
    else addTransfer(prog, -1, {}, 0, op.peer, Ref{op.buf, 0}, op.bytes);
  }
  for (auto& [key, prog] : byPeer)
    if (!prog.steps.empty()) out.programs.push_back(std::move(prog));
  Program local;
  for (size_t i = 0; i < std::min(selfSends.size(), selfRecvs.size()); ++i)
    addCopy(local, Ref{selfSends[i]->buf, 0}, Ref{selfRecvs[i]->buf, 0},
            std::min(selfSends[i]->bytes, selfRecvs[i]->bytes));
  if (!local.steps.empty()) out.programs.push_back(std::move(local));
  return out;
}

}  // namespace atl::algo
