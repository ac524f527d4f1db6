// Links made on demand (core/connect.h), at 256 ranks as threads of this process: every rank holds
// exactly the links its schedules used (ring neighbours for a ring all-reduce, then the peers of
// its point-to-point calls), links are symmetric, and the process holds exactly the descriptors
// those links need (one per end: a socket, or the ring file whose lock says the end is alive)
// plus each rank's two listeners, and with shm links the process's one shared-pool probe. With NCCL_RUNTIME_CONNECT=0 every peer is linked at init instead, as before.
//
// Run by ctest with NCCL_ALGO=allreduce:ring (the expectation below is the ring's), and the rank
// count and transport from the command line: links_on_demand RANKS [socket] [eager].
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/comm.h"
#include "nccl.h"
#include "tests/common/open_fds.h"

namespace {

using atl::test::openFds;

int fail(const char* what, int rank) {
  std::fprintf(stderr, "FAIL: rank %d: %s (%s)\n", rank, what, ncclGetLastError(nullptr));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  alarm(300);  // a hang is a failure
  if (argc < 2) return std::fprintf(stderr, "usage: links_on_demand RANKS [socket] [eager]\n"), 2;
  const int n = std::atoi(argv[1]);
  bool socket = false, eager = false;
  for (int i = 2; i < argc; ++i) {
    socket = socket || std::strcmp(argv[i], "socket") == 0;
    eager = eager || std::strcmp(argv[i], "eager") == 0;
  }
  if (socket) setenv("NCCL_SHM_DISABLE", "1", 1);
  if (eager) setenv("NCCL_RUNTIME_CONNECT", "0", 1);
  setenv("NCCL_ALGO", "allreduce:ring", 1);
  const int p2pDistance = std::max(2, n / 3);  // far from the ring neighbours

  const int fds0 = openFds();  // before the root's listener, which closes once everyone joined
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return fail("ncclGetUniqueId", -1);
  std::vector<ncclComm_t> comms(static_cast<size_t>(n), nullptr);
  std::vector<std::vector<atl::engine::LinkKey>> afterInit(static_cast<size_t>(n)), afterRing(static_cast<size_t>(n)),
      afterP2P(static_cast<size_t>(n));
  std::atomic<int> errors{0}, phase{0};
  auto barrier = [&](int target) {
    phase.fetch_add(1);
    while (phase.load() < target && errors.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  std::vector<std::thread> ranks;
  const size_t count = (1 << 20) / sizeof(float);
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      ncclComm_t& c = comms[static_cast<size_t>(r)];
      if (ncclCommInitRank(&c, n, id, r) != ncclSuccess) return void(errors += fail("init", r));
      afterInit[static_cast<size_t>(r)] = c->links.table.keys();
      std::vector<float> buf(count, 1.0f);
      if (ncclAllReduce(buf.data(), buf.data(), count, ncclFloat, ncclSum, c, nullptr) != ncclSuccess ||
          buf[0] != static_cast<float>(n) || buf[count - 1] != static_cast<float>(n))
        return void(errors += fail("ring all-reduce", r));
      afterRing[static_cast<size_t>(r)] = c->links.table.keys();
      std::vector<float> out(1024, static_cast<float>(r)), in(1024, -1.0f);
      ncclGroupStart();
      ncclSend(out.data(), out.size(), ncclFloat, (r + p2pDistance) % n, c, nullptr);
      ncclRecv(in.data(), in.size(), ncclFloat, (r - p2pDistance + n) % n, c, nullptr);
      if (ncclGroupEnd() != ncclSuccess || in[0] != static_cast<float>((r - p2pDistance + n) % n))
        return void(errors += fail("send/recv", r));
      afterP2P[static_cast<size_t>(r)] = c->links.table.keys();
      barrier(n);  // every rank's links are complete before the descriptors are counted
      barrier(3 * n);
      ncclCommDestroy(c);
    });
  // The root thread ends once everyone joined; give it a moment to close its listener.
  while (phase.load() < n && errors.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  int fds = -1, want = 0;
  for (int r = 0; r < n && errors.load() == 0; ++r) {
    want += 2;  // bootstrap listener and socket transport listener
    want += static_cast<int>(afterP2P[static_cast<size_t>(r)].size());
  }
  // The process's shared-pool probe, one for all its shm links (base/shared_pool.h, pool::holdProbe).
  if (!socket && want > 0) want += 1;
  for (int i = 0; i < 200 && errors.load() == 0; ++i) {
    fds = openFds() - fds0;
    if (fds == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  phase.fetch_add(n);  // let the ranks destroy
  while (phase.load() < 3 * n && errors.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (std::thread& t : ranks) t.join();
  if (errors.load() != 0) return 1;

  int bad = 0;
  auto check = [&](bool ok, int r, const std::string& what) {
    if (!ok && ++bad <= 10) std::fprintf(stderr, "FAIL: rank %d: %s\n", r, what.c_str());
  };
  auto show = [](const std::vector<atl::engine::LinkKey>& keys) {
    std::string s;
    for (const auto& k : keys) s += " (" + std::to_string(k.channel) + "," + std::to_string(k.peer) + ")";
    return s;
  };
  for (int r = 0; r < n; ++r) {
    const auto& init = afterInit[static_cast<size_t>(r)];
    const auto& ring = afterRing[static_cast<size_t>(r)];
    const auto& p2p = afterP2P[static_cast<size_t>(r)];
    // The selector picks 1 or 2 (NCCL_MAX_NCHANNELS) channels for the ring; each has both neighbours.
    int nchannels = 0;
    for (const auto& k : ring) nchannels = std::max(nchannels, k.channel + 1);
    check(n == 1 || (nchannels >= 1 && nchannels <= 2), r, "the ring used " + std::to_string(nchannels) + " channels");
    std::set<atl::engine::LinkKey> wantRing, wantP2P;
    for (int ch = 0; ch < nchannels && n > 1; ++ch) {
      wantRing.insert({ch, (r + 1) % n});
      wantRing.insert({ch, (r + n - 1) % n});
    }
    wantP2P = wantRing;
    if (n > 1) {
      wantP2P.insert({0, (r + p2pDistance) % n});
      wantP2P.insert({0, (r - p2pDistance + n) % n});
    }
    if (eager) {
      check(init.size() == static_cast<size_t>(2 * (n - 1)), r,
            "eager init made " + std::to_string(init.size()) + " links, want every peer on channels 0 and 1");
      check(p2p == init, r, "eager: a call made links init had not");
      continue;
    }
    check(init.empty(), r, "on demand, init made links:" + show(init));
    check(std::set<atl::engine::LinkKey>(ring.begin(), ring.end()) == wantRing, r,
          "after the ring all-reduce the links are" + show(ring) + ", want the ring neighbours on each channel");
    check(std::set<atl::engine::LinkKey>(p2p.begin(), p2p.end()) == wantP2P, r,
          "after send/recv the links are" + show(p2p) + ", want the ring's plus the point-to-point peers on channel 0");
    for (const auto& k : p2p) {
      const auto& theirs = afterP2P[static_cast<size_t>(k.peer)];
      check(std::find(theirs.begin(), theirs.end(), atl::engine::LinkKey{k.channel, r}) != theirs.end(), r,
            "link to rank " + std::to_string(k.peer) + " on channel " + std::to_string(k.channel) + " is one-sided");
    }
  }
  if (fds != want) {
    std::fprintf(stderr, "FAIL: the ranks hold %d descriptors, their links and listeners need %d\n", fds, want);
    ++bad;
  }
  size_t links = 0;
  for (const auto& v : afterP2P) links += v.size();
  std::printf("%d ranks (%s, %s): %zu links in all (%.2f per rank), %d descriptors (%.2f per rank)\n", n,
              socket ? "socket" : "shm", eager ? "eager" : "on demand", links, static_cast<double>(links) / n, fds,
              static_cast<double>(fds) / n);
  if (bad == 0) std::printf("1 passed, 0 failed\n");
  return bad == 0 ? 0 : 1;
}
