// Real-process tests of xrun's preemption handling with small shell programs: SIGUSR1 and SIGTERM
// passed on, the exit code 75 of preempted instances passed on, and --grace-period's SIGKILL of an
// instance that ignores the request. (xtrain itself under preemption:
// tests/tools/preemption_test.cpp.) Every wait is bounded; the fixture kills any process the
// instances recorded in its teardown.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "process_helpers.hpp"

namespace xtrain::launcher::testing {
namespace {

class XrunPreemption : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = makeTempDir(); }
  void TearDown() override {
    for (pid_t p : readPids(dir_, "pid")) ::kill(p, SIGKILL);
    removeTree(dir_);
  }

  // xrun OPTIONS sh -c SCRIPT, with $D the private directory and $I the instance index.
  std::vector<std::string> command(const std::vector<std::string>& options,
                                   const std::string& script) const {
    std::vector<std::string> argv{xrunPath()};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"sh", "-c", "D=" + dir_ + "; I=$XTRAIN_INSTANCE_INDEX; " + script});
    return argv;
  }
  static bool bothReady(const std::string& out) {
    return out.find("[0] ready") != std::string::npos && out.find("[1] ready") != std::string::npos;
  }
  void expectAllGone(size_t expected) {
    auto pids = readPids(dir_, "pid");
    EXPECT_EQ(pids.size(), expected);
    for (pid_t p : pids) EXPECT_TRUE(processGone(p, 2.0)) << "process " << p << " outlived xrun";
  }

  std::string dir_;
};

// Instances that save and exit with 75 on SIGUSR1: xrun forwards it and exits 75, saying so.
TEST_F(XrunPreemption, Sigusr1PreemptedInstancesGiveExitCode75) {
  Child xrun(command({"-n", "2"},
                     "echo $$ > $D/pid.$I; trap 'echo saved; exit 75' USR1; "
                     "echo ready; while :; do sleep 0.05; done"));
  ASSERT_TRUE(xrun.waitForStdout(bothReady, 10));
  ::kill(xrun.pid(), SIGUSR1);
  auto r = xrun.wait(20);
  EXPECT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 75) << r.err;
  EXPECT_NE(r.out.find("[0] saved"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1] saved"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("received SIGUSR1; forwarded to every instance"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the job was preempted: 2 of 2 instances exited with code 75"),
            std::string::npos)
      << r.err;
  expectAllGone(2);
}

// SIGTERM to xrun: the instances get the grace period (default 30 s) to save, not the 5 s of a
// failure; one that takes 1 s and exits 75 makes xrun exit 75.
TEST_F(XrunPreemption, SigtermLeavesTimeToSaveAndPassesExitCode75On) {
  Child xrun(command({"-n", "2"},
                     "echo $$ > $D/pid.$I; trap 'sleep 1; echo saved; exit 75' TERM; "
                     "echo ready; while :; do sleep 0.05; done"));
  ASSERT_TRUE(xrun.waitForStdout(bothReady, 10));
  const double sent = nowSeconds();
  ::kill(xrun.pid(), SIGTERM);
  auto r = xrun.wait(40);
  EXPECT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 75) << r.err;
  EXPECT_GE(nowSeconds() - sent, 0.9);
  EXPECT_NE(r.out.find("[1] saved"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("received SIGTERM; forwarding it to every instance and ending the job "
                       "(SIGKILL after --grace-period 30 s)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the job was preempted"), std::string::npos) << r.err;
  expectAllGone(2);
}

// An instance that ignores SIGTERM is killed when --grace-period ends; the exit code stays
// 128 + SIGTERM and xrun names it.
TEST_F(XrunPreemption, InstanceIgnoringSigtermIsKilledAfterTheGracePeriod) {
  Child xrun(command({"-n", "2", "--grace-period", "1.5"},
                     "echo $$ > $D/pid.$I; if [ $I = 1 ]; then trap '' TERM; echo ready; exec "
                     "sleep 1000; fi; trap 'exit 75' TERM; echo ready; while :; do sleep 0.05; "
                     "done"));
  ASSERT_TRUE(xrun.waitForStdout(bothReady, 10));
  const double sent = nowSeconds();
  ::kill(xrun.pid(), SIGTERM);
  auto r = xrun.wait(20);
  const double took = nowSeconds() - sent;
  EXPECT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 128 + SIGTERM) << r.err;
  EXPECT_GE(took, 1.4);
  EXPECT_LT(took, 6.0);
  EXPECT_NE(r.err.find("instance 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did not end within the grace period (1.5 s) and was killed"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("the job was preempted"), std::string::npos) << r.err;
  expectAllGone(2);
}

// One instance stops for SIGUSR1 (exit 75), the other ignores it: the others get the grace period
// after the first exit 75, then SIGKILL; the job is not reported as preempted.
TEST_F(XrunPreemption, InstanceIgnoringAPreemptionIsKilledAfterTheGracePeriod) {
  Child xrun(command({"-n", "2", "--grace-period", "1"},
                     "echo $$ > $D/pid.$I; if [ $I = 1 ]; then trap '' USR1 TERM; echo ready; "
                     "exec sleep 1000; fi; trap 'exit 75' USR1; echo ready; while :; do sleep "
                     "0.05; done"));
  ASSERT_TRUE(xrun.waitForStdout(bothReady, 10));
  const double sent = nowSeconds();
  ::kill(xrun.pid(), SIGUSR1);
  auto r = xrun.wait(20);
  const double took = nowSeconds() - sent;
  EXPECT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 128 + SIGKILL) << r.err;
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 6.0);
  EXPECT_NE(r.err.find("instance 1 (pid"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did not end within --grace-period 1 s and was killed after instance 0 "
                       "was preempted"),
            std::string::npos)
      << r.err;
  expectAllGone(2);
}

// A failure still ends the job promptly: a survivor ignoring SIGTERM is killed after at most 5 s
// of a long grace period.
TEST_F(XrunPreemption, FailureKeepsItsShortGracePeriod) {
  Child xrun(command({"-n", "2", "--grace-period", "60"},
                     "echo $$ > $D/pid.$I; if [ $I = 1 ]; then sleep 0.3; exit 3; fi; trap '' "
                     "TERM; exec sleep 1000"));
  auto r = xrun.wait(30);
  EXPECT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  expectAllGone(2);
}

}  // namespace
}  // namespace xtrain::launcher::testing
