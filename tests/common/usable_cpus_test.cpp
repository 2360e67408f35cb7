// usableCpus(): the affinity mask bounds it (a thread pinned to one CPU may use one), and the
// cgroup quotas' texts give the CPUs they allow, rounded up.
#include "common/usable_cpus.hpp"

#include <gtest/gtest.h>
#include <sched.h>

namespace xtrain::testing {
namespace {

TEST(UsableCpus, FollowsTheCallingThreadsAffinity) {
  cpu_set_t before;
  CPU_ZERO(&before);
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  EXPECT_GE(usableCpus(), 1);
  EXPECT_LE(usableCpus(), CPU_COUNT(&before));
  int first = 0;
  while (!CPU_ISSET(first, &before)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int pinned = usableCpus();
  ASSERT_EQ(sched_setaffinity(0, sizeof(before), &before), 0);
  EXPECT_EQ(pinned, 1);
}

TEST(UsableCpus, CgroupQuotasRoundUp) {
  EXPECT_EQ(cpusOfCgroupV2Max("max 100000"), std::nullopt);
  EXPECT_EQ(cpusOfCgroupV2Max("150000 100000"), 2);
  EXPECT_EQ(cpusOfCgroupV2Max("100000 100000"), 1);
  EXPECT_EQ(cpusOfCgroupV2Max("20000 100000"), 1);  // a fifth of a CPU still runs one thread
  EXPECT_EQ(cpusOfCgroupV2Max("400000 100000\n"), 4);
  EXPECT_EQ(cpusOfCgroupV2Max(""), std::nullopt);
  EXPECT_EQ(cpusOfCgroupV2Max("garbage"), std::nullopt);
  EXPECT_EQ(cpusOfCgroupV2Max("100000 0"), std::nullopt);
  EXPECT_EQ(cpusOfCgroupV1Quota("-1", "100000"), std::nullopt);
  EXPECT_EQ(cpusOfCgroupV1Quota("250000", "100000"), 3);
  EXPECT_EQ(cpusOfCgroupV1Quota("x", "100000"), std::nullopt);
}

}  // namespace
}  // namespace xtrain::testing
