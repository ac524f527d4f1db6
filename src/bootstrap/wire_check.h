// The bootstrap's header checks as pure functions of the received bytes: what the root and every
// rank's message listener decide for a connection's fixed-size header, before reading a body of
// the length it claims. Separate from the servers so the fuzzers (tests/fuzz) run exactly this code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "bootstrap/wire.h"

namespace atl::bootstrap::wire {

/// A rank's join at the root: the info length to read next, or nullopt with *why. `header` must be
/// exactly sizeof(JoinHeader) bytes (anything else is rejected).
std::optional<size_t> checkJoinHeader(std::span<const uint8_t> header, const Secret& secret, const Nonce& nonce,
                                      std::string* why);

/// A rank-to-rank message header for a listener of a `nranks` job: the payload length, or nullopt.
std::optional<size_t> checkMsgHeader(std::span<const uint8_t> header, const Secret& secret, const Nonce& nonce,
                                     int nranks, std::string* why);

}  // namespace atl::bootstrap::wire
