// Sums the perf tools' per-row wrong-element counts over every RankGroup of the job without the
// collectives under test: a broken all-reduce must not be able to add its own errors up to zero.
// Across processes the counts travel over plain TCP to a server in the process holding rank 0; in a
// single process they meet in memory. The library only carries one TallyRecord at startup (where
// the server is), so a broken library can make the tally fail loudly, never report a clean run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

namespace atl::perf {

/// Broadcast once from rank 0. Fixed size, no padding, so it can travel as plain bytes.
struct TallyRecord {
  static constexpr uint32_t kMagic = 0x594c5441;  // "ATLY"
  static constexpr uint16_t kVersion = 1;
  static constexpr int kMaxAddrs = 16;
  uint32_t magic = 0;
  uint16_t version = 0;
  uint16_t port = 0;  // network byte order
  uint64_t token = 0;
  uint32_t naddrs = 0;
  uint32_t addrs[kMaxAddrs] = {};  // IPv4, network byte order: non-loopback first, loopback last
  uint32_t reserved = 0;
  uint64_t checksum = 0;  // FNV-1a of everything before it
};
static_assert(std::has_unique_object_representations_v<TallyRecord>, "TallyRecord must have no padding");

/// Reports a fatal tally error; must not return (the driver exits with its library-error status).
using TallyFail = std::function<void(const std::string&)>;

class Tally {
 public:
  /// One per process, before its RankGroups start. `clients` is every RankGroup of the job,
  /// `localClients` those of this process; with several processes, `serve` (process 0) starts the server.
  Tally(int clients, int localClients, bool crossProcess, bool serve, TallyFail fail);
  ~Tally();
  Tally(const Tally&) = delete;
  Tally& operator=(const Tally&) = delete;

  bool crossProcess() const { return crossProcess_; }
  /// What rank 0 broadcasts (meaningful in the serving process only).
  const TallyRecord& record() const { return record_; }
  /// Process 0, once its report is printed and flushed: lets the other processes exit (see
  /// Client::awaitRelease). A no-op elsewhere.
  void release();

  class Client {
   public:
    ~Client();
    /// Sums v[0] and v[1] over every client for row `seq` (0, 1, 2, ... on every client) and
    /// returns the totals in v: every client of the job gets the same ones.
    void sum(uint64_t seq, int64_t v[2]);
    /// In a process other than 0, after its last row: waits until process 0 has printed its
    /// report (or is gone). A process that exits first with the wrong-results status makes a
    /// launcher such as atollrun stop the others, and process 0 could die before the table's end.
    void awaitRelease();

   private:
    friend class Tally;
    explicit Client(Tally& tally) : tally_(tally) {}
    Tally& tally_;
    int fd_ = -1;  // -1: the in-memory sum
    uint64_t token_ = 0;
    std::string server_;
  };
  /// Called by each RankGroup once; `received` is its copy of the broadcast record when crossProcess().
  std::unique_ptr<Client> join(const TallyRecord* received);

 private:
  struct Server;
  struct Local;
  bool crossProcess_;
  TallyFail fail_;
  TallyRecord record_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Local> local_;
};

}  // namespace atl::perf
