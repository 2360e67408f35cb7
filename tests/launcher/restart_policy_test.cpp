// Unit tests of xrun's restart decisions (launcher/restart_policy.hpp): the budget and its window,
// which outcomes are restarted, the attempts' rendezvous directories and the removal of a job's
// stale shared-memory segments.
#include "launcher/restart_policy.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "process_helpers.hpp"

namespace xtrain::launcher {
namespace {

TEST(RestartBudget, WithoutAWindowEveryFailureCounts) {
  RestartBudget b(2, std::nullopt);
  EXPECT_EQ(b.onFailure(1), 1);
  EXPECT_EQ(b.onFailure(1000), 2);
  EXPECT_EQ(b.onFailure(1e6), std::nullopt);
  EXPECT_EQ(b.counted(1e6), 2);
  RestartBudget none(0, std::nullopt);
  EXPECT_EQ(none.onFailure(0), std::nullopt);
}

TEST(RestartBudget, AWindowForgetsOlderRestarts) {
  RestartBudget b(2, 10.0);
  EXPECT_EQ(b.onFailure(0), 1);
  EXPECT_EQ(b.onFailure(5), 2);
  EXPECT_EQ(b.onFailure(9), std::nullopt);  // the third failure within 10 s ends the job
  EXPECT_EQ(b.counted(10.5), 1);            // the restart at 0 left the window
  EXPECT_EQ(b.onFailure(10.5), 2);
  EXPECT_EQ(b.onFailure(30), 1);
}

TEST(RestartPolicy, OnlyInstanceFailuresOtherThanUsageErrorsAreRestarted) {
  std::string why;
  JobOutcome o;
  o.end = JobEnd::InstanceFailed;
  o.exitCode = 137;
  EXPECT_TRUE(isRestartable(o, why));
  o.exitCode = 2;
  EXPECT_FALSE(isRestartable(o, why));
  EXPECT_NE(why.find("usage error"), std::string::npos);
  o.exitCode = 138;
  o.forwardedSignal = SIGUSR1;  // a warning before preemption came during the attempt
  EXPECT_FALSE(isRestartable(o, why));
  EXPECT_NE(why.find("SIGUSR1"), std::string::npos);
  o.forwardedSignal = 0;
  for (JobEnd end : {JobEnd::Success, JobEnd::StartFailed, JobEnd::Timeout, JobEnd::Signal}) {
    o.end = end;
    o.exitCode = 1;
    EXPECT_FALSE(isRestartable(o, why));
    EXPECT_FALSE(why.empty());
  }
}

TEST(RestartPolicy, EachAttemptHasItsOwnRendezvousDirectory) {
  EXPECT_EQ(attemptRendezvousDir("/tmp/xrun-J", 0), "/tmp/xrun-J");
  EXPECT_EQ(attemptRendezvousDir("/tmp/xrun-J", 3), "/tmp/xrun-J-restart3");
  EXPECT_EQ(attemptRendezvousDir("", 3), "");
}

TEST(RestartPolicy, RemovesOnlyTheJobsSegments) {
  const std::string dir = testing::makeTempDir();
  const std::string job = "20261124T112124-14808-9a882b83";
  EXPECT_EQ(shmSegmentPrefix(job), "xtrain-" + job + "-");
  EXPECT_EQ(shmSegmentPrefix("a/b c"), "xtrain-a_b_c-");
  const std::vector<std::string> ours = {"xtrain-" + job + "-42-0", "xtrain-" + job + "-42-17"};
  const std::vector<std::string> others = {
      "xtrain-" + job + "x-42-0",          // another job whose id starts like this one
      "xtrain-" + job + "-restart1-42-0",  // not the backend's form
      "xtrain-" + job + "-42",             // no counter
      "xtrain-20261124T112124-99999-00000000-1-0", "something-else"};
  for (const auto& n : ours) std::ofstream(dir + "/" + n) << "x";
  for (const auto& n : others) std::ofstream(dir + "/" + n) << "x";
  EXPECT_EQ(removeJobSegments(job, dir), 2);
  for (const auto& n : ours) EXPECT_FALSE(std::filesystem::exists(dir + "/" + n)) << n;
  for (const auto& n : others) EXPECT_TRUE(std::filesystem::exists(dir + "/" + n)) << n;
  EXPECT_EQ(removeJobSegments(job, dir + "/missing"), 0);
  testing::removeTree(dir);
}

}  // namespace
}  // namespace xtrain::launcher
