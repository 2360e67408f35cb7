// The mpi backend with real processes: runs bin/xtrain_comm_worker (tests/comm/worker/) under
// `mpirun --oversubscribe -np N`. Each invocation runs many checks (GoogleTest cases inside every
// rank); mpirun's exit code is non-zero when any rank fails. Every run is bounded: on timeout the
// whole mpirun process group is killed.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "comm_test_util.hpp"
#include "testing/process_testing.hpp"

namespace xtrain::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct RunResult {
  int exitCode = -1;  // 128 + signal when killed; -1 when we killed it on timeout
  bool timedOut = false;
  std::string output;
  Clock::duration elapsed{};
};

std::string workerPath() {
  return std::string(XTRAIN_BIN_DIR) + "/xtrain_comm_worker";
}

bool haveMpirun() {
  return std::system("command -v mpirun >/dev/null 2>&1") == 0;
}

// Runs `mpirun ... -np n worker args...` with stdout and stderr captured, in its own process group,
// for at most `limit`; whatever is left in the group afterwards is killed.
RunResult runMpi(int n, const std::vector<std::string>& args, Clock::duration limit,
                 const std::vector<std::string>& env = {}) {
  // env(1) sets and unsets the variables for mpirun (Child only adds to this process's
  // environment). Open MPI's plugins leak at MPI_Finalize (and are unloaded, so LeakSanitizer
  // cannot even name them): in sanitizer builds only, leak checking is left to the tests that do
  // not run MPI.
  std::vector<std::string> argv = {"/usr/bin/env",
                                   "-u",
                                   "XTRAIN_COMM_TIMEOUT",
                                   "OMPI_ALLOW_RUN_AS_ROOT=1",
                                   "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                   "OMPI_MCA_rmaps_base_oversubscribe=1",
                                   "OMPI_MCA_mpi_yield_when_idle=1",
                                   "ASAN_OPTIONS=detect_leaks=0"};
  argv.insert(argv.end(), env.begin(), env.end());
  const std::vector<std::string> command = {"mpirun",
                                            "--oversubscribe",
                                            "--allow-run-as-root",
                                            "--bind-to",
                                            "none",
                                            "--mca",
                                            "btl",
                                            "self,vader",
                                            "--mca",
                                            "pml",
                                            "ob1",
                                            "--mca",
                                            "btl_vader_single_copy_mechanism",
                                            "none",
                                            "-np",
                                            std::to_string(n),
                                            workerPath()};
  argv.insert(argv.end(), command.begin(), command.end());
  argv.insert(argv.end(), args.begin(), args.end());
  xtrain::testing::Child mpirun(argv);
  const auto r = mpirun.wait(std::chrono::duration<double>(limit).count());
  ::kill(-mpirun.pid(), SIGKILL);  // anything left in the group
  RunResult result;
  result.exitCode = r.exitCode;
  result.timedOut = r.timedOut;
  result.output = r.out + r.err;
  result.elapsed =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.seconds));
  return result;
}

std::string tail(const std::string& s, size_t n = 6000) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

#define SKIP_WITHOUT_MPI()                                                                  \
  do {                                                                                      \
    if (!haveMpirun()) GTEST_SKIP() << "mpirun is not installed";                           \
    if (!std::filesystem::exists(workerPath())) GTEST_SKIP() << workerPath() << " missing"; \
  } while (0)

void expectSuccess(int n, const std::string& filter, Clock::duration limit = 60s) {
  const auto r = runMpi(n, {"--gtest_filter=" + filter, "--gtest_brief=1"}, limit);
  EXPECT_FALSE(r.timedOut) << "mpirun -np " << n << " " << filter << " timed out:\n"
                           << tail(r.output);
  EXPECT_EQ(r.exitCode, 0) << "mpirun -np " << n << " " << filter << ":\n" << tail(r.output);
}

TEST(MpiProcess, CollectivesOnWorldsOf1To4) {
  SKIP_WITHOUT_MPI();
  for (int n : {1, 2, 3, 4}) expectSuccess(n, "Collectives.*");
}

TEST(MpiProcess, GroupsStoreAndFaults) {
  SKIP_WITHOUT_MPI();
  expectSuccess(4, "Groups.*:Store.*:Faults.*");
  expectSuccess(2, "Groups.*:Store.*:Faults.*");
}

// The per-process job object (comm/job.hpp) on the environment mpirun exports, its store over MPI.
TEST(MpiProcess, JobWorld) {
  SKIP_WITHOUT_MPI();
  expectSuccess(3, "JobWorld.*");
}

TEST(MpiProcess, EightRanks) {
  SKIP_WITHOUT_MPI();
  expectSuccess(8, "Collectives.AsynchronousWorkCompletesInOrder:Groups.*:Store.*", 60s);
}

TEST(MpiProcess, KilledPeerEndsTheJobQuickly) {
  SKIP_WITHOUT_MPI();
  const auto r = runMpi(3, {"kill"}, 60s);
  EXPECT_FALSE(r.timedOut) << tail(r.output);
  EXPECT_NE(r.exitCode, 0) << tail(r.output);
  EXPECT_LT(r.elapsed, 15s) << tail(r.output);
  EXPECT_NE(r.output.find("SIGKILL to myself"), std::string::npos) << tail(r.output);
}

// A peer that stops (SIGSTOP) during a large all-reduce: the others time out in the data phase
// (1 s), which MPI cannot cancel; they exit non-zero and mpirun ends the job.
TEST(MpiProcess, StalledPeerTimesOutAndTheJobEnds) {
  SKIP_WITHOUT_MPI();
  const auto r = runMpi(2, {"stall"}, 60s);
  EXPECT_FALSE(r.timedOut) << tail(r.output);
  EXPECT_EQ(r.exitCode, 3) << tail(r.output);
  EXPECT_LT(r.elapsed, 15s) << tail(r.output);
  EXPECT_NE(r.output.find("rank 0: allReduce seq 1"), std::string::npos) << tail(r.output);
  EXPECT_NE(r.output.find("timed out after 1000 ms while transferring data"), std::string::npos)
      << tail(r.output);
}

// ---- no hang after a failure (issue 16): a failing process exits at once, without MPI_Finalize
// (which would wait for its peers), so the launcher ends the whole job with its code.

// "XTRAIN_NOHANG_MARKER=<unique>": put in a job's environment to find what it left behind.
std::string newMarker() {
  static int runs = 0;
  return "XTRAIN_NOHANG_MARKER=" + std::to_string(::getpid()) + "-" + std::to_string(runs++);
}

// The live processes whose environment holds `marker` (only this user's are readable).
std::vector<pid_t> processesWith(const std::string& marker) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream environ(e.path() / "environ", std::ios::binary);
    std::string var;
    while (std::getline(environ, var, '\0')) {
      if (var == marker) {
        out.push_back(std::stoi(name));
        break;
      }
    }
  }
  return out;
}

// True once no process holds `marker` (bounded: the launcher may still be reaping); otherwise
// kills what is left, so that a failing test leaves nothing behind either.
bool nothingLeftWith(const std::string& marker, Clock::duration limit = 10s) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    const auto left = processesWith(marker);
    if (left.empty()) return true;
    if (Clock::now() >= deadline) {
      for (pid_t p : left) {
        ::kill(p, SIGCONT);
        ::kill(p, SIGKILL);
      }
      return false;
    }
    std::this_thread::sleep_for(50ms);
  }
}

class MpiNoHang : public ::testing::TestWithParam<std::string> {};

// One process throws (exit 7) while the others wait for it in an all-reduce whose timeout is long
// (120 s): mpirun must end the job with code 7 within seconds, not at the timeout.
TEST_P(MpiNoHang, AFailingProcessEndsTheJobWithItsCodeAtOnce) {
  SKIP_WITHOUT_MPI();
  const std::string marker = newMarker();
  const auto r = runMpi(3, {"fail", "1", "7"}, 90s,
                        {marker, "XTRAIN_COMM_BACKEND=" + GetParam(), "XTRAIN_COMM_TIMEOUT=120"});
  EXPECT_TRUE(nothingLeftWith(marker)) << "processes of the job outlived mpirun";
  ASSERT_FALSE(r.timedOut) << tail(r.output);
  EXPECT_EQ(r.exitCode, 7) << tail(r.output);
  EXPECT_LT(r.elapsed, 20s) << tail(r.output);
  EXPECT_NE(r.output.find("instance 1: instance 1 fails on purpose before collective 12"),
            std::string::npos)
      << tail(r.output);
}

// One process stops (SIGSTOP) before a collective: the others fail at the short timeout (2 s),
// exit 3 at once, and mpirun ends the job, the stopped process included.
TEST_P(MpiNoHang, AStoppedProcessMakesTheOthersFailAndTheJobEnds) {
  SKIP_WITHOUT_MPI();
  const std::string marker = newMarker();
  const auto r = runMpi(3, {"hang", "1"}, 90s,
                        {marker, "XTRAIN_COMM_BACKEND=" + GetParam(), "XTRAIN_COMM_TIMEOUT=2"});
  EXPECT_TRUE(nothingLeftWith(marker)) << "processes of the job outlived mpirun";
  ASSERT_FALSE(r.timedOut) << tail(r.output);
  EXPECT_EQ(r.exitCode, 3) << tail(r.output);
  EXPECT_LT(r.elapsed, 30s) << tail(r.output);
  EXPECT_NE(r.output.find("instance 1: SIGSTOP to myself"), std::string::npos) << tail(r.output);
  EXPECT_NE(r.output.find("timed out after 2000 ms"), std::string::npos) << tail(r.output);
}

// mpi: MPI is the transport. gloo: MPI only bootstraps the store (no shared directory, as across
// hosts), and the exit must not wait in MPI_Finalize either.
INSTANTIATE_TEST_SUITE_P(Backends, MpiNoHang, ::testing::Values("mpi", "gloo"));

// The same through xrun's mpirun engine, as a user starts a job.
class XrunMpirunNoHang : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/xtrain-nohang-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    std::filesystem::create_directory(dir_ + "/ipus");
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_ + "/ipus", ec);
    // xrun removed its job directory under TMPDIR.
    std::vector<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
      left.push_back(e.path().string());
    }
    EXPECT_TRUE(left.empty()) << "left behind: " << left.front();
    std::filesystem::remove_all(dir_, ec);
  }
  // xrun -n 3 --engine mpirun --comm-backend <param> ... worker args...
  RunResult run(const std::vector<std::string>& args, const std::string& timeout,
                const std::string& marker) {
    std::vector<std::string> argv = {
        std::string(XTRAIN_BIN_DIR) + "/xrun",
        "-n",
        "3",
        "--engine",
        "mpirun",
        "--comm-backend",
        GetParam(),
        "--mpi-global-args",
        "--oversubscribe --mca btl self,vader --mca pml ob1 --mca btl_vader_single_copy_mechanism "
        "none",
        "-x",
        "XTRAIN_COMM_TIMEOUT=" + timeout,
        "-x",
        marker,
        workerPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    xtrain::testing::Child xrun(argv, {"TMPDIR=" + dir_, "XTRAIN_IPU_LOCK_DIR=" + dir_ + "/ipus",
                                       "ASAN_OPTIONS=detect_leaks=0"});
    const auto r = xrun.wait(90);
    RunResult result;
    result.exitCode = r.exitCode;
    result.timedOut = r.timedOut;
    result.output = r.out + r.err;
    result.elapsed =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.seconds));
    return result;
  }
  std::string dir_;
};

TEST_P(XrunMpirunNoHang, AFailingInstanceEndsTheJobWithItsCodeAtOnce) {
  SKIP_WITHOUT_MPI();
  const std::string marker = newMarker();
  const auto r = run({"fail", "2", "9"}, "120", marker);
  EXPECT_TRUE(nothingLeftWith(marker)) << "processes of the job outlived xrun";
  ASSERT_FALSE(r.timedOut) << tail(r.output);
  EXPECT_EQ(r.exitCode, 9) << tail(r.output);
  EXPECT_LT(r.elapsed, 20s) << tail(r.output);
  EXPECT_NE(r.output.find("instance 2 fails on purpose"), std::string::npos) << tail(r.output);
}

TEST_P(XrunMpirunNoHang, AStoppedInstanceMakesTheOthersFailAndTheJobEnds) {
  SKIP_WITHOUT_MPI();
  const std::string marker = newMarker();
  const auto r = run({"hang", "1"}, "2", marker);
  EXPECT_TRUE(nothingLeftWith(marker)) << "processes of the job outlived xrun";
  ASSERT_FALSE(r.timedOut) << tail(r.output);
  EXPECT_EQ(r.exitCode, 3) << tail(r.output);
  EXPECT_LT(r.elapsed, 30s) << tail(r.output);
  EXPECT_NE(r.output.find("timed out after 2000 ms"), std::string::npos) << tail(r.output);
}

INSTANTIATE_TEST_SUITE_P(Backends, XrunMpirunNoHang, ::testing::Values("mpi", "gloo"));

// The pid of the process holding both `marker` and XTRAIN_INSTANCE_INDEX=<instance>; -1 if none.
pid_t instanceWith(const std::string& marker, int instance) {
  const std::string index = "XTRAIN_INSTANCE_INDEX=" + std::to_string(instance);
  for (pid_t p : processesWith(marker)) {
    std::ifstream environ("/proc/" + std::to_string(p) + "/environ", std::ios::binary);
    std::string var;
    while (std::getline(environ, var, '\0')) {
      if (var == index) return p;
    }
  }
  return -1;
}

// The real trainer: xtrain under xrun --engine mpirun over the mpi backend, one instance stopped
// from outside mid-training. The others fail at XTRAIN_COMM_TIMEOUT (3 s) wherever they wait for
// it, exit 1 without waiting in MPI_Finalize, and the job ends by itself, nothing left behind.
TEST_P(XrunMpirunNoHang, AnXtrainInstanceStoppedMidTrainingEndsTheJob) {
  SKIP_WITHOUT_MPI();
  const std::string xtrain = std::string(XTRAIN_BIN_DIR) + "/xtrain";
  if (!std::filesystem::exists(xtrain)) GTEST_SKIP() << xtrain << " missing";
  const std::string marker = newMarker();
  xtrain::testing::Child xrun(
      {std::string(XTRAIN_BIN_DIR) + "/xrun", "-n", "3", "--engine", "mpirun", "--comm-backend",
       GetParam(), "--mpi-global-args",
       "--mca btl self,vader --mca pml ob1 --mca btl_vader_single_copy_mechanism none", "-x",
       "XTRAIN_COMM_TIMEOUT=3", "-x", marker, xtrain, "--steps", "10000000"},
      {"TMPDIR=" + dir_, "XTRAIN_IPU_LOCK_DIR=" + dir_ + "/ipus", "ASAN_OPTIONS=detect_leaks=0"});
  // Two progress lines (a second apart): instance 0 is past its first steps, so every group exists
  // (xtrain joins the world and its session's split before step 1); a stop inside a group's
  // creation fails there instead, with other words (tests/launcher/hang_report_test.cpp covers
  // that case).
  const bool training = xrun.waitForStdout(
      [](const std::string& out) {
        const auto first = out.find("<stdout>:step ");
        return first != std::string::npos &&
               out.find("<stdout>:step ", first + 1) != std::string::npos;
      },
      60);
  pid_t stopped = -1;
  for (int attempt = 0; training && attempt < 50 && stopped < 0; ++attempt) {
    stopped = instanceWith(marker, 1);
    if (stopped < 0) std::this_thread::sleep_for(100ms);
  }
  if (stopped > 0) ::kill(stopped, SIGSTOP);
  const auto stoppedAt = Clock::now();
  const auto r = xrun.wait(90);
  const auto ended = Clock::now() - stoppedAt;
  EXPECT_TRUE(nothingLeftWith(marker)) << "processes of the job outlived xrun";
  ASSERT_TRUE(training) << r.err;
  ASSERT_GT(stopped, 0) << "instance 1 not found";
  ASSERT_FALSE(r.timedOut) << tail(r.err);
  EXPECT_NE(r.exitCode, 0) << tail(r.err);
  EXPECT_LT(ended, 30s) << tail(r.err);
  EXPECT_NE(r.err.find("timed out after 3000 ms"), std::string::npos) << tail(r.err);
}

TEST(MpiProcess, RefusedOutsideMpirun) {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(v) != nullptr) GTEST_SKIP() << "running under an MPI launcher";
  }
  auto store = std::make_shared<InMemoryStore>("outside");
  try {
    (void)createCommunicator(CommConfig{store, 0, 1, "world", 1000ms}, "mpi");
    FAIL() << "the mpi backend accepted a process not started by mpirun";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("needs the processes started by mpirun or srun"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace xtrain::comm
