// Single copy on shared-memory links: how a large message travels as an offer (Connection::offer).
//
// Why: the ring copies every byte twice, in by the sender and out (or reduced) by the receiver.
// An offer puts only a descriptor in the ring, and the receiver copies or reduces straight out of
// the sender's buffer with plain loads:
// - between thread-ranks of one process, through the pointer itself;
// - between processes, when the buffer came from ncclMemAlloc (the shared pool,
//   base/shared_pool.h), through the peer's region mapped read-only (shm_peer_pool.h);
// - between processes from any other memory, through process_vm_readv (shm_peer_memory.h), only
//   when ATOLL_SHM_CMA_MIN asks for it: on the development VM a CMA read runs at 0.46-0.51x
//   memcpy (perf/baselines/README.md), about what the two ring copies cost.
//
// Protocol, per ring (sender -> receiver):
// - In settle(), the receiver probes what it can read of the sender and publishes two thresholds
//   in RingHeader, once: directMin (pooled memory, or any memory in one process) and cmaMin (other
//   memory of another process); UINT64_MAX means never. Both ends read the same values, so they
//   classify each message alike.
// - A message of n >= min(directMin, cmaMin) bytes starts with a header word, so the receiver
//   learns which way it comes: kStreamMagic + sequence (the bytes follow in the ring as usual), or
//   kOfferMagic + sequence and the rest of the descriptor (address, length, pool region, offset).
//   The sender then leaves its buffer alone until RingHeader::offersTaken reaches the offer.
// - The receiver checks the header's sequence and the length its own schedule expects (a mismatch
//   is a protocol error, never silent corruption), reads, then bumps offersTaken.
// - Failures: a receiver that exits leaves the sender waiting on offersTaken, and the sender's
//   liveness probe (shm_ring.h) turns that into ncclRemoteError, as for a full ring. A sender that
//   exits mid-read leaves its pooled pages mapped by the receiver (they stay valid), or makes
//   process_vm_readv fail; either way the next message from it fails. A sender that closed its
//   end (abort) fails the read at once: its buffer may be freed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace atl::transport::shm {

inline constexpr uint64_t kOfferMagic = 0x4f46464552000000ull;   // "OFFER" in the high bytes
inline constexpr uint64_t kStreamMagic = 0x5354524541000000ull;  // "STREA"
/// Offer descriptor words.
enum OfferWord : size_t { kWordHeader, kWordAddr, kWordLength, kWordPoolId, kWordPoolToken, kWordPoolFd, kWordPoolOffset, kOfferWords };
inline constexpr size_t kOfferBytes = kOfferWords * sizeof(uint64_t);
/// process_vm_readv reductions read the peer through this much of our memory at a time: small
/// enough to stay in L2 between the read and the reduce that consumes it.
inline constexpr size_t kBounceBytes = 128 << 10;
inline constexpr uint64_t kNeverDirect = UINT64_MAX;

}  // namespace atl::transport::shm
