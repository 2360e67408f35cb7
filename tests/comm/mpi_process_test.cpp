// The mpi backend with real processes: runs bin/xtrain_comm_worker (tests/comm/worker/) under
// `mpirun --oversubscribe -np N`. Each invocation runs many checks (GoogleTest cases inside every
// rank); mpirun's exit code is non-zero when any rank fails. Every run is bounded: on timeout the
// whole mpirun process group is killed.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

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
RunResult runMpi(int n, const std::vector<std::string>& args, Clock::duration limit) {
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
                                   "ASAN_OPTIONS=detect_leaks=0",
                                   "mpirun",
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
