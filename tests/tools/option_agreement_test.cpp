// Instances of one xrun job started with different training options (here through a wrapper script
// that passes each instance other arguments) used to train together and exit 0. xtrain now compares
// its options across instances before the first step and every instance exits 2 naming the option,
// instance 0's value and the differing instance's.
#include <gtest/gtest.h>

#include <string>

#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

// `xrun -n 2` of xtrain, instance 1 with `otherFlags` instead of `flags`.
CommandResult runWithInstanceOneDifferent(const std::string& flags, const std::string& otherFlags) {
  return runCommand(
      "./xrun -n 2 --timeout 120 sh -c 'if [ \"$XTRAIN_INSTANCE_INDEX\" = 1 ]; then exec ./xtrain "
      "--steps 3 " +
      otherFlags + "; else exec ./xtrain --steps 3 " + flags + "; fi'");
}

TEST(OptionAgreement, DifferentLearningRatesAreRefused) {
  const CommandResult r = runWithInstanceOneDifferent("--lr 0.05", "--lr 0.1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--lr: instance 0 has 0.05, instance 1 has 0.1"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("trained 3 steps"), std::string::npos) << r.output;
}

TEST(OptionAgreement, DifferentMicroBatchSizesAreRefused) {
  const CommandResult r =
      runWithInstanceOneDifferent("--micro-batch-size 8", "--micro-batch-size 16 --seed 3");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--micro-batch-size: instance 0 has 8, instance 1 has 16"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--seed: instance 0 has 0, instance 1 has 3"), std::string::npos)
      << r.output;
}

// The same options in other words (an explicit default) are the same options.
TEST(OptionAgreement, EqualOptionsSpelledDifferentlyTrain) {
  const CommandResult r = runWithInstanceOneDifferent("", "--lr 0.01 --micro-batch-size 32");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("[0] xtrain: trained 3 steps"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace xtrain::testing
