// xtrain::dist's preemption calls: nothing installed until handlePreemption(), a signal only noted,
// and preemptionAgreed() making every instance stop after the same step when one of them was
// signalled. The multi-instance case starts this binary under xrun (Preemption.*); the instances
// run PreemptionWorker.*, which skips unless xrun started it.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "testing/training_testing.hpp"
#include "xtrain/dist.hpp"
#include "xtrain/error.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

bool startedByXrun() {
  return std::getenv("XTRAIN_NUM_INSTANCES") != nullptr &&
         std::getenv("XTRAIN_TEST_PREEMPTION_OUT") != nullptr;
}

void (*currentHandler(int sig))(int) {
  struct sigaction old {};
  ::sigaction(sig, nullptr, &old);
  return old.sa_handler;
}

TEST(Preemption, NothingIsInstalledUntilHandlePreemption) {
  if (startedByXrun()) GTEST_SKIP() << "the launching side";
  // This process has not called handlePreemption(): the signals keep their default action.
  EXPECT_EQ(currentHandler(SIGUSR1), SIG_DFL);
  EXPECT_EQ(currentHandler(SIGTERM), SIG_DFL);
  try {
    (void)dist::preemptionRequested();
    ADD_FAILURE() << "preemptionRequested() without handlePreemption() did not throw";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("call dist::handlePreemption() first"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)dist::preemptionAgreed(), error);
  EXPECT_EQ(dist::preemptionSignal(), 0);

  dist::handlePreemption();
  dist::handlePreemption();  // idempotent
  EXPECT_NE(currentHandler(SIGUSR1), SIG_DFL);
  EXPECT_NE(currentHandler(SIGTERM), SIG_DFL);
  EXPECT_FALSE(dist::preemptionRequested());
  EXPECT_FALSE(dist::preemptionAgreed());  // one instance: the local flag
  ASSERT_EQ(::raise(SIGTERM), 0);          // noted, not fatal
  ASSERT_EQ(::raise(SIGUSR1), 0);
  EXPECT_TRUE(dist::preemptionRequested());
  EXPECT_EQ(dist::preemptionSignal(), SIGTERM);  // the first one
  EXPECT_TRUE(dist::preemptionAgreed());
  EXPECT_EQ(dist::kPreemptedExitCode, 75);
}

// An instance of Preemption.InstancesAgreeOnTheStep: only instance 1 is signalled, at step 3; every
// instance writes the step at which preemptionAgreed() said stop and the signal it reports.
TEST(PreemptionWorker, OnlyOneInstanceIsSignalled) {
  if (!startedByXrun()) GTEST_SKIP() << "an instance of Preemption.*, started by xrun";
  dist::handlePreemption();
  const int64_t instance = dist::getInstanceIndex();
  int64_t stoppedAt = -1;
  for (int64_t step = 0; step < 10; ++step) {
    if (instance == 1 && step == 3) {
      ASSERT_EQ(::raise(SIGUSR1), 0);
    }
    EXPECT_EQ(dist::preemptionRequested(), instance == 1 && step >= 3);
    if (dist::preemptionAgreed()) {
      stoppedAt = step;
      break;
    }
  }
  std::ofstream out(fs::path(std::getenv("XTRAIN_TEST_PREEMPTION_OUT")) / std::to_string(instance));
  out << stoppedAt << " " << dist::preemptionSignal() << "\n";
}

TEST(Preemption, InstancesAgreeOnTheStep) {
  if (startedByXrun()) GTEST_SKIP() << "the launching side";
  const fs::path out =
      fs::path(::testing::TempDir()) / ("xtrain_preemption_" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out);
  const CommandResult r = runTestsUnderXrun("-n 3", "test_session", "PreemptionWorker.*",
                                            "XTRAIN_TEST_PREEMPTION_OUT=" + out.string());
  ASSERT_EQ(r.exitCode, 0) << r.output;
  for (int i = 0; i < 3; ++i) {
    std::ifstream in(out / std::to_string(i));
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "3 " + std::to_string(SIGUSR1)) << "instance " << i << "\n" << r.output;
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace xtrain::testing
