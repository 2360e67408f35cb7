// The CPU contention reader (common/cpu_contention.hpp): its parsers on texts as Linux writes them,
// and the live counters against threads that are made to queue for one CPU.
#include "common/cpu_contention.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

namespace xtrain {
namespace {

TEST(CpuContention, RunDelayOfASchedstatLine) {
  EXPECT_DOUBLE_EQ(*runDelayOfSchedstat("515359700 7042294 36\n"), 0.007042294);
  EXPECT_FALSE(runDelayOfSchedstat("").has_value());
  EXPECT_FALSE(runDelayOfSchedstat("12 oops").has_value());
}

TEST(CpuContention, SpareSecondsOfTheUsableCpus) {
  const std::string stat =
      "cpu  300 10 40 500 20 0 0 0 0 0\n"
      "cpu0 100 5 20 200 10 0 0 0 0 0\n"
      "cpu1 150 3 10 100 5 0 0 0 0 0\n"
      "cpu2 50 2 10 200 5 0 0 0 0 0\n"
      "intr 1 2 3\n"
      "ctxt 5\n";
  // idle + iowait, in ticks of 1/100 s; only the CPUs asked for ("cpu " is the total).
  EXPECT_DOUBLE_EQ(*spareSecondsOfProcStat(stat, {0, 2}, 100, false), (210 + 205) / 100.0);
  EXPECT_DOUBLE_EQ(*spareSecondsOfProcStat(stat, {1}, 100, false), 1.05);
  // With the niced processes' time.
  EXPECT_DOUBLE_EQ(*spareSecondsOfProcStat(stat, {0, 2}, 100, true), (215 + 207) / 100.0);
  EXPECT_FALSE(spareSecondsOfProcStat(stat, {3}, 100, false).has_value()) << "a CPU without a line";
  EXPECT_FALSE(spareSecondsOfProcStat("cpu0 1 2\n", {0}, 100, false).has_value()) << "a short line";
  EXPECT_FALSE(spareSecondsOfProcStat(stat, {0}, 0, false).has_value());
}

TEST(CpuContention, AveragesOverTheIntervalAndNothingNegative) {
  CpuCounters a, b;
  b.when = a.when + std::chrono::milliseconds(500);
  a.runDelaySeconds = 1.0;
  b.runDelaySeconds = 1.25;
  a.spareCpuSeconds = 10.0;
  b.spareCpuSeconds = 10.5;
  CpuContention c = contentionBetween(a, b);
  EXPECT_DOUBLE_EQ(c.seconds, 0.5);
  EXPECT_DOUBLE_EQ(c.waitingThreads, 0.5);
  EXPECT_DOUBLE_EQ(c.spareCpus, 1.0);
  // A thread that ended took its delay with it: none, not a negative wait.
  b.runDelaySeconds = 0.5;
  EXPECT_DOUBLE_EQ(contentionBetween(a, b).waitingThreads, 0.0);
  EXPECT_DOUBLE_EQ(contentionBetween(b, b).waitingThreads, 0.0) << "no time, no average";
}

// Three threads spinning on one CPU for 300 ms: at any moment two of them wait, whatever else the
// machine does (on a busy machine they wait more, not less).
TEST(CpuContention, ThreadsSharingOneCpuAreSeenWaiting) {
  if (!std::ifstream("/proc/self/schedstat")) GTEST_SKIP() << "no scheduler statistics here";
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &mine)) ++cpu;
  ASSERT_LT(cpu, CPU_SETSIZE);
  const std::optional<CpuCounters> before = readCpuCounters();
  ASSERT_TRUE(before.has_value());
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  for (int k = 0; k < 3; ++k) {
    spinners.emplace_back([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::optional<CpuCounters> during = readCpuCounters();  // the spinners still count
  stop = true;
  for (auto& t : spinners) t.join();
  ASSERT_TRUE(during.has_value());
  const CpuContention c = contentionBetween(*before, *during);
  EXPECT_GT(c.waitingThreads, 1.0) << "over " << c.seconds << " s";
  EXPECT_GE(c.spareCpus, 0.0);
  EXPECT_LE(c.spareCpus, static_cast<double>(CPU_COUNT(&mine)) + 0.1);
}

TEST(CpuContention, TheSamplerReadsAtMostOncePerInterval) {
  CpuContentionSampler sampler(std::chrono::milliseconds(50));
  EXPECT_FALSE(sampler.poll().has_value()) << "the first reading has nothing to compare with";
  EXPECT_FALSE(sampler.poll().has_value()) << "too soon";
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const std::optional<CpuContention> c = sampler.poll();
  ASSERT_TRUE(c.has_value());
  EXPECT_GE(c->seconds, 0.05);
}

}  // namespace
}  // namespace xtrain
