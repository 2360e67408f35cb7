#include "sample_order.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "xtrain/error.hpp"

namespace xtrain::tools {

SampleOrder::SampleOrder(int64_t samples, uint64_t seed) : samples_(samples), seed_(seed) {
  reshuffle();
}

std::vector<int64_t> SampleOrder::next(int64_t n) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(n));
  while (static_cast<int64_t>(out.size()) < n) {
    if (pos_ == samples_) {
      ++epoch_;
      reshuffle();
    }
    out.push_back(order_[static_cast<size_t>(pos_++)]);
  }
  seen_ += n;
  return out;
}

void SampleOrder::seek(const std::vector<int64_t>& p) {
  if (p.size() != 3 || p[0] < 0 || p[1] < 0 || p[1] > samples_) {
    throw error(
        "the checkpoint's data position does not fit this data set of {} samples (was it "
        "written for another data set?)",
        samples_);
  }
  epoch_ = p[0];
  reshuffle();
  pos_ = p[1];
  seen_ = p[2];
}

void SampleOrder::reshuffle() {
  order_.resize(static_cast<size_t>(samples_));
  std::iota(order_.begin(), order_.end(), 0);
  std::mt19937_64 rng(seed_ * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(epoch_));
  std::shuffle(order_.begin(), order_.end(), rng);
  pos_ = 0;
}

std::vector<int64_t> samplesOfSteps(int64_t numSamples, uint64_t seed,
                                    const std::vector<int64_t>& start, int64_t steps,
                                    int64_t samplesPerStep) {
  SampleOrder replay(numSamples, seed);
  replay.seek(start);
  std::vector<bool> taken(static_cast<size_t>(numSamples));
  int64_t distinct = 0;
  for (int64_t s = 0; s < steps && distinct < numSamples; ++s) {
    for (int64_t i : replay.next(samplesPerStep)) {
      if (!taken[static_cast<size_t>(i)]) ++distinct;
      taken[static_cast<size_t>(i)] = true;
    }
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < numSamples; ++i) {
    if (taken[static_cast<size_t>(i)]) out.push_back(i);
  }
  return out;
}

}  // namespace xtrain::tools
