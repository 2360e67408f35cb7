// The verdict on a job, from made-up records: exit codes, JobEnd and the lines xrun prints.
#include "launcher/job_verdict.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <string>
#include <vector>

namespace xtrain::launcher {
namespace {

using Lines = std::vector<std::string>;

ProcessState exited(int index, int code) {
  return ProcessState{index, 100 + index, true, W_EXITCODE(code, 0)};
}

ProcessState killed(int index, int sig) {
  return ProcessState{index, 100 + index, true, sig};
}

struct XrunJobVerdict : ::testing::Test {
  LocalJobSpec spec;
  Lines said;
  JobOutcome judge(const JobRecord& record, const std::vector<ProcessState>& processes,
                   const FailureWitness& witness) {
    return judgeJob(spec, record, processes, witness,
                    [this](const std::string& line) { said.push_back(line); });
  }
  JobOutcome judge(const JobRecord& record, const std::vector<ProcessState>& processes) {
    return judge(record, processes,
                 FailureWitness(static_cast<int>(processes.size()), spec.engine));
  }
};

TEST_F(XrunJobVerdict, TheFirstFailureIsTheRootCause) {
  JobRecord record;
  record.stopReason = StopReason::Failure;
  record.firstFailure = 1;
  record.runningAtFailure = 1;
  FailureWitness witness(2, std::nullopt);
  witness.instanceStderr(1, "boom");
  const JobOutcome o = judge(record, {killed(0, SIGTERM), killed(1, SIGSEGV)}, witness);
  EXPECT_EQ(o.end, JobEnd::InstanceFailed);
  EXPECT_EQ(o.exitCode, 128 + SIGSEGV);
  EXPECT_EQ(o.instance, 1);
  EXPECT_EQ(o.what, "was killed by signal 11 (SIGSEGV)");
  EXPECT_EQ(said, (Lines{"instance 1 (pid 101) was killed by signal 11 (SIGSEGV), the first to "
                         "fail; stopped the other 1 running; its last stderr lines: \"boom\""}));
}

TEST_F(XrunJobVerdict, AStartThatFailedBlamesNoInstance) {
  JobRecord record;
  record.stopReason = StopReason::Failure;
  record.firstFailure = -2;
  record.startExitCode = 127;
  const JobOutcome o = judge(record, {exited(0, 127)});
  EXPECT_EQ(o.end, JobEnd::StartFailed);
  EXPECT_EQ(o.exitCode, 127);
  EXPECT_FALSE(o.instance.has_value());
  EXPECT_EQ(o.what, "could not be started");
  EXPECT_TRUE(said.empty());
}

TEST_F(XrunJobVerdict, EngineFailureNamesTheInstanceTheEngineBlames) {
  EngineMode srun;
  srun.tag = EngineTag::Srun;
  srun.name = "srun";
  srun.numInstances = 4;
  spec.engine = srun;
  JobRecord record;
  record.stopReason = StopReason::Failure;
  record.firstFailure = 0;
  FailureWitness witness(4, spec.engine);
  witness.engineStderr("srun: error: n1: task 3: Exited with exit code 2");
  const JobOutcome o = judge(record, {exited(0, 2)}, witness);
  EXPECT_EQ(o.end, JobEnd::InstanceFailed);
  EXPECT_EQ(o.exitCode, 2);
  EXPECT_EQ(o.instance, 3);
  EXPECT_EQ(o.what, "srun (pid 100) exited with code 2");
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0].rfind("srun (pid 100) exited with code 2; it names instance 3", 0), 0u);
}

TEST_F(XrunJobVerdict, TimeoutSignalAndNotStarted) {
  JobRecord record;
  record.stopReason = StopReason::Timeout;
  EXPECT_EQ(judge(record, {killed(0, SIGTERM)}).exitCode, kTimeoutExitCode);
  record.stopReason = StopReason::Signal;
  record.stopSignal = SIGINT;
  JobOutcome o = judge(record, {killed(0, SIGINT)});
  EXPECT_EQ(o.end, JobEnd::Signal);
  EXPECT_EQ(o.exitCode, 128 + SIGINT);
  record = JobRecord{};
  record.stopReason = StopReason::NotStarted;
  record.notStartedBy = SIGUSR1;
  o = judge(record, {ProcessState{0, -1, true, 0}});
  EXPECT_EQ(o.end, JobEnd::NotStarted);
  EXPECT_EQ(o.endSignal, SIGUSR1);
  EXPECT_EQ(o.exitCode, kPreemptedExitCode);
  EXPECT_TRUE(said.empty());
}

TEST_F(XrunJobVerdict, SigtermEveryInstanceFollowedIsAPreemption) {
  JobRecord record;
  record.stopReason = StopReason::Signal;
  record.stopSignal = SIGTERM;
  record.warnedWith = SIGUSR1;
  const JobOutcome o = judge(record, {exited(0, kPreemptedExitCode), exited(1, 0)});
  EXPECT_EQ(o.end, JobEnd::Preempted);
  EXPECT_EQ(o.exitCode, kPreemptedExitCode);
  EXPECT_EQ(o.forwardedSignal, SIGUSR1);
  EXPECT_EQ(said, (Lines{"the job was preempted: 1 of 2 instances exited with code 75; run it "
                         "again to continue"}));
}

TEST_F(XrunJobVerdict, SigtermAnInstanceKilledAtTheGraceEndIsNamed) {
  spec.preemptionGraceSeconds = 30;
  JobRecord record;
  record.stopReason = StopReason::Signal;
  record.stopSignal = SIGTERM;
  record.killedAtGraceEnd = true;
  const JobOutcome o = judge(record, {exited(0, kPreemptedExitCode), killed(1, SIGKILL)});
  EXPECT_EQ(o.end, JobEnd::Signal);
  EXPECT_EQ(o.exitCode, 128 + SIGTERM);
  EXPECT_EQ(said, (Lines{"instance 1 (pid 101) did not end within the grace period (30 s) and was "
                         "killed"}));
}

TEST_F(XrunJobVerdict, PreemptedTheFirstInstanceThatDidNotFollowEndsTheJob) {
  spec.preemptionGraceSeconds = 30;
  JobRecord record;
  record.stopReason = StopReason::Preempted;
  record.firstFailure = 0;
  record.killedAtGraceEnd = true;
  JobOutcome o = judge(
      record, {exited(0, kPreemptedExitCode), killed(1, SIGKILL), ProcessState{2, 102, false, 0}});
  EXPECT_EQ(o.end, JobEnd::Preempted);
  EXPECT_EQ(o.exitCode, 128 + SIGKILL);
  EXPECT_EQ(said, (Lines{"instance 1 (pid 101) did not end within --grace-period 30 s and was "
                         "killed after instance 0 was preempted"}));
  said.clear();
  o = judge(record, {exited(0, kPreemptedExitCode), exited(1, kPreemptedExitCode)});
  EXPECT_EQ(o.exitCode, kPreemptedExitCode);
  EXPECT_EQ(said, (Lines{"the job was preempted: 2 of 2 instances exited with code 75; run it "
                         "again to continue"}));
}

}  // namespace
}  // namespace xtrain::launcher
