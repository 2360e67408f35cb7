#include "session/adaptive_kernel_threads.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace xtrain::session {

AdaptiveKernelThreads::AdaptiveKernelThreads(int maxThreads, const Tuning& tuning)
    : max_(std::max(1, maxThreads)),
      tuning_(tuning),
      current_(max_),
      interval_(tuning.probeEvery),
      ran_(static_cast<size_t>(max_) + 1, false) {
  ran_[static_cast<size_t>(max_)] = true;  // the count the kernels are first made for
}

void AdaptiveKernelThreads::recordContention(double waitingThreads, double spareCpus) {
  contentionKnown_ = true;
  waitingThreads_ = waitingThreads;
  spareCpus_ = spareCpus;
}

bool AdaptiveKernelThreads::queuedForCpus() const {
  return contentionKnown_ && current_ > 1 && waitingThreads_ >= tuning_.waitingForProbeDown;
}

int AdaptiveKernelThreads::probeCandidate() const {
  const bool canGoDown = current_ > 1;
  // No probe up without a CPU free to take the extra thread.
  const bool canGoUp =
      current_ < max_ && (!contentionKnown_ || spareCpus_ >= tuning_.spareForProbeUp);
  if (canGoDown && canGoUp) return probeUp_ ? current_ + 1 : current_ - 1;
  if (canGoDown) return current_ - 1;
  if (canGoUp) return current_ + 1;
  return current_;
}

double AdaptiveKernelThreads::recentMean() const {
  return std::accumulate(recent_.begin(), recent_.end(), 0.0) / static_cast<double>(recent_.size());
}

int AdaptiveKernelThreads::threadsForNextStep() {
  pending_ = current_;
  pendingIsProbe_ = false;
  if (max_ == 1) return pending_;
  if (steps_ < tuning_.warmupSteps) {
    // A warm-up step whose threads queued for the CPUs: the rest of the warm-up runs with one
    // thread less (beside two jobs a warm-up step with every thread took 5x one thread's).
    if (queuedForCpus()) {
      moveTo(current_ - 1);
      interval_ = tuning_.probeEvery;  // a move no step has judged: probe again soon
      pending_ = current_;
    }
    ran_[static_cast<size_t>(current_)] = true;  // the warm-up makes this count's kernels
    return pending_;
  }
  const bool enoughSamples = static_cast<int>(recent_.size()) >= std::min(3, tuning_.window);
  // A neighbour that arrived shows as the current count's steps slowing down: probe soon.
  const bool slowedDown = enoughSamples && baseline_ > 0.0 &&
                          recentMean() > baseline_ * tuning_.slowdown &&
                          sinceProbe_ >= tuning_.minProbeEvery;
  // A probe that won once is repeated at once to confirm it.
  const bool confirming = probeWins_ > 0;
  // Threads queued for the CPUs: one thread less, once a step of this count has been measured
  // (once such a probe lost, no sooner than the back-off allows).
  const bool queued =
      queuedForCpus() && !recent_.empty() && sinceProbe_ >= (queuedProbeLost_ ? interval_ : 1);
  queuedProbe_ = false;
  if (probeAfterWarmup_ != 0) {  // the probe whose count the last step warmed up
    pending_ = probeAfterWarmup_;
    queuedProbe_ = queuedAfterWarmup_;
    probeAfterWarmup_ = 0;
  } else if (confirming) {
    pending_ = probeTarget_;
  } else if (queued) {
    pending_ = current_ - 1;
    queuedProbe_ = true;
  } else if (enoughSamples && (slowedDown || sinceProbe_ >= interval_)) {
    pending_ = probeCandidate();
  }
  pendingIsProbe_ = pending_ != current_;
  return pending_;
}

void AdaptiveKernelThreads::moveTo(int threads) {
  current_ = threads;
  queuedProbeLost_ = false;
  recent_.clear();
  baseline_ = 0.0;
  interval_ = tuning_.probeEveryAfterMove;
}

AdaptiveKernelThreads::StepRecord AdaptiveKernelThreads::recordStep(double seconds) {
  ++steps_;
  StepRecord record{false, pending_ == 0 ? current_ : pending_, 0.0, false};
  if (max_ == 1 || steps_ <= tuning_.warmupSteps) return record;
  if (!pendingIsProbe_) {
    ++sinceProbe_;
    recent_.push_back(seconds);
    if (static_cast<int>(recent_.size()) > tuning_.window) recent_.pop_front();
    if (baseline_ == 0.0 && static_cast<int>(recent_.size()) >= std::min(3, tuning_.window)) {
      baseline_ = recentMean();
    }
    return record;
  }
  record.probe = true;
  if (!ran_[static_cast<size_t>(pending_)]) {
    // Its kernels were created in this step: the probe is the next step.
    ran_[static_cast<size_t>(pending_)] = true;
    record.warmup = true;
    probeAfterWarmup_ = pending_;
    queuedAfterWarmup_ = queuedProbe_;
    return record;
  }
  sinceProbe_ = 0;
  record.mean = recentMean();
  const bool won = seconds < record.mean * (1.0 - tuning_.margin);
  record.won = won;
  if (won && ((probeWins_ > 0 && probeTarget_ == pending_) || queuedProbe_)) {
    moveTo(pending_);  // two wins in a row, or one while the threads queued for the CPUs
    probeWins_ = 0;
    return record;
  }
  if (won) {
    probeWins_ = 1;
    probeTarget_ = pending_;
    return record;
  }
  // Lost (or a confirmation failed): the other direction next time, and less often.
  probeWins_ = 0;
  if (queuedProbe_) queuedProbeLost_ = true;
  probeUp_ = !probeUp_;
  interval_ = std::min(tuning_.maxProbeEvery, interval_ * 2);
  const double extraSteps = seconds / record.mean - 1.0;
  if (extraSteps > 0.0 && tuning_.probeBudget > 0.0) {
    const double budgeted = std::ceil(extraSteps / tuning_.probeBudget);
    interval_ = std::max(interval_,
                         static_cast<int>(std::min<double>(tuning_.maxCostlyProbeEvery, budgeted)));
  }
  // The current count's slowdown was not the threads' fault: it is the new normal.
  if (!recent_.empty()) baseline_ = recentMean();
  return record;
}

}  // namespace xtrain::session
