// The environment's durations and numbers through the real programs (issue 27): a timeout too long
// for the clock used to expire at once ("timed out after -9223372036854775808 ms"); now it is
// refused at start naming the variable, the value and the range, and the longest one that fits
// trains as any other. Every run is bounded by runCommand's timeout.
#include <gtest/gtest.h>

#include <string>

#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

class EnvironmentValues : public ScratchDirTest {};

TEST_F(EnvironmentValues, CommTimeoutTooLongIsRefusedNotExpired) {
  for (const char* bad : {"1e10", "inf", "2592001"}) {
    const CommandResult r = runCommand(std::string("XTRAIN_COMM_TIMEOUT=") + bad +
                                       " ./xrun -n 2 ./xtrain --steps 3 2>&1");
    EXPECT_EQ(r.exitCode, 2) << bad << ":\n" << r.output;
    EXPECT_NE(r.output.find(std::string("XTRAIN_COMM_TIMEOUT='") + bad +
                            "': expected a duration of more than 0 and at most 2592000 s"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("timed out"), std::string::npos) << r.output;
  }
  // The longest timeout there is (30 days) waits as asked: the job trains.
  const CommandResult r =
      runCommand("XTRAIN_COMM_TIMEOUT=720h ./xrun -n 2 ./xtrain --steps 3 2>&1");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("xtrain: trained 3 steps"), std::string::npos) << r.output;
}

// XTRAIN_CHECKPOINT_TIMEOUT is read at a checkpoint's first agreement: a bad value is refused
// before the first step instead, and never taken as a timeout that has already passed.
TEST_F(EnvironmentValues, CheckpointTimeoutTooLongIsRefusedAtStart) {
  const std::string ckpt = (dir_ / "ckpt").string();
  for (const char* bad : {"inf", "1e16", " 60"}) {
    const CommandResult r = runCommand(
        std::string("XTRAIN_CHECKPOINT_TIMEOUT='") + bad +
        "' ./xrun -n 2 ./xtrain --steps 2 --checkpoint-every 1 --checkpoint-dir " + ckpt + " 2>&1");
    EXPECT_EQ(r.exitCode, 2) << bad << ":\n" << r.output;
    EXPECT_NE(
        r.output.find(std::string("XTRAIN_CHECKPOINT_TIMEOUT='") + bad + "': expected a duration"),
        std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("step 1"), std::string::npos) << r.output;
  }
  const CommandResult r = runCommand(
      "XTRAIN_CHECKPOINT_TIMEOUT=2592000 ./xrun -n 2 ./xtrain --steps 2 "
      "--checkpoint-every 1 --checkpoint-dir " +
      ckpt + " 2>&1");
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

// xrun's own durations: what would overflow the clock is a usage error, not a job ended at once.
TEST_F(EnvironmentValues, XrunTimeoutTooLongIsAUsageError) {
  const CommandResult r = runCommand("./xrun -n 1 --timeout 1e16 ./xtrain --steps 1 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--timeout='1e16': expected a duration"), std::string::npos) << r.output;
  const CommandResult ok = runCommand("./xrun -n 1 --timeout 720h ./xtrain --steps 1 2>&1");
  EXPECT_EQ(ok.exitCode, 0) << ok.output;
}

// One syntax for every variable: a leading space or hexadecimal is refused alike, naming the
// variable (some variables used to take them, others not).
TEST_F(EnvironmentValues, OneSyntaxForEveryVariable) {
  for (const char* assignment :
       {"XTRAIN_NUM_IPUS=' 8'", "XTRAIN_NUM_IPUS=0x10", "XTRAIN_WAIT_FOR_IPU=' 1'",
        "XTRAIN_DATA_RESIDENT_BYTES=0x10", "XTRAIN_LOG_LEVEL=' info'", "XTRAIN_IPU_IDS=-1"}) {
    const std::string text(assignment);
    const std::string name = text.substr(0, text.find('='));
    std::string value = text.substr(text.find('=') + 1);
    if (value.front() == '\'') value = value.substr(1, value.size() - 2);
    const CommandResult r = runCommand(text + " ./xtrain --steps 1 2>&1");
    EXPECT_NE(r.exitCode, 0) << text << ":\n" << r.output;
    EXPECT_NE(r.output.find(name + "='" + value + "': expected"), std::string::npos)
        << text << ":\n"
        << r.output;
  }
}

}  // namespace
}  // namespace xtrain::testing
