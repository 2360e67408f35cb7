#include "session/adaptive_kernel_threads.hpp"

#include <algorithm>
#include <vector>

namespace xtrain::session {

AdaptiveKernelThreads::AdaptiveKernelThreads(int maxThreads, const Tuning& tuning)
    : max_(std::max(1, maxThreads)),
      tuning_(tuning),
      current_(max_),
      interval_(tuning.probeEvery) {}

int AdaptiveKernelThreads::probeCandidate() const {
  const bool canGoDown = current_ > 1;
  const bool canGoUp = current_ < max_;
  if (canGoDown && canGoUp) return probeUp_ ? current_ + 1 : current_ - 1;
  if (canGoDown) return current_ - 1;
  if (canGoUp) return current_ + 1;
  return current_;
}

double AdaptiveKernelThreads::recentMedian() const {
  std::vector<double> sorted(recent_.begin(), recent_.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

int AdaptiveKernelThreads::threadsForNextStep() {
  pending_ = current_;
  pendingIsProbe_ = false;
  if (max_ == 1 || steps_ < tuning_.warmupSteps) return pending_;
  const bool enoughSamples = static_cast<int>(recent_.size()) >= std::min(3, tuning_.window);
  // A neighbour that arrived shows as the current count's steps slowing down: probe soon.
  const bool slowedDown = enoughSamples && baseline_ > 0.0 &&
                          recentMedian() > baseline_ * tuning_.slowdown &&
                          sinceProbe_ >= tuning_.minProbeEvery;
  // A probe that won once is repeated at once to confirm it.
  const bool confirming = probeWins_ > 0;
  if (enoughSamples && (confirming || slowedDown || sinceProbe_ >= interval_)) {
    pending_ = confirming ? probeTarget_ : probeCandidate();
    pendingIsProbe_ = pending_ != current_;
  }
  return pending_;
}

void AdaptiveKernelThreads::moveTo(int threads) {
  current_ = threads;
  recent_.clear();
  baseline_ = 0.0;
  interval_ = tuning_.probeEveryAfterMove;
}

void AdaptiveKernelThreads::recordStep(double seconds) {
  ++steps_;
  if (max_ == 1 || steps_ <= tuning_.warmupSteps) return;
  if (!pendingIsProbe_) {
    ++sinceProbe_;
    recent_.push_back(seconds);
    if (static_cast<int>(recent_.size()) > tuning_.window) recent_.pop_front();
    if (baseline_ == 0.0 && static_cast<int>(recent_.size()) >= std::min(3, tuning_.window)) {
      baseline_ = recentMedian();
    }
    return;
  }
  sinceProbe_ = 0;
  const bool won = seconds < recentMedian() * (1.0 - tuning_.margin);
  if (won && probeWins_ > 0 && probeTarget_ == pending_) {
    moveTo(pending_);  // two wins in a row
    probeWins_ = 0;
    return;
  }
  if (won) {
    probeWins_ = 1;
    probeTarget_ = pending_;
    return;
  }
  // Lost (or a confirmation failed): the other direction next time, and less often.
  probeWins_ = 0;
  probeUp_ = !probeUp_;
  interval_ = std::min(tuning_.maxProbeEvery, interval_ * 2);
  // The current count's slowdown was not the threads' fault: it is the new normal.
  if (!recent_.empty()) baseline_ = recentMedian();
}

}  // namespace xtrain::session
