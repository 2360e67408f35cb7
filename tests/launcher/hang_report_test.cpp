// xrun's hang report (launcher/hang_report.hpp): the verdict on made-up traces, the reading of
// trace files, and real jobs of bin/xtrain_comm_worker under xrun: an instance stopped with
// SIGSTOP (the others time out; the report names it), a mismatched collective, --timeout, and
// SIGQUIT to a running job (the report is printed and the job goes on). Every wait is bounded; the
// jobs' processes are checked gone and their job directories removed.
#include "launcher/hang_report.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "comm/trace_format.hpp"
#include "process_helpers.hpp"

namespace xtrain::launcher::testing {
namespace {

namespace fs = std::filesystem;
namespace trace = comm::trace;

constexpr int64_t kSecond = 1'000'000'000;

TracedCollective collective(uint64_t ticket, const std::string& op, uint64_t seq,
                            trace::State state, int64_t start, int64_t end = 0,
                            const std::string& group = "world", int rank = 0, int size = 0,
                            uint64_t bytes = 4) {
  TracedCollective c;
  c.ticket = ticket;
  c.op = op;
  c.seq = seq;
  c.state = state;
  c.startNs = start;
  c.endNs = end;
  c.group = group;
  c.rank = rank;
  c.size = size;
  c.bytes = bytes;
  if (state == trace::State::Failed) c.failure = trace::Failure::Timeout;
  return c;
}

// n instances that all finished allReduce #0..#last-1 on the world.
std::vector<InstanceTrace> worldJob(int n, uint64_t finished) {
  std::vector<InstanceTrace> traces;
  for (int i = 0; i < n; ++i) {
    InstanceTrace t;
    t.instance = i;
    t.found = true;
    t.pid = 1000 + i;
    t.processState = 'S';
    for (uint64_t s = 0; s < finished; ++s) {
      t.collectives.push_back(collective(s, "allReduce", s, trace::State::Finished,
                                         static_cast<int64_t>(s) * kSecond,
                                         static_cast<int64_t>(s) * kSecond + 1000, "world", i, n));
    }
    traces.push_back(std::move(t));
  }
  return traces;
}

TEST(HangVerdict, NamesTheInstanceThatNeverEntered) {
  auto traces = worldJob(4, 812);
  const int64_t start = 812 * kSecond;
  for (int i : {0, 1, 3}) {
    traces[i].collectives.push_back(
        collective(812, "allReduce", 812, trace::State::Entered, start, 0, "world", i, 4));
  }
  traces[3].collectives.back().state = trace::State::Failed;
  traces[3].collectives.back().endNs = start + 30 * kSecond;
  traces[2].processState = 'T';
  const std::string v = hangVerdict(traces, start + 30 * kSecond);
  EXPECT_EQ(
      v.rfind("instance 2 never entered allReduce #812 on group world (the others waited 30 s)", 0),
      0u)
      << v;
  EXPECT_NE(v.find("it is stopped (pid 1002"), std::string::npos) << v;

  // Two missing, one with no trace at all.
  traces[1].collectives.pop_back();
  traces[1].processState = 'S';
  traces[2] = InstanceTrace{};
  traces[2].instance = 2;
  traces[2].problem = "no trace (it ran no collective yet)";
  const std::string two = hangVerdict(traces, start + 30 * kSecond);
  EXPECT_EQ(two.rfind("instances 1, 2 never entered allReduce #812 on group world", 0), 0u) << two;
  EXPECT_NE(two.find("instance 2: no trace"), std::string::npos) << two;
}

TEST(HangVerdict, NamesTheInstanceThatNeverJoinedAGroup) {
  // Instances 0, 1, 3 are creating group 'world/replicas-0' (a session's split); 2 never came.
  auto traces = worldJob(4, 5);
  const int64_t start = 5 * kSecond;
  for (int i : {0, 1, 3}) {
    traces[i].collectives.push_back(collective(5, trace::kCreateOp, 0, trace::State::Entered, start,
                                               0, "world/replicas-0", i, 4, 0));
  }
  const std::string v = hangVerdict(traces, start + 30 * kSecond);
  EXPECT_EQ(
      v.rfind("instance 2 never entered the creation of group world/replicas-0 (the others waited "
              "30 s)",
              0),
      0u)
      << v;
  // Instance 2 is still creating it while the others are in its first collective: behind, not a
  // mismatch.
  traces[2].collectives.push_back(collective(5, trace::kCreateOp, 0, trace::State::Entered, start,
                                             0, "world/replicas-0", 2, 4, 0));
  for (int i : {0, 1, 3}) {
    traces[i].collectives.back().state = trace::State::Finished;
    traces[i].collectives.back().endNs = start + 1000;
    traces[i].collectives.push_back(collective(6, "allReduce", 0, trace::State::Entered,
                                               start + kSecond, 0, "world/replicas-0", i, 4));
  }
  const std::string behind = hangVerdict(traces, start + 31 * kSecond);
  EXPECT_EQ(behind.rfind("instance 2 never entered allReduce #0 on group world/replicas-0", 0), 0u)
      << behind;
  EXPECT_NE(
      behind.find("instance 2: its last collective is the creation of group world/replicas-0"),
      std::string::npos)
      << behind;
}

TEST(HangVerdict, AnInstanceThatEnteredAfterTheOthersGaveUpWasNotThere) {
  // What mpirun leaves: it resumes a stopped instance (SIGCONT) while ending the job, and the
  // instance enters the collective after the others timed out.
  auto traces = worldJob(3, 12);
  const int64_t start = 12 * kSecond;
  for (int i = 0; i < 3; ++i) {
    traces[i].collectives.push_back(collective(12, "allReduce", 12, trace::State::Failed,
                                               i == 1 ? start + 4 * kSecond + 50'000'000 : start,
                                               start + 4 * kSecond + (i == 1 ? 60'000'000 : 0),
                                               "world", i, 3));
  }
  traces[1].collectives.back().failure = trace::Failure::Aborted;
  EXPECT_EQ(hangVerdict(traces, start + 5 * kSecond),
            "instance 1 never entered allReduce #12 on group world (the others waited 4.0 s); "
            "instance 1: it entered allReduce #12 on group world only as the others gave up, "
            "4.0 s after the first");
  // Entering in the same clock tick as the first time-out counts too.
  traces[1].collectives.back().startNs = start + 4 * kSecond;
  EXPECT_EQ(hangVerdict(traces, start + 5 * kSecond).rfind("instance 1 never entered", 0), 0u);
  // An instance a little late (within the first nine tenths of the wait) was there.
  traces[1].collectives.back().startNs = start + 3 * kSecond;
  EXPECT_EQ(hangVerdict(traces, start + 5 * kSecond).rfind("every instance entered", 0), 0u);
}

TEST(HangVerdict, NamesAMismatch) {
  auto traces = worldJob(4, 12);
  for (int i = 0; i < 4; ++i) {
    traces[i].collectives.push_back(collective(12, i == 1 ? "broadcast" : "allReduce", 12,
                                               trace::State::Failed, 12 * kSecond,
                                               12 * kSecond + 1000, "world", i, 4));
  }
  EXPECT_EQ(hangVerdict(traces, 13 * kSecond),
            "instance 1 is in broadcast #12 on group world while the others are in allReduce "
            "#12 (mismatch)");
  // The same op with different sizes; with two instances, the other is named.
  traces = worldJob(2, 3);
  traces[0].collectives.push_back(
      collective(3, "allReduce", 3, trace::State::Entered, 3 * kSecond, 0, "world", 0, 2, 400));
  traces[1].collectives.push_back(
      collective(3, "allReduce", 3, trace::State::Entered, 3 * kSecond, 0, "world", 1, 2, 800));
  EXPECT_EQ(hangVerdict(traces, 4 * kSecond),
            "instance 1 is in allReduce #3 of 800 B on group world while instance 0 is in "
            "allReduce #3 of 400 B (mismatch)");
}

TEST(HangVerdict, EveryoneInsideOrNoneInside) {
  auto traces = worldJob(3, 5);
  EXPECT_EQ(hangVerdict(traces, 10 * kSecond).rfind("no instance is inside a collective", 0), 0u);
  for (int i = 0; i < 3; ++i) {
    traces[i].collectives.push_back(
        collective(5, "allGather", 5, trace::State::Entered, 5 * kSecond, 0, "world", i, 3));
  }
  traces[1].processState = 'T';
  const std::string v = hangVerdict(traces, 9 * kSecond);
  EXPECT_NE(v.find("instance 1 is stopped (SIGSTOP or a debugger) inside allGather #5 on group "
                   "world"),
            std::string::npos)
      << v;
  EXPECT_NE(v.find("every instance entered allGather #5 on group world (for 4.0 s) and none "
                   "finished it"),
            std::string::npos)
      << v;
  EXPECT_EQ(hangVerdict({InstanceTrace{}}, 0), "no instance has recorded a collective");
}

TEST(HangVerdict, ReportHasOneLinePerInstance) {
  auto traces = worldJob(2, 2);
  traces[0].collectives.push_back(
      collective(2, "barrier", 2, trace::State::Entered, 2 * kSecond, 0, "world", 0, 2, 0));
  traces[0].collectives.back().label = "end of epoch";
  const auto lines = hangReport(traces, 5 * kSecond, "test");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("hang report (test): ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1],
            "  instance 0 (pid 1000, sleeping): in barrier #2 'end of epoch' on group world (0 B) "
            "for 3.0 s; "
            "last finished allReduce #1 on group world, 4.0 s ago");
  EXPECT_EQ(lines[2].rfind("  instance 1 (pid 1001, sleeping): last entered allReduce #1", 0), 0u)
      << lines[2];
  EXPECT_EQ(lines[3],
            "verdict: instance 1 never entered barrier #2 on group world (the others waited 3.0 "
            "s); instance 1: its last collective, allReduce #1 on group world, finished 4.0 s ago");
}

TEST(HangReportFiles, ReadsOnlyTraceFilesOfThisUser) {
  const std::string dir = makeTempDir();
  // A file that is too short, a symlink, and a missing one.
  { std::ofstream(dir + "/" + trace::fileName(0)) << "junk"; }
  fs::create_symlink("/etc/passwd", dir + "/" + trace::fileName(1));
  const auto traces = readTraces(dir, 3);
  ASSERT_EQ(traces.size(), 3u);
  for (const auto& t : traces) EXPECT_FALSE(t.found) << t.instance;
  EXPECT_NE(traces[0].problem.find("is not a trace file of this user"), std::string::npos)
      << traces[0].problem;
  EXPECT_NE(traces[1].problem.find("cannot open"), std::string::npos) << traces[1].problem;
  EXPECT_EQ(traces[2].problem, "no trace (it ran no collective yet)");
  removeTree(dir);
}

// ---- real jobs

std::string workerPath() {
  return std::string(XTRAIN_BIN_DIR) + "/xtrain_comm_worker";
}

class HangReportJob : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(workerPath())) GTEST_SKIP() << workerPath() << " is missing";
    dir_ = makeTempDir();
  }
  void TearDown() override {
    if (dir_.empty()) return;
    // The job directory xrun made under TMPDIR is gone with the job.
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir_)) left.push_back(e.path().string());
    EXPECT_TRUE(left.empty()) << "left behind: " << left.front();
    removeTree(dir_);
  }
  std::vector<std::string> env() const {
    return {"TMPDIR=" + dir_, "XTRAIN_IPU_LOCK_DIR=" + dir_ + "/ipus"};
  }
  // The pids the report names are gone.
  static void expectReportedGone(const std::string& err) {
    std::regex re(R"(xrun:   instance \d+ \(pid (\d+),)");
    int found = 0;
    for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator();
         ++it) {
      ++found;
      const pid_t pid = std::stoi((*it)[1]);
      EXPECT_TRUE(processGone(pid, 5.0)) << "instance process " << pid << " outlived xrun";
    }
    EXPECT_GT(found, 0) << err;
  }
  std::string dir_;
};

class HangReportStopped : public HangReportJob,
                          public ::testing::WithParamInterface<std::string> {};

TEST_P(HangReportStopped, NamesTheStoppedInstance) {
  fs::create_directory(dir_ + "/ipus");
  auto r = runXrun({"-n", "4", "--comm-backend", GetParam(), "--grace-period", "1", "-x",
                    "XTRAIN_COMM_TIMEOUT=4", workerPath(), "hang", "2"},
                   60, env());
  fs::remove_all(dir_ + "/ipus");
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_NE(r.err.find("xrun: hang report (instance "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("failed after a collective timed out or mismatched)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("xrun:   instance 2 (pid "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("xrun: verdict: instance 2 never entered allReduce #12 on group world (the "
                       "others waited 4."),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("it is stopped (pid "), std::string::npos) << r.err;
  // The root-cause line stays xrun's last.
  const auto lines = splitLines(r.err);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("the first to fail"), std::string::npos) << lines.back();
  expectReportedGone(r.err);
}

TEST_P(HangReportStopped, NamesTheInstanceThatNeverJoinedAGroup) {
  fs::create_directory(dir_ + "/ipus");
  auto r = runXrun({"-n", "4", "--comm-backend", GetParam(), "--grace-period", "1", "-x",
                    "XTRAIN_COMM_TIMEOUT=4", workerPath(), "hang-join", "2"},
                   60, env());
  fs::remove_all(dir_ + "/ipus");
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_NE(r.err.find("xrun: verdict: instance 2 never entered the creation of group late (the "
                       "others waited 4."),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("it is stopped (pid "), std::string::npos) << r.err;
  expectReportedGone(r.err);
}

INSTANTIATE_TEST_SUITE_P(Backends, HangReportStopped, ::testing::Values("shm", "gloo"));

TEST_F(HangReportJob, NamesAMismatchedCollective) {
  fs::create_directory(dir_ + "/ipus");
  auto r =
      runXrun({"-n", "3", "-x", "XTRAIN_COMM_TIMEOUT=20", workerPath(), "mismatch"}, 60, env());
  fs::remove_all(dir_ + "/ipus");
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_NE(r.err.find("xrun: verdict: instance 1 is in broadcast #12 on group world while the "
                       "others are in allReduce #12 (mismatch)"),
            std::string::npos)
      << r.err;
  expectReportedGone(r.err);
}

TEST_F(HangReportJob, TimeoutPrintsTheReport) {
  fs::create_directory(dir_ + "/ipus");
  auto r = runXrun({"-n", "3", "--timeout", "6", "--grace-period", "1", "-x",
                    "XTRAIN_COMM_TIMEOUT=60", workerPath(), "hang", "1"},
                   60, env());
  fs::remove_all(dir_ + "/ipus");
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode, 124) << r.err;
  EXPECT_NE(r.err.find("xrun: hang report (--timeout 6 s)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("xrun: verdict: instance 1 never entered allReduce #12 on group world"),
            std::string::npos)
      << r.err;
  expectReportedGone(r.err);
}

TEST_F(HangReportJob, SigquitPrintsTheReportAndTheJobGoesOn) {
  fs::create_directory(dir_ + "/ipus");
  std::vector<std::string> extra = env();
  Child xrun({xrunPath(), "-n", "3", workerPath(), "spin", "4"}, extra);
  ASSERT_TRUE(xrun.waitForStdout(
      [](const std::string& out) {
        return out.find("[0] spinning") != std::string::npos &&
               out.find("[1] spinning") != std::string::npos &&
               out.find("[2] spinning") != std::string::npos;
      },
      30));
  ASSERT_EQ(::kill(xrun.pid(), SIGQUIT), 0);
  auto r = xrun.wait(60);
  fs::remove_all(dir_ + "/ipus");
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("xrun: hang report (SIGQUIT; the job goes on)"), std::string::npos) << r.err;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(r.err.find("xrun:   instance " + std::to_string(i) + " (pid "), std::string::npos)
        << r.err;
  }
  EXPECT_NE(r.err.find("xrun: verdict: "), std::string::npos) << r.err;
  expectReportedGone(r.err);
}

// Under the mpirun engine (every instance on this host, so the job directory exists), over the
// mpi backend. mpirun resumes the stopped instance while ending the job, so the report (read once
// mpirun has ended) sees it enter the collective only as the others gave up.
TEST_F(HangReportJob, NamesTheStoppedInstanceUnderMpirun) {
  bool haveMpirun = false;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    std::string d;
    while (std::getline(dirs, d, ':'))
      haveMpirun = haveMpirun || ::access((d + "/mpirun").c_str(), X_OK) == 0;
  }
  if (!haveMpirun) GTEST_SKIP() << "mpirun (Open MPI) is not installed";
  fs::create_directory(dir_ + "/ipus");
  auto r = runXrun({"--engine", "mpirun", "-n", "3", "--grace-period", "1", "--mpi-global-args",
                    "--mca btl self,vader --mca pml ob1 --mca btl_vader_single_copy_mechanism none",
                    "-x", "XTRAIN_COMM_TIMEOUT=4", workerPath(), "hang", "1"},
                   90, env());
  fs::remove_all(dir_ + "/ipus");
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_NE(r.err.find("xrun: hang report (mpirun failed after a collective timed out"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("xrun: verdict: instance 1 never entered allReduce #12 on group world"),
            std::string::npos)
      << r.err;
  expectReportedGone(r.err);
}

// The pid of the child of `parent` whose environment has XTRAIN_INSTANCE_INDEX=<instance>; -1 if
// none.
pid_t instancePid(pid_t parent, int instance) {
  const std::string want = "XTRAIN_INSTANCE_INDEX=" + std::to_string(instance);
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream environ(e.path() / "environ", std::ios::binary);
    std::string var;
    while (std::getline(environ, var, '\0')) {
      if (var == want) return std::stoi(name);
    }
  }
  return -1;
}

// The real trainer: xtrain under xrun, one instance stopped from outside mid-training; the others
// time out in their gradient all-reduce and the verdict names the stopped instance (wherever it
// was stopped: before a collective, or inside one).
TEST_F(HangReportJob, NamesAnXtrainInstanceStoppedMidTraining) {
  fs::create_directory(dir_ + "/ipus");
  Child xrun({xrunPath(), "-n", "3", "--grace-period", "1", "-x", "XTRAIN_COMM_TIMEOUT=4",
              std::string(XTRAIN_BIN_DIR) + "/xtrain", "--steps", "10000000"},
             env());
  // Two progress lines (a second apart): past the first step, after which xtrain joins the
  // preemption agreement's communicator (whose creation the traces do not record).
  ASSERT_TRUE(xrun.waitForStdout(
      [](const std::string& out) {
        const auto first = out.find("[0] step ");
        return first != std::string::npos && out.find("[0] step ", first + 1) != std::string::npos;
      },
      60));
  pid_t stopped = -1;
  for (int attempt = 0; attempt < 50 && stopped < 0; ++attempt) {
    stopped = instancePid(xrun.pid(), 1);
    if (stopped < 0) ::usleep(100'000);
  }
  ASSERT_GT(stopped, 0) << "instance 1 not found among xrun's children";
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  auto r = xrun.wait(60);
  fs::remove_all(dir_ + "/ipus");
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode, 1) << r.err;
  const auto verdict = r.err.find("xrun: verdict: ");
  ASSERT_NE(verdict, std::string::npos) << r.err;
  const std::string line = r.err.substr(verdict, r.err.find('\n', verdict) - verdict);
  EXPECT_NE(line.find("instance 1 "), std::string::npos) << line;
  // Where the others wait: the gradients' all-reduce (on the session's split of the world), or the
  // agreement on preemption that xtrain makes on the world itself after every step. The group ends
  // the clause ("... on group world; every instance entered ...") when instance 1 stopped inside
  // the collective rather than before it, which a loaded machine makes likelier.
  const auto namesGroup = [&](const std::string& group) {
    return line.find("on group " + group + " ") != std::string::npos ||
           line.find("on group " + group + ";") != std::string::npos;
  };
  EXPECT_TRUE(namesGroup("world/replicas-0") || namesGroup("world")) << line;
  EXPECT_NE(line.find("stopped"), std::string::npos) << line;
  EXPECT_NE(r.err.find("xrun:   instance 1 (pid " + std::to_string(stopped) + ", stopped)"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(processGone(stopped, 5.0));
  expectReportedGone(r.err);
}

}  // namespace
}  // namespace xtrain::launcher::testing
