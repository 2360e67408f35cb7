// Slots of the gloo backend's messages. Every protocol has its own prefix in the top byte of a slot
// (from 0x40 up, clear of the prefixes 0x01 to 0x08 of gloo's own collectives, which the backend
// does not use) and the collective's sequence number below it, so the messages of two protocols or
// two collectives never meet.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>

namespace xtrain::comm::gloo {

inline constexpr uint64_t kSeqMask = (uint64_t{1} << 56) - 1;

inline constexpr uint64_t slotOf(uint64_t prefix, uint64_t seq) {
  return (prefix << 56) | (seq & kSeqMask);
}

// The fingerprint exchange of collective `seq`.
inline uint64_t fingerprintSlot(uint64_t seq) {
  return slotOf(0x40, seq);
}
// The reduce-scatter ring of collective `seq` (reduceScatter, first phase of allReduce).
inline uint64_t ringSlot(uint64_t seq) {
  return slotOf(0x41, seq);
}
// Probing which connections broke after a failure.
inline constexpr uint64_t kProbeSlot = uint64_t{0x42} << 56;
// The all-gather ring of collective `seq` (allGather, second phase of allReduce).
inline uint64_t gatherSlot(uint64_t seq) {
  return slotOf(0x43, seq);
}
// The broadcast tree of collective `seq`.
inline uint64_t broadcastSlot(uint64_t seq) {
  return slotOf(0x44, seq);
}
// The watchdog's receives that never complete (one per peer and generation): gloo fails them when
// their connection breaks, whatever the collectives are doing.
inline uint64_t sentinelSlot(uint64_t generation) {
  return slotOf(0x45, generation);
}

// The proofs that authenticate a new group's connections (group.cpp), before any collective.
inline constexpr uint64_t kAuthSlot = uint64_t{0x46} << 56;

}  // namespace xtrain::comm::gloo

#pragma GCC visibility pop
