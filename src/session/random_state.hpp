// RandomState: where a session's random stream stands: the seed (Session::setRandomSeed) and the
// micro-batches run since it was set. Every random number of a run (dropout, stochastic rounding,
// synthetic data) comes from seeds derived from both, so the same seed and count give the same
// numbers on every run and after a checkpoint resumed (which saves and restores words()).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <vector>

namespace xtrain::session {

class RandomState {
 public:
  // A new seed starts the count again.
  void setSeed(uint64_t seed) {
    seed_ = seed;
    counter_ = 0;
  }
  uint64_t seed() const { return seed_; }
  // After a step of `microBatches` micro-batches.
  void advance(uint64_t microBatches) { counter_ += microBatches; }

  // Session::getRNGState and setRNGState: {seed low, seed high, counter low, counter high}.
  // setWords throws xtrain::error naming the size unless given 4 words.
  std::vector<uint32_t> words() const;
  void setWords(const std::vector<uint32_t>& words);

  // The seed of global replica `globalReplica`'s programs for micro-batch `iteration` of the
  // current step (each replica's differs, so replicas of different instances differ too), and
  // the seed of the update after batch `batch` of the step (the same on every replica).
  uint64_t microBatchSeed(int64_t globalReplica, int64_t iteration) const;
  uint64_t updateSeed(int64_t batch) const;

 private:
  uint64_t seed_ = 0;
  uint64_t counter_ = 0;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
