// The communicator's links, indexed by (channel, peer). Owned here so the engine can look a link up
// without knowing how (or by which transport) it was made.
#pragma once

#include <memory>
#include <vector>

#include "transports/transport.h"

namespace atl::engine {

class ConnTable {
 public:
  void resize(int nchannels, int nranks) {
    nranks_ = nranks;
    links_.clear();
    links_.resize(static_cast<size_t>(nchannels) * static_cast<size_t>(nranks));
  }
  void set(int channel, int peer, std::unique_ptr<transport::Connection> c) { links_[index(channel, peer)] = std::move(c); }
  transport::Connection* get(int channel, int peer) const {
    size_t i = index(channel, peer);
    return i < links_.size() ? links_[i].get() : nullptr;
  }
  void clear() { links_.clear(); }
  /// The peers this rank has a link to on any channel, in rank order.
  std::vector<int> peers() const {
    std::vector<char> linked(static_cast<size_t>(nranks_), 0);
    for (size_t i = 0; i < links_.size(); ++i)
      if (links_[i]) linked[i % static_cast<size_t>(nranks_)] = 1;
    std::vector<int> out;
    for (int r = 0; r < nranks_; ++r)
      if (linked[static_cast<size_t>(r)]) out.push_back(r);
    return out;
  }
  /// Breaks every link (see Connection::shutdown): peers stop waiting on this rank at once.
  void shutdownAll() {
    for (auto& link : links_)
      if (link) link->shutdown();
  }

 private:
  size_t index(int channel, int peer) const {
    return static_cast<size_t>(channel) * static_cast<size_t>(nranks_) + static_cast<size_t>(peer);
  }
  int nranks_ = 0;
  std::vector<std::unique_ptr<transport::Connection>> links_;
};

}  // namespace atl::engine
