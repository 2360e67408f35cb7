// A signal that ends the job (SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2 to xrun) starts no further
// attempt, whenever it comes (issue 27, item 2): while xrun grows a shrunk job back, while a failed
// attempt stops, between attempts, and just before the instances of an attempt would start. Small
// shell programs stand for the instances; every wait is bounded and the fixture kills any process
// they recorded.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "launcher/local_engine.hpp"
#include "process_helpers.hpp"

namespace xtrain::launcher::testing {
namespace {

namespace fs = std::filesystem;

class SignalEndsJob : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir();
    tmp_ = dir_ + "/tmp";  // xrun's TMPDIR: the rendezvous directories go there
    fs::create_directory(tmp_);
    fs::create_directory(dir_ + "/locks");  // a pool of its own: the IPUs are 0, 1, ...
  }
  void TearDown() override {
    for (pid_t p : readPids(dir_, "pid")) ::kill(p, SIGKILL);
    removeTree(dir_);
  }

  // xrun OPTIONS sh -c SCRIPT, the instance recording its start in $D/start-<restart>-<instance>
  // (and its pid in $D/pid-...): $D is the private directory, $I the instance, $R the restart
  // count.
  std::vector<std::string> command(const std::vector<std::string>& options,
                                   const std::string& script) const {
    std::vector<std::string> argv{xrunPath(), "-x", "XTRAIN_IPU_LOCK_DIR=" + dir_ + "/locks"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"sh", "-c",
                             "D=" + dir_ +
                                 "; I=$XTRAIN_INSTANCE_INDEX; R=$XTRAIN_RESTART_COUNT; echo $$ > "
                                 "$D/pid-$R-$I; : > $D/start-$R-$I; " +
                                 script});
    return argv;
  }
  std::vector<std::string> environment() const { return {"TMPDIR=" + tmp_}; }

  // The instances started by attempt `restart` (their start records).
  int startsOf(int restart) const {
    int n = 0;
    for (const auto& f : fs::directory_iterator(dir_)) {
      n += f.path().filename().string().rfind("start-" + std::to_string(restart) + "-", 0) == 0;
    }
    return n;
  }
  static bool seen(const std::string& out, const std::string& what) {
    return out.find(what) != std::string::npos;
  }

  std::string dir_;
  std::string tmp_;
};

// The case: slot 1 dies at once in attempts 0 and 1, so restart 2 runs on slot 0 alone;
// after 1 s xrun asks it to stop at a checkpoint (SIGUSR1) to grow back, and SIGTERM comes while
// it is stopping. The instance exits 75 for both: the job ends preempted (75) within the grace
// period, and no attempt on every slot starts.
TEST_F(SignalEndsJob, SigtermWhileGrowingBackStartsNoAttempt) {
  Child xrun(command({"-n", "2", "--max-restarts", "2", "--min-instances", "1", "--grow-after", "1",
                      "--grace-period", "10"},
                     "if [ \"$XTRAIN_IPU_IDS\" = 1 ] && [ $R -lt 2 ]; then kill -9 $$; fi; "
                     "trap 'exit 75' TERM; "
                     "trap 'echo asked to stop; n=0; while [ $n -lt 60 ]; do sleep 0.05; "
                     "n=$((n+1)); done; exit 75' USR1; "
                     "while :; do sleep 0.05; done"),
             environment());
  ASSERT_TRUE(
      xrun.waitForStdout([](const std::string& out) { return seen(out, "asked to stop"); }, 60));
  const double sent = nowSeconds();
  ::kill(xrun.pid(), SIGTERM);
  const ProcessResult r = xrun.wait(30);
  ASSERT_FALSE(r.timedOut) << "xrun went on after SIGTERM:\n" << r.err;
  EXPECT_EQ(r.exitCode, 75) << r.err;
  EXPECT_LT(nowSeconds() - sent, 10.0) << r.err;
  EXPECT_TRUE(seen(r.err, "growing back: the job ran 1 s on 1 of its 2 instances")) << r.err;
  EXPECT_TRUE(seen(r.err,
                   "xrun: growing back: every instance stopped at a checkpoint, but xrun "
                   "received SIGTERM (a preemption request); the job ends without starting "
                   "all 2 again; exit code 75"))
      << r.err;
  EXPECT_FALSE(seen(r.err, "starting all 2 instances")) << r.err;
  EXPECT_EQ(startsOf(2), 1);
  EXPECT_EQ(startsOf(3), 0) << "an attempt started after SIGTERM";
}

// SIGTERM while a failed attempt stops (xrun kills the rest at once then) is not lost: no restart,
// although the budget allows one; 75, as at a preemption.
TEST_F(SignalEndsJob, SigtermWhileAFailedAttemptStopsStartsNoRestart) {
  Child xrun(command({"-n", "2", "--max-restarts", "3", "--grace-period", "10"},
                     "[ $R -gt 0 ] && exit 0; "
                     "if [ $I = 0 ]; then sleep 0.5; exit 3; fi; "
                     "trap 'echo stopping; sleep 20' TERM; while :; do sleep 0.05; done"),
             environment());
  ASSERT_TRUE(
      xrun.waitForStdout([](const std::string& out) { return seen(out, "[1] stopping"); }, 30));
  ::kill(xrun.pid(), SIGTERM);
  const ProcessResult r = xrun.wait(30);
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode, 75) << r.err;
  // (On a machine so busy that the attempt was over before the signal came: before restart 1.)
  EXPECT_TRUE(seen(r.err,
                   "xrun: not restarting: instance 0 exited with code 3: xrun received "
                   "SIGTERM (a preemption request) while the attempt ended; exit code 75") ||
              seen(r.err, "SIGTERM (a preemption request) before restart 1"))
      << r.err;
  EXPECT_EQ(startsOf(1), 0) << "an attempt started after SIGTERM";
}

// SIGTERM after one instance has stopped at a checkpoint (exit 75) and while the other still
// saves is the same request: the other keeps the rest of the grace period and the job ends 75,
// not killed (137).
TEST_F(SignalEndsJob, SigtermWhileTheInstancesStopAtACheckpointKillsNothing) {
  Child xrun(command({"-n", "2", "--grace-period", "10"},
                     "if [ $I = 0 ]; then trap 'exit 75' USR1; else trap '' TERM; "
                     "trap 'echo saving; sleep 1.5; echo saved; exit 75' USR1; fi; "
                     "echo ready; while :; do sleep 0.05; done"),
             environment());
  ASSERT_TRUE(xrun.waitForStdout(
      [](const std::string& out) { return seen(out, "[0] ready") && seen(out, "[1] ready"); }, 20));
  ::kill(xrun.pid(), SIGUSR1);
  ASSERT_TRUE(
      xrun.waitForStdout([](const std::string& out) { return seen(out, "[1] saving"); }, 20));
  usleep(500000);  // instance 0 has exited 75 and xrun has seen it
  ::kill(xrun.pid(), SIGTERM);
  const ProcessResult r = xrun.wait(30);
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode, 75) << r.err;
  EXPECT_TRUE(seen(r.out, "[1] saved")) << r.out;
}

// Between attempts: SIGTERM while xrun waits --restart-delay ends the job with 75.
TEST_F(SignalEndsJob, SigtermDuringTheRestartDelayStartsNoRestart) {
  Child xrun(command({"-n", "1", "--max-restarts", "2", "--restart-delay", "30"},
                     "[ $R = 0 ] && { echo failing; exit 3; }; true"),
             environment());
  ASSERT_TRUE(xrun.waitForStdout([](const std::string& out) { return seen(out, "failing"); }, 20));
  // xrun announces the restart, then waits the delay. (Its rendezvous directory gone is not enough:
  // a signal between that and the announcement ends the job as one that came while the attempt
  // ended, which a busy machine made happen.)
  ASSERT_TRUE(xrun.waitForStderr(
      [](const std::string& err) {
        return seen(err, "xrun: restart 1 of 2: ") && seen(err, " in 30 s");
      },
      20));
  ::kill(xrun.pid(), SIGTERM);
  const ProcessResult r = xrun.wait(20);
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode, 75) << r.err;
  EXPECT_TRUE(seen(r.err,
                   "xrun: received SIGTERM (a preemption request) before restart 1; the "
                   "job ends without it; exit code 75, as at a preemption"))
      << r.err;
  EXPECT_EQ(startsOf(1), 0);
}

// The last moment: a signal that came before runJob starts the instances (here before it is
// called) starts none of them. runJob reads xrun's flag with the signals blocked, so a signal
// cannot slip between xrun's decision to start an attempt and the start.
TEST_F(SignalEndsJob, ASignalBeforeTheStartStartsNothing) {
  for (int sig : {SIGTERM, SIGINT, SIGUSR1}) {
    SCOPED_TRACE(signalName(sig));
    SignalHandlers handlers;  // as xrun holds them across the attempts of a job
    EXPECT_EQ(handlers.endRequested(), 0);
    ASSERT_EQ(::kill(::getpid(), sig), 0);  // caught: recorded, the test process lives on
    EXPECT_EQ(handlers.endRequested(), sig);
    LocalJobSpec spec;
    spec.executable = "/bin/sh";
    spec.argv = {"sh", "-c", ": > " + dir_ + "/started"};
    spec.envPerInstance = {{"PATH=/usr/bin:/bin"}, {"PATH=/usr/bin:/bin"}};
    spec.stdoutFd = spec.stderrFd = -1;  // nothing to print
    const JobOutcome outcome = runJob(spec);
    EXPECT_EQ(outcome.end, JobEnd::NotStarted);
    EXPECT_EQ(outcome.endSignal, sig);
    EXPECT_EQ(outcome.exitCode, sig == SIGINT ? 128 + SIGINT : 75);
    EXPECT_FALSE(fs::exists(dir_ + "/started")) << "an instance started after the signal";
  }
}

}  // namespace
}  // namespace xtrain::launcher::testing
