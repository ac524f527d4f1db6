// The net transport: links to peers over a net plugin (net_plugin.h), the way NCCL's net transport
// uses one. It replaces the socket transport for every link that is not shared memory when a
// plugin net is selected (NCCL_NET_PLUGIN / NCCL_NET, core/init.cc).
//
// Setup: each rank listens on one device of the net when its transport is made and publishes the
// listen handle in its PeerInfo. A link (peer, channel) is two plugin comms: this rank connects to
// the peer's handle (its send comm) and accepts the peer's connection (its receive comm). Accepted
// connections arrive in any order, so the first message on each is a Hello naming (from, to,
// channel), proven with the communicator's secret: connections that are not from a rank of this
// communicator are closed, and ones that arrive before this rank asked for them wait in a table.
//
// Everything that calls the plugin runs on the transport's proxy thread (net_proxy.h).
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "transports/net/net_plugin.h"
#include "transports/transport.h"

namespace atl::net {

/// The first message on every net link: who sends it, to whom, for which channel.
struct Hello {
  uint32_t magic;
  uint32_t version;
  uint64_t commHash;
  int32_t from;
  int32_t to;
  int32_t channel;
  uint32_t zero;
  uint8_t proof[32];  // HMAC-SHA256(secret, the bytes above)
};
static_assert(sizeof(Hello) == 64);
static_assert(std::has_unique_object_representations_v<Hello>, "no padding: sent as its bytes");

Hello makeHello(const transport::Context& ctx, int to, int channel);
/// Why `h` is not a hello of this communicator's rank `from` to ctx.rank (nullptr: it is).
const char* checkHello(const Hello& h, const transport::Context& ctx);

/// Listens on `dev` of `net` and fills in what `me` must publish (netHandle, netName, kPeerHasNet).
Result<std::unique_ptr<transport::Transport>> createNetTransport(PluginNet* net, int dev, transport::PeerInfo* me);

}  // namespace atl::net
