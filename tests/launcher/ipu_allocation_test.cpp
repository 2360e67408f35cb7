// xrun takes its instances' IPUs from the free ones of the host's pool and reserves them for the
// job, so two jobs (or a plain xtrain and a job) share a host. Every xrun here runs on the private
// pool of this test process (process_helpers.cpp); every wait is bounded and every job started is
// ended by its Child.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "device/ipu/ipu_pool.hpp"
#include "launcher/ipu_allocation.hpp"
#include "process_helpers.hpp"

namespace xtrain::launcher::testing {
namespace {

std::string xtrainPath() {
  return std::string(XTRAIN_BIN_DIR) + "/xtrain";
}

class IpuAllocation : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("XTRAIN_IPU_LOCK_DIR");
    ASSERT_NE(dir, nullptr) << "the private pool of process_helpers.cpp is not set";
    pool_.lockDir = dir;
    pool_.lockDirIsDefault = false;
    pool_.numIpus = 8;
    device::ensureLockDir(pool_);
  }

  device::PoolConfig pool_;
};

// "[i] IDS=a" lines -> the IPU ids of each instance.
std::vector<std::string> idsOf(const std::string& out) {
  std::vector<std::string> ids;
  const std::regex re(R"(IDS=([0-9,-]+))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator();
       ++it) {
    ids.push_back((*it)[1]);
  }
  return ids;
}

TEST_F(IpuAllocation, ReservesTheLowestFreeAlignedBlocks) {
  auto held = device::IpuLock::tryAcquire(pool_.lockDir, 0);  // attached by a process
  auto other = device::IpuLock::tryReserve(pool_.lockDir, 3, "xrun job other (process 1)");
  ASSERT_TRUE(held && other);
  {
    const IpuReservations singles = reserveFreeIpus(pool_, 3, 1, 1, "test");
    EXPECT_EQ(singles.firstIpus(), (std::vector<int>{1, 2, 4}));
    // While they are reserved, nobody else gets them.
    const IpuReservations more = reserveFreeIpus(pool_, 1, 1, 1, "test");
    EXPECT_EQ(more.firstIpus(), (std::vector<int>{5}));
  }
  const IpuReservations pairs = reserveFreeIpus(pool_, 2, 2, 2, "test");
  EXPECT_EQ(pairs.firstIpus(), (std::vector<int>{4, 6}));
}

TEST_F(IpuAllocation, TooFewFreeIpusNameTheirHolders) {
  auto held = device::IpuLock::tryAcquire(pool_.lockDir, 0);
  auto other = device::IpuLock::tryReserve(pool_.lockDir, 5, "xrun job other (process 1)");
  ASSERT_TRUE(held && other);
  try {
    reserveFreeIpus(pool_, 3, 2, 2, "test");
    ADD_FAILURE() << "three pairs were reserved in a pool of 8 with IPUs 0 and 5 busy";
  } catch (const runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("needs 3 free blocks of 2 IPUs"), std::string::npos) << m;
    EXPECT_NE(m.find("IPU 0 is held by process " + std::to_string(::getpid())), std::string::npos)
        << m;
    EXPECT_NE(m.find("IPU 5 is reserved by xrun job other (process 1)"), std::string::npos) << m;
  }
  // The failed attempt kept nothing: both free pairs are still free.
  EXPECT_EQ(reserveFreeIpus(pool_, 2, 2, 2, "test").firstIpus(), (std::vector<int>{2, 6}));
}

// A plain xtrain holds IPU 0 (here: this process holds its lock): xrun's instances get 1 and 2, and
// xrun says why; with too few free IPUs it fails before starting anything, naming the holder.
TEST_F(IpuAllocation, XrunAvoidsAnIpuHeldByAnotherProcess) {
  auto held = device::IpuLock::tryAcquire(pool_.lockDir, 0);
  ASSERT_TRUE(held);
  ProcessResult r =
      runXrun({"-n", "2", "--print-topology", "sh", "-c", "echo IDS=$XTRAIN_IPU_IDS"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto ids = idsOf(r.out);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()), (std::set<std::string>{"1", "2"}))
      << r.out;
  EXPECT_NE(r.out.find("IPUs 1, 2: free on this host"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("IPU 0 is held by process " + std::to_string(::getpid())),
            std::string::npos)
      << r.err;

  r = runXrun({"-n", "2", "sh", "-c", "echo started"}, 30, {"XTRAIN_NUM_IPUS=2"});
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  EXPECT_EQ(r.out.find("started"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("IPU 0 is held by process " + std::to_string(::getpid())),
            std::string::npos)
      << r.err;
}

// Two xruns starting at once get disjoint IPUs: their instances (sh, which attach nothing) are kept
// apart by xrun's reservations alone.
TEST_F(IpuAllocation, ConcurrentXrunsGetDisjointIpus) {
  const std::string dir = makeTempDir();
  const std::string go = dir + "/go";
  // Each instance prints its IPUs, then waits (bounded) for the test's go.
  const std::vector<std::string> job = {
      xrunPath(), "-n", "2", "--timeout", "60", "sh", "-c",
      "echo IDS=$XTRAIN_IPU_IDS; i=0; while [ ! -e " + go +
          " ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done"};
  Child a(job);
  Child b(job);
  auto twoLines = [](const std::string& out) { return idsOf(out).size() == 2; };
  std::string outA, outB;
  const bool readyA = a.waitForStdout([&](const std::string& o) { outA = o; return twoLines(o); }, 60);
  const bool readyB = b.waitForStdout([&](const std::string& o) { outB = o; return twoLines(o); }, 60);
  { std::ofstream(go.c_str()) << "go\n"; }
  const ProcessResult ra = a.wait(30);
  const ProcessResult rb = b.wait(30);
  removeTree(dir);
  ASSERT_TRUE(readyA && readyB) << ra.out << ra.err << rb.out << rb.err;
  EXPECT_EQ(ra.exitCode, 0) << ra.err;
  EXPECT_EQ(rb.exitCode, 0) << rb.err;
  std::set<std::string> all;
  for (const auto& id : idsOf(ra.out)) EXPECT_TRUE(all.insert(id).second) << "IPU " << id;
  for (const auto& id : idsOf(rb.out)) EXPECT_TRUE(all.insert(id).second) << "IPU " << id;
  EXPECT_EQ(all.size(), 4u) << ra.out << rb.out;
}

// Two training jobs on one host: while `xrun -n 2 xtrain` trains (its instances attached to their
// IPUs), a second `xrun -n 2 xtrain` trains too.
TEST_F(IpuAllocation, TwoTrainingJobsShareTheHost) {
  Child first({xrunPath(), "-n", "2", "--timeout", "120", xtrainPath(), "--steps", "100000000"});
  // Its instances have attached their IPUs (0 and 1, the pool being empty) once they hold the locks.
  bool attached = false;
  for (const double deadline = nowSeconds() + 90; !attached && nowSeconds() < deadline;) {
    attached = device::ipuHolder(pool_.lockDir, 0) && device::ipuHolder(pool_.lockDir, 1);
    if (!attached) ::usleep(20 * 1000);
  }
  ASSERT_TRUE(attached) << "the first job's instances did not attach their IPUs";
  const ProcessResult second =
      runXrun({"-n", "2", "--timeout", "120", xtrainPath(), "--steps", "3"}, 150);
  ::kill(first.pid(), SIGTERM);
  const ProcessResult r = first.wait(30);
  EXPECT_EQ(second.exitCode, 0) << second.out << second.err;
  EXPECT_NE(second.out.find("[0] xtrain: trained 3 steps"), std::string::npos) << second.out;
  // xtrain takes SIGTERM as a preemption request: it stops after the step and exits 75.
  EXPECT_EQ(r.exitCode, 75) << r.err;
}

}  // namespace
}  // namespace xtrain::launcher::testing
