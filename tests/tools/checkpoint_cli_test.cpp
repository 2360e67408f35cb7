// `xtrain` with checkpoints, as a user runs it: --checkpoint-dir / --checkpoint-every /
// --keep-last,
// --resume PATH giving the weights of a run without a stop, and --resume auto after the job was
// stopped with SIGTERM in the middle of training under xrun.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "checkpoint/checkpoint.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

using CheckpointCli = ScratchDirTest;

TEST_F(CheckpointCli, EveryNStepsKeepLastAndResumeExactly) {
  const std::string flags = " --steps 6 --lr 0.05 --momentum 0.9 --seed 3";
  CommandResult r =
      runCommand("./xtrain" + flags + " --checkpoint-dir " + path("d") +
                 " --checkpoint-every 2 --keep-last 2 --save-model " + path("straight.onnx"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "d" / "ckpt-00000002")) << "--keep-last 2 removed the oldest";
  EXPECT_TRUE(fs::exists(dir_ / "d" / "ckpt-00000004"));
  EXPECT_TRUE(fs::exists(dir_ / "d" / "ckpt-00000006"));
  std::ifstream latest(dir_ / "d" / "latest");
  std::string name;
  latest >> name;
  EXPECT_EQ(name, "ckpt-00000006");

  r = runCommand("./xtrain" + flags + " --resume " + path("d/ckpt-00000004") + " --save-model " +
                 path("resumed.onnx"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step 4"), std::string::npos) << r.output;
  expectSameInitializers(path("straight.onnx"), path("resumed.onnx"), 0);

  // auto without any checkpoint: a fresh start; a bad path: exit 2 naming it.
  r = runCommand("./xtrain --steps 2 --checkpoint-dir " + path("empty") + " --resume auto");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("starting afresh"), std::string::npos) << r.output;
  r = runCommand("./xtrain --steps 2 --resume " + path("missing"));
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("missing"), std::string::npos) << r.output;
  r = runCommand("./xtrain --keep-last 2");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--checkpoint-dir"), std::string::npos) << r.output;
}

// xrun -n 2 xtrain checkpointing every 5 steps, stopped by SIGTERM once a checkpoint exists; the
// same command with --resume auto continues from it and ends with the weights of a run without a
// stop.
TEST_F(CheckpointCli, ResumeAfterXrunWasStoppedWithSigterm) {
  const std::string d = path("d");
  const std::string log = path("log");
  const std::string flags = " --lr 0.05 --momentum 0.9 --seed 5 --checkpoint-dir " + d;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::chdir(XTRAIN_BIN_DIR);
    const std::string cmd = "exec ./xrun -n 2 ./xtrain --steps 1000000 --checkpoint-every 5" +
                            flags + " > " + log + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto reap = [&](double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      if (::waitpid(pid, &status, WNOHANG) == pid) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  bool checkpointed = false;
  for (int i = 0; i < 3000 && !checkpointed; ++i) {  // 60 s at most
    checkpointed = fs::exists(fs::path(d) / "latest");
    if (!checkpointed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // stop in the middle of training
  ::kill(pid, SIGTERM);
  if (!reap(15)) {
    ::kill(pid, SIGKILL);
    reap(5);
    FAIL() << "xrun did not end within 15 s of SIGTERM";
  }
  ASSERT_TRUE(checkpointed) << "no checkpoint within 60 s";
  const auto latest = checkpoint::latestComplete(d);
  ASSERT_TRUE(latest.has_value());
  const int64_t step = checkpoint::readAttributes(*latest).step;
  ASSERT_GT(step, 0);

  const std::string until = " --steps " + std::to_string(step + 3);
  CommandResult r = runCommand("./xrun -n 2 ./xtrain" + until + flags +
                               " --resume auto --save-model " + path("resumed.onnx"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("at step " + std::to_string(step)), std::string::npos) << r.output;
  r = runCommand("./xrun -n 2 ./xtrain" + until +
                 " --lr 0.05 --momentum 0.9 --seed 5 --save-model " + path("straight.onnx"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  expectSameInitializers(path("straight.onnx"), path("resumed.onnx"), 0);
}

}  // namespace
}  // namespace xtrain::testing
