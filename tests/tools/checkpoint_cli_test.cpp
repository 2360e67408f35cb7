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
#include "checkpoint/checkpoint_directory.hpp"
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

// A checkpoint written by the release before format version 3 (tests/data/checkpoint-v2: `xtrain
// --steps 2 --checkpoint-dir D` on the built-in example, its graph fingerprint in the old
// "fnv1a64:{:016x} <decimal>" form) verifies and resumes: its fingerprint matches today's graph,
// and 2 more steps end with the weights of 4 steps without a stop. To rounding, not to the bit:
// today's kernels (oneDNN's softmax in the loss gradient, threaded elementwise loops) need not
// round as that release's did in the 2 steps the checkpoint holds; resuming today's own
// checkpoints is bit-exact (the other tests here).
TEST_F(CheckpointCli, ResumesAVersion2CheckpointOfTheLastRelease) {
  fs::copy(fs::path(XTRAIN_TEST_DATA_DIR) / "checkpoint-v2" / "ckpt-00000002",
           dir_ / "ckpt-00000002");
  CommandResult r = runCommand("./xckpt verify " + path("ckpt-00000002"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  r = runCommand("./xtrain --steps 4 --save-model " + path("straight.onnx"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  r = runCommand("./xtrain --steps 4 --resume " + path("ckpt-00000002") + " --save-model " +
                 path("resumed.onnx"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step 2"), std::string::npos) << r.output;
  expectSameInitializers(path("straight.onnx"), path("resumed.onnx"), 1e-6);
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
  const auto latest = checkpoint::CheckpointDirectory(d).newestComplete();
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

std::string latestOf(const fs::path& dir) {
  std::ifstream in(dir / "latest");
  std::string name;
  in >> name;
  return name;
}

std::string bytesOf(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void flipMiddleByte(const fs::path& file) {
  std::string bytes = bytesOf(file);
  bytes[bytes.size() / 2] = static_cast<char>(~bytes[bytes.size() / 2]);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fresh run (no --resume) in a directory holding another run's checkpoints would replace them,
// repoint `latest` and prune them: xtrain refuses (exit 2) unless told --overwrite-checkpoints.
TEST_F(CheckpointCli, FreshRunRefusesADirectoryWithCheckpoints) {
  const fs::path d = dir_ / "d";
  CommandResult r =
      runCommand("./xtrain --steps 4 --checkpoint-every 2 --checkpoint-dir " + d.string());
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const std::string index = bytesOf(d / "ckpt-00000004" / "checkpoint.h5");

  r = runCommand("./xtrain --steps 4 --seed 9 --keep-last 1 --checkpoint-dir " + d.string());
  EXPECT_EQ(r.exitCode, 2) << r.output;
  for (const std::string part :
       {"ckpt-00000004", "--resume auto", "--overwrite-checkpoints", "new directory"}) {
    EXPECT_TRUE(has(r.output, part)) << part << "\n" << r.output;
  }
  EXPECT_TRUE(fs::exists(d / "ckpt-00000002")) << "nothing was pruned";
  EXPECT_EQ(bytesOf(d / "ckpt-00000004" / "checkpoint.h5"), index) << "nothing was replaced";
  EXPECT_EQ(latestOf(d), "ckpt-00000004");

  r = runCommand("./xtrain --steps 2 --seed 9 --overwrite-checkpoints --checkpoint-dir " +
                 d.string());
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(latestOf(d), "ckpt-00000002");

  r = runCommand("./xtrain --steps 2 --overwrite-checkpoints");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--overwrite-checkpoints needs --checkpoint-dir")) << r.output;
  r = runCommand("./xtrain --help");
  EXPECT_TRUE(has(r.output, "--overwrite-checkpoints")) << r.output;
}

// --resume auto falls back to the newest checkpoint that verifies, saying which one it skipped and
// why (a restart loop would otherwise stop at the damaged one forever); an explicit --resume of a
// damaged checkpoint fails clearly; with nothing sound left it refuses instead of starting afresh.
TEST_F(CheckpointCli, ResumeAutoSkipsDamagedCheckpoints) {
  const fs::path d = dir_ / "d";
  const std::string flags = " --lr 0.05 --momentum 0.9 --seed 3 --checkpoint-dir " + d.string();
  CommandResult r = runCommand("./xtrain --steps 4 --checkpoint-every 2" + flags);
  ASSERT_EQ(r.exitCode, 0) << r.output;

  // A flipped byte in the newest index.
  flipMiddleByte(d / "ckpt-00000004" / "checkpoint.h5");
  r = runCommand("./xtrain --steps 4 --resume auto" + flags);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "skipping checkpoint") && has(r.output, "ckpt-00000004") &&
              has(r.output, "damaged"))
      << r.output;
  EXPECT_TRUE(has(r.output, "at step 2")) << r.output;
  EXPECT_TRUE(checkpoint::verify((d / "ckpt-00000004").string()).empty()) << "saved again";

  // A truncated part of the newest one is skipped the same way.
  const fs::path part = d / "ckpt-00000004" / "part-0.h5";
  fs::resize_file(part, fs::file_size(part) / 2);
  r = runCommand("./xtrain --steps 4 --resume auto" + flags);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "skipping checkpoint") && has(r.output, "truncated")) << r.output;
  EXPECT_TRUE(has(r.output, "at step 2")) << r.output;

  // Named explicitly, a damaged checkpoint is refused (exit 2), naming what is wrong.
  flipMiddleByte(d / "ckpt-00000004" / "checkpoint.h5");
  r = runCommand("./xtrain --steps 6 --resume " + (d / "ckpt-00000004").string());
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "checkpoint.h5") && has(r.output, "damaged")) << r.output;

  // Nothing sound left: a refusal, not a fresh start over the damaged ones.
  const fs::path older = d / "ckpt-00000002" / "part-0.h5";
  fs::resize_file(older, fs::file_size(older) / 2);
  r = runCommand("./xtrain --steps 4 --resume auto" + flags);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "none of its 2 checkpoints verifies")) << r.output;
}

// On a restart (XTRAIN_RESTART_COUNT > 0, set by xrun --max-restarts) --resume auto never trains
// from scratch silently: a missing directory, or checkpoints removed from under `latest`, is a
// refusal (exit 2, which xrun does not restart); a fallback names the checkpoint it takes; only a
// directory where no checkpoint was ever written starts afresh, saying so.
TEST_F(CheckpointCli, RestartNeverStartsAfreshSilently) {
  const fs::path d = dir_ / "d";
  const std::string flags = " --lr 0.05 --momentum 0.9 --seed 3 --resume auto --checkpoint-dir ";
  const std::string restart = "XTRAIN_RESTART_COUNT=1 ./xtrain --steps 4";

  CommandResult r = runCommand(restart + flags + (dir_ / "gone").string());
  EXPECT_EQ(r.exitCode, 2) << r.output;
  for (const std::string& part :
       std::vector<std::string>{"restart 1 of the job", "'" + (dir_ / "gone").string() + "'",
                                "does not exist", "Refusing to train from scratch"}) {
    EXPECT_TRUE(has(r.output, part)) << part << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "gone")) << "nothing was created";
  // Not on the first attempt (nor without a count): a fresh job starts afresh.
  r = runCommand("XTRAIN_RESTART_COUNT=0 ./xtrain --steps 2" + flags + (dir_ / "new").string());
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "no checkpoint in " + (dir_ / "new").string() + ", starting afresh"))
      << r.output;

  // An empty directory: the earlier attempt failed before its first checkpoint.
  fs::create_directories(dir_ / "empty");
  r = runCommand(restart + flags + (dir_ / "empty").string());
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "restart 1 of the job: no checkpoint in")) << r.output;
  EXPECT_TRUE(has(r.output, "starting afresh")) << r.output;

  // Checkpoints written, then the newest damaged: the fallback says which one it takes.
  r = runCommand("./xtrain --steps 4 --checkpoint-every 2" +
                 flags.substr(0, flags.find(" --resume")) + " --checkpoint-dir " + d.string());
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const fs::path part = d / "ckpt-00000004" / "part-0.h5";
  fs::resize_file(part, fs::file_size(part) / 2);
  r = runCommand(restart + flags + d.string());
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(
      has(r.output, "the newest checkpoint " + (d / "ckpt-00000004").string() + " does not verify"))
      << r.output;
  EXPECT_TRUE(has(r.output, "falling back to " + (d / "ckpt-00000002").string()));
  EXPECT_TRUE(has(r.output, "resumed from " + (d / "ckpt-00000002").string() +
                                " at step 2 (written by 1 instance(s), 1 replicas) on restart 1"))
      << r.output;

  // Every checkpoint removed, `latest` left: a refusal naming it.
  for (const auto& entry : fs::directory_iterator(d)) {
    if (entry.path().filename().string().rfind("ckpt-", 0) == 0) fs::remove_all(entry.path());
  }
  r = runCommand(restart + flags + d.string());
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "holds no checkpoint, yet its") && has(r.output, "ckpt-00000004") &&
              has(r.output, "Refusing to train from scratch"))
      << r.output;
  // The whole directory removed: a refusal too.
  fs::remove_all(d);
  r = runCommand(restart + flags + d.string());
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "does not exist")) << r.output;
}

// A batch job that Slurm requeued (`scontrol requeue`, preemption with requeue) runs with
// SLURM_RESTART_COUNT > 0: a restart like xrun's. Its checkpoint directory vanished is a refusal
// (exit 2) naming SLURM_RESTART_COUNT; an existing one resumes, saying it is a requeue; xrun's
// count, when above 0, is the one named; a count of 0 or not a number is a first run.
TEST_F(CheckpointCli, SlurmRequeueNeverStartsAfreshSilently) {
  const std::string flags = " --lr 0.05 --momentum 0.9 --seed 3 --resume auto --checkpoint-dir ";
  const std::string requeued =
      "env -u XTRAIN_RESTART_COUNT SLURM_JOB_ID=4711 SLURM_RESTART_COUNT=2 ./xtrain --steps 4";

  CommandResult r = runCommand(requeued + flags + path("gone"));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  for (const std::string& part :
       std::vector<std::string>{"requeue 2 of Slurm job 4711 (SLURM_RESTART_COUNT=2)",
                                "'" + path("gone") + "' does not exist",
                                "Refusing to train from scratch", "submit a new job"}) {
    EXPECT_TRUE(has(r.output, part)) << part << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "gone")) << "nothing was created";

  // xrun's count wins when both say restart; 0 or garbage from Slurm is a first run.
  r = runCommand("SLURM_RESTART_COUNT=2 XTRAIN_RESTART_COUNT=1 ./xtrain --steps 4" + flags +
                 path("gone"));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "restart 1 of the job (XTRAIN_RESTART_COUNT=1)")) << r.output;
  for (const std::string count : {"0", "x", "-1", ""}) {
    r = runCommand("env -u XTRAIN_RESTART_COUNT SLURM_RESTART_COUNT=" + count +
                   " ./xtrain --steps 2" + flags + path("fresh-" + count));
    EXPECT_EQ(r.exitCode, 0) << count << "\n" << r.output;
    EXPECT_TRUE(has(r.output, "no checkpoint in " + path("fresh-" + count) + ", starting afresh"))
        << r.output;
  }

  // An empty directory (the first run was requeued before its first checkpoint) starts afresh.
  fs::create_directories(dir_ / "empty");
  r = runCommand(requeued + flags + path("empty"));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "requeue 2 of Slurm job 4711: no checkpoint in " + path("empty")))
      << r.output;

  // Checkpoints removed from under `latest`: a refusal naming the variable.
  const fs::path d = dir_ / "d";
  r = runCommand("env -u SLURM_RESTART_COUNT ./xtrain --steps 2 --checkpoint-every 2" +
                 flags.substr(0, flags.find(" --resume")) + " --checkpoint-dir " + d.string());
  ASSERT_EQ(r.exitCode, 0) << r.output;
  r = runCommand(requeued + flags + d.string());
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "resumed from " + (d / "ckpt-00000002").string() +
                                " at step 2 (written by 1 instance(s), 1 replicas) on requeue 2 "
                                "of Slurm job 4711"))
      << r.output;
  for (const auto& entry : fs::directory_iterator(d)) {
    if (entry.path().filename().string().rfind("ckpt-", 0) == 0) fs::remove_all(entry.path());
  }
  r = runCommand(requeued + flags + d.string());
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "(SLURM_RESTART_COUNT=2)") && has(r.output, "holds no checkpoint") &&
              has(r.output, "Refusing to train from scratch"))
      << r.output;
}

// The same fallback when the instances of a job must agree (xrun -n 2): both skip the damaged one.
TEST_F(CheckpointCli, ResumeAutoSkipsADamagedCheckpointUnderXrun) {
  const fs::path d = dir_ / "d";
  const std::string flags = " --lr 0.05 --momentum 0.9 --seed 3 --checkpoint-dir " + d.string();
  CommandResult r = runCommand("./xrun -n 2 ./xtrain --steps 4 --checkpoint-every 2" + flags);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // A checksum mismatch in the newest one's data.
  const fs::path part = d / "ckpt-00000004" / "part-0.h5";
  std::string bytes = bytesOf(part);
  bytes[bytes.size() - 9] = static_cast<char>(~bytes[bytes.size() - 9]);
  std::ofstream(part, std::ios::binary | std::ios::trunc) << bytes;
  ASSERT_FALSE(checkpoint::verify((d / "ckpt-00000004").string()).empty());
  r = runCommand("./xrun -n 2 ./xtrain --steps 5 --resume auto" + flags);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "skipping checkpoint")) << r.output;
  EXPECT_TRUE(has(r.output, "at step 2")) << r.output;
}

// Two plain xtrain runs (no launcher, so no job id) saving into one directory at the same time
// used to share the staging directory "ckpt-N.tmp-job": one failed, or committed the other's parts.
// Then, with --overwrite-checkpoints, both ran to the end, interleaving their checkpoints. The
// directory's lock now lets one write at a time whatever the flags: each run either completes or
// is refused before its first step (when the first ended before the second started, both
// complete), and every checkpoint left is whole.
TEST_F(CheckpointCli, TwoPlainRunsSavingIntoOneDirectory) {
  const fs::path d = dir_ / "d";
  fs::create_directories(d);
  auto job = [&](const std::string& name, int seed) {
    return "(./xtrain --steps 40 --checkpoint-every 1 --overwrite-checkpoints --seed " +
           std::to_string(seed) + " --checkpoint-dir " + d.string() + " > " + path(name) +
           ".log 2>&1; echo $? > " + path(name) + ".rc)";
  };
  const CommandResult r = runCommand(job("a", 1) + " & " + job("b", 2) + " & wait");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  int completed = 0;
  for (const std::string name : {"a", "b"}) {
    const std::string log = bytesOf(path(name + ".log"));
    if (bytesOf(path(name + ".rc")) == "0\n") {
      ++completed;
      continue;
    }
    EXPECT_EQ(bytesOf(path(name + ".rc")), "2\n") << log;
    EXPECT_TRUE(has(log, "is in use by another xtrain job")) << log;
    EXPECT_FALSE(std::regex_search(log, std::regex("(^|\n)step +[0-9]"))) << log;
  }
  EXPECT_GE(completed, 1);
  const auto listed = checkpoint::CheckpointDirectory(d.string()).list();
  EXPECT_EQ(listed.size(), 40u);
  for (const auto& l : listed) {
    EXPECT_TRUE(checkpoint::verify(l.path).empty()) << l.path;
  }
  for (const auto& e : fs::directory_iterator(d)) {
    EXPECT_FALSE(has(e.path().filename().string(), ".tmp-")) << e.path();
  }
}

// --overwrite-checkpoints once also lifted the lock of a running job: a second job wrote and pruned
// checkpoints beside it and both exited 0. The flag replaces what a finished job left; a job that
// holds the lock is running, and the second is refused, naming the directory and the holder.
TEST_F(CheckpointCli, OverwriteCheckpointsNeverSharesADirectoryWithARunningJob) {
  const std::string d = path("d"), out = path("a.log"), pidFile = path("a.pid");
  const std::string overwrite = " --overwrite-checkpoints --checkpoint-dir " + d;
  ASSERT_EQ(runCommand("./xtrain --steps 100000000" + overwrite + " > " + out +
                       " 2>&1 & echo $! > " + pidFile)
                .exitCode,
            0);
  const pid_t a = static_cast<pid_t>(std::stol(bytesOf(pidFile)));
  // Job A holds the lock from before its first step on.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!has(bytesOf(out), "step ") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const CommandResult b = runCommand("./xtrain --steps 2 --seed 5" + overwrite);
  const CommandResult resumed = runCommand("./xtrain --steps 2 --resume auto" + overwrite);
  ::kill(a, SIGKILL);
  ASSERT_TRUE(has(bytesOf(out), "step ")) << "job A never trained: " << bytesOf(out);
  for (const CommandResult* r : {&b, &resumed}) {
    EXPECT_EQ(r->exitCode, 2) << r->output;
    EXPECT_TRUE(has(r->output, "--checkpoint-dir '" + d + "' is in use by another xtrain job"))
        << r->output;
    EXPECT_TRUE(has(r->output, "process " + std::to_string(a))) << r->output;
    EXPECT_FALSE(std::regex_search(r->output, std::regex("(^|\n)step +[0-9]"))) << r->output;
  }
  // Once A is gone, the kernel has released its lock: the flag replaces what A left.
  for (int attempt = 0; attempt < 200 && ::kill(a, 0) == 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const CommandResult after = runCommand("./xtrain --steps 2 --seed 5" + overwrite);
  EXPECT_EQ(after.exitCode, 0) << after.output;
}

}  // namespace
}  // namespace xtrain::testing
