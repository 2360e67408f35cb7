// Real-process tests of the xrun executable with small shell programs: the environment each
// instance sees, output tagging, failure handling, timeouts, signals and clean-up. Every wait is
// bounded; the fixture kills any process the instances recorded (pid files in a private directory)
// in its teardown.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "process_helpers.hpp"

namespace xtrain::launcher::testing {
namespace {

namespace fs = std::filesystem;

class XrunProcess : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = makeTempDir(); }
  void TearDown() override {
    for (pid_t p : readPids(dir_, "pid")) ::kill(p, SIGKILL);
    for (pid_t p : readPids(dir_, "gc")) ::kill(p, SIGKILL);
    removeTree(dir_);
  }

  // sh -c SCRIPT, with $D the private directory and $I the instance index.
  std::vector<std::string> sh(const std::string& script) const {
    return {"sh", "-c", "D=" + dir_ + "; I=$XTRAIN_INSTANCE_INDEX; " + script};
  }
  static std::vector<std::string> join(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  void expectAllGone(const std::string& prefix, size_t expected) {
    auto pids = readPids(dir_, prefix);
    EXPECT_EQ(pids.size(), expected) << prefix;
    for (pid_t p : pids)
      EXPECT_TRUE(processGone(p, 2.0)) << prefix << " process " << p << " outlived xrun";
  }

  std::string dir_;
};

// Lines "[i] NAME=VALUE" -> per instance, NAME -> VALUE.
std::map<int, std::map<std::string, std::string>> parseEnvLines(const std::string& out) {
  std::map<int, std::map<std::string, std::string>> env;
  std::regex re(R"(^\[(\d+)\] ([A-Z_0-9]+)=(.*)$)");
  for (const auto& line : splitLines(out)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) env[std::stoi(m[1])][m[2]] = m[3];
  }
  return env;
}

TEST_F(XrunProcess, EveryInstanceSeesItsEnvironment) {
  for (int n : {1, 2, 4, 8}) {
    for (int l : {1, 2}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " local replicas=" + std::to_string(l));
      auto r = runXrun(join({"-n", std::to_string(n), "--num-replicas", std::to_string(n * l)},
                            sh("env | grep -E '^(XTRAIN|POPDIST)_' | sort; "
                               "test -d \"$XTRAIN_RENDEZVOUS_DIR\" && echo RDV_OK=1")));
      ASSERT_EQ(r.exitCode, 0) << r.err;
      auto env = parseEnvLines(r.out);
      ASSERT_EQ(env.size(), static_cast<size_t>(n)) << r.out;
      std::set<int> ipus;
      std::set<std::string> jobIds, dirs;
      for (int i = 0; i < n; ++i) {
        auto& e = env[i];
        EXPECT_EQ(e["XTRAIN_NUM_INSTANCES"], std::to_string(n));
        EXPECT_EQ(e["XTRAIN_INSTANCE_INDEX"], std::to_string(i));
        EXPECT_EQ(e["XTRAIN_LOCAL_INSTANCE_INDEX"], std::to_string(i));
        EXPECT_EQ(e["XTRAIN_NUM_LOCAL_REPLICAS"], std::to_string(l));
        EXPECT_EQ(e["XTRAIN_NUM_TOTAL_REPLICAS"], std::to_string(n * l));
        EXPECT_EQ(e["XTRAIN_REPLICA_INDEX_OFFSET"], std::to_string(i * l));
        EXPECT_EQ(e["XTRAIN_NUM_IPUS_PER_REPLICA"], "1");
        EXPECT_EQ(e["XTRAIN_COMM_BACKEND"], "auto");
        EXPECT_EQ(e["POPDIST_NUM_TOTAL_REPLICAS"], std::to_string(n * l));
        EXPECT_EQ(e["POPDIST_NUM_IPUS_PER_REPLICA"], "1");
        EXPECT_EQ(e["POPDIST_NUM_LOCAL_REPLICAS"], std::to_string(l));
        EXPECT_EQ(e["POPDIST_UNIFORM_REPLICAS_PER_INSTANCE"], "1");
        EXPECT_EQ(e["POPDIST_REPLICA_INDEX_OFFSET"], std::to_string(i * l));
        EXPECT_EQ(e["POPDIST_LOCAL_INSTANCE_INDEX"], std::to_string(i));
        EXPECT_EQ(e["RDV_OK"], "1");
        jobIds.insert(e["XTRAIN_JOB_ID"]);
        dirs.insert(e["XTRAIN_RENDEZVOUS_DIR"]);
        // "a" or "a-b": the instance's IPUs, none shared with another instance.
        std::string ids = e["XTRAIN_IPU_IDS"];
        auto dash = ids.find('-');
        int first = std::stoi(ids.substr(0, dash));
        int last = dash == std::string::npos ? first : std::stoi(ids.substr(dash + 1));
        EXPECT_EQ(last - first + 1, l) << ids;
        for (int ipu = first; ipu <= last; ++ipu)
          EXPECT_TRUE(ipus.insert(ipu).second) << "IPU " << ipu << " twice";
      }
      EXPECT_EQ(jobIds.size(), 1u);
      ASSERT_EQ(dirs.size(), 1u);
      EXPECT_FALSE(fs::exists(*dirs.begin())) << "the rendezvous directory outlived the job";
    }
  }
}

TEST_F(XrunProcess, JobIdsDifferAndUserVariablesPass) {
  auto cmd = join(
      {"-n", "1", "-x", "XR_SET=a b", "-x", "XR_INHERITED", "--comm-backend", "gloo",
       "--ipus-per-replica", "4"},
      sh("echo XTRAIN_JOB_ID=$XTRAIN_JOB_ID; echo XR_SET=$XR_SET; echo XR_INHERITED=$XR_INHERITED; "
         "echo XTRAIN_COMM_BACKEND=$XTRAIN_COMM_BACKEND; echo XTRAIN_IPU_IDS=$XTRAIN_IPU_IDS"));
  auto a = runXrun(cmd, 30, {"XR_INHERITED=yes", "XTRAIN_INSTANCE_INDEX=stale"});
  auto b = runXrun(cmd, 30, {"XR_INHERITED=yes"});
  ASSERT_EQ(a.exitCode, 0) << a.err;
  ASSERT_EQ(b.exitCode, 0) << b.err;
  auto ea = parseEnvLines(a.out)[0];
  auto eb = parseEnvLines(b.out)[0];
  EXPECT_NE(ea["XTRAIN_JOB_ID"], eb["XTRAIN_JOB_ID"]);
  EXPECT_EQ(ea["XR_SET"], "a b");
  EXPECT_EQ(ea["XR_INHERITED"], "yes");
  EXPECT_EQ(ea["XTRAIN_COMM_BACKEND"], "gloo");
  EXPECT_EQ(ea["XTRAIN_IPU_IDS"], "0-3");
}

// XTRAIN_COMM_BACKEND exported to xrun is --comm-backend's default (issue 27, item 9): the
// instances get it, not "auto"; the option, when given too, wins and xrun says so; a value xrun
// does not know is refused naming the variable.
TEST_F(XrunProcess, ExportedCommBackendReachesTheInstances) {
  const auto cmd = sh("echo XTRAIN_COMM_BACKEND=$XTRAIN_COMM_BACKEND");
  auto r = runXrun(join({"-n", "2"}, cmd), 30, {"XTRAIN_COMM_BACKEND=gloo"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto env = parseEnvLines(r.out);
  ASSERT_EQ(env.size(), 2u) << r.out;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(env[i]["XTRAIN_COMM_BACKEND"], "gloo") << i;
  EXPECT_EQ(r.err.find("overrides"), std::string::npos) << r.err;

  r = runXrun(join({"-n", "1", "--comm-backend", "shm"}, cmd), 30, {"XTRAIN_COMM_BACKEND=gloo"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(parseEnvLines(r.out)[0]["XTRAIN_COMM_BACKEND"], "shm");
  EXPECT_NE(r.err.find("xrun: --comm-backend shm overrides XTRAIN_COMM_BACKEND=gloo of xrun's "
                       "environment"),
            std::string::npos)
      << r.err;

  // Empty is unset: auto.
  r = runXrun(join({"-n", "1"}, cmd), 30, {"XTRAIN_COMM_BACKEND="});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(parseEnvLines(r.out)[0]["XTRAIN_COMM_BACKEND"], "auto");

  r = runXrun(join({"-n", "1"}, cmd), 30, {"XTRAIN_COMM_BACKEND=nccl"});
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("XTRAIN_COMM_BACKEND='nccl' in xrun's environment is not a backend xrun "
                       "knows: it must be one of auto, shm, gloo, mpi"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("XTRAIN_COMM_BACKEND="), std::string::npos) << "nothing was started";

  // --dry-run shows it on the instances' command lines.
  r = runXrun({"-n", "1", "--dry-run", "true"}, 30, {"XTRAIN_COMM_BACKEND=mpi"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("XTRAIN_COMM_BACKEND=mpi"), std::string::npos) << r.out;
}

TEST_F(XrunProcess, PrintTopologyAndDryRun) {
  auto r = runXrun(join({"-n", "2", "--num-replicas", "4", "--print-topology"}, sh("echo ran")));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("xrun topology: 2 instances x 2 local replicas = 4 replicas"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[1] ran"), std::string::npos) << r.out;

  std::string marker = dir_ + "/started";
  r = runXrun({"-n", "2", "--dry-run", "touch", marker});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(fs::exists(marker)) << "--dry-run started the program";
  EXPECT_NE(r.out.find("dry run, engine local"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("XTRAIN_INSTANCE_INDEX=1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("touch " + marker), std::string::npos) << r.out;

  r = runXrun({"-n", "2", "-H", "nodeA,nodeB", "--dry-run", "prog"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("mpirun --tag-output --bind-to none "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" -np 1 -H nodeA:1 -x XTRAIN_JOB_SECRET env "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" : -np 1 -H nodeB:1 -x XTRAIN_JOB_SECRET env "), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("XTRAIN_JOB_SECRET="), std::string::npos) << r.out;
  // Instances on other hosts: no rendezvous directory (it would not exist there).
  EXPECT_EQ(r.out.find("XTRAIN_RENDEZVOUS_DIR"), std::string::npos) << r.out;
}

TEST_F(XrunProcess, OutputIsTaggedAndNeverInterleavedMidLine) {
  // Each instance writes lines in two pieces with a pause between them, while the others write fast
  // bursts.
  auto r = runXrun(
      join({"-n", "3"}, sh("j=0; while [ $j -lt 5 ]; do printf \"half$I-\"; sleep 0.02; "
                           "echo \"whole$I\"; k=0; while [ $k -lt 40 ]; do echo \"line-$I-$j-$k\"; "
                           "k=$((k+1)); done; j=$((j+1)); done; printf \"tail$I\"")));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::regex good(R"(^\[(\d)\] (half(\d)-whole(\d)|line-(\d)-\d+-\d+|tail(\d))$)");
  std::map<int, int> count;
  for (const auto& line : splitLines(r.out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, good)) << "mixed or untagged line: '" << line << "'";
    std::string i = m[1];
    for (int g = 3; g <= 6; ++g) {
      if (m[g].matched) {
        EXPECT_EQ(m[g].str(), i) << line;
      }
    }
    ++count[std::stoi(i)];
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(count[i], 5 * 41 + 1) << "instance " << i;

  r = runXrun(join({"-n", "2", "--tag-format", "mpi"}, sh("echo out$I; echo err$I >&2")));
  ASSERT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find("[1,1]<stdout>:out1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[1,0]<stderr>:err0\n"), std::string::npos) << r.err;

  r = runXrun(join({"-n", "2", "--no-tag-output"}, sh("echo plain$I")));
  ASSERT_EQ(r.exitCode, 0);
  auto lines = splitLines(r.out);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"plain0", "plain1"}));
}

TEST_F(XrunProcess, OnlyOutputFromInstanceStillShowsErrorsAndOutputDirKeepsAll) {
  std::string outDir = dir_ + "/logs";
  auto r = runXrun(join({"-n", "3", "--only-output-from-instance", "1", "--output-dir", outDir},
                        sh("echo out$I; echo note$I >&2; echo \"error: bad thing $I\" >&2")));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "[1] out1\n");
  EXPECT_NE(r.err.find("[1] note1"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("note0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[0] error: bad thing 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[2] error: bad thing 2"), std::string::npos) << r.err;
  for (int i = 0; i < 3; ++i) {
    std::ifstream out(outDir + "/instance-" + std::to_string(i) + ".out");
    std::ifstream err(outDir + "/instance-" + std::to_string(i) + ".err");
    std::string o((std::istreambuf_iterator<char>(out)), {}),
        e((std::istreambuf_iterator<char>(err)), {});
    EXPECT_EQ(o, "out" + std::to_string(i) + "\n");
    EXPECT_EQ(e, "note" + std::to_string(i) + "\nerror: bad thing " + std::to_string(i) + "\n");
  }
}

// An output directory in a shared /tmp: a planted symbolic link is never written through (the
// file it points to stays as it was), and the job starts nothing.
TEST_F(XrunProcess, OutputDirNeverWritesThroughAPlantedLink) {
  const std::string outDir = dir_ + "/logs";
  std::filesystem::create_directories(outDir);
  const std::string victim = dir_ + "/victim";
  { std::ofstream(victim) << "keep\n"; }
  std::filesystem::create_symlink(victim, outDir + "/instance-0.out");
  auto r = runXrun(join({"-n", "1", "--output-dir", outDir}, sh("echo written")));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("instance-0.out: Too many levels of symbolic links (it is a symbolic "
                       "link, which xrun refuses)"),
            std::string::npos)
      << r.err;
  std::ifstream in(victim);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "keep\n");
}

TEST_F(XrunProcess, FailingInstanceStopsTheOthersAndGivesItsCode) {
  auto r =
      runXrun(join({"-n", "4"}, sh("echo $$ > $D/pid.$I; if [ $I = 2 ]; then sleep 0.3; "
                                   "echo 'loading...' >&2; echo 'boom: bad shard' >&2; exit 3; fi; "
                                   "sleep 1000")));
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_LT(r.seconds, 4.0) << "sleeping instances should end at SIGTERM";
  auto lines = splitLines(r.err);
  ASSERT_FALSE(lines.empty());
  const std::string& cause = lines.back();
  EXPECT_NE(cause.find("instance 2"), std::string::npos) << cause;
  EXPECT_NE(cause.find("exited with code 3"), std::string::npos) << cause;
  EXPECT_NE(cause.find("stopped the other 3"), std::string::npos) << cause;
  EXPECT_NE(cause.find("\"boom: bad shard\""), std::string::npos) << cause;
  expectAllGone("pid", 4);
}

TEST_F(XrunProcess, InstanceIgnoringSigtermIsKilledWithinTenSeconds) {
  // Default grace period: everything is over within 10 s of the failure.
  auto r = runXrun(
      join({"-n", "2"}, sh("echo $$ > $D/pid.$I; if [ $I = 1 ]; then sleep 0.3; exit 5; fi; "
                           "trap '' TERM; sleep 1000 & echo $! > $D/gc.$I; wait")));
  EXPECT_EQ(r.exitCode, 5) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  expectAllGone("pid", 2);
  expectAllGone("gc", 1);

  r = runXrun(join({"-n", "2", "--grace-period", "0.5"},
                   sh("if [ $I = 1 ]; then sleep 0.3; exit 6; fi; trap '' TERM; sleep 1000")));
  EXPECT_EQ(r.exitCode, 6) << r.err;
  EXPECT_LT(r.seconds, 3.0);
}

TEST_F(XrunProcess, SignalKilledInstanceGives128PlusSignal) {
  auto r = runXrun(
      join({"-n", "3"}, sh("echo $$ > $D/pid.$I; if [ $I = 1 ]; then sleep 0.3; kill -9 $$; fi; "
                           "sleep 1000")));
  EXPECT_EQ(r.exitCode, 137) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_NE(r.err.find("instance 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("killed by signal 9 (SIGKILL)"), std::string::npos) << r.err;
  expectAllGone("pid", 3);
}

TEST_F(XrunProcess, TimeoutEndsTheWholeJob) {
  auto r = runXrun(join({"-n", "2", "--timeout", "1"}, sh("echo $$ > $D/pid.$I; sleep 1000")));
  EXPECT_EQ(r.exitCode, 124) << r.err;
  EXPECT_GE(r.seconds, 0.9);
  EXPECT_LT(r.seconds, 4.0);
  EXPECT_NE(r.err.find("--timeout 1"), std::string::npos) << r.err;
  expectAllGone("pid", 2);
}

TEST_F(XrunProcess, SigintIsForwardedAndEndsTheJob) {
  Child xrun(join({xrunPath(), "-n", "2"}, sh("echo $$ > $D/pid.$I; echo ready; sleep 1000")));
  ASSERT_TRUE(xrun.waitForStdout(
      [](const std::string& out) {
        return out.find("[0] ready") != std::string::npos &&
               out.find("[1] ready") != std::string::npos;
      },
      10));
  ::kill(xrun.pid(), SIGINT);
  auto r = xrun.wait(10);
  EXPECT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 130) << r.err;
  EXPECT_NE(r.err.find("received SIGINT"), std::string::npos) << r.err;
  expectAllGone("pid", 2);
}

TEST_F(XrunProcess, SecondSigintKillsAtOnce) {
  // The instances ignore SIGINT; the second one makes xrun kill them without waiting for the grace
  // period.
  Child xrun(join({xrunPath(), "-n", "2"},
                  sh("trap '' INT; echo $$ > $D/pid.$I; echo ready; sleep 1000")));
  ASSERT_TRUE(xrun.waitForStdout(
      [](const std::string& out) {
        return out.find("[0] ready") != std::string::npos &&
               out.find("[1] ready") != std::string::npos;
      },
      10));
  ::kill(xrun.pid(), SIGINT);
  usleep(200000);
  double second = nowSeconds();
  ::kill(xrun.pid(), SIGINT);
  auto r = xrun.wait(10);
  EXPECT_EQ(r.exitCode, 130) << r.err;
  EXPECT_LT(nowSeconds() - second, 3.0);
  EXPECT_NE(r.err.find("while stopping the job; killing every instance"), std::string::npos)
      << r.err;
  expectAllGone("pid", 2);
}

TEST_F(XrunProcess, SigtermAndSigusr1AreForwarded) {
  Child xrun(
      join({xrunPath(), "-n", "2"},
           sh("trap 'echo got-usr1; exit 0' USR1; echo ready; while :; do sleep 0.05; done")));
  ASSERT_TRUE(xrun.waitForStdout(
      [](const std::string& out) {
        return out.find("[0] ready") != std::string::npos &&
               out.find("[1] ready") != std::string::npos;
      },
      10));
  ::kill(xrun.pid(), SIGUSR1);
  auto r = xrun.wait(10);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("[0] got-usr1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1] got-usr1"), std::string::npos) << r.out;

  // xrun's debug log on its stderr: if it is slow to end, the failure shows what it waited for
  // (it once did not end within 10 s on a machine at load 10; never reproduced since).
  Child xrun2(join({xrunPath(), "-n", "2"}, sh("echo $$ > $D/pid.$I; echo ready; sleep 1000")),
              {"XTRAIN_LOG_LEVEL=debug"});
  ASSERT_TRUE(xrun2.waitForStdout(
      [](const std::string& out) {
        return out.find("[0] ready") != std::string::npos &&
               out.find("[1] ready") != std::string::npos;
      },
      10));
  ::kill(xrun2.pid(), SIGTERM);
  r = xrun2.wait(10);
  EXPECT_EQ(r.exitCode, 128 + SIGTERM) << r.err;
  expectAllGone("pid", 2);
}

TEST_F(XrunProcess, GrandchildrenDoNotSurvive) {
  // A failing job: every instance's background sleep is ended with it.
  auto r = runXrun(
      join({"-n", "3"}, sh("sleep 1000 & echo $! > $D/gc.$I; if [ $I = 1 ]; then sleep 0.3; "
                           "exit 4; fi; wait")));
  EXPECT_EQ(r.exitCode, 4) << r.err;
  expectAllGone("gc", 3);

  // A successful job whose instances leave background processes behind.
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  r = runXrun(join({"-n", "2"}, sh("sleep 1000 & echo $! > $D/gc.$I; echo done")));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  expectAllGone("gc", 2);
}

TEST_F(XrunProcess, KilledXrunLeavesNothingBehind) {
  Child xrun(join({xrunPath(), "-n", "2"},
                  sh("echo $$ > $D/pid.$I; sleep 1000 & echo $! > $D/gc.$I; "
                     "echo \"$XTRAIN_RENDEZVOUS_DIR\" > $D/rdv; echo ready; wait")));
  ASSERT_TRUE(xrun.waitForStdout(
      [](const std::string& out) {
        return out.find("[0] ready") != std::string::npos &&
               out.find("[1] ready") != std::string::npos;
      },
      10));
  std::string rendezvous;
  std::ifstream(dir_ + "/rdv") >> rendezvous;
  ASSERT_TRUE(fs::exists(rendezvous));
  ::kill(xrun.pid(), SIGKILL);
  auto r = xrun.wait(10);
  EXPECT_EQ(r.exitCode, 137);
  expectAllGone("pid", 2);
  expectAllGone("gc", 2);
  for (int i = 0; i < 200 && fs::exists(rendezvous); ++i) usleep(10000);
  EXPECT_FALSE(fs::exists(rendezvous));
}

TEST_F(XrunProcess, MissingProgramIsReportedBeforeAnythingStarts) {
  auto r = runXrun({"-n", "2", "no-such-program-xyz"});
  EXPECT_EQ(r.exitCode, 127);
  EXPECT_NE(r.err.find("not found in PATH"), std::string::npos) << r.err;
  std::string script = dir_ + "/script.sh";
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  r = runXrun({"-n", "2", script});
  EXPECT_EQ(r.exitCode, 126);
  EXPECT_NE(r.err.find("not executable"), std::string::npos) << r.err;
  std::string noShebang = dir_ + "/no-shebang";
  std::ofstream(noShebang) << "echo hi\n";
  ::chmod(noShebang.c_str(), 0755);
  r = runXrun({"-n", "2", noShebang});
  EXPECT_EQ(r.exitCode, 126);
  EXPECT_NE(r.err.find("cannot start instance 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Exec format error"), std::string::npos) << r.err;
  ::chmod(script.c_str(), 0755);
  r = runXrun({"-n", "2", script});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("[1] hi"), std::string::npos);
}

TEST_F(XrunProcess, BadLogSettingDoesNotBreakTheJob) {
  auto r = runXrun(join({"-n", "2"}, sh("if [ $I = 1 ]; then exit 3; fi")), 30,
                   {"XTRAIN_LOG_LEVEL=bogus"});
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_NE(r.err.find("xrun: warning: XTRAIN_LOG_LEVEL"), std::string::npos) << r.err;
  r = runXrun(join({"-n", "2"}, sh("echo ok")), 30, {"XTRAIN_LOG_LEVEL=debug"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("launcher"), std::string::npos) << r.err;
}

TEST_F(XrunProcess, UsageErrorsExitWithTwo) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{"--frobnicate", "true"}, "unknown option '--frobnicate'"},
      {{"-n", "3", "--num-replicas", "4", "true"}, "--num-replicas 3 or 6"},
      {{"-n", "8", "--ipus-per-replica", "16", "true"}, "pool has 64"},
      {{"--engine", "pbs", "true"}, "--engine must be one of auto, local, mpirun, srun"},
      {{"--engine", "local", "-H", "nodeA,nodeB", "-n", "2", "true"}, "use --engine mpirun"},
      {{"-x", "XTRAIN_IPU_IDS=0", "true"}, "xrun sets XTRAIN_IPU_IDS"},
      {{"-n", "2"}, "no program given"},
  };
  for (const auto& c : cases) {
    auto r = runXrun(c.args);
    EXPECT_EQ(r.exitCode, 2) << c.expected;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_EQ(r.err.rfind("xrun: error: ", 0), 0u) << r.err;
  }
  auto r = runXrun({"-n", "4", "true"}, 30, {"XTRAIN_NUM_IPUS=2"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("pool has 2"), std::string::npos) << r.err;

  r = runXrun({"--help"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find("Usage: xrun"), std::string::npos);
  r = runXrun({"--version"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out.rfind("xrun (xtrain) ", 0), 0u);
}

}  // namespace
}  // namespace xtrain::launcher::testing
