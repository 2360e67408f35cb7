// AdaptiveKernelThreads: the kernel thread count of a replica, chosen step by step from the step
// times it measures, so that a run on a shared machine does not collapse beside a neighbour.
//
// Why: kernels run on OpenMP teams whose threads wait for each other at every barrier. When another
// process holds one of the cores, the team's thread on that core gets a scheduler slice now and
// then, and every parallel region waits for it: two threads beside one busy neighbour ran the
// reference MLP at a third of one thread's speed (issue 32). One thread less has no one to wait
// for. The machine's load cannot be read cheaply and reliably (load averages lag by a minute,
// run-queue counts do not say whose cores are taken), so the step itself is the measure: now and
// then a step runs with one thread more or less, and the count moves when that step is clearly
// faster.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <deque>
#include <vector>

namespace xtrain::session {

// Contract: threadsForNextStep() returns the count for the coming step, in [1, maxThreads];
// recordStep(seconds) takes that step's wall time and must follow each threadsForNextStep() call.
// Warm-up steps (the first `warmupSteps`) run at maxThreads and are not measured. A probe step
// runs at current() - 1 or current() + 1 (alternately, within bounds); the count moves to the
// probed one when two probes in a row were each faster than the mean of the current count's
// recent steps by more than `margin`. The mean, not the median: beside a busy neighbour most
// steps with every thread run nearly as fast as with one thread less, and every few steps one
// waits 100 ms or more while the scheduler gives the neighbour its share; a median hides those
// stalls, which are most of the lost time (issue 32, measured with the probes' trace log). Probes
// come every `probeEvery` steps at first and `probeEveryAfterMove` after a move, sooner (after
// `minProbeEvery`) once the current count's steps have become clearly slower than when it was
// chosen (a neighbour arrived), and back off (doubling, up to `maxProbeEvery`) while they lose; a
// lost probe that was costly backs off further, so that probes take about `probeBudget` of the
// time (up to `maxCostlyProbeEvery` steps apart).
// The first step at a count no step has run with yet is a warm-up of that count, not a probe: the
// kernels are created for a thread count the first time they run with it (device/kernel.hpp), so
// that step pays for their creation; it is not judged, and the probe runs at the next step.
// CPU contention (recordContention: the kernel's accounting, common/cpu_contention.hpp), when it
// is known, steers the probes: a probe up comes only when the usable CPUs were spare (idle, or
// running niced processes) at least `spareForProbeUp` on average (a CPU free for the extra thread:
// beside a busy neighbour of the same priority a probe up costs several steps and cannot win), and
// at a count above one, the process's threads waiting for a CPU at least `waitingForProbeDown` on
// average (they queue behind other work) probe down as soon as one step of the count has been
// measured, and such a probe moves when it wins once; during the warm-up, where no step is
// measured, they move one thread down at once (a probe up, when a CPU is spare, undoes a move that
// was wrong). Deterministic: the same step times and contention give the same choices (tests drive
// it with made-up figures).
class AdaptiveKernelThreads {
 public:
  struct Tuning {
    int warmupSteps = 2;
    int window = 16;  // recent steps of the current count kept for its mean
    int minProbeEvery = 8;
    int probeEvery = 2;  // steps between probes at first
    int probeEveryAfterMove = 32;
    int maxProbeEvery = 128;
    double margin = 0.05;    // a probe wins when faster by more than this fraction
    double slowdown = 1.25;  // the current count's mean over its baseline that probes at once
    // A lost probe that cost more than its share pushes the next one further away: steps between
    // probes >= the probe's extra time (in steps of the current count) / probeBudget, up to
    // maxCostlyProbeEvery. Beside a busy neighbour a two-thread probe takes 4-7 one-thread steps.
    double probeBudget = 0.01;
    int maxCostlyProbeEvery = 1024;
    double spareForProbeUp = 0.5;
    double waitingForProbeDown = 0.5;
  };

  explicit AdaptiveKernelThreads(int maxThreads) : AdaptiveKernelThreads(maxThreads, Tuning{}) {}
  AdaptiveKernelThreads(int maxThreads, const Tuning& tuning);

  // What a recorded step was, for logs: a probe (and whether it won) or a step at current().
  struct StepRecord {
    bool probe = false;
    int threads = 0;      // the count the step ran with
    double mean = 0.0;    // the current count's recent mean it was compared with (probes)
    bool won = false;     // the probe was faster by more than the margin
    bool warmup = false;  // the first step at its count: not judged (the probe comes next)
  };

  int threadsForNextStep();
  StepRecord recordStep(double seconds);
  // The latest contention over recent steps: threads of the process waiting for a CPU and usable
  // CPUs spare, each on average.
  void recordContention(double waitingThreads, double spareCpus);

  int current() const { return current_; }
  int maxThreads() const { return max_; }
  // Steps since the last probe before the next one (for tests and logs).
  int probeInterval() const { return interval_; }

 private:
  int probeCandidate() const;
  bool queuedForCpus() const;  // contention known, above one thread, threads waiting
  double recentMean() const;
  void moveTo(int threads);

  const int max_;
  const Tuning tuning_;
  int current_;
  int64_t steps_ = 0;
  int sinceProbe_ = 0;
  int interval_;
  bool probeUp_ = false;  // the next probe's direction when both are possible
  int pending_ = 0;       // the count the coming step runs with
  bool pendingIsProbe_ = false;
  int probeWins_ = 0;  // consecutive winning probes of probeTarget_
  int probeTarget_ = 0;
  double baseline_ = 0.0;  // the current count's mean when it was chosen (0: not yet known)
  std::deque<double> recent_;
  std::vector<bool> ran_;  // by count: a step has run with it (its kernels exist)
  bool contentionKnown_ = false;
  double waitingThreads_ = 0.0;
  double spareCpus_ = 0.0;
  bool queuedProbe_ = false;    // the pending probe was made because threads queued for CPUs
  bool queuedProbeLost_ = false;  // a queued probe lost since the count last moved
  int probeAfterWarmup_ = 0;    // the probe of the count the last step warmed up (0: none)
  bool queuedAfterWarmup_ = false;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
