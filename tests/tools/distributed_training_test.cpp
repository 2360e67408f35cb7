// `xtrain` under `xrun -n N`: several instances train one model. The job's layout (instances x
// local replicas) and the split of a global batch into replicas must not change the trained weights
// (docs/replication-semantics.md section 9, cases 3 and 4, through the command line).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

class DistributedTraining : public ScratchDirTest {
 protected:
  // Trains the built-in example and returns the path of the saved model.
  std::string train(const std::string& launcher, const std::string& flags,
                    const std::string& name) {
    const std::string model = (dir_ / (name + ".onnx")).string();
    const CommandResult r =
        runCommand(launcher + "./xtrain --steps 8 --lr 0.05 --momentum 0.9 --reduction mean " +
                   flags + " --save-model " + model);
    EXPECT_EQ(r.exitCode, 0) << launcher << flags << ":\n" << r.output;
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.output, m, std::regex("loss ([0-9.]+) -> ([0-9.]+)")))
        << r.output;
    return model;
  }
};

// 1 x 4, 2 x 2 and 4 x 1 (instances x local replicas) train to the same weights.
TEST_F(DistributedTraining, InstanceLayoutsGiveTheSameWeights) {
  const auto local = train("", "--replicas 4", "1x4");
  const auto mixed = train("./xrun -n 2 --num-replicas 4 ", "", "2x2");
  const auto spread = train("./xrun -n 4 ", "", "4x1");
  expectSameInitializers(local, mixed, 1e-5);
  expectSameInitializers(local, spread, 1e-5);
}

// A global batch of 16 on one replica equals 4 instances of micro-batch 4 with Mean reduction.
TEST_F(DistributedTraining, GlobalBatchSplitOverInstances) {
  const auto one = train("", "--micro-batch-size 16", "mb16");
  const auto four = train("./xrun -n 4 ", "--micro-batch-size 4", "mb4x4");
  expectSameInitializers(one, four, 1e-5);
}

// Open MPI's mpirun as xrun's engine starts the same job: the instances get the same environment
// (tests/launcher/engines_test.cpp) and train to the same weights as with the local engine.
TEST_F(DistributedTraining, MpirunEngineTrainsLikeTheLocalEngine) {
  if (runCommand("command -v mpirun").exitCode != 0) GTEST_SKIP() << "mpirun is not installed";
  const auto local = train("./xrun -n 2 --num-replicas 4 ", "", "local");
  const auto mpirun = train("./xrun --engine mpirun -n 2 --num-replicas 4 ", "", "mpirun");
  expectSameInitializers(local, mpirun, 0);
}

// Only the first instance prints progress; a disagreeing --replicas is refused with what to do.
TEST_F(DistributedTraining, OutputAndLayoutErrors) {
  CommandResult r = runCommand("./xrun -n 2 ./xtrain --steps 3");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("[0] xtrain: trained 3 steps"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[1] xtrain: trained"), std::string::npos) << r.output;
  r = runCommand("./xrun -n 2 ./xtrain --steps 3 --replicas 4");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--replicas 4 disagrees with the launcher"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace xtrain::testing
