// A rank failing in the middle of a collective, simulated: the collective runs over the network
// until the failed rank's absence stops every survivor that depends on it (perf/sim/executor.h),
// then the engine's detection and spread play out over the links the schedule made, and
// ncclCommShrink's messages rebuild a communicator from the survivors.
//
// Detection, with the engine's own parameters (the registry and core/fault_notice.h):
// - kill: the kernel closes the dead process's sockets (and drops its shm record locks), so each
//   link peer sees the break when it next polls; it then waits kNoticeWaitMs for the dead rank's
//   notice, which never comes, before blaming it.
// - vanish (the whole host: power, cable): no FIN; a link waiting on data declares the host dead
//   after ATOLL_HEARTBEAT_TIMEOUT_MS. Telling the host's other ranks costs kPerPeerMs each (their
//   listeners no longer answer), within kSpreadBudgetMs.
// - hang (a rank stops, its kernel still answers keepalives): only ATOLL_TIMEOUT_MS without
//   progress ends a survivor's call; it then follows the chain of waiting ranks to the silent one,
//   whose notice it waits chainWaitMs() for, in vain, before blaming it (the relays' own hops are
//   left out).
// A rank whose call fails tells its other link peers (one bootstrap message each) and then breaks
// its links, so its peers fail in turn: the error spreads one hop per link (earliest arrival over
// the link graph), which is what bounds detection at scale. A survivor whose call had already
// completed learns at its next call and is reported apart.
//
// Shrink: the first survivor's new unique id goes down a binomial tree of the survivors
// (core/split.cc initChild), then the child's init: every rank joins at the root, which answers
// each; ceil(log2 n) all-gather rounds (Bruck, the address book doubling each round) and as many
// barrier rounds. The links the next collective needs are made on demand at its first call.
#pragma once

#include <string>
#include <vector>

#include "perf/sim/sweep.h"

namespace atl::sim {

enum class FailureMode { Kill, Vanish, Hang };
bool parseFailureMode(const std::string& s, FailureMode* m);
const char* failureModeName(FailureMode m);

struct FailureParams {
  FailureMode mode = FailureMode::Kill;
  int rank = 0;       // the rank that fails (vanish: every rank of its host)
  double atUs = 0;    // into the collective
  // From the registry at construction (ATOLL_TIMEOUT_MS, ATOLL_HEARTBEAT_TIMEOUT_MS).
  double timeoutMs = 0, heartbeatTimeoutMs = 0, chainWaitMs = 0;
  // Software costs, inputs (perf/sim/README.md says where the defaults come from): one bootstrap
  // message between hosts (connect, authenticated hello, payload), a rank noticing a broken link
  // (its next poll), the root's answer to one join, and the bootstrap's bandwidth.
  double bootMsgUs = 100, detectUs = 5, rootReplyUs = 10, bootGBs = 1;
  double initEntryBytes = 364;  // one rank's all-gathered init record (docs/ARCHITECTURE.md's table)
  static FailureParams fromRegistry();
};

struct FailureReport {
  std::vector<int> failed;
  int survivors = 0;
  int stalled = 0;        // survivors whose call could not complete
  int finishedCall = 0;   // survivors whose call completed anyway: they learn at their next call
  int unresolved = 0;     // stalled survivors the model could not reach (none expected)
  double firstErrorUs = 0, medianErrorUs = 0, lastErrorUs = 0;  // from the start of the collective
  int maxHops = 0;        // link hops from a first detector to the last survivor
  // Shrink, from the last survivor's error: the id's sends, the joins at the root, the all-gather
  // and the barrier.
  double idUs = 0, joinUs = 0, allGatherUs = 0, barrierUs = 0;
  double shrinkUs() const { return idUs + joinUs + allGatherUs + barrierUs; }
  double recoveredUs() const { return lastErrorUs + shrinkUs(); }
  std::string skipped;  // why nothing was simulated
};

FailureReport simulateFailure(const Setup& setup, algo::Coll coll, algo::Algo a, size_t bytes, const FailureParams& f);

}  // namespace atl::sim
