// The shm and gloo backends with real processes: N copies of bin/xtrain_comm_worker
// (tests/comm/worker/) started with the environment xrun gives its instances (XTRAIN_* and a
// job-private rendezvous directory), but without xrun, so that a dead or stalled peer is seen by
// the comm layer itself rather than by a launcher tearing the job down. Every run is bounded: on
// timeout the whole process group is killed.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "comm_test_util.hpp"

namespace xtrain::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Rank {
  int exitCode = -1;  // 128 + signal when killed by a signal; -1 when still running at the deadline
  bool stopped = false;
  std::string output;
  Clock::duration elapsed{};
};

struct Job {
  std::vector<Rank> ranks;
  bool timedOut = false;
  std::string all() const {
    std::string s;
    for (size_t r = 0; r < ranks.size(); ++r) s += format("--- rank {}:\n{}", r, ranks[r].output);
    return s;
  }
};

std::string workerPath() {
  return std::string(XTRAIN_BIN_DIR) + "/xtrain_comm_worker";
}

// Starts n workers in one process group with xrun's contract variables; waits until every rank
// exited or stopped (SIGSTOP), at most `limit`, then kills the group.
Job runJob(const std::string& backend, int n, const std::vector<std::string>& args,
           Clock::duration limit) {
  static int counter = 0;
  const std::string jobId = format("proc-{}-{}", ::getpid(), counter++);
  const fs::path dir = fs::temp_directory_path() / ("xtrain-" + jobId);
  fs::create_directories(dir / "rv");
  ::chmod((dir / "rv").c_str(), 0700);
  const auto start = Clock::now();
  pid_t group = 0;
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const std::string out = (dir / format("out.{}", r)).string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, group);
      std::FILE* f = std::freopen(out.c_str(), "w", stdout);
      (void)f;
      ::dup2(::fileno(stdout), 2);
      ::setenv("XTRAIN_JOB_ID", jobId.c_str(), 1);
      ::setenv("XTRAIN_NUM_INSTANCES", std::to_string(n).c_str(), 1);
      ::setenv("XTRAIN_INSTANCE_INDEX", std::to_string(r).c_str(), 1);
      ::setenv("XTRAIN_RENDEZVOUS_DIR", (dir / "rv").c_str(), 1);
      ::setenv("XTRAIN_COMM_BACKEND", backend.c_str(), 1);
      ::unsetenv("XTRAIN_COMM_TIMEOUT");
      for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "SLURM_NTASKS"}) {
        ::unsetenv(v);
      }
      std::vector<std::string> argv = {workerPath()};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    if (group == 0) group = pid;
    ::setpgid(pid, group);
    pids.push_back(pid);
  }
  Job job;
  job.ranks.resize(static_cast<size_t>(n));
  size_t open = pids.size();
  while (open > 0) {
    if (Clock::now() - start > limit) {
      job.timedOut = true;
      break;
    }
    for (size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] == 0) continue;
      int status = 0;
      const pid_t w = ::waitpid(pids[r], &status, WNOHANG | WUNTRACED);
      if (w != pids[r]) continue;
      Rank& rank = job.ranks[r];
      rank.elapsed = Clock::now() - start;
      if (WIFSTOPPED(status)) {
        rank.stopped = true;
      } else {
        rank.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        pids[r] = 0;
      }
      --open;
    }
    std::this_thread::sleep_for(5ms);
  }
  ::kill(-group, SIGKILL);
  for (pid_t pid : pids) {
    if (pid != 0) ::waitpid(pid, nullptr, 0);
  }
  for (int r = 0; r < n; ++r) {
    std::ifstream in(dir / format("out.{}", r));
    std::stringstream ss;
    ss << in.rdbuf();
    job.ranks[static_cast<size_t>(r)].output = ss.str();
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return job;
}

class Process : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!fs::exists(workerPath())) GTEST_SKIP() << workerPath() << " is missing";
  }

  void expectSuccess(int n, const std::string& filter, Clock::duration limit = 90s) {
    const Job job = runJob(GetParam(), n, {"--gtest_filter=" + filter, "--gtest_brief=1"}, limit);
    EXPECT_FALSE(job.timedOut) << n << " ranks, " << filter << " timed out:\n" << job.all();
    for (size_t r = 0; r < job.ranks.size(); ++r) {
      EXPECT_EQ(job.ranks[r].exitCode, 0) << "rank " << r << " of " << n << ", " << filter << ":\n"
                                          << job.all();
    }
  }
};

INSTANTIATE_TEST_SUITE_P(All, Process, ::testing::Values("shm", "gloo"),
                         [](const auto& info) { return info.param; });

const char* kNotMpi = "-*ConfigDisagreeingWithMpi*:Store.*";

TEST_P(Process, CollectivesOnWorldsOf1To4) {
  for (int n : {1, 2, 3, 4}) expectSuccess(n, std::string("Collectives.*") + kNotMpi);
}

// shm's single-copy all-reduce (opt-in) between real processes, which read each other's buffers
// with process_vm_readv (the worker's large reductions take that path).
TEST_P(Process, SingleCopyCollectivesOnWorldsOf2And3) {
  if (GetParam() != "shm") GTEST_SKIP() << "an shm option";
  ::setenv("XTRAIN_SHM_SINGLE_COPY", "1", 1);  // inherited by the workers started below
  for (int n : {2, 3}) expectSuccess(n, "Collectives.ReductionsMatchTheReference");
  ::unsetenv("XTRAIN_SHM_SINGLE_COPY");
}

TEST_P(Process, GroupsAndFaults) {
  expectSuccess(2, "Groups.*:Faults.*");
  expectSuccess(4, "Groups.*:Faults.*");
}

// The per-process job object (comm/job.hpp) across real processes, and alone.
TEST_P(Process, JobWorldOf1To3) {
  for (int n : {1, 2, 3}) expectSuccess(n, "JobWorld.*");
}

TEST_P(Process, EightRanks) {
  expectSuccess(8, "Collectives.AsynchronousWorkCompletesInOrder:Groups.*");
}

// Rank 1 SIGKILLs itself during collectives: the others fail on their own within a few seconds,
// naming it, and exit with code 3.
void expectKilledPeerNamed(const std::string& backend) {
  const Job job = runJob(backend, 3, {"kill"}, 30s);
  ASSERT_FALSE(job.timedOut) << job.all();
  EXPECT_EQ(job.ranks[1].exitCode, 128 + SIGKILL) << job.all();
  for (size_t r : {size_t{0}, size_t{2}}) {
    const Rank& rank = job.ranks[r];
    EXPECT_EQ(rank.exitCode, 3) << job.all();
    EXPECT_LT(rank.elapsed, 10s) << job.all();
    EXPECT_NE(rank.output.find("rank 1"), std::string::npos) << job.all();
  }
}

TEST_P(Process, KilledPeerIsNamedBySurvivors) {
  expectKilledPeerNamed(GetParam());
}

// The same with shm's single-copy all-reduce (the "kill" mode's 256 KiB all-reduces take it).
TEST_P(Process, KilledPeerIsNamedBySurvivorsWithSingleCopy) {
  if (GetParam() != "shm") GTEST_SKIP() << "an shm option";
  ::setenv("XTRAIN_SHM_SINGLE_COPY", "1", 1);
  expectKilledPeerNamed(GetParam());
  ::unsetenv("XTRAIN_SHM_SINGLE_COPY");
}

// Rank 1 stops (SIGSTOP): the others time out after 1 s naming the operation and exit with code 3.
TEST_P(Process, StalledPeerTimesOut) {
  const Job job = runJob(GetParam(), 2, {"stall"}, 30s);
  ASSERT_FALSE(job.timedOut) << job.all();
  EXPECT_TRUE(job.ranks[1].stopped) << job.all();
  EXPECT_EQ(job.ranks[0].exitCode, 3) << job.all();
  EXPECT_LT(job.ranks[0].elapsed, 10s) << job.all();
  EXPECT_NE(job.ranks[0].output.find("rank 0: allReduce seq "), std::string::npos) << job.all();
  EXPECT_NE(job.ranks[0].output.find("timed out after 1000 ms"), std::string::npos) << job.all();
}

}  // namespace
}  // namespace xtrain::comm
