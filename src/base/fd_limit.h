// File descriptors: each socket link, listener and bootstrap message holds one, so a rank's need
// grows with the peers it talks to. NCCL raises the soft RLIMIT_NOFILE to the hard limit at init;
// so do we, and when descriptors still run out, errors say which limit was hit instead of a bare
// "Too many open files".
#pragma once

#include <cstdint>
#include <string>

namespace atl::net {

struct FdLimit {
  uint64_t soft = 0;
  uint64_t hard = 0;
};

/// Raises the soft limit to the hard one (once per process; later calls only read). Returns the
/// limits now in force.
FdLimit raiseFdLimit();
/// For errno values that mean "out of descriptors" (EMFILE, ENFILE): a sentence naming the limit
/// and what to do; "" otherwise.
std::string fdHint(int err);
/// When this process holds (nearly) all the descriptors its soft limit allows, or ran out in the
/// last ten minutes (fdHint(EMFILE) was asked for), the fdHint(EMFILE) sentence; "" otherwise. For waits that fail because a peer in this process (a root, another
/// rank) could not accept, which the waiting side only sees as a silent or closed connection.
std::string fdPressureHint();

}  // namespace atl::net
