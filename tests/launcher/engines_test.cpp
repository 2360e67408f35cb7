// Real-process tests of xrun's mpirun and srun engines: Open MPI's mpirun (skipped when it is not
// installed) on this host, and a fake srun (tests/launcher/fake-srun/srun, put first on PATH) that
// starts the tasks here the way Slurm would. Every wait is bounded; the fixture kills, in its
// teardown, every process the instances recorded and every process carrying the test's unique
// marker argument.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process_helpers.hpp"

namespace xtrain::launcher::testing {
namespace {

namespace fs = std::filesystem;

bool onPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Live processes (not this one) with an argument containing `marker`.
std::vector<pid_t> processesWithArgument(const std::string& marker) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = ::readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(marker) != std::string::npos && !processGone(pid, 0)) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

int countOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class XrunEngines : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir();
    marker_ = "xrun-engine-test-" + fs::path(dir_).filename().string();
    const char* path = std::getenv("PATH");
    fakeSrunPath_ = std::string(XTRAIN_SOURCE_DIR) +
                    "/tests/launcher/fake-srun:" + (path ? path : "/usr/bin:/bin");
  }
  void TearDown() override {
    for (const char* prefix : {"pid", "gc"}) {
      for (pid_t p : readPids(dir_, prefix)) ::kill(p, SIGKILL);
    }
    for (pid_t p : processesWithArgument(marker_)) ::kill(p, SIGKILL);
    removeTree(dir_);
  }

  // sh -c SCRIPT with the test's marker as $0, $D the private directory and $I the instance.
  std::vector<std::string> sh(const std::string& script) const {
    return {"sh", "-c", "D=" + dir_ + "; I=$XTRAIN_INSTANCE_INDEX; " + script, marker_};
  }
  // /usr/bin/env VARS... xrun ARGS... (env replaces variables, so PATH can be set).
  static std::vector<std::string> command(const std::vector<std::string>& vars,
                                          const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/env"};
    argv.insert(argv.end(), vars.begin(), vars.end());
    argv.push_back(xrunPath());
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  static ProcessResult run(const std::vector<std::string>& vars,
                           const std::vector<std::string>& args, double timeout = 30) {
    Child child(command(vars, args));
    return child.wait(timeout);
  }
  static std::vector<std::string> join(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  std::string srunPath() const { return "PATH=" + fakeSrunPath_; }

  // Every recorded process and every process with the marker is gone (within a bound).
  void expectNoSurvivors() {
    for (const char* prefix : {"pid", "gc"}) {
      for (pid_t p : readPids(dir_, prefix)) {
        EXPECT_TRUE(processGone(p, 3.0)) << prefix << " process " << p << " outlived xrun";
      }
    }
    double deadline = nowSeconds() + 3;
    while (!processesWithArgument(marker_).empty() && nowSeconds() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(processesWithArgument(marker_).empty()) << "a process of the job outlived xrun";
  }

  std::string dir_;
  std::string marker_;
  std::string fakeSrunPath_;
};

#define REQUIRE_MPIRUN()                                                         \
  do {                                                                           \
    if (!onPath("mpirun")) GTEST_SKIP() << "mpirun (Open MPI) is not installed"; \
  } while (0)

// ---- mpirun ----

TEST_F(XrunEngines, MpirunGivesEveryInstanceItsEnvironmentTagged) {
  REQUIRE_MPIRUN();
  auto r =
      run({}, join({"--engine", "mpirun", "-n", "3", "--num-replicas", "6", "-x", "XR_SET=a b"},
                   sh("echo IDX=$XTRAIN_INSTANCE_INDEX OFF=$POPDIST_REPLICA_INDEX_OFFSET "
                      "LOCAL=$XTRAIN_LOCAL_INSTANCE_INDEX IPUS=$XTRAIN_IPU_IDS "
                      "N=$XTRAIN_NUM_INSTANCES L=$POPDIST_NUM_LOCAL_REPLICAS X=$XR_SET; "
                      "echo JOB=$XTRAIN_JOB_ID; test -d \"$XTRAIN_RENDEZVOUS_DIR\" && "
                      "echo RDV=ok; echo to-stderr >&2; printf \"half-$I-\"; sleep 0.1; "
                      "echo whole-$I")));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  std::set<std::string> jobs;
  for (int i = 0; i < 3; ++i) {
    const std::string tag = "[1," + std::to_string(i) + "]<stdout>:";
    std::string expected = tag + "IDX=" + std::to_string(i) + " OFF=" + std::to_string(2 * i) +
                           " LOCAL=" + std::to_string(i) + " IPUS=" + std::to_string(2 * i) + "-" +
                           std::to_string(2 * i + 1) + " N=3 L=2 X=a b\n";
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << " in\n" << r.out;
    EXPECT_NE(r.out.find(tag + "RDV=ok\n"), std::string::npos) << r.out;
    // mpirun tags each piece it forwards; xrun joins a line written in pieces.
    EXPECT_NE(r.out.find(tag + "half-" + std::to_string(i) + "-whole-" + std::to_string(i) + "\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.err.find("[1," + std::to_string(i) + "]<stderr>:to-stderr\n"), std::string::npos)
        << r.err;
    for (const auto& line : splitLines(r.out)) {
      if (line.rfind(tag + "JOB=", 0) == 0) jobs.insert(line.substr(tag.size() + 4));
    }
  }
  EXPECT_EQ(jobs.size(), 1u) << r.out;
  expectNoSurvivors();
}

TEST_F(XrunEngines, MpirunOutputFilterUntaggedLinesAndFiles) {
  REQUIRE_MPIRUN();
  const std::string out = dir_ + "/out";
  auto r = run({}, join({"--engine", "mpirun", "-n", "3", "--only-output-from-instance", "1",
                         "--no-tag-output", "--output-dir", out},
                        sh("echo out-$I; echo plain-$I >&2; echo error-$I >&2")));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "out-1\n");
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(r.err.find("error-" + std::to_string(i) + "\n"), std::string::npos) << r.err;
    std::ifstream o(out + "/instance-" + std::to_string(i) + ".out");
    std::ifstream e(out + "/instance-" + std::to_string(i) + ".err");
    std::stringstream os, es;
    os << o.rdbuf();
    es << e.rdbuf();
    EXPECT_EQ(os.str(), "out-" + std::to_string(i) + "\n");
    EXPECT_EQ(es.str(), "plain-" + std::to_string(i) + "\nerror-" + std::to_string(i) + "\n");
  }
  EXPECT_NE(r.err.find("plain-1\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("plain-0"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("[1,"), std::string::npos) << r.err;
}

TEST_F(XrunEngines, MpirunFailingInstanceGivesItsExitCode) {
  REQUIRE_MPIRUN();
  auto r = run({}, join({"--engine", "mpirun", "-n", "3"},
                        sh("echo $$ > $D/pid$I; if [ $I = 1 ]; then sleep 0.3; echo boom-$I >&2; "
                           "exit 3; fi; sleep 30 & echo $! > $D/gc$I; wait")));
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_NE(r.err.find("xrun: mpirun (pid "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited with code 3; it names instance 1 as the first to fail"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("\"boom-1\""), std::string::npos) << r.err;
  expectNoSurvivors();
}

TEST_F(XrunEngines, MpirunTimeoutEndsTheJob) {
  REQUIRE_MPIRUN();
  // Instance 0 ignores SIGTERM: the grace period's SIGKILL of the session ends it.
  auto r = run({}, join({"--engine", "mpirun", "-n", "2", "--timeout", "1", "--grace-period", "1"},
                        sh("echo $$ > $D/pid$I; [ $I = 0 ] && trap '' TERM; sleep 30 & "
                           "echo $! > $D/gc$I; wait; wait")));
  EXPECT_EQ(r.exitCode, 124) << r.err;
  EXPECT_LT(r.seconds, 1 + 1 + 4.0) << r.err;
  EXPECT_NE(r.err.find("--timeout 1 s"), std::string::npos) << r.err;
  expectNoSurvivors();
}

TEST_F(XrunEngines, MpirunSigtermToXrunEndsEveryProcess) {
  REQUIRE_MPIRUN();
  Child xrun(command({}, join({"--engine", "mpirun", "-n", "3"},
                              sh("echo $$ > $D/pid$I; sleep 30 & echo $! > $D/gc$I; "
                                 "echo ready; wait"))));
  ASSERT_TRUE(
      xrun.waitForStdout([](const std::string& s) { return countOf(s, "ready") == 3; }, 15));
  ::kill(xrun.pid(), SIGTERM);
  auto r = xrun.wait(15);
  EXPECT_EQ(r.exitCode, 128 + SIGTERM) << r.err;
  EXPECT_LT(r.seconds, 15.0);
  EXPECT_NE(r.err.find("received SIGTERM; forwarding it to mpirun"), std::string::npos) << r.err;
  expectNoSurvivors();
}

TEST_F(XrunEngines, MpirunSigkillOfXrunLeavesNoProcess) {
  REQUIRE_MPIRUN();
  // mpirun dies with xrun (parent-death signal) and would leave its processes behind: the watchdog
  // kills every process of mpirun's session.
  Child xrun(command({}, join({"--engine", "mpirun", "-n", "2"},
                              sh("echo $$ > $D/pid$I; sleep 30 & echo $! > $D/gc$I; "
                                 "echo ready; wait"))));
  ASSERT_TRUE(
      xrun.waitForStdout([](const std::string& s) { return countOf(s, "ready") == 2; }, 15));
  ::kill(xrun.pid(), SIGKILL);
  auto r = xrun.wait(5);
  EXPECT_EQ(r.exitCode, 128 + SIGKILL);
  expectNoSurvivors();
}

TEST_F(XrunEngines, MissingProgramOrEngineIsReportedBeforeAnythingStarts) {
  const std::string noExec = dir_ + "/not-executable";
  std::ofstream(noExec) << "#!/bin/sh\ntouch " << dir_ << "/ran\n";
  ::chmod(noExec.c_str(), 0644);
  auto r = run({}, {"--engine", "mpirun", "-n", "2", dir_ + "/missing"});
  EXPECT_EQ(r.exitCode, 127) << r.err;
  EXPECT_NE(r.err.find("does not exist; nothing was started"), std::string::npos) << r.err;
  r = run({srunPath()}, {"--engine", "srun", "-n", "2", noExec});
  EXPECT_EQ(r.exitCode, 126) << r.err;
  EXPECT_NE(r.err.find("is not executable"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/ran"));

  fs::create_directory(dir_ + "/empty");
  r = run({"PATH=" + dir_ + "/empty"}, {"--engine", "mpirun", "-n", "2", "/bin/true"});
  EXPECT_EQ(r.exitCode, 127) << r.err;
  EXPECT_NE(r.err.find("--engine mpirun needs Open MPI's mpirun"), std::string::npos) << r.err;
  r = run({"PATH=" + dir_ + "/empty", "SLURM_JOB_ID=5"}, {"-n", "2", "/bin/true"});
  EXPECT_EQ(r.exitCode, 127) << r.err;
  EXPECT_NE(r.err.find("--engine srun needs Slurm's srun"), std::string::npos) << r.err;

  r = run({}, {"--engine", "pbs", "/bin/true"});
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("--engine must be one of auto, local, mpirun, srun; got 'pbs'"),
            std::string::npos)
      << r.err;
}

// ---- srun (the fake one) ----

TEST_F(XrunEngines, SrunGivesEveryInstanceItsEnvironment) {
  const auto script =
      sh("echo IDX=$XTRAIN_INSTANCE_INDEX OFF=$XTRAIN_REPLICA_INDEX_OFFSET "
         "POFF=$POPDIST_REPLICA_INDEX_OFFSET LOCAL=$XTRAIN_LOCAL_INSTANCE_INDEX "
         "IPUS=$XTRAIN_IPU_IDS N=$XTRAIN_NUM_INSTANCES JOB=$SLURM_JOB_ID X=$XR_SET "
         "RDV=${XTRAIN_RENDEZVOUS_DIR-unset}; echo to-stderr >&2");
  // Inside an allocation (SLURM_JOB_ID) the engine is srun by default. Nodes unknown: no
  // rendezvous directory.
  auto r = run({srunPath(), "SLURM_JOB_ID=77"},
               join({"-n", "3", "--num-replicas", "6", "-x", "XR_SET=b"}, script));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  for (int i = 0; i < 3; ++i) {
    std::string s = std::to_string(i);
    std::string expected = s + ": IDX=" + s + " OFF=" + std::to_string(2 * i) +
                           " POFF=" + std::to_string(2 * i) + " LOCAL=" + s +
                           " IPUS=" + std::to_string(2 * i) + "-" + std::to_string(2 * i + 1) +
                           " N=3 JOB=77 X=b RDV=unset\n";
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << " in\n" << r.out;
    EXPECT_NE(r.err.find(s + ": to-stderr\n"), std::string::npos) << r.err;
  }
  // xrun says the instances have no way to meet (this srun offers no PMIx), and what to do.
  EXPECT_NE(r.err.find("xrun: srun engine: warning: the allocation's nodes are unknown (no "
                       "SLURM_JOB_NUM_NODES) and this srun offers no PMIx plugin"),
            std::string::npos)
      << r.err;

  // A one-node allocation xrun runs in: the rendezvous directory is there for the instances.
  r = run({srunPath(), "SLURM_JOB_ID=77", "SLURM_JOB_NUM_NODES=1", "SLURMD_NODENAME=n1"},
          join({"-n", "2", "--only-output-from-instance", "1", "--no-tag-output"},
               sh("test -d \"$XTRAIN_RENDEZVOUS_DIR\" && echo RDV-$I=ok")));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "RDV-1=ok\n");
  EXPECT_NE(r.err.find("xrun: srun engine: the instances meet in the job's rendezvous directory "),
            std::string::npos)
      << r.err;
}

TEST_F(XrunEngines, SrunExitCodeIsTheFailingTasks) {
  auto r = run({srunPath()},
               join({"--engine", "srun", "-n", "3"},
                    sh("echo $$ > $D/pid$I; if [ $I = 2 ]; then echo boom-$I >&2; exit 5; fi; "
                       "sleep 30 & echo $! > $D/gc$I; wait")));
  EXPECT_EQ(r.exitCode, 5) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_NE(r.err.find("xrun: srun (pid "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited with code 5; it names instance 2 as the first to fail"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("\"boom-2\""), std::string::npos) << r.err;
  expectNoSurvivors();

  r = run({srunPath()},
          join({"--engine", "srun", "-n", "2"}, sh("[ $I = 1 ] && kill -9 $$; sleep 30")));
  EXPECT_EQ(r.exitCode, 128 + SIGKILL) << r.err;
  expectNoSurvivors();
}

TEST_F(XrunEngines, SrunForwardsSignalsToEveryInstance) {
  // SIGUSR1 (Slurm's warning before preemption) reaches every instance and the job goes on.
  Child usr1(
      command({srunPath()}, join({"--engine", "srun", "-n", "3"},
                                 sh("echo $$ > $D/pid$I; trap 'echo got-usr1-$I; exit 0' USR1; "
                                    "echo ready; sleep 30 & echo $! > $D/gc$I; wait"))));
  ASSERT_TRUE(
      usr1.waitForStdout([](const std::string& s) { return countOf(s, "ready") == 3; }, 15));
  ::kill(usr1.pid(), SIGUSR1);
  auto r = usr1.wait(15);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  for (int i = 0; i < 3; ++i) {
    std::string s = std::to_string(i);
    EXPECT_NE(r.out.find(s + ": got-usr1-" + s + "\n"), std::string::npos) << r.out;
  }
  EXPECT_NE(r.err.find("received SIGUSR1; forwarded to srun"), std::string::npos) << r.err;
  expectNoSurvivors();

  // SIGINT ends the job: it reaches every instance; xrun exits 128 + 2. Each instance fails on it
  // (exit 1), but only once both have seen it: srun runs with --kill-on-bad-exit, so the first
  // instance to exit non-zero makes srun (Slurm's, and the fake one) end the others at once, and
  // one that had not yet been scheduled to run its SIGINT handler would die without saying so (the
  // line this test once lost when the machine was busy). That is the engine's teardown, not xrun's.
  Child intr(command(
      {srunPath()}, join({"--engine", "srun", "-n", "2"},
                         sh("echo $$ > $D/pid$I; "
                            "trap 'echo got-int-$I; : > $D/int$I; n=0; "
                            "while [ ! -e $D/int0 ] || [ ! -e $D/int1 ]; do "
                            "n=$((n + 1)); [ $n -gt 500 ] && break; sleep 0.02; done; exit 1' INT; "
                            "echo ready; sleep 30 & echo $! > $D/gc$I; wait"))));
  ASSERT_TRUE(
      intr.waitForStdout([](const std::string& s) { return countOf(s, "ready") == 2; }, 15));
  ::kill(intr.pid(), SIGINT);
  r = intr.wait(15);
  EXPECT_EQ(r.exitCode, 128 + SIGINT) << r.err;
  EXPECT_NE(r.out.find("0: got-int-0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1: got-int-1\n"), std::string::npos) << r.out;
  expectNoSurvivors();
}

TEST_F(XrunEngines, SrunTimeoutEndsTheJob) {
  auto r = run({srunPath()}, join({"--engine", "srun", "-n", "2", "--timeout", "1"},
                                  sh("echo $$ > $D/pid$I; sleep 30 & echo $! > $D/gc$I; wait")));
  EXPECT_EQ(r.exitCode, 124) << r.err;
  EXPECT_LT(r.seconds, 1 + 5.0) << r.err;
  expectNoSurvivors();
}

}  // namespace
}  // namespace xtrain::launcher::testing
