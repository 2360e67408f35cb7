// Preemption of real `xtrain` jobs: SIGUSR1 or SIGTERM to `xrun -n 2 xtrain` mid-run makes every
// instance stop after the same step, write a checkpoint and exit 75, which xrun passes on; the same
// command with --resume auto then ends with the weights of an uninterrupted run, bit for bit.
// Every wait is bounded (Child kills its process group when a bound passes).
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "testing/process_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

// About a millisecond a step on a free machine: thousands of steps leave seconds for the signal
// to arrive mid-run, also on a busy machine.
const std::vector<std::string> kTraining = {"--steps", "3000", "--micro-batch-size", "1024",
                                            "--lr",    "0.05", "--momentum",         "0.9"};

std::string bin(const std::string& program) {
  return std::string(XTRAIN_BIN_DIR) + "/" + program;
}

class Preemption : public ScratchDirTest {
 protected:
  // argv of `[xrun -n 2] xtrain <kTraining> extra...`.
  static std::vector<std::string> command(bool underXrun, const std::vector<std::string>& extra) {
    std::vector<std::string> argv;
    if (underXrun) argv = {bin("xrun"), "-n", "2"};
    argv.push_back(bin("xtrain"));
    argv.insert(argv.end(), kTraining.begin(), kTraining.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // Starts the job, sends `sig` to its first process once the first step is printed, and returns
  // how it ended.
  static ProcessResult preempt(const std::vector<std::string>& argv, int sig) {
    Child job(argv);
    EXPECT_TRUE(job.waitForStdout(
        [](const std::string& out) { return out.find("step      1/3000") != std::string::npos; },
        120))
        << "the job did not print its first step";
    ::kill(job.pid(), sig);
    ProcessResult r = job.wait(120);
    EXPECT_FALSE(r.timedOut);
    return r;
  }

  // Runs to the end and returns the process result.
  static ProcessResult runToEnd(const std::vector<std::string>& argv) {
    Child job(argv);
    ProcessResult r = job.wait(240);
    EXPECT_FALSE(r.timedOut);
    return r;
  }

  // The step xtrain said it stopped after (0 when the line is missing).
  static long stoppedAfter(const std::string& err, const std::string& signal) {
    std::smatch m;
    if (!std::regex_search(
            err, m,
            std::regex("xtrain: preempted by " + signal + " after step ([0-9]+) of 3000"))) {
      return 0;
    }
    return std::stol(m[1]);
  }
};

// SIGUSR1 (Slurm's warning) and SIGTERM (scancel): exit 75, a checkpoint of the step every instance
// stopped after, and a resumed run bit-identical to an uninterrupted one.
TEST_F(Preemption, XrunJobStopsWithACheckpointAndResumesBitIdentically) {
  const ProcessResult straight = runToEnd(command(true, {"--save-model", path("straight.onnx")}));
  ASSERT_EQ(straight.exitCode, 0) << straight.err;

  for (const auto& [sig, name] : {std::pair{SIGUSR1, "SIGUSR1"}, std::pair{SIGTERM, "SIGTERM"}}) {
    SCOPED_TRACE(name);
    const std::string ckpts = path(std::string("ckpts-") + name);
    const std::string model = path(std::string("resumed-") + name + ".onnx");
    const std::vector<std::string> flags = {"--checkpoint-dir", ckpts, "--save-model", model};
    const ProcessResult r = preempt(command(true, flags), sig);
    EXPECT_EQ(r.exitCode, 75) << r.err;
    const long step = stoppedAfter(r.err, name);
    ASSERT_GT(step, 0) << r.err;
    ASSERT_LT(step, 3000) << r.err;
    EXPECT_NE(r.err.find("xrun: the job was preempted: 2 of 2 instances exited with code 75"),
              std::string::npos)
        << r.err;
    char name8[32];
    std::snprintf(name8, sizeof name8, "ckpt-%08ld", step);
    EXPECT_TRUE(fs::exists(fs::path(ckpts) / name8 / "checkpoint.h5"))
        << name8 << " is missing; " << r.err;
    EXPECT_FALSE(fs::exists(model)) << "a preempted run saved the model";
    const CommandResult check = runCommand("./xckpt verify " + (fs::path(ckpts) / name8).string());
    EXPECT_EQ(check.exitCode, 0) << check.output;

    const ProcessResult resumed = runToEnd(
        command(true, {"--checkpoint-dir", ckpts, "--resume", "auto", "--save-model", model}));
    ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
    EXPECT_NE(resumed.out.find("resumed from " + (fs::path(ckpts) / name8).string()),
              std::string::npos)
        << resumed.out;
    expectSameInitializers(path("straight.onnx"), model, 0);
  }
}

// Open MPI's mpirun as xrun's engine forwards SIGUSR1 to every process; mpirun exits 75 with them,
// and xrun passes it on.
TEST_F(Preemption, MpirunEnginePassesThePreemptionOn) {
  if (runCommand("command -v mpirun").exitCode != 0) GTEST_SKIP() << "mpirun is not installed";
  const std::string ckpts = path("ckpts");
  std::vector<std::string> argv = command(true, {"--checkpoint-dir", ckpts});
  argv.insert(argv.begin() + 1, {"--engine", "mpirun"});
  const ProcessResult r = preempt(argv, SIGUSR1);
  EXPECT_EQ(r.exitCode, 75) << r.err;
  const long step = stoppedAfter(r.err, "SIGUSR1");
  ASSERT_GT(step, 0) << r.err;
  EXPECT_NE(r.err.find("xrun: the job was preempted: mpirun exited with code 75"),
            std::string::npos)
      << r.err;
  char name8[32];
  std::snprintf(name8, sizeof name8, "ckpt-%08ld", step);
  EXPECT_TRUE(fs::exists(fs::path(ckpts) / name8 / "checkpoint.h5")) << r.err;
}

// Without --checkpoint-dir the job still stops and exits 75, saying what is lost; a plain xtrain
// (no launcher) stops the same way and checkpoints.
TEST_F(Preemption, WithoutCheckpointDirAndWithoutXrun) {
  ProcessResult r = preempt(command(true, {}), SIGTERM);
  EXPECT_EQ(r.exitCode, 75) << r.err;
  EXPECT_GT(stoppedAfter(r.err, "SIGTERM"), 0) << r.err;
  EXPECT_NE(r.err.find("no --checkpoint-dir, so the"), std::string::npos) << r.err;

  const std::string ckpts = path("single");
  r = preempt(command(false, {"--checkpoint-dir", ckpts}), SIGUSR1);
  EXPECT_EQ(r.exitCode, 75) << r.err;
  const long step = stoppedAfter(r.err, "SIGUSR1");
  ASSERT_GT(step, 0) << r.err;
  char name8[32];
  std::snprintf(name8, sizeof name8, "ckpt-%08ld", step);
  EXPECT_TRUE(fs::exists(fs::path(ckpts) / name8 / "checkpoint.h5")) << r.err;
}

}  // namespace
}  // namespace xtrain::testing
