// Hostile clients against every listener of a running job: while 4 ranks (real processes, data
// over TCP) run checked all-reduces and repeatedly split (each split makes new data connections,
// so the data listeners accept again), an attacker finds every TCP port the job listens on (the
// bootstrap root in this process, each rank's bootstrap messaging listener and data listener) and
// throws at each: connect-and-close, garbage, a truncated header, headers with the right magic but
// an absurd length, a forged proof (wrong secret), and silent connections held past the handshake
// deadline. The job must finish with correct results, every listener must have logged rejections,
// and nothing may crash.
//
//   hostile_listeners [--ranks N] [--rounds R]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/wire.h"
#include "nccl.h"
#include "tests/common/rank_procs.h"

namespace {

namespace wire = atl::bootstrap::wire;
// Longer than a few attack waves (each takes about 200 ms: the data listeners answer nothing, so
// every probe waits out its 30 ms receive timeout).
constexpr int kLateJoinMs = 1000;

int rankMain(int rank, int nranks, int rounds, int idFd) {
  alarm(120);
  ncclUniqueId id;
  if (!atl::test::readUniqueId(idFd, &id)) return 2;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nranks, id, rank) != ncclSuccess) return 3;
  // Wait until the attacker has hit every listener at least twice, so that the data listeners have
  // hostile connections queued when the first split makes them accept again.
  char go = 0;
  if (read(idFd, &go, 1) != 1) return 8;
  std::vector<float> v;
  auto check = [&](ncclComm_t c, int me, int n, size_t count) {
    v.assign(count, static_cast<float>(me + 1));
    if (ncclAllReduce(v.data(), v.data(), count, ncclFloat, ncclSum, c, nullptr) != ncclSuccess) return false;
    for (float x : v)
      if (x != static_cast<float>(n * (n + 1) / 2)) return false;
    return true;
  };
  // A communicator one rank joins late: the others' new data listeners wait through a few attack
  // waves before they accept, so they meet hostile connections first however fast the machine is
  // (the splits below open theirs only for milliseconds).
  {
    ncclUniqueId lateId{};
    if (rank == 0 && ncclGetUniqueId(&lateId) != ncclSuccess) return 9;
    if (ncclBroadcast(&lateId, &lateId, sizeof lateId, ncclChar, 0, comm, nullptr) != ncclSuccess) return 9;
    if (rank == nranks - 1) std::this_thread::sleep_for(std::chrono::milliseconds(kLateJoinMs));
    ncclComm_t late = nullptr;
    if (ncclCommInitRank(&late, nranks, lateId, rank) != ncclSuccess) return 9;
    if (!check(late, rank, nranks, 1000)) return 9;
    if (ncclCommDestroy(late) != ncclSuccess) return 9;
  }
  for (int round = 0; round < rounds; ++round) {
    ncclComm_t child = nullptr;
    if (ncclCommSplit(comm, 0, nranks - 1 - rank, &child, nullptr) != ncclSuccess) return 4;  // reversed order
    for (int i = 0; i < 40; ++i) {
      const size_t count = size_t{1} << (i % 18);
      if (!check(child, nranks - 1 - rank, nranks, count) || !check(comm, rank, nranks, count + 3)) return 5;
    }
    if (ncclCommDestroy(child) != ncclSuccess) return 6;
  }
  return ncclCommDestroy(comm) == ncclSuccess ? 0 : 7;
}

/// IPv4 address and port of every TCP socket these processes listen on, from `ss` (iproute2).
std::set<std::pair<std::string, int>> listeners(const std::vector<pid_t>& pids) {
  std::set<std::pair<std::string, int>> out;
  FILE* f = popen("ss -Hltnp4 2>/dev/null", "r");
  if (f == nullptr) return out;
  char line[1024];
  while (fgets(line, sizeof(line), f)) {
    const std::string l = line;
    bool ours = false;
    for (pid_t p : pids) ours = ours || l.find("pid=" + std::to_string(p) + ",") != std::string::npos;
    if (!ours) continue;
    // "LISTEN 0 128 192.0.2.2:44659 0.0.0.0:* users:(...)": the 4th field.
    char local[256];
    if (sscanf(line, "%*s %*s %*s %255s", local) != 1) continue;
    std::string addr = local;
    const size_t colon = addr.rfind(':');
    if (colon == std::string::npos) continue;
    std::string ip = addr.substr(0, colon);
    if (ip == "0.0.0.0" || ip == "*") ip = "127.0.0.1";
    out.insert({ip, atoi(addr.c_str() + colon + 1)});
  }
  pclose(f);
  return out;
}

void sendAll(int fd, const void* p, size_t n) {
  auto* b = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
    if (k <= 0) return;
    b += k, n -= static_cast<size_t>(k);
  }
}

/// One of each attack against `port`; silent connections go to `held` (closed later).
int attack(int port, const std::string& addrIp, std::mt19937_64& rng, std::vector<int>& held) {
  auto open = [&]() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, addrIp.c_str(), &a.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      close(fd);
      return -1;
    }
    timeval tv{0, 30000};  // nonces come at once; the data listeners answer nothing
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
  };
  int done = 0;
  // 1. connect and leave at once.
  if (int fd = open(); fd >= 0) close(fd), ++done;
  // 2. garbage.
  if (int fd = open(); fd >= 0) {
    std::vector<uint64_t> junk(64);
    for (auto& x : junk) x = rng();
    sendAll(fd, junk.data(), junk.size() * 8);
    close(fd), ++done;
  }
  // 3. a truncated message header with the right magic.
  if (int fd = open(); fd >= 0) {
    uint32_t magic = wire::kMsgMagic;
    sendAll(fd, &magic, sizeof(magic));
    close(fd), ++done;
  }
  // 4. right magics, absurd lengths, proofs made with the wrong secret, after reading any nonce.
  for (int kind = 0; kind < 3; ++kind) {
    const int fd = open();
    if (fd < 0) continue;
    wire::Nonce nonce{};
    (void)!recv(fd, nonce.data(), nonce.size(), MSG_WAITALL);  // the bootstrap listeners speak first
    atl::Secret wrong{};
    for (auto& b : wrong) b = static_cast<uint8_t>(rng());
    if (kind == 0) {
      wire::MsgHeader h{};
      h.magic = wire::kMsgMagic;
      h.from = 0;
      h.tag = 1;
      h.len = uint64_t{1} << 62;
      atl::Digest d = wire::msgProof(wrong, nonce, h);
      std::memcpy(h.proof, d.data(), d.size());
      sendAll(fd, &h, sizeof(h));
    } else if (kind == 1) {
      wire::JoinHeader h{};
      h.magic = wire::kJoinMagic;
      h.version = wire::kVersion;
      h.rank = 0;
      h.nranks = 4;
      h.infoSize = 0xffffffffu;
      atl::Digest d = wire::joinProof(wrong, nonce, h);
      std::memcpy(h.proof, d.data(), d.size());
      sendAll(fd, &h, sizeof(h));
    } else {
      // The data transport's hello: magic "ATLH", version 1, then fields and an HMAC we cannot make.
      uint8_t hello[80];
      for (auto& b : hello) b = static_cast<uint8_t>(rng());
      const uint32_t magic = 0x41544c48, version = 1;
      std::memcpy(hello, &magic, 4);
      std::memcpy(hello + 4, &version, 4);
      sendAll(fd, hello, sizeof(hello));
    }
    char c;
    (void)!recv(fd, &c, 1, 0);  // expect EOF (rejected), not an answer
    close(fd), ++done;
  }
  // 5. silent: say nothing, hold the connection past the handshake deadlines.
  if (rng() % 8 == 0)
    if (int fd = open(); fd >= 0) held.push_back(fd), ++done;
  return done;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

size_t countOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 4, rounds = 30, childRank = -1, idFd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--ranks") nranks = atoi(argv[i + 1]);
    else if (a == "--rounds") rounds = atoi(argv[i + 1]);
    else if (a == "--rank") childRank = atoi(argv[i + 1]);
    else if (a == "--id-fd") idFd = atoi(argv[i + 1]);
    else return fprintf(stderr, "unknown argument %s\n", a.c_str()), 2;
  }
  if (childRank >= 0) return rankMain(childRank, nranks, rounds, idFd);
  setenv("NCCL_SHM_DISABLE", "1", 1);  // data over TCP, so the data listeners are in play
  char tmpl[] = "/tmp/atoll-hostile-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 2;
  const std::string dir = tmpl;

  atl::test::RankProcs procs;
  if (!atl::test::spawnRanks(nranks, argv[0], {"--ranks", std::to_string(nranks), "--rounds", std::to_string(rounds)},
                             &procs, dir))
    return 2;
  const std::vector<pid_t>& pids = procs.pids;
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 2;

  // The attacker: from before the rendezvous until the last rank is done. The root listens in
  // this process; the ranks' listeners appear as they initialise and split.
  std::atomic<bool> stop{false};
  std::atomic<int> attacks{0};
  std::atomic<int> fullWaves{0};  // waves that found both listeners of every rank
  std::set<std::pair<std::string, int>> seen;
  std::thread attacker([&] {
    std::mt19937_64 rng(12345);
    std::vector<int> held;
    std::vector<pid_t> watched = pids;
    watched.push_back(getpid());
    auto lastRelease = std::chrono::steady_clock::now();
    while (!stop.load()) {
      // Every listener at once, each from its own thread and random stream.
      std::vector<std::thread> wave;
      std::vector<std::vector<int>> waveHeld;
      const auto found = listeners(watched);
      const bool full = found.size() >= static_cast<size_t>(2 * nranks);
      waveHeld.resize(found.size());
      size_t k = 0;
      for (const auto& [ip, port] : found) {
        seen.insert({ip, port});
        wave.emplace_back([&, ip = ip, port = port, k, seed = rng()] {
          std::mt19937_64 local(seed);
          attacks += attack(port, ip, local, waveHeld[k]);
        });
        ++k;
      }
      for (std::thread& t : wave) t.join();
      if (full) ++fullWaves;
      for (auto& h : waveHeld) held.insert(held.end(), h.begin(), h.end());
      if (std::chrono::steady_clock::now() - lastRelease > std::chrono::seconds(6)) {
        for (int fd : held) close(fd);
        held.clear();
        lastRelease = std::chrono::steady_clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (int fd : held) close(fd);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the root is attacked before anyone joins
  if (!atl::test::sendUniqueId(procs, id, /*keepOpen=*/true)) return 2;
  const auto waitStart = std::chrono::steady_clock::now();
  while (fullWaves.load() < 2 && std::chrono::steady_clock::now() - waitStart < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (int fd : procs.pipes) {
    if (write(fd, "g", 1) != 1) return 2;
    close(fd);
  }
  int failures = 0;
  for (int r = 0; r < nranks; ++r) {
    int status = 0;
    waitpid(pids[static_cast<size_t>(r)], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      printf("FAIL rank %d: %s %d\n", r, WIFEXITED(status) ? "exit" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      ++failures;
    }
  }
  stop = true;
  attacker.join();
  size_t bootstrapRejects = 0, dataRejects = 0;
  for (int r = 0; r < nranks; ++r) {
    const std::string log = slurp(dir + "/r" + std::to_string(r) + ".log");
    const size_t b = countOf(log, "rejected connection from") - countOf(log, "socket: rank");
    const size_t d = countOf(log, "socket: rank " + std::to_string(r) + ": rejected connection") +
                     countOf(log, "socket: rank " + std::to_string(r) + ": dropping connection");
    printf("rank %d: %zu bootstrap and %zu data-listener rejections logged\n", r, b, d);
    bootstrapRejects += b, dataRejects += d;
    // In the late-joined communicator ranks 1..n-2 accept (the lower rank dials) after waiting
    // under attack: each of them must have turned hostile connections away.
    if (r > 0 && r < nranks - 1 && d == 0) {
      printf("FAIL: rank %d's data listener logged no rejections\n", r);
      ++failures;
    }
  }
  printf("%d attacks on %zu ports; ranks %s\n", attacks.load(), seen.size(), failures ? "FAILED" : "finished correctly");
  if (bootstrapRejects == 0 || dataRejects == 0) {
    printf("FAIL: the attacks did not reach both kinds of listener\n");
    ++failures;
  }
  if (failures == 0 || getenv("ATOLL_KEEP_LOGS") == nullptr) std::system(("rm -rf '" + dir + "'").c_str());
  else printf("logs kept in %s\n", dir.c_str());
  return failures == 0 ? 0 : 1;
}
