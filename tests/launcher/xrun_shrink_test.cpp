// xrun --min-instances (issue 16, item 2): a slot that keeps failing is dropped at a restart, the
// job goes on with fewer instances, and xtrain keeps the global batch, so a 4-instance job that
// ends on 2 instances has the weights of an uninterrupted 4-instance run (to float tolerance: the
// summation order differs). Unit tests of the decision (launcher/restart_policy.hpp) and the
// shrunk layout (launcher/topology.hpp), real-process tests of xrun and xtrain, bad input. Every
// wait is bounded; the fixture kills any process the instances recorded.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "launcher/failure_clues.hpp"
#include "launcher/options.hpp"
#include "launcher/restart_policy.hpp"
#include "launcher/topology.hpp"
#include "process_helpers.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::launcher::testing {
namespace {

namespace fs = std::filesystem;

Topology layout(int n, const std::vector<std::string>& hosts = {}) {
  TopologyRequest r;
  r.numInstances = n;
  r.hosts = hosts;
  return planTopology(r);
}

TEST(SlotFailures, SlotsKeepFailingWhenBlamedTwiceInARow) {
  using V = std::vector<int>;
  SlotFailures f;
  EXPECT_EQ(f.onFailure({1}), V{});
  EXPECT_EQ(f.onFailure({1}), V{1});
  f.reset();
  EXPECT_EQ(f.onFailure({1}), V{});
  EXPECT_EQ(f.onFailure({2}), V{});  // another slot breaks the row
  EXPECT_EQ(f.onFailure({1}), V{});
  // No slot named (mpirun does not always say): left out, the row goes on.
  EXPECT_EQ(f.onFailure({}), V{});
  EXPECT_EQ(f.onFailure({1}), V{1});
  // Several slots (those that did not arrive): the same set twice.
  f.reset();
  EXPECT_EQ(f.onFailure({2, 3}), V{});
  EXPECT_EQ(f.onFailure({2, 3}), (V{2, 3}));
  EXPECT_EQ(f.onFailure({2}), V{});
}

TEST(BlameFailure, AHostLostAnInstanceThatDidNotArriveOrTheFirstToFail) {
  const Topology t = layout(4, {"h1", "h2"});  // slots 0, 1 on h1; 2, 3 on h2
  JobOutcome o;
  o.end = JobEnd::InstanceFailed;
  o.instance = 0;
  // The first to fail, when nothing else is known.
  FailureBlame b = blameFailure(o, t, {0, 1, 2, 3});
  EXPECT_EQ(b.kind, BlameKind::FirstToFail);
  EXPECT_EQ(b.slots, std::vector<int>{0});
  // Instance 0 reported that instance 3 did not arrive: 3 is the suspect, not 0.
  o.didNotArrive = {3};
  b = blameFailure(o, t, {0, 1, 2, 3});
  EXPECT_EQ(b.kind, BlameKind::DidNotArrive);
  EXPECT_EQ(b.slots, std::vector<int>{3});
  // Every instance of h2 did not arrive: h2 is lost.
  o.didNotArrive = {2, 3};
  b = blameFailure(o, t, {0, 1, 2, 3});
  EXPECT_EQ(b.kind, BlameKind::HostLost);
  EXPECT_EQ(b.host, "h2");
  EXPECT_EQ(b.slots, (std::vector<int>{2, 3}));
  // Instance indices of a shrunk attempt map to its slots.
  o.didNotArrive = {1};
  b = blameFailure(o, t, {1, 3});
  EXPECT_EQ(b.kind, BlameKind::HostLost);
  EXPECT_EQ(b.slots, std::vector<int>{3});
  // On one host the instances that did not arrive are suspects, not a lost host.
  o.didNotArrive = {0, 1, 2};
  b = blameFailure(o, layout(4), {0, 1, 2, 3});
  EXPECT_EQ(b.kind, BlameKind::DidNotArrive);
  // mpirun's lost daemon wins over everything.
  o.lostHost = "h1";
  b = blameFailure(o, t, {0, 1, 2, 3});
  EXPECT_EQ(b.kind, BlameKind::HostLost);
  EXPECT_EQ(b.host, "h1");
  EXPECT_EQ(b.slots, (std::vector<int>{0, 1}));
  EXPECT_EQ(b.clue, "mpirun lost contact with it");
  // A host the attempt does not use any more: ignored.
  o.lostHost = "h9";
  o.didNotArrive.clear();
  EXPECT_EQ(blameFailure(o, t, {0, 1, 2, 3}).kind, BlameKind::FirstToFail);
  o.instance.reset();
  EXPECT_EQ(blameFailure(o, t, {0, 1, 2, 3}).kind, BlameKind::None);
  EXPECT_EQ(describeSlots(t, {2, 3}), "slots 2, 3 (h2, IPUs 0, 1)");
  EXPECT_EQ(describeSlots(t, {1}), "slot 1 (h1, IPUs 1)");
}

TEST(FailureClues, TheInstancesThatDidNotArriveAndTheHostMpirunLost) {
  const std::string line =
      "xtrain: error: allreduce #12 in group 'replicas-0' (size 4) timed out after 5000 ms: ranks "
      "[2, 3] did not arrive";
  EXPECT_EQ(instancesThatDidNotArrive(line, 4), (std::vector<int>{2, 3}));
  // Another group size (a subgroup: its ranks are not the instances), a rank out of range, no
  // ranks, another line.
  EXPECT_TRUE(instancesThatDidNotArrive(line, 8).empty());
  EXPECT_TRUE(instancesThatDidNotArrive("x in group 'g' (size 4) timed out after 1 ms: ranks [4] "
                                        "did not arrive",
                                        4)
                  .empty());
  EXPECT_TRUE(instancesThatDidNotArrive("x in group 'g' (size 4) timed out after 1 ms: ranks [] "
                                        "did not arrive",
                                        4)
                  .empty());
  EXPECT_TRUE(instancesThatDidNotArrive("ranks [1] did not arrive", 4).empty());
  EXPECT_TRUE(instancesThatDidNotArrive("", 4).empty());
  EXPECT_EQ(instancesThatDidNotArrive("b in group 'preemption' (size 2) timed out after 9 ms: "
                                      "ranks [1] did not arrive\r",
                                      2),
            std::vector<int>{1});
  EXPECT_EQ(hostLostByMpirun("  Remote daemon: [[43993,0],1] on node h2 \r"), "h2");
  EXPECT_EQ(hostLostByMpirun("Remote daemon: [[43993,0],1]"), "");
  EXPECT_EQ(hostLostByMpirun("on node h2"), "");
}

TEST(PlanShrink, KeepsADivisorOfTheJobWhenTheGlobalBatchIsKept) {
  const Topology t = layout(4);
  // 3 survivors do not divide 4: the highest-numbered other slot goes too.
  ShrinkPlan p = planShrink(t, {0, 1, 2, 3}, {1}, 2, KeepGlobalBatch::Accumulation);
  EXPECT_FALSE(p.belowMinimum);
  EXPECT_EQ(p.keep, (std::vector<int>{0, 2}));
  EXPECT_EQ(p.alsoDropped, (std::vector<int>{3}));
  p = planShrink(t, {0, 1, 2, 3}, {1}, 2, KeepGlobalBatch::MicroBatch);
  EXPECT_EQ(p.keep, (std::vector<int>{0, 2}));
  // Without keeping it, only the failing slot goes.
  p = planShrink(t, {0, 1, 2, 3}, {1}, 2, KeepGlobalBatch::No);
  EXPECT_EQ(p.keep, (std::vector<int>{0, 2, 3}));
  EXPECT_TRUE(p.alsoDropped.empty());
  // From 2 of 4 down to 1.
  p = planShrink(t, {0, 2}, {0}, 1, KeepGlobalBatch::Accumulation);
  EXPECT_EQ(p.keep, (std::vector<int>{2}));
  // Never below --min-instances: every current slot stays.
  p = planShrink(t, {0, 1, 2, 3}, {1}, 3, KeepGlobalBatch::Accumulation);
  EXPECT_TRUE(p.belowMinimum);
  EXPECT_EQ(p.keep, (std::vector<int>{0, 1, 2, 3}));
  p = planShrink(t, {0, 2}, {2}, 2, KeepGlobalBatch::No);
  EXPECT_TRUE(p.belowMinimum);
}

TEST(PlanShrink, TheFailingSlotsHostMatesGoFirst) {
  // Slots 0, 1 on h1 and 2, 3 on h2: slot 2 keeps failing, so h2's slot 3 goes with it.
  const Topology t = layout(4, {"h1", "h2"});
  ShrinkPlan p = planShrink(t, {0, 1, 2, 3}, {2}, 1, KeepGlobalBatch::Accumulation);
  EXPECT_EQ(p.keep, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.alsoDropped, (std::vector<int>{3}));
  // A lost host: both its slots at once.
  p = planShrink(t, {0, 1, 2, 3}, {2, 3}, 2, KeepGlobalBatch::Accumulation);
  EXPECT_EQ(p.keep, (std::vector<int>{0, 1}));
  EXPECT_TRUE(p.alsoDropped.empty());
}

TEST(TopologyOfSlots, KeepsHostsAndIpusAndRenumbers) {
  Topology full = layout(4, {"h1", "h2"});
  full.instances[3].firstIpu = 7;
  const Topology t = topologyOfSlots(full, {1, 3});
  EXPECT_EQ(t.numInstances, 2);
  EXPECT_EQ(t.numTotalReplicas, 2);
  EXPECT_EQ(t.instancesPerHost, 1);
  EXPECT_EQ(t.hosts, (std::vector<std::string>{"h1", "h2"}));
  ASSERT_EQ(t.instances.size(), 2u);
  EXPECT_EQ(t.instances[0].index, 0);
  EXPECT_EQ(t.instances[0].host, "h1");
  EXPECT_EQ(t.instances[0].firstIpu, 1);
  EXPECT_EQ(t.instances[0].localIndex, 0);
  EXPECT_EQ(t.instances[1].index, 1);
  EXPECT_EQ(t.instances[1].replicaOffset, 1);
  EXPECT_EQ(t.instances[1].host, "h2");
  EXPECT_EQ(t.instances[1].firstIpu, 7);
  const Topology one = topologyOfSlots(layout(4), {0, 2});
  EXPECT_EQ(one.instancesPerHost, 2);
  EXPECT_EQ(one.instances[1].localIndex, 1);
  EXPECT_EQ(one.instances[1].firstIpu, 2);
}

class XrunShrink : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir();
    tmp_ = dir_ + "/tmp";  // xrun's TMPDIR: the rendezvous directories go there
    fs::create_directory(tmp_);
    fs::create_directory(dir_ + "/locks");  // a pool of its own: the IPUs are 0, 1, 2, 3
    // Records what each instance sees in $D/env-<restart>-<instance>, and on the IPU BAD_IPU (a
    // broken slot) kills itself as it is about to train step KILL_AT, or stops itself at step
    // STOP_AT (xtrain's test hooks), in the attempts before KILL_UNTIL (default: every one).
    wrapper_ = dir_ + "/wrapper";
    std::ofstream w(wrapper_);
    w << "#!/bin/sh\n"
      << "D=" << dir_ << "; R=$XTRAIN_RESTART_COUNT; I=$XTRAIN_INSTANCE_INDEX\n"
      << "echo $$ > $D/pid-$R-$I\n"
      << "printf 'n=%s\\noriginal=%s\\nkeep=%s\\nipus=%s\\njob=%s\\n' \"$XTRAIN_NUM_INSTANCES\" "
         "\"$XTRAIN_ORIGINAL_NUM_INSTANCES\" \"$XTRAIN_KEEP_GLOBAL_BATCH\" \"$XTRAIN_IPU_IDS\" "
         "\"$XTRAIN_JOB_ID\" > $D/env-$R-$I\n"
      << "if [ \"$XTRAIN_IPU_IDS\" = \"$BAD_IPU\" ] && [ \"$R\" -lt \"${KILL_UNTIL:-99}\" ]; then\n"
      << "  [ -n \"$KILL_AT\" ] || kill -9 $$\n"
      << "  export XTRAIN_TEST_KILL_AT_STEP=$KILL_AT XTRAIN_TEST_STOP_AT_STEP=$STOP_AT\n"
      << "fi\n"
      << "[ -n \"$KILL_AT\" ] || exit 0\n"
      << "exec " << XTRAIN_BIN_DIR << "/xtrain \"$@\"\n";
    w.close();
    ::chmod(wrapper_.c_str(), 0755);
  }
  void TearDown() override {
    for (pid_t p : readPids(dir_, "pid")) ::kill(p, SIGKILL);
    for (const auto& id : jobIds()) removeJobSegments(id);
    removeTree(dir_);
  }

  ProcessResult xrun(const std::vector<std::string>& args, double timeoutSeconds = 120) {
    std::vector<std::string> all{"-x", "XTRAIN_IPU_LOCK_DIR=" + dir_ + "/locks"};
    all.insert(all.end(), args.begin(), args.end());
    return runXrun(all, timeoutSeconds, {"TMPDIR=" + tmp_});
  }

  // 20 steps, a checkpoint every 5, into dir_/name (the model saved as dir_/name.onnx).
  std::vector<std::string> training(const std::string& name) const {
    return resumableTraining(wrapper_, dir_ + "/" + name);
  }

  std::map<std::string, std::string> seen(int restart, int i) const {
    return recordedEnvironment(dir_, restart, i);
  }
  std::set<std::string> jobIds() const { return recordedJobIds(dir_); }
  void expectNothingLeft() { expectJobLeftNothing(dir_, tmp_); }
  static size_t count(const std::string& text, const std::string& what) {
    return countOccurrences(text, what);
  }

  // An uninterrupted 4-instance run, and the same job whose slot 1 (IPU 1) dies at step 12 of
  // every attempt: it shrinks to 2 instances at the second restart, resumes from step 10 and
  // finishes; the final weights agree.
  void shrinkAndCompare(const std::string& keep, const std::string& adjusted) {
    const ProcessResult whole = xrun([&] {
      std::vector<std::string> a{"-n", "4", "-x", "KILL_AT=1000"};
      for (auto& w : training("whole")) a.push_back(w);
      return a;
    }());
    ASSERT_EQ(whole.exitCode, 0) << whole.err;
    for (const auto& f : fs::directory_iterator(dir_)) {
      const std::string name = f.path().filename().string();
      if (name.rfind("env-", 0) == 0) fs::rename(f.path(), dir_ + "/old-" + name);
    }
    std::vector<std::string> a{"-n", "4",  "--max-restarts", "3",  "--min-instances",
                               "2",  "-x", "BAD_IPU=1",      "-x", "KILL_AT=12"};
    if (!keep.empty()) a.insert(a.end(), {"--keep-global-batch", keep});
    for (auto& w : training("shrunk")) a.push_back(w);
    const ProcessResult r = xrun(a);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("xrun: restart 1 of 3: instance 1 was killed by signal 9 (SIGKILL); "
                         "starting every instance again with XTRAIN_RESTART_COUNT=1"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("xrun: restart 2 of 3: instance 1 was killed by signal 9 (SIGKILL); slot "
                         "1 (localhost, IPUs 1) was the first to fail in 2 attempts in a row: "
                         "dropping it and slot(s) 3 (with --keep-global-batch " +
                         (keep.empty() ? std::string("accumulation") : keep) +
                         " the instances must be a divisor of 4); starting 2 of the 4 instances "
                         "(slots 0, 2) with XTRAIN_NUM_INSTANCES=2 XTRAIN_RESTART_COUNT=2"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(count(r.err, "xrun: restart "), 2u) << r.err;
    EXPECT_NE(r.out.find("[0] xtrain: the job runs on 2 of its 4 instances; " + adjusted +
                         " keeps the global batch"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(count(r.out, "resumed from " + dir_ + "/shrunk/ckpt-00000010 at step 10"), 2u)
        << r.out;
    // The shrunk attempt: 2 instances on slots 0 and 2 (IPUs 0 and 2), told the original count.
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(seen(0, i)["n"], "4");
      EXPECT_EQ(seen(0, i)["original"], "4");
    }
    EXPECT_EQ(seen(2, 0)["n"], "2");
    EXPECT_EQ(seen(2, 1)["original"], "4");
    EXPECT_EQ(seen(2, 0)["ipus"], "0");
    EXPECT_EQ(seen(2, 1)["ipus"], "2");
    EXPECT_TRUE(seen(2, 2).empty());
    // The global batch was kept: same samples seen, same weights to float tolerance.
    const auto diff =
        xtrain::testing::runCommand(std::string(XTRAIN_BIN_DIR) + "/xckpt diff " + dir_ +
                                    "/whole/ckpt-00000020 " + dir_ + "/shrunk/ckpt-00000020");
    EXPECT_EQ(diff.output.find("samplesSeen"), std::string::npos) << diff.output;
    xtrain::testing::expectSameInitializers(dir_ + "/whole.onnx", dir_ + "/shrunk.onnx", 1e-5);
    expectNothingLeft();
  }

  std::string dir_;
  std::string tmp_;
  std::string wrapper_;
};

TEST_F(XrunShrink, FourInstancesShrinkToTwoAndEndWithTheWeightsOfAFullRunByAccumulation) {
  shrinkAndCompare("", "--accumulation-factor 2 (was 1)");
}

TEST_F(XrunShrink, FourInstancesShrinkToTwoAndEndWithTheWeightsOfAFullRunByMicroBatch) {
  shrinkAndCompare("micro-batch", "--micro-batch-size 64 (was 32)");
}

TEST_F(XrunShrink, AShrunkJobGrowsBackAndEndsWithTheWeightsOfAFullRun) {
  // Slot 1 dies at step 12 in attempts 0 and 1 (then the slot is healthy again): the job shrinks
  // to slots 0 and 2 at restart 2, resumes at step 10, and 1 s later is asked to stop at a
  // checkpoint (each step takes 200 ms or more); attempt 3 runs on all 4 slots again and finishes.
  const ProcessResult whole = xrun([&] {
    std::vector<std::string> a{"-n", "4", "-x", "KILL_AT=1000"};
    for (auto& w : training("whole")) a.push_back(w);
    return a;
  }());
  ASSERT_EQ(whole.exitCode, 0) << whole.err;
  std::vector<std::string> a{"-n",
                             "4",
                             "--max-restarts",
                             "2",
                             "--min-instances",
                             "2",
                             "--grow-after",
                             "1",
                             "-x",
                             "BAD_IPU=1",
                             "-x",
                             "KILL_AT=12",
                             "-x",
                             "KILL_UNTIL=2",
                             "-x",
                             "XTRAIN_TEST_STEP_DELAY_MS=200"};
  for (auto& w : training("grown")) a.push_back(w);
  const ProcessResult r = xrun(a, 240);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("xrun: growing back: the job ran 1 s on 2 of its 4 instances (slots 0, 2); "
                       "asking them to stop at a checkpoint (SIGUSR1, as a preemption warning) to "
                       "start all 4 again"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("xrun: growing back: every instance stopped at a checkpoint; starting all 4 "
                       "instances (slots 0, 1, 2, 3) with XTRAIN_NUM_INSTANCES=4 "
                       "XTRAIN_RESTART_COUNT=3"),
            std::string::npos)
      << r.err;
  // Growing is not a failure: two restarts of a budget of 2 were enough.
  EXPECT_EQ(count(r.err, "xrun: restart "), 2u) << r.err;
  EXPECT_EQ(seen(2, 0)["n"], "2");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(seen(3, i)["n"], "4") << i;
  EXPECT_EQ(seen(3, 1)["ipus"], "1");
  EXPECT_NE(r.out.find("[0] step     20/20"), std::string::npos) << r.out;
  xtrain::testing::expectSameInitializers(dir_ + "/whole.onnx", dir_ + "/grown.onnx", 1e-5);
  expectNothingLeft();
}

TEST_F(XrunShrink, AnInstanceThatHangsIsBlamedNotThePeerThatReportsIt) {
  // Slot 3 stops itself at step 7 of every attempt; a peer times out (2 s) naming it, and exits
  // first: xrun blames slot 3, and drops it (and slot 2, for a divisor of 4) at the second
  // restart.
  std::vector<std::string> a{
      "-n",        "4",  "--max-restarts", "3",  "--min-instances", "2",  "-x",
      "BAD_IPU=3", "-x", "KILL_AT=1000",   "-x", "STOP_AT=7",       "-x", "XTRAIN_COMM_TIMEOUT=2"};
  for (auto& w : training("hang")) a.push_back(w);
  const ProcessResult r = xrun(a, 240);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("slot 3 (localhost, IPUs 3) did not arrive at a collective that the others "
                       "waited for in 2 attempts in a row: dropping it and slot(s) 2 (with "
                       "--keep-global-batch accumulation the instances must be a divisor of 4); "
                       "starting 2 of the 4 instances (slots 0, 1) with XTRAIN_NUM_INSTANCES=2 "
                       "XTRAIN_RESTART_COUNT=2"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(count(r.err, "xrun: restart "), 2u) << r.err;
  EXPECT_EQ(seen(2, 1)["ipus"], "1");
  EXPECT_TRUE(seen(2, 2).empty());
  EXPECT_NE(r.out.find("[0] step     20/20"), std::string::npos) << r.out;
  expectNothingLeft();
}

TEST_F(XrunShrink, WithoutKeepingTheBatchOnlyTheFailingSlotGoes) {
  // Slot 1 dies at once on every attempt; the others exit 0 (no KILL_AT: no training).
  const ProcessResult r = xrun({"-n", "4", "--max-restarts", "2", "--min-instances", "3",
                                "--keep-global-batch", "no", "-x", "BAD_IPU=1", wrapper_});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("dropping it; starting 3 of the 4 instances (slots 0, 2, 3) with "
                       "XTRAIN_NUM_INSTANCES=3"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(seen(2, 0)["n"], "3");
  EXPECT_EQ(seen(2, 2)["keep"], "no");
  EXPECT_EQ(seen(2, 2)["ipus"], "3");
  expectNothingLeft();
}

TEST_F(XrunShrink, NeverBelowMinInstances) {
  const ProcessResult r =
      xrun({"-n", "2", "--max-restarts", "2", "--min-instances", "2", "-x", "BAD_IPU=1", wrapper_});
  EXPECT_EQ(r.exitCode, 137) << r.err;
  EXPECT_NE(r.err.find("xrun: restart 2 of 2: instance 1 was killed by signal 9 (SIGKILL); slot 1 "
                       "(localhost, IPUs 1) was the first to fail in 2 attempts in a row, but the "
                       "job cannot shrink below --min-instances 2"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--max-restarts 2 used up"), std::string::npos) << r.err;
  // The failing instance records before it dies (the other may be stopped before it does).
  EXPECT_EQ(seen(2, 1)["n"], "2");
  expectNothingLeft();
}

TEST_F(XrunShrink, XtrainRefusesAGlobalBatchItCannotKeep) {
  const std::string xtrain = std::string(XTRAIN_BIN_DIR) + "/xtrain --steps 1";
  auto r = xtrain::testing::runCommand(
      "env XTRAIN_ORIGINAL_NUM_INSTANCES=4 XTRAIN_NUM_INSTANCES=3 " + xtrain + " 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("the job runs on 3 of its 4 instances, and --accumulation-factor 1 x 4 "
                          "/ 3 is not a whole number"),
            std::string::npos)
      << r.output;
  r = xtrain::testing::runCommand(
      "env XTRAIN_ORIGINAL_NUM_INSTANCES=4 XTRAIN_NUM_INSTANCES=2 XTRAIN_KEEP_GLOBAL_BATCH=all " +
      xtrain + " 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("XTRAIN_KEEP_GLOBAL_BATCH='all'"), std::string::npos) << r.output;
  r = xtrain::testing::runCommand("env XTRAIN_ORIGINAL_NUM_INSTANCES=four XTRAIN_NUM_INSTANCES=2 " +
                                  xtrain + " 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("XTRAIN_ORIGINAL_NUM_INSTANCES='four': expected a whole number from 1"),
            std::string::npos)
      << r.output;
}

TEST_F(XrunShrink, BadInputIsAUsageError) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"-n", "4", "--max-restarts", "1", "--min-instances", "5"},
       "--min-instances 5 is larger than -n 4"},
      {{"--min-instances", "5", "-n", "4", "--max-restarts", "1"},
       "--min-instances 5 is larger than -n 4"},
      {{"-n", "4", "--max-restarts", "1", "--min-instances", "0"},
       "--min-instances must be at least 1, got 0"},
      {{"-n", "4", "--max-restarts", "1", "--min-instances", "-2"},
       "--min-instances must be at least 1, got -2"},
      {{"-n", "4", "--max-restarts", "1", "--min-instances", "two"},
       "--min-instances expects a whole number, got 'two'"},
      {{"-n", "4", "--min-instances", "2"},
       "--min-instances applies to restarts (a job shrinks when it starts again), but "
       "--max-restarts is 0"},
      {{"-n", "4", "--max-restarts", "1", "--min-instances", "2", "--keep-global-batch", "yes"},
       "--keep-global-batch must be one of accumulation, micro-batch, no; got 'yes'"},
      {{"-n", "4", "--max-restarts", "1", "--keep-global-batch", "no"},
       "--keep-global-batch applies to a job that shrinks; give --min-instances M too"},
      {{"-n", "4", "--max-restarts", "1", "--grow-after", "10"},
       "--grow-after applies to a job that shrinks; give --min-instances M too"},
      {{"-n", "4", "--max-restarts", "1", "--min-instances", "2", "--grow-after", "0"},
       "--grow-after='0': expected a duration of more than 0 and at most 2592000 s (30 days)"},
      {{"-n", "2", "-x", "XTRAIN_ORIGINAL_NUM_INSTANCES=4"},
       "-x XTRAIN_ORIGINAL_NUM_INSTANCES: xrun sets XTRAIN_ORIGINAL_NUM_INSTANCES"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> a = args;
    a.push_back("true");
    auto r = runXrun(a, 30, {"TMPDIR=" + tmp_});
    EXPECT_EQ(r.exitCode, 2) << args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  auto dry =
      runXrun({"-n", "4", "--max-restarts", "3", "--min-instances", "2", "--dry-run", "true"}, 30,
              {"TMPDIR=" + tmp_});
  EXPECT_EQ(dry.exitCode, 0) << dry.err;
  EXPECT_NE(dry.out.find("XTRAIN_ORIGINAL_NUM_INSTANCES=4 XTRAIN_KEEP_GLOBAL_BATCH=accumulation"),
            std::string::npos)
      << dry.out;
  EXPECT_NE(
      dry.out.find("dropped at the next restart, and a lost host at once, down to 2 instance(s)"),
      std::string::npos)
      << dry.out;
  EXPECT_NE(runXrun({"--help"}).out.find("--min-instances M"), std::string::npos);
}

}  // namespace
}  // namespace xtrain::launcher::testing
