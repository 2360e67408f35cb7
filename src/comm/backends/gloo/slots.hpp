// Tags and slots of the gloo backend's messages. gloo's own collectives put their prefix (0x01 to
// 0x08) in the top byte of a slot and the tag below it; the messages of our own protocols use
// prefixes from 0x40 up, so they never meet gloo's.
#pragma once

#include <cstdint>

namespace xtrain::comm::gloo {

// gloo collectives' tag: the collective's sequence number (they run one at a time per communicator,
// so wrapping after 2^32 is harmless).
inline uint32_t tagOf(uint64_t seq) {
  return static_cast<uint32_t>(seq);
}

inline constexpr uint64_t kSeqMask = (uint64_t{1} << 56) - 1;

// The fingerprint exchange of collective `seq`.
inline uint64_t fingerprintSlot(uint64_t seq) {
  return (uint64_t{0x40} << 56) | (seq & kSeqMask);
}
// Our rings (reduce-scatter, padded all-gather) of collective `seq`.
inline uint64_t ringSlot(uint64_t seq) {
  return (uint64_t{0x41} << 56) | (seq & kSeqMask);
}
// Probing which connections broke after a failure.
inline constexpr uint64_t kProbeSlot = uint64_t{0x42} << 56;

}  // namespace xtrain::comm::gloo
