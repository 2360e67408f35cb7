// Real-process tests of xrun --max-restarts (issue 16, item 1): a job with a SIGKILLed instance is
// started again and, with xtrain's --resume auto, ends with the weights of an uninterrupted run,
// bit for bit; the instances see XTRAIN_RESTART_COUNT; each attempt has a fresh rendezvous
// directory and nothing of the job is left behind; a spent budget gives the failure's exit code;
// the delay and the window; bad input. Every wait is bounded; the fixture kills any process the
// instances recorded.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "launcher/restart_policy.hpp"
#include "process_helpers.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::launcher::testing {
namespace {

namespace fs = std::filesystem;

class XrunRestart : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir();
    tmp_ = dir_ + "/tmp";  // xrun's TMPDIR: the rendezvous directories go there
    fs::create_directory(tmp_);
  }
  void TearDown() override {
    for (pid_t p : readPids(dir_, "pid")) ::kill(p, SIGKILL);
    for (const auto& id : jobIds()) removeJobSegments(id);
    removeTree(dir_);
  }

  ProcessResult xrun(const std::vector<std::string>& args, double timeoutSeconds = 60) {
    return runXrun(args, timeoutSeconds, {"TMPDIR=" + tmp_});
  }

  // sh -c SCRIPT after recording what the instance sees in $D/env-<restart>-<instance> (and its
  // pid in $D/pid-...): $D is the private directory, $I the instance, $R the restart count.
  std::vector<std::string> sh(const std::string& script) const {
    return {"sh", "-c",
            "D=" + dir_ +
                "; I=$XTRAIN_INSTANCE_INDEX; R=$XTRAIN_RESTART_COUNT; echo $$ > $D/pid-$R-$I; "
                "printf 'count=%s\\nmax=%s\\njob=%s\\ndir=%s\\nipus=%s\\n' \"$R\" "
                "\"$XTRAIN_MAX_RESTARTS\" \"$XTRAIN_JOB_ID\" \"$XTRAIN_RENDEZVOUS_DIR\" "
                "\"$XTRAIN_IPU_IDS\" > $D/env-$R-$I; " +
                script};
  }
  static std::vector<std::string> join(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  // What instance `i` of attempt `restart` recorded (empty when it never ran).
  std::map<std::string, std::string> seen(int restart, int i) const {
    return recordedEnvironment(dir_, restart, i);
  }
  // Attempts that started an instance (one killed by xrun at once may have recorded nothing).
  int attempts() const {
    int n = 0;
    while (fs::exists(dir_ + "/env-" + std::to_string(n) + "-0") ||
           fs::exists(dir_ + "/env-" + std::to_string(n) + "-1"))
      ++n;
    return n;
  }
  // Forgets what earlier jobs of the test recorded (their job ids stay, for the clean-up).
  void clearRecords() {
    for (const auto& f : fs::directory_iterator(dir_)) {
      const std::string name = f.path().filename().string();
      if (name.rfind("env-", 0) == 0) fs::rename(f.path(), dir_ + "/old-" + name);
    }
  }
  std::set<std::string> jobIds() const { return recordedJobIds(dir_); }

  void expectNothingLeft() { expectJobLeftNothing(dir_, tmp_); }

  static size_t count(const std::string& text, const std::string& what) {
    return countOccurrences(text, what);
  }

  std::string dir_;
  std::string tmp_;
};

// xtrain under `xrun -n 2 --max-restarts 2` through a wrapper that records what each instance sees
// and, on the first attempt, makes instance 1 kill itself as it is about to train step KILL_AT
// (xtrain's test hook), or, with KILL_ON_START set, every instance kill itself before xtrain
// starts. With DAMAGE set, instance 0 of the second attempt first truncates the newest checkpoint
// (ckpt-00000010) while instance 1 waits for it; with REMOVE set, it removes that directory.
class XrunRestartTraining : public XrunRestart {
 protected:
  void SetUp() override {
    XrunRestart::SetUp();
    wrapper_ = dir_ + "/xtrain-wrapper";
    std::ofstream w(wrapper_);
    w << "#!/bin/sh\n"
      << "D=" << dir_ << "; R=$XTRAIN_RESTART_COUNT; I=$XTRAIN_INSTANCE_INDEX\n"
      << "echo $$ > $D/pid-$R-$I\n"
      << "printf 'count=%s\\nmax=%s\\njob=%s\\ndir=%s\\nipus=%s\\nckptseen=%s\\n' \"$R\" "
         "\"$XTRAIN_MAX_RESTARTS\" \"$XTRAIN_JOB_ID\" \"$XTRAIN_RENDEZVOUS_DIR\" "
         "\"$XTRAIN_IPU_IDS\" \"${XTRAIN_CHECKPOINT_DIR_SEEN-unset}\" > $D/env-$R-$I\n"
      << "if [ \"$R\" = 0 ] && [ -n \"$KILL_ON_START\" ]; then kill -9 $$; fi\n"
      << "if [ \"$I\" = 1 ] && [ \"$R\" = 0 ] && [ -n \"$KILL_AT\" ]; then\n"
      << "  export XTRAIN_TEST_KILL_AT_STEP=$KILL_AT\n"
      << "fi\n"
      << "if [ \"$R\" = 1 ] && [ -n \"$DAMAGE$REMOVE\" ]; then\n"
      << "  if [ \"$I\" = 0 ]; then\n"
      << "    if [ -n \"$DAMAGE\" ]; then\n"
      << "      truncate -s 100 \"$DAMAGE/ckpt-00000010/checkpoint.h5\" && touch $D/damaged\n"
      << "    else\n"
      << "      rm -rf \"$REMOVE\" && touch $D/damaged\n"
      << "    fi\n"
      << "  else\n"
      << "    n=0; while [ ! -e $D/damaged ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done\n"
      << "  fi\n"
      << "fi\n"
      << "exec " << XTRAIN_BIN_DIR << "/xtrain \"$@\"\n";
    w.close();
    ::chmod(wrapper_.c_str(), 0755);
  }

  // Trains 20 steps with a checkpoint every 5 into dir_/name, the model saved as dir_/name.onnx.
  ProcessResult train(const std::string& name, const std::string& killAt, bool damage = false) {
    const std::string ckpt = dir_ + "/" + name;
    std::vector<std::string> args{"-n",
                                  "2",
                                  "--max-restarts",
                                  "2",
                                  "-x",
                                  "KILL_AT=" + killAt,
                                  "-x",
                                  "DAMAGE=" + (damage ? ckpt : std::string())};
    const std::vector<std::string> training = resumableTraining(wrapper_, ckpt);
    args.insert(args.end(), training.begin(), training.end());
    return xrun(args, 120);
  }

  // The final checkpoints (xckpt diff: every dataset equal) and the saved models are bit-identical.
  void expectBitIdentical(const std::string& a, const std::string& b) {
    const auto diff =
        xtrain::testing::runCommand(std::string(XTRAIN_BIN_DIR) + "/xckpt diff " + dir_ + "/" + a +
                                    "/ckpt-00000020 " + dir_ + "/" + b + "/ckpt-00000020");
    EXPECT_EQ(diff.exitCode, 0) << diff.output;
    xtrain::testing::expectSameInitializers(dir_ + "/" + a + ".onnx", dir_ + "/" + b + ".onnx", 0);
  }

  std::string wrapper_;
};

// The proof of item 1: `xrun -n 2 --max-restarts 2 xtrain --checkpoint-dir D --resume auto` with
// instance 1 SIGKILLed after the checkpoint of step 10 ends with the weights, optimizer state
// included, of the same job never interrupted.
TEST_F(XrunRestartTraining, KilledInstanceRestartsAndEndsBitIdenticalToAnUninterruptedRun) {
  const ProcessResult whole = train("whole", "");
  ASSERT_EQ(whole.exitCode, 0) << whole.err;
  EXPECT_EQ(whole.err.find("xrun: restart"), std::string::npos) << whole.err;
  clearRecords();

  // Killed as it is about to train step 12: the newest complete checkpoint is ckpt-00000010.
  const ProcessResult restarted = train("restarted", "12");
  ASSERT_EQ(restarted.exitCode, 0) << restarted.err;
  EXPECT_NE(restarted.err.find("xrun: restart 1 of 2: instance 1 was killed by signal 9 (SIGKILL)"),
            std::string::npos)
      << restarted.err;
  EXPECT_EQ(count(restarted.err, "xrun: restart "), 1u) << restarted.err;
  EXPECT_NE(restarted.out.find("resumed from " + dir_ + "/restarted/ckpt-00000010 at step 10"),
            std::string::npos)
      << restarted.out;
  EXPECT_EQ(attempts(), 2);

  // The restart count is visible to the instances; each attempt had its own rendezvous directory
  // and got the same IPUs back (the first attempt's locks were released).
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(seen(0, i)["count"], "0");
    EXPECT_EQ(seen(1, i)["count"], "1");
    EXPECT_EQ(seen(1, i)["max"], "2");
    EXPECT_EQ(seen(0, i)["job"], seen(1, i)["job"]);
    EXPECT_EQ(seen(1, i)["dir"], seen(0, i)["dir"] + "-restart1");
    EXPECT_EQ(seen(0, i)["ipus"], seen(1, i)["ipus"]);
  }
  expectBitIdentical("whole", "restarted");
  expectNothingLeft();
}

// Instances killed while starting, before any created --checkpoint-dir (issue 27, item 7): the
// restart trains from scratch, as the first attempt would have, because xrun tells it that no
// earlier attempt found the directory (XTRAIN_CHECKPOINT_DIR_SEEN=0); the job ends 0 with the
// weights of an uninterrupted run.
TEST_F(XrunRestartTraining, InstancesKilledBeforeTheCheckpointDirectoryExistsRestartAfresh) {
  ASSERT_EQ(train("whole", "").exitCode, 0);
  clearRecords();
  const std::string ckpt = dir_ + "/started";
  std::vector<std::string> args{"-n", "2", "--max-restarts", "1", "-x", "KILL_ON_START=1"};
  const std::vector<std::string> training = resumableTraining(wrapper_, ckpt);
  args.insert(args.end(), training.begin(), training.end());
  const ProcessResult r = xrun(args, 120);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("xrun: restart 1 of 1: instance "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("are gone"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("restart 1 of the job: no checkpoint in " + ckpt), std::string::npos)
      << r.out;
  EXPECT_EQ(attempts(), 2);
  // (Attempt 0's records may be cut short: xrun stops an instance once the other is dead.)
  for (int i = 0; i < 2; ++i) EXPECT_EQ(seen(1, i)["ckptseen"], "0");
  expectBitIdentical("whole", "started");
  expectNothingLeft();
}

// The other side: checkpoints the job wrote, then the directory removed before the restart, are
// still a refusal (exit 2, not restarted): xrun says an earlier attempt had the directory.
TEST_F(XrunRestartTraining, ACheckpointDirectoryTheJobHadAndLostIsStillRefused) {
  const std::string ckpt = dir_ + "/lost";
  std::vector<std::string> args{"-n",         "2",  "--max-restarts", "2", "-x",
                                "KILL_AT=12", "-x", "REMOVE=" + ckpt};
  const std::vector<std::string> training = resumableTraining(wrapper_, ckpt, false);
  args.insert(args.end(), training.begin(), training.end());
  const ProcessResult r = xrun(args, 120);
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("does not exist, though an earlier attempt of the job creates it"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Refusing to train from scratch"), std::string::npos) << r.err;
  EXPECT_EQ(seen(1, 0)["ckptseen"], "1");
  EXPECT_EQ(attempts(), 2);
  expectNothingLeft();
}

// A restart whose newest checkpoint was damaged meanwhile falls back to the newest one that
// verifies, says which it skipped, and still ends bit-identical.
TEST_F(XrunRestartTraining, DamagedNewestCheckpointFallsBackAndStillEndsBitIdentical) {
  ASSERT_EQ(train("whole", "").exitCode, 0);
  clearRecords();
  const ProcessResult r = train("damaged", "12", true);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ + "/damaged")) << "the wrapper did not damage the checkpoint";
  EXPECT_NE(r.err.find("skipping checkpoint '" + dir_ +
                       "/damaged/ckpt-00000010', which does not "
                       "verify"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("resumed from " + dir_ + "/damaged/ckpt-00000005 at step 5"),
            std::string::npos)
      << r.out;
  expectBitIdentical("whole", "damaged");
  expectNothingLeft();
}

TEST_F(XrunRestart, SpentBudgetGivesTheFailuresExitCode) {
  auto r = xrun(join({"-n", "2", "--max-restarts", "2", "--output-dir", dir_ + "/out"},
                     sh("echo attempt $R >&2; [ $I = 1 ] && exit 7; sleep 0.2")));
  EXPECT_EQ(r.exitCode, 7) << r.err;
  EXPECT_EQ(attempts(), 3);
  // --output-dir keeps the lines of every attempt.
  {
    std::ifstream err(dir_ + "/out/instance-1.err");
    std::stringstream all;
    all << err.rdbuf();
    EXPECT_EQ(all.str(), "attempt 0\nattempt 1\nattempt 2\n");
  }
  EXPECT_NE(r.err.find("xrun: restart 1 of 2: instance 1 exited with code 7"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("xrun: restart 2 of 2: instance 1 exited with code 7"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("xrun: not restarting: instance 1 exited with code 7; --max-restarts 2 used "
                       "up (2 restart(s)); exit code 7"),
            std::string::npos)
      << r.err;
  for (int k = 0; k < 3; ++k) EXPECT_EQ(seen(k, 1)["count"], std::to_string(k));
  expectNothingLeft();

  // A signal's code likewise: 128 + 9.
  r = xrun(join({"-n", "2", "--max-restarts", "1"}, sh("[ $I = 0 ] && kill -9 $$; sleep 0.2")));
  EXPECT_EQ(r.exitCode, 137) << r.err;
}

TEST_F(XrunRestart, OnlyInstanceFailuresAreRestarted) {
  // Success: one attempt, XTRAIN_RESTART_COUNT=0.
  auto r = xrun(join({"-n", "2", "--max-restarts", "3"}, sh("true")));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(attempts(), 1);
  EXPECT_EQ(seen(0, 1)["count"], "0");
  EXPECT_EQ(seen(0, 1)["max"], "3");
  clearRecords();

  // Exit code 2, a usage error, would fail the same way again.
  r = xrun(join({"-n", "2", "--max-restarts", "3"}, sh("[ $I = 1 ] && exit 2; sleep 0.2")));
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("xrun: not restarting: instance 1 exited with code 2: exit code 2 is a "
                       "usage error"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(attempts(), 1);

  // --timeout bounds the whole job, restarts included.
  const double start = nowSeconds();
  r = xrun(join({"-n", "1", "--max-restarts", "100", "--timeout", "1.5"}, sh("sleep 0.3; exit 1")));
  EXPECT_EQ(r.exitCode, 124) << r.err;
  EXPECT_LT(nowSeconds() - start, 8.0);
  EXPECT_NE(r.err.find("--timeout 1.5 s"), std::string::npos)
      << r.err;  // the user's, not what is left
  clearRecords();

  // SIGINT to xrun during an attempt ends the job (130), nothing restarted.
  Child interrupted(join({xrunPath(), "-n", "2", "--max-restarts", "3", "--grace-period", "1"},
                         sh("echo ready; sleep 30 & wait")),
                    {"TMPDIR=" + tmp_});
  ASSERT_TRUE(interrupted.waitForStdout(
      [](const std::string& out) {
        return out.find("[0] ready") != std::string::npos &&
               out.find("[1] ready") != std::string::npos;
      },
      20));
  ::kill(interrupted.pid(), SIGINT);
  r = interrupted.wait(20);
  EXPECT_EQ(r.exitCode, 130) << r.err;
  EXPECT_EQ(r.err.find("xrun: restart"), std::string::npos) << r.err;
  clearRecords();

  // An attempt during which xrun forwarded SIGUSR1 (Slurm's warning before preemption) ends the
  // job, even when the instances then fail: the scheduler requeues it.
  Child warned(join({xrunPath(), "-n", "2", "--max-restarts", "3"},
                    sh("trap 'exit 9' USR1; echo ready; sleep 30 & wait")),
               {"TMPDIR=" + tmp_});
  ASSERT_TRUE(warned.waitForStdout(
      [](const std::string& out) {
        return out.find("[0] ready") != std::string::npos &&
               out.find("[1] ready") != std::string::npos;
      },
      20));
  ::kill(warned.pid(), SIGUSR1);
  r = warned.wait(20);
  EXPECT_EQ(r.exitCode, 9) << r.err;
  EXPECT_NE(r.err.find("xrun: not restarting: instance "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("xrun forwarded SIGUSR1 during the attempt"), std::string::npos) << r.err;
  EXPECT_EQ(attempts(), 1);
  expectNothingLeft();
}

TEST_F(XrunRestart, StaleSharedMemoryOfAKilledInstanceIsRemoved) {
  // An instance killed between creating its group's segment and the others opening it leaves the
  // segment behind (named as the shm backend names them); xrun unlinks it before the restart.
  auto r =
      xrun(join({"-n", "2", "--max-restarts", "1"},
                sh("if [ $R = 0 ] && [ $I = 0 ]; then : > /dev/shm/xtrain-$XTRAIN_JOB_ID-$$-0; "
                   "echo /dev/shm/xtrain-$XTRAIN_JOB_ID-$$-0 > $D/segment; kill -9 $$; fi; "
                   "if [ $R = 1 ] && [ -e \"$(cat $D/segment)\" ]; then echo stale; exit 5; "
                   "fi; sleep 0.2")));
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_EQ(attempts(), 2);
  expectNothingLeft();
}

TEST_F(XrunRestart, WindowCountsOnlyRecentFailures) {
  // Each attempt fails after 1 s; with a 0.5 s window no earlier restart counts, so a budget of 1
  // carries the job through three failures to the attempt that succeeds.
  auto r = xrun(join({"-n", "2", "--max-restarts", "1", "--restart-window", "0.5"},
                     sh("sleep 1; [ $R -lt 3 ] && [ $I = 0 ] && exit 4; true")));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(attempts(), 4);
  EXPECT_EQ(count(r.err, "xrun: restart 1 of 1: instance 0 exited with code 4"), 3u) << r.err;
  EXPECT_NE(r.err.find("(1 restart(s) within the last 0.5 s)"), std::string::npos) << r.err;

  // With a long window the second failure spends the budget.
  r = xrun(join({"-n", "1", "--max-restarts", "1", "--restart-window", "60"}, sh("exit 4")));
  EXPECT_EQ(r.exitCode, 4) << r.err;
  EXPECT_NE(r.err.find("--max-restarts 1 used up (1 restart(s) within the last 60 s)"),
            std::string::npos)
      << r.err;
  expectNothingLeft();
}

TEST_F(XrunRestart, DelayIsWaitedAndASignalDuringItEndsTheJob) {
  const double start = nowSeconds();
  auto r = xrun(join({"-n", "1", "--max-restarts", "1", "--restart-delay", "1"},
                     sh("[ $R = 0 ] && exit 3; true")));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_GE(nowSeconds() - start, 1.0);
  EXPECT_NE(r.err.find("XTRAIN_RESTART_COUNT=1 in 1 s"), std::string::npos) << r.err;
  clearRecords();

  // A signal while xrun waits to restart ends the job at once, nothing restarted: SIGTERM (a
  // preemption request) and SIGUSR1 (Slurm's warning before preemption) with 75, so that the
  // scheduler requeues the job; SIGINT with 128 + 2.
  for (const auto& [sig, code] :
       {std::pair{SIGTERM, 75}, std::pair{SIGUSR1, 75}, std::pair{SIGINT, 130}}) {
    SCOPED_TRACE(sig);
    clearRecords();
    Child job(join({xrunPath(), "-n", "1", "--max-restarts", "1", "--restart-delay", "30"},
                   sh("[ $R = 0 ] && { echo failing; exit 3; }; true")),
              {"TMPDIR=" + tmp_});
    ASSERT_TRUE(job.waitForStdout(
        [](const std::string& out) { return out.find("failing") != std::string::npos; }, 20));
    // The attempt is over once xrun has removed its rendezvous directory; then it waits.
    const double until = nowSeconds() + 20;
    while (!fs::is_empty(tmp_) && nowSeconds() < until) usleep(20000);
    ASSERT_TRUE(fs::is_empty(tmp_));
    usleep(100000);
    const double sent = nowSeconds();
    ::kill(job.pid(), sig);
    const ProcessResult ended = job.wait(20);
    EXPECT_EQ(ended.exitCode, code) << ended.err;
    EXPECT_LT(nowSeconds() - sent, 5.0);
    EXPECT_NE(ended.err.find("before restart 1; the job ends without it"), std::string::npos)
        << ended.err;
    EXPECT_EQ(attempts(), 1);
  }
  expectNothingLeft();
}

// With an engine (Slurm's srun, here the fake one of tests/launcher/fake-srun; Open MPI's mpirun),
// the engine is started again and the restart line names the instance it blames.
TEST_F(XrunRestart, EngineJobsRestartToo) {
  const char* path = std::getenv("PATH");
  const std::string fakeSrun = std::string(XTRAIN_SOURCE_DIR) + "/tests/launcher/fake-srun:" +
                               (path != nullptr ? path : "/usr/bin:/bin");
  // env(1) sets PATH for xrun itself, which looks the engine up in it.
  Child job(join({"/usr/bin/env", "PATH=" + fakeSrun, "TMPDIR=" + tmp_, xrunPath(), "--engine",
                  "srun", "-n", "2", "--max-restarts", "1"},
                 sh("[ $R = 0 ] && [ $I = 1 ] && exit 6; sleep 0.2")));
  const ProcessResult r = job.wait(60);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(attempts(), 2);
  EXPECT_EQ(seen(1, 0)["count"], "1");
  EXPECT_EQ(seen(1, 1)["max"], "1");
  EXPECT_NE(r.err.find("xrun: restart 1 of 1: instance 1 failed (srun (pid "), std::string::npos)
      << r.err;
  expectNothingLeft();

  // Open MPI's mpirun likewise, when installed.
  if (xtrain::testing::runCommand("command -v mpirun").exitCode != 0) return;
  clearRecords();
  const ProcessResult m = xrun(join({"--engine", "mpirun", "-n", "2", "--max-restarts", "1"},
                                    sh("[ $R = 0 ] && [ $I = 1 ] && exit 6; sleep 0.2")));
  EXPECT_EQ(m.exitCode, 0) << m.err;
  EXPECT_EQ(attempts(), 2);
  EXPECT_EQ(seen(1, 1)["count"], "1");
  EXPECT_NE(m.err.find("xrun: restart 1 of 1: "), std::string::npos) << m.err;
  expectNothingLeft();
}

TEST_F(XrunRestart, BadInputIsAUsageError) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--max-restarts", "-1"}, "--max-restarts must be at least 0, got -1"},
      {{"--max-restarts", "two"}, "--max-restarts expects a whole number, got 'two'"},
      {{"--max-restarts", "1.5"}, "--max-restarts expects a whole number, got '1.5'"},
      {{"--max-restarts", ""}, "--max-restarts expects a whole number, got ''"},
      {{"--max-restarts", "1", "--restart-delay", "-2"},
       "--restart-delay='-2': expected a duration of 0 or more"},
      {{"--max-restarts", "1", "--restart-window", "0"},
       "--restart-window='0': expected a duration of more than 0"},
      {{"--restart-delay", "5"},
       "--restart-delay applies to restarts, but --max-restarts is 0; give --max-restarts N too"},
      {{"--restart-window", "60"}, "--restart-window applies to restarts"},
  };
  for (const auto& [args, message] : cases) {
    auto r = xrun(join(args, {"true"}));
    EXPECT_EQ(r.exitCode, 2) << args.front() << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  auto dry = xrun({"-n", "2", "--max-restarts", "3", "--restart-window", "600", "--restart-delay",
                   "5", "--dry-run", "true"});
  EXPECT_EQ(dry.exitCode, 0) << dry.err;
  EXPECT_NE(dry.out.find("XTRAIN_RESTART_COUNT=0"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("xrun: when an instance fails, every instance starts again, up to 3 "
                         "time(s) within any 600 s, 5 s after the failure"),
            std::string::npos)
      << dry.out;
  auto help = xrun({"--help"});
  EXPECT_NE(help.out.find("--max-restarts N"), std::string::npos);
  EXPECT_NE(help.out.find("--restart-window SECONDS"), std::string::npos);
}

}  // namespace
}  // namespace xtrain::launcher::testing
