// The order xtrain feeds samples in: a seeded shuffle per epoch that a checkpoint records and a
// resumed run continues.
#pragma once

#include <cstdint>
#include <vector>

namespace xtrain::tools {

// A seeded shuffle per epoch; hands out the next n sample indices, starting a new epoch when
// needed.
class SampleOrder {
 public:
  SampleOrder(int64_t samples, uint64_t seed);
  std::vector<int64_t> next(int64_t n);
  int64_t epoch() const { return epoch_; }
  int64_t samplesSeen() const { return seen_; }
  // Where the order is: what a checkpoint records, and seek() restores. seek throws xtrain::error
  // for a position that does not fit this data set.
  std::vector<int64_t> position() const { return {epoch_, pos_, seen_}; }
  void seek(const std::vector<int64_t>& p);

 private:
  void reshuffle();
  int64_t samples_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  int64_t pos_ = 0;
  int64_t seen_ = 0;
  std::vector<int64_t> order_;
};

// The samples steps [0, steps) of a run took (every instance's), each once, in index order: the
// order replayed from `start`, where the run began. Only for the message of a failed run.
std::vector<int64_t> samplesOfSteps(int64_t numSamples, uint64_t seed,
                                    const std::vector<int64_t>& start, int64_t steps,
                                    int64_t samplesPerStep);

}  // namespace xtrain::tools
