// The communicator's links, indexed by (channel, peer). Owned here so the engine can look a link up
// without knowing how (or by which transport) it was made.
//
// Why a map and not an (nchannels x nranks) array: links are made on demand (core/connect.h), so a
// rank holds only the few its schedules use (ring neighbours, tree parent and children, island
// leaders, point-to-point peers); an array would cost O(n) per channel at 100k ranks for nothing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "transports/transport.h"

namespace atl::engine {

/// The channel of one-sided links (core/rma.h): outside every schedule's channels (0 ..
/// nchannels-1), so no plan ever reads their byte stream.
inline constexpr int kOneSidedChannel = 0x10000;

/// One link of a rank: the peer, on one channel.
struct LinkKey {
  int channel = 0;
  int peer = -1;
  friend bool operator==(const LinkKey&, const LinkKey&) = default;
  friend auto operator<=>(const LinkKey&, const LinkKey&) = default;
};

class ConnTable {
 public:
  void set(LinkKey k, std::unique_ptr<transport::Connection> c) {
    links_[pack(k)] = std::move(c);
    generation_ = nextGeneration();
  }
  transport::Connection* get(int channel, int peer) const {
    auto it = links_.find(pack({channel, peer}));
    return it == links_.end() ? nullptr : it->second.get();
  }
  /// Hands the link over to a new owner (the one-sided engine) and forgets it.
  std::unique_ptr<transport::Connection> take(LinkKey k) {
    auto it = links_.find(pack(k));
    if (it == links_.end()) return nullptr;
    std::unique_ptr<transport::Connection> c = std::move(it->second);
    links_.erase(it);
    generation_ = nextGeneration();
    return c;
  }
  bool has(LinkKey k) const { return links_.count(pack(k)) != 0; }
  size_t size() const { return links_.size(); }
  void clear() {
    links_.clear();
    generation_ = nextGeneration();
  }
  /// Changes whenever a link is added or removed, to a value no other table ever had: a plan that
  /// found all its links at one generation needs no lookups while it stays the same (core/group.cc),
  /// and a lookup remembered with it stays valid (engine/executor.cc), even for a table made later
  /// at a freed table's address.
  uint64_t generation() const { return generation_; }
  /// The peers this rank has a link to on any channel, in rank order.
  std::vector<int> peers() const {
    std::vector<int> out;
    out.reserve(links_.size());
    for (const auto& [key, link] : links_)
      if (link) out.push_back(static_cast<int>(key & 0xffffffffu));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  /// Every link, sorted by (channel, peer).
  std::vector<LinkKey> keys() const {
    std::vector<LinkKey> out;
    out.reserve(links_.size());
    for (const auto& [key, link] : links_) out.push_back(unpack(key));
    std::sort(out.begin(), out.end());
    return out;
  }
  /// Breaks every link (see Connection::shutdown): peers stop waiting on this rank at once.
  void shutdownAll() {
    for (auto& [key, link] : links_)
      if (link) link->shutdown();
  }

 private:
  static uint64_t pack(LinkKey k) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(k.channel)) << 32) | static_cast<uint32_t>(k.peer);
  }
  static LinkKey unpack(uint64_t v) { return {static_cast<int>(v >> 32), static_cast<int>(v & 0xffffffffu)}; }
  std::unordered_map<uint64_t, std::unique_ptr<transport::Connection>> links_;
  static uint64_t nextGeneration() {
    static std::atomic<uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  uint64_t generation_ = nextGeneration();
};

}  // namespace atl::engine
