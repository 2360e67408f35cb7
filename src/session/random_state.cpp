#include "session/random_state.hpp"

#include "device/program.hpp"
#include "xtrain/error.hpp"

namespace xtrain::session {

std::vector<uint32_t> RandomState::words() const {
  return {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32),
          static_cast<uint32_t>(counter_), static_cast<uint32_t>(counter_ >> 32)};
}

void RandomState::setWords(const std::vector<uint32_t>& state) {
  if (state.size() != 4) {
    // PopART's words first (its programs compare the start of the message).
    throw error(
        "Devicex::setRngStateValue received rngState of size {}; was expecting size 4 "
        "(setRNGState takes the 4 words getRNGState returns: the seed and the micro-batches run "
        "since it was set)",
        state.size());
  }
  seed_ = static_cast<uint64_t>(state[0]) | (static_cast<uint64_t>(state[1]) << 32);
  counter_ = static_cast<uint64_t>(state[2]) | (static_cast<uint64_t>(state[3]) << 32);
}

uint64_t RandomState::microBatchSeed(int64_t globalReplica, int64_t iteration) const {
  const uint64_t replica = static_cast<uint64_t>(globalReplica);
  return device::mixSeed(seed_ + 0x9e3779b97f4a7c15ull * replica) ^
         device::mixSeed(counter_ + static_cast<uint64_t>(iteration));
}

uint64_t RandomState::updateSeed(int64_t batch) const {
  return device::mixSeed(seed_ ^ device::mixSeed(counter_ + static_cast<uint64_t>(batch)));
}

}  // namespace xtrain::session
