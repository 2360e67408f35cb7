// AdaptiveKernelThreads driven by made-up step times: a machine where each thread count has a known
// cost, which changes when a neighbour arrives or leaves.
#include "session/adaptive_kernel_threads.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace xtrain::session {
namespace {

// Runs `steps` steps, each as long as cost(threads, step); returns the step count spent at each
// thread count (index = threads) and the count in use at the end.
struct RunSummary {
  std::vector<int> stepsAt;
  int last = 0;
};

RunSummary drive(AdaptiveKernelThreads& a, int steps, int64_t& step,
                 const std::function<double(int, int64_t)>& cost) {
  RunSummary s;
  s.stepsAt.assign(static_cast<size_t>(a.maxThreads()) + 1, 0);
  for (int k = 0; k < steps; ++k, ++step) {
    const int t = a.threadsForNextStep();
    EXPECT_GE(t, 1);
    EXPECT_LE(t, a.maxThreads());
    ++s.stepsAt[static_cast<size_t>(t)];
    a.recordStep(cost(t, step));
  }
  s.last = a.current();
  return s;
}

TEST(AdaptiveKernelThreads, OneThreadIsAlwaysOne) {
  AdaptiveKernelThreads a(1);
  int64_t step = 0;
  auto s = drive(a, 100, step, [](int, int64_t) { return 1.0; });
  EXPECT_EQ(s.stepsAt[1], 100);
  // A nonsensical maximum is one thread, not a crash.
  AdaptiveKernelThreads b(0);
  EXPECT_EQ(b.threadsForNextStep(), 1);
}

TEST(AdaptiveKernelThreads, QuietMachineKeepsEveryThreadAndProbesRarely) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  // Two threads are 1.3x faster than one: the count stays at 2, and probes back off.
  auto s = drive(a, 2000, step, [](int t, int64_t) { return t == 2 ? 1.0 : 1.3; });
  EXPECT_EQ(s.last, 2);
  EXPECT_LT(s.stepsAt[1], 2000 / 50) << "probes cost more than 2% of the steps";
  EXPECT_EQ(a.probeInterval(), AdaptiveKernelThreads::Tuning{}.maxProbeEvery);
}

TEST(AdaptiveKernelThreads, BusyNeighbourFromTheStartMovesToOneThread) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  // Beside a busy neighbour two threads wait for each other: three times one thread's time.
  auto s = drive(a, 40, step, [](int t, int64_t) { return t == 2 ? 3.0 : 1.0; });
  EXPECT_EQ(s.last, 1);
  s = drive(a, 1000, step, [](int t, int64_t) { return t == 2 ? 3.0 : 1.0; });
  EXPECT_GT(s.stepsAt[1], 970);
}

TEST(AdaptiveKernelThreads, RareLongStallsCountAgainstTheirThreadCount) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  // What a busy neighbour does to two threads, as measured: most steps as fast as one thread's,
  // every eighth stalled for seven steps' time while the neighbour gets its share. Two threads
  // average 1.75, one thread 1.05: the count must move although the typical step is faster.
  auto stalls = [](int t, int64_t k) { return t == 1 ? 1.05 : (k % 8 == 0 ? 7.0 : 1.0); };
  auto s = drive(a, 60, step, stalls);
  EXPECT_EQ(s.last, 1);
  s = drive(a, 1000, step, stalls);
  EXPECT_GT(s.stepsAt[1], 970);
}

TEST(AdaptiveKernelThreads, AnOccasionalSlowStepOnAQuietMachineKeepsEveryThread) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  // A hiccup every 100 steps (another process woke up briefly) is not a neighbour.
  auto cost = [](int t, int64_t k) { return (t == 2 ? 1.0 : 1.3) * (k % 100 == 0 ? 4.0 : 1.0); };
  auto s = drive(a, 2000, step, cost);
  EXPECT_EQ(s.last, 2);
  EXPECT_GT(s.stepsAt[2], 1950);
}

TEST(AdaptiveKernelThreads, NeighbourArrivingIsNoticedSoonAndLeavingLater) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  auto quiet = [](int t, int64_t) { return t == 2 ? 1.0 : 1.3; };
  auto busy = [](int t, int64_t) { return t == 2 ? 3.0 : 1.3; };
  drive(a, 500, step, quiet);
  ASSERT_EQ(a.current(), 2);
  // It arrives: the two-thread steps slow down, which brings a probe within minProbeEvery.
  auto s = drive(a, 20, step, busy);
  EXPECT_EQ(s.last, 1) << "still on 2 threads 20 steps after the neighbour arrived";
  drive(a, 500, step, busy);
  EXPECT_EQ(a.current(), 1);
  // It leaves: one thread does not slow down, so only the backed-off probes find 2 again, within
  // the interval that a lost probe's cost allows (3.0 against 1.3: 1.3 steps extra).
  const AdaptiveKernelThreads::Tuning t;
  const int bound =
      std::max(t.maxProbeEvery, static_cast<int>(std::ceil((3.0 / 1.3 - 1.0) / t.probeBudget)));
  s = drive(a, bound + 4, step, quiet);
  EXPECT_EQ(s.last, 2);
}

TEST(AdaptiveKernelThreads, CostlyProbesTakeAboutTheirBudgetOfTheTime) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  // Beside a busy neighbour a two-thread step takes six one-thread steps (measured: 70-110 ms
  // against 16): after the move, probes back up come rarely enough to cost ~1% of the time.
  auto cost = [](int t, int64_t) { return t == 2 ? 6.0 : 1.0; };
  drive(a, 50, step, cost);
  ASSERT_EQ(a.current(), 1);
  const auto s = drive(a, 10000, step, cost);
  const double total = 6.0 * s.stepsAt[2] + 1.0 * s.stepsAt[1];
  const double extra = 5.0 * s.stepsAt[2];
  EXPECT_LT(extra / total, 0.02) << s.stepsAt[2] << " probes in 10000 steps";
  EXPECT_GT(s.stepsAt[2], 0) << "it still probes (the neighbour may leave)";
  EXPECT_LE(a.probeInterval(), AdaptiveKernelThreads::Tuning{}.maxCostlyProbeEvery);
}

TEST(AdaptiveKernelThreads, OneLuckyProbeDoesNotMove) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  int probes = 0;
  // Every first probe of a pair is fast by chance, its confirmation is not.
  auto s = drive(a, 1000, step, [&probes](int t, int64_t) {
    if (t == 2) return 1.0;
    return (probes++ % 2 == 0) ? 0.5 : 1.3;
  });
  EXPECT_EQ(s.last, 2);
  EXPECT_EQ(s.stepsAt[2] + s.stepsAt[1], 1000);
}

TEST(AdaptiveKernelThreads, ClimbsDownToTheBestCountAndStays) {
  AdaptiveKernelThreads a(4);
  int64_t step = 0;
  // A neighbour on one of four cores: three threads are best.
  auto cost = [](int t, int64_t) {
    static const double byThreads[] = {0.0, 3.0, 1.6, 1.0, 2.5};
    return byThreads[t];
  };
  auto s = drive(a, 300, step, cost);
  EXPECT_EQ(s.last, 3);
  s = drive(a, 2000, step, cost);
  EXPECT_EQ(s.last, 3);
  EXPECT_GT(s.stepsAt[3], 1900);
}

TEST(AdaptiveKernelThreads, WarmUpStepsRunAtTheMostAndAreNotMeasured) {
  AdaptiveKernelThreads::Tuning tuning;
  tuning.warmupSteps = 5;
  AdaptiveKernelThreads a(2, tuning);
  // Slow first steps (primitive creation, cold caches) do not count against two threads.
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(a.threadsForNextStep(), 2);
    a.recordStep(100.0);
  }
  int64_t step = 0;
  auto s = drive(a, 300, step, [](int t, int64_t) { return t == 2 ? 1.0 : 1.3; });
  EXPECT_EQ(s.last, 2);
}

// The first step with a count makes its kernels (device/kernel.hpp): however slow, it is a warm-up,
// and the probe that follows it is what counts.
TEST(AdaptiveKernelThreads, TheFirstStepAtACountIsAWarmUpNotAProbe) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  bool oneRan = false;
  int warmups = 0;
  for (; step < 40; ++step) {
    const int t = a.threadsForNextStep();
    // Beside a busy neighbour one thread is 3x faster, but its first step is 10x slower.
    double seconds = t == 2 ? 3.0 : 1.0;
    if (t == 1 && !oneRan) seconds = 30.0;
    oneRan = oneRan || t == 1;
    const AdaptiveKernelThreads::StepRecord r = a.recordStep(seconds);
    if (r.warmup) {
      ++warmups;
      EXPECT_EQ(r.threads, 1);
      EXPECT_FALSE(r.won);
      // The probe comes at once.
      EXPECT_EQ(a.threadsForNextStep(), 1);
      EXPECT_FALSE(a.recordStep(1.0).warmup);
      ++step;
    }
  }
  EXPECT_EQ(warmups, 1);
  EXPECT_EQ(a.current(), 1) << "the slow first step counted against one thread";
}

TEST(AdaptiveKernelThreads, SameTimesGiveSameChoices) {
  auto run = [] {
    AdaptiveKernelThreads a(3);
    std::vector<int> choices;
    for (int64_t k = 0; k < 400; ++k) {
      const int t = a.threadsForNextStep();
      choices.push_back(t);
      a.recordStep(1.0 + 0.1 * static_cast<double>((k * 7919) % 13) + (t == 1 ? 0.5 : 0.0));
    }
    return choices;
  };
  EXPECT_EQ(run(), run());
}

// The same, with the kernel's accounting of the CPUs given before each step, as ReplicaRuntime
// gives it: contention(threads, step) = {threads of the process waiting for a CPU, CPUs spare}.
struct Contention {
  double waiting = 0, spare = 0;
};
RunSummary driveWithContention(AdaptiveKernelThreads& a, int steps, int64_t& step,
                               const std::function<double(int, int64_t)>& cost,
                               const std::function<Contention(int, int64_t)>& contention) {
  RunSummary s;
  s.stepsAt.assign(static_cast<size_t>(a.maxThreads()) + 1, 0);
  for (int k = 0; k < steps; ++k, ++step) {
    const int t = a.threadsForNextStep();
    ++s.stepsAt[static_cast<size_t>(t)];
    a.recordStep(cost(t, step));
    const Contention c = contention(t, step);
    a.recordContention(c.waiting, c.spare);
  }
  s.last = a.current();
  return s;
}

// Two jobs on two cores: each job's two threads queue behind the other job's for half the time.
// The first (warm-up) step shows it, and the rest of the warm-up already runs with one thread.
TEST(AdaptiveKernelThreads, ThreadsQueuedInTheWarmUpMoveDownAtOnce) {
  auto cost = [](int t, int64_t) { return t == 2 ? 5.0 : 1.0; };
  AdaptiveKernelThreads informed(2);
  int64_t step = 0;
  RunSummary s = driveWithContention(informed, 40, step, cost, [](int t, int64_t) {
    return t == 2 ? Contention{1.0, 0.0} : Contention{0.0, 0.0};
  });
  EXPECT_EQ(s.last, 1);
  EXPECT_EQ(s.stepsAt[2], 1) << "the first step only";
  AdaptiveKernelThreads timesOnly(2);
  step = 0;
  s = drive(timesOnly, 40, step, cost);
  EXPECT_EQ(s.last, 1);
  EXPECT_GE(s.stepsAt[2], 5) << "the step times alone need measured steps and two probes";
}

// A second job arrives after a quiet start (where probes down lost and backed off): the first
// step that queued is measured, then one thread's warm-up and a single winning probe move down
// (no confirmation: the queue is the evidence), not the back-off's next probe.
TEST(AdaptiveKernelThreads, ThreadsQueuedLaterMoveDownAtTheFirstWin) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  const int64_t arrives = 400;
  auto cost = [&](int t, int64_t k) {
    if (k < arrives) return t == 2 ? 1.0 : 1.3;
    return t == 2 ? 2.0 : 1.0;
  };
  auto contention = [&](int t, int64_t k) {
    if (k < arrives || t == 1) return Contention{0.0, 0.0};
    return Contention{1.0, 0.0};
  };
  RunSummary s = driveWithContention(a, static_cast<int>(arrives), step, cost, contention);
  ASSERT_EQ(s.last, 2);
  ASSERT_GT(a.probeInterval(), 16) << "the quiet start's probes backed off";
  s = driveWithContention(a, 4, step, cost, contention);
  EXPECT_EQ(s.last, 1);
  EXPECT_LE(s.stepsAt[2], 1);
}

// Beside a busy neighbour no CPU is spare: one thread never probes two (each such probe cost 5-6
// steps), until the neighbour leaves and a CPU idles; then the count goes back up.
TEST(AdaptiveKernelThreads, NoProbeUpWithoutASpareCpu) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  const int64_t leaves = 3000;
  auto cost = [&](int t, int64_t k) {
    if (k >= leaves) return t == 2 ? 0.6 : 1.0;
    return t == 2 ? 6.0 : 1.0;
  };
  auto contention = [&](int t, int64_t k) {
    if (k >= leaves) return t == 2 ? Contention{0.0, 0.0} : Contention{0.0, 1.0};
    return t == 2 ? Contention{0.7, 0.0} : Contention{0.0, 0.0};
  };
  RunSummary s = driveWithContention(a, 20, step, cost, contention);
  ASSERT_EQ(s.last, 1);
  s = driveWithContention(a, static_cast<int>(leaves) - 20, step, cost, contention);
  EXPECT_EQ(s.stepsAt[2], 0) << "a probe up beside the neighbour";
  s = driveWithContention(a, 200, step, cost, contention);
  EXPECT_EQ(s.last, 2) << "the neighbour left and the spare CPU was not taken";
}

// Threads that queue although two threads are faster (beside a niced neighbour, which yields):
// the warm-up moves down, the spare CPU takes the count back up, and the probes down that the
// queue makes, which lose, back off like any other: the queue alone does not make the count
// probe every step.
TEST(AdaptiveKernelThreads, QueuedProbesThatLoseBackOff) {
  AdaptiveKernelThreads a(2);
  int64_t step = 0;
  RunSummary s = driveWithContention(
      a, 1000, step, [](int t, int64_t) { return t == 2 ? 1.0 : 1.5; },
      [](int t, int64_t) {
        return t == 2 ? Contention{1.0, 0.0} : Contention{0.0, 0.9};
      });
  EXPECT_EQ(s.last, 2);
  EXPECT_LT(s.stepsAt[1], 1000 / 50) << "probes cost more than 2% of the steps";
}

}  // namespace
}  // namespace xtrain::session
