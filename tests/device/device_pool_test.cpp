// The IPU pool: device ids, enumeration, connection types, XTRAIN_IPU_IDS, and exclusive
// acquisition between DeviceInfo objects, threads and processes. Every test uses a private lock
// directory.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "device/ipu/ipu_pool.hpp"
#include "testing/error_testing.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using testing::errorOf;

// Sets the pool's environment for one test (a fresh lock directory, 8 IPUs) and restores it after.
class DevicePool : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"XTRAIN_NUM_IPUS", "XTRAIN_IPU_LOCK_DIR", "XTRAIN_IPU_IDS"}) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
    }
    char tmpl[] = "/tmp/xtrain-device-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    lockDir_ = tmpl;
    ::setenv("XTRAIN_IPU_LOCK_DIR", lockDir_.c_str(), 1);
    ::setenv("XTRAIN_NUM_IPUS", "8", 1);
    ::unsetenv("XTRAIN_IPU_IDS");
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
    std::error_code ec;
    std::filesystem::remove_all(lockDir_, ec);
  }

  DeviceManager& dm() { return DeviceManager::createDeviceManager(); }

  std::string lockDir_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A child process that acquires a device by id and holds it until released or killed. Every wait is
// bounded; the destructor kills the child if it is still there.
class HolderProcess {
 public:
  explicit HolderProcess(int deviceId) {
    int ready[2];
    int release[2];
    if (::pipe(ready) != 0 || ::pipe(release) != 0) {
      throw std::runtime_error("pipe failed");
    }
    pid_ = ::fork();
    if (pid_ < 0) {
      throw std::runtime_error("fork failed");
    }
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(release[1]);
      ::alarm(60);  // never outlive a stuck parent
      int status = 0;
      try {
        auto dev = DeviceManager::createDeviceManager().acquireDeviceById(deviceId);
        const char ok = '1';
        if (::write(ready[1], &ok, 1) != 1) {
          ::_exit(3);
        }
        char byte;
        while (::read(release[0], &byte, 1) < 0 && errno == EINTR) {
        }
      } catch (...) {
        const char bad = '0';
        [[maybe_unused]] const ssize_t n = ::write(ready[1], &bad, 1);
        status = 2;
      }
      ::_exit(status);
    }
    ::close(ready[1]);
    ::close(release[0]);
    readyFd_ = ready[0];
    releaseFd_ = release[1];
  }

  ~HolderProcess() {
    if (readyFd_ >= 0) {
      ::close(readyFd_);
    }
    if (releaseFd_ >= 0) {
      ::close(releaseFd_);
    }
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }

  // True when the child reports it holds the device within the timeout.
  bool waitUntilHeld(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    pollfd p{readyFd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) {
      return false;
    }
    char c = 0;
    return ::read(readyFd_, &c, 1) == 1 && c == '1';
  }

  // Lets the child release the device and exit; true when it exited cleanly within the timeout.
  bool release(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    ::close(releaseFd_);
    releaseFd_ = -1;
    return reap(timeout);
  }

  // Kills the child (it releases nothing itself: the kernel drops its locks).
  bool kill() {
    ::kill(pid_, SIGKILL);
    return reap(std::chrono::seconds(20), /*expectKilled=*/true);
  }

 private:
  bool reap(std::chrono::milliseconds timeout, bool expectKilled = false) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        return expectKilled ? WIFSIGNALED(status) : (WIFEXITED(status) && WEXITSTATUS(status) == 0);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;  // the destructor kills it
  }

  pid_t pid_ = -1;
  int readyFd_ = -1;
  int releaseFd_ = -1;
  bool reaped_ = false;
};

std::vector<int> idsOf(const std::vector<std::shared_ptr<DeviceInfo>>& devices) {
  std::vector<int> ids;
  ids.reserve(devices.size());
  for (const auto& d : devices) {
    ids.push_back(d->getId());
  }
  return ids;
}

TEST_F(DevicePool, IdsFollowGraphcoreNumbering) {
  // 8 IPUs: 0..7 single, 8..11 pairs, 12..13 fours, 14 all eight.
  EXPECT_EQ(device::numPoolDeviceIds(8), 15);
  EXPECT_EQ(device::numPoolDeviceIds(64), 127);
  const std::vector<std::pair<int, std::vector<int>>> expected = {
      {0, {0}},     {7, {7}},           {8, {0, 1}},        {9, {2, 3}},
      {11, {6, 7}}, {12, {0, 1, 2, 3}}, {13, {4, 5, 6, 7}}, {14, {0, 1, 2, 3, 4, 5, 6, 7}}};
  for (const auto& [id, ipus] : expected) {
    auto dev = dm().acquireDeviceById(id);
    EXPECT_EQ(dev->getId(), id);
    EXPECT_EQ(dev->getIpuIds(), ipus) << "device " << id;
    EXPECT_EQ(dev->getNumIpus(), static_cast<int>(ipus.size()));
    EXPECT_EQ(dev->getType(), DeviceType::Ipu);
    EXPECT_EQ(dev->getTilesPerIPU(), 1472);
    EXPECT_EQ(dev->getMemoryPerTile(), 624u * 1024u);
    EXPECT_TRUE(dev->isAttached());
  }
  EXPECT_CONTAINS(errorOf([&] { dm().acquireDeviceById(15); }), "0..14");
  EXPECT_CONTAINS(errorOf([&] { dm().tryAcquireDeviceById(-1); }), "not a device id");
}

TEST_F(DevicePool, PoolWhoseSizeIsNotAPowerOfTwo) {
  ::setenv("XTRAIN_NUM_IPUS", "6", 1);
  // 0..5 single, 6..8 pairs, 9 = IPUs 0..3.
  EXPECT_EQ(idsOf(dm().enumerateDevices(SyncPattern::Full, 0)),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(dm().acquireDeviceById(8)->getIpuIds(), (std::vector<int>{4, 5}));
  EXPECT_EQ(dm().acquireDeviceById(9)->getIpuIds(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_CONTAINS(errorOf([&] { dm().acquireAvailableDevice(8); }), "pool has 6");
}

TEST_F(DevicePool, EnumerationListsDevicesAndWhetherFree) {
  // PopART's defaults: single IPUs, DeviceType::Ipu, connection Always, whole IPUs.
  auto singles = dm().enumerateDevices();
  EXPECT_EQ(idsOf(singles), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (const auto& d : singles) {
    EXPECT_EQ(d->getConnectionType(), DeviceConnectionType::Always);
    EXPECT_EQ(d->getTilesPerIPU(), 1472);
    EXPECT_FALSE(d->isAttached());  // listing takes nothing
  }
  EXPECT_EQ(dm().enumerateDevices(SyncPattern::Full, 0).size(), 15u);  // 0: every size
  auto pairs = dm().enumerateDevices(SyncPattern::Full, 2);
  EXPECT_EQ(idsOf(pairs), (std::vector<int>{8, 9, 10, 11}));
  for (const auto& d : pairs) {
    EXPECT_FALSE(d->isAttached());
    EXPECT_TRUE(d->isAvailable());
    EXPECT_EQ(d->getConnectionType(), DeviceConnectionType::Always);
    EXPECT_CONTAINS(d->toString(), "free");
  }
  auto held = dm().acquireDeviceById(3);
  EXPECT_CONTAINS(held->toString(), "attached");
  pairs = dm().enumerateDevices(SyncPattern::Full, 2);
  EXPECT_TRUE(pairs[0]->isAvailable());
  EXPECT_FALSE(pairs[1]->isAvailable());  // {2,3} holds IPU 3
  EXPECT_CONTAINS(pairs[1]->toString(), "busy");
  // attach() takes a listed device.
  EXPECT_FALSE(pairs[1]->attach());
  EXPECT_TRUE(pairs[0]->attach());
  EXPECT_TRUE(pairs[0]->isAttached());
  EXPECT_EQ(dm().tryAcquireDeviceById(0), nullptr);
  EXPECT_CONTAINS(errorOf([&] { dm().enumerateDevices(SyncPattern::Full, 3); }), "power of two");
  EXPECT_CONTAINS(errorOf([&] { dm().enumerateDevices(SyncPattern::Full, -1); }), "power of two");
  EXPECT_CONTAINS(errorOf([&] { dm().enumerateDevices(SyncPattern::Full, 16); }), "pool has 8");
}

TEST_F(DevicePool, EnumerationHonoursTypeConnectionAndTiles) {
  for (auto connection : {DeviceConnectionType::Always, DeviceConnectionType::OnDemand,
                          DeviceConnectionType::Never}) {
    auto fours = dm().enumerateDevices(SyncPattern::Full, 4, DeviceType::Ipu, connection);
    ASSERT_EQ(idsOf(fours), (std::vector<int>{12, 13})) << toString(connection);
    for (const auto& d : fours) {
      EXPECT_EQ(d->getConnectionType(), connection);
      EXPECT_EQ(d->getType(), DeviceType::Ipu);
      EXPECT_FALSE(d->isAttached());
    }
  }
  auto never =
      dm().enumerateDevices(SyncPattern::Full, 1, DeviceType::Ipu, DeviceConnectionType::Never)[0];
  EXPECT_CONTAINS(errorOf([&] { never->attach(); }), "offline");
  auto small = dm().enumerateDevices(SyncPattern::Full, 2, DeviceType::Ipu,
                                     DeviceConnectionType::OnDemand, 64);
  ASSERT_EQ(small.size(), 4u);
  EXPECT_EQ(small[0]->getTilesPerIPU(), 64);
  EXPECT_EQ(small[0]->getMemoryPerIPU(), 64ull * 624 * 1024);
  EXPECT_TRUE(small[0]->attach());
  EXPECT_EQ(dm().tryAcquireDeviceById(0), nullptr);  // a device of fewer tiles still takes the IPU
  EXPECT_CONTAINS(errorOf([&] {
                    dm().enumerateDevices(SyncPattern::Full, 1, DeviceType::Ipu,
                                          DeviceConnectionType::Always, 5000);
                  }),
                  "tilesPerIPU must be 0 (the whole IPU) or 1..1472, got 5000");
  // The pool holds IPUs only: other types list nothing, as PopART's do.
  for (auto type :
       {DeviceType::Cpu, DeviceType::IpuModel, DeviceType::OfflineIpu, DeviceType::Sim}) {
    EXPECT_TRUE(dm().enumerateDevices(SyncPattern::Full, 1, type).empty()) << toString(type);
  }
}

TEST_F(DevicePool, AcquisitionIsExclusiveWithinAProcess) {
  auto a = dm().acquireDeviceById(0);
  ASSERT_TRUE(a);
  EXPECT_EQ(dm().tryAcquireDeviceById(0), nullptr);
  EXPECT_EQ(dm().tryAcquireDeviceById(8), nullptr);   // {0,1}
  EXPECT_EQ(dm().tryAcquireDeviceById(14), nullptr);  // all eight
  auto next = dm().acquireAvailableDevice();
  EXPECT_EQ(next->getId(), 1);
  auto pair = dm().acquireAvailableDevice(2);
  EXPECT_EQ(pair->getId(), 9);  // {0,1} is busy
  EXPECT_EQ(pair->getIpuIds(), (std::vector<int>{2, 3}));

  a->detach();
  EXPECT_FALSE(a->isAttached());
  EXPECT_TRUE(dm().tryAcquireDeviceById(0));
  EXPECT_TRUE(a->attach());  // the previous acquisition was released with its DeviceInfo
  a.reset();                 // the destructor releases
  EXPECT_TRUE(dm().tryAcquireDeviceById(0));
}

// A plain process (no XTRAIN_IPU_IDS) picks a free device: not one another process holds, nor one
// an xrun reserved for its job's instances; those instances (XTRAIN_IPU_IDS) take theirs.
TEST_F(DevicePool, AvailableDeviceSkipsHeldAndReservedIpus) {
  auto held = dm().acquireAvailableDevice(1);
  ASSERT_EQ(held->getId(), 0);
  auto reservation = device::IpuLock::tryReserve(lockDir_, 1, "xrun job J (process 7)");
  ASSERT_TRUE(reservation);
  auto plain = dm().acquireAvailableDevice(1);
  EXPECT_EQ(plain->getId(), 2);
  auto pair = dm().acquireAvailableDevice(2);
  EXPECT_EQ(pair->getIpuIds(), (std::vector<int>{4, 5}));
  ::setenv("XTRAIN_IPU_IDS", "1", 1);
  auto instance = dm().acquireAvailableDevice(1);
  EXPECT_EQ(instance->getId(), 1);
  instance.reset();
  ::unsetenv("XTRAIN_IPU_IDS");
  ::setenv("XTRAIN_NUM_IPUS", "2", 1);
  const std::string e = errorOf([&] { dm().acquireAvailableDevice(1); });
  EXPECT_NE(e.find("IPU 0 is held by process " + std::to_string(::getpid())), std::string::npos)
      << e;
  EXPECT_NE(e.find("IPU 1 is reserved by xrun job J (process 7)"), std::string::npos) << e;
}

TEST_F(DevicePool, FailedMultiIpuAttachTakesNothing) {
  auto one = dm().acquireDeviceById(3);
  auto four = dm().enumerateDevices(SyncPattern::Full, 4)[0];  // IPUs 0..3
  EXPECT_FALSE(four->attach());
  // IPUs 0..2 were not left locked.
  EXPECT_TRUE(dm().tryAcquireDeviceById(8));
  EXPECT_TRUE(dm().tryAcquireDeviceById(2));
}

TEST_F(DevicePool, ExhaustedPoolNamesTheHolders) {
  std::vector<std::shared_ptr<DeviceInfo>> held;
  held.reserve(8);
  for (int i = 0; i < 8; ++i) {
    held.push_back(dm().acquireAvailableDevice());
  }
  EXPECT_EQ(dm().tryAcquireAvailableDevice(), nullptr);
  const std::string msg = errorOf([&] { dm().acquireAvailableDevice(); });
  EXPECT_CONTAINS(msg, "no free device of 1 IPUs");
  EXPECT_CONTAINS(msg, "IPU 0 is held by process " + std::to_string(::getpid()));
  EXPECT_CONTAINS(msg, lockDir_);
  const std::string byId = errorOf([&] { dm().acquireDeviceById(9); });
  EXPECT_CONTAINS(byId, "device 9 (IPUs [2,3]) is busy");
  EXPECT_CONTAINS(byId, "IPU 2 is held by process");
}

TEST_F(DevicePool, ThreadsRacingForOneIpuGetItOnce) {
  constexpr int kThreads = 8;
  std::atomic<int> winners{0};
  std::vector<std::shared_ptr<DeviceInfo>> got(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      got[static_cast<size_t>(t)] = dm().tryAcquireDeviceById(5);
      if (got[static_cast<size_t>(t)]) {
        ++winners;
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  EXPECT_EQ(winners.load(), 1);
}

TEST_F(DevicePool, ConnectionTypes) {
  auto onDemand = dm().acquireDeviceById(0, SyncPattern::Full, DeviceConnectionType::OnDemand);
  ASSERT_TRUE(onDemand);
  EXPECT_EQ(onDemand->getConnectionType(), DeviceConnectionType::OnDemand);
  EXPECT_FALSE(onDemand->isAttached());
  EXPECT_TRUE(dm().tryAcquireDeviceById(0));  // nothing is held until attach()
  EXPECT_TRUE(onDemand->attach());
  EXPECT_TRUE(onDemand->attach());  // idempotent
  EXPECT_EQ(dm().tryAcquireDeviceById(0), nullptr);
  EXPECT_EQ(dm().tryAcquireDeviceById(0, SyncPattern::Full, DeviceConnectionType::OnDemand),
            nullptr);
  onDemand->detach();
  onDemand->detach();  // idempotent

  auto offline = dm().acquireDeviceById(0, SyncPattern::Full, DeviceConnectionType::Never);
  EXPECT_EQ(offline->getConnectionType(), DeviceConnectionType::Never);
  EXPECT_FALSE(offline->isAttached());
  EXPECT_CONTAINS(errorOf([&] { offline->attach(); }), "offline");
  auto always = dm().acquireDeviceById(0);  // an offline device holds nothing
  EXPECT_TRUE(always->isAttached());
  EXPECT_EQ(
      dm().acquireAvailableDevice(1, 0, SyncPattern::Full, DeviceConnectionType::Never)->getId(),
      0);  // offline ignores who holds what

  auto lazy = dm().acquireAvailableDevice(1, 0, SyncPattern::Full, DeviceConnectionType::OnDemand);
  EXPECT_EQ(lazy->getId(), 1);
  EXPECT_FALSE(lazy->isAttached());
}

TEST_F(DevicePool, RequestedTilesAndRandomSelection) {
  auto dev = dm().acquireAvailableDevice(1, 64);
  EXPECT_EQ(dev->getTilesPerIPU(), 64);
  EXPECT_EQ(dev->getMemoryPerIPU(), 64ull * 624 * 1024);
  EXPECT_CONTAINS(errorOf([&] { dm().acquireAvailableDevice(1, 5000); }), "tilesPerIPU");
  EXPECT_CONTAINS(errorOf([&] { dm().acquireAvailableDevice(3); }), "power of two");
  EXPECT_CONTAINS(errorOf([&] { dm().tryAcquireAvailableDevice(0); }), "power of two");
  std::vector<std::shared_ptr<DeviceInfo>> held;
  held.reserve(7);
  for (int i = 0; i < 7; ++i) {
    held.push_back(dm().acquireAvailableDevice(
        1, 0, SyncPattern::Full, DeviceConnectionType::Always, DeviceSelectionCriterion::Random));
  }
  std::set<int> ids;
  for (const auto& d : held) {
    ids.insert(d->getId());
  }
  EXPECT_EQ(ids.size(), 7u);
  EXPECT_EQ(ids.count(dev->getId()), 0u);
}

TEST_F(DevicePool, IpuIdsRestrictAcquireAvailable) {
  ::setenv("XTRAIN_IPU_IDS", "4,5", 1);
  auto pair = dm().acquireAvailableDevice(2);
  EXPECT_EQ(pair->getId(), 10);
  EXPECT_EQ(pair->getIpuIds(), (std::vector<int>{4, 5}));
  EXPECT_EQ(dm().tryAcquireAvailableDevice(1), nullptr);  // 4 and 5 are in the pair
  const std::string busy = errorOf([&] { dm().acquireAvailableDevice(1); });
  EXPECT_CONTAINS(busy, "XTRAIN_IPU_IDS=4,5");
  EXPECT_CONTAINS(busy, "IPU 4 is held");
  pair.reset();
  auto a = dm().acquireAvailableDevice();
  auto b = dm().acquireAvailableDevice();
  EXPECT_EQ(a->getId(), 4);
  EXPECT_EQ(b->getId(), 5);
  EXPECT_EQ(dm().tryAcquireAvailableDevice(), nullptr);  // IPUs 0..3, 6, 7 are not ours
  EXPECT_CONTAINS(errorOf([&] { dm().acquireAvailableDevice(4); }), "no device of 4 IPUs");
  // By id is not restricted: the caller named the device.
  EXPECT_TRUE(dm().tryAcquireDeviceById(0));

  ::setenv("XTRAIN_IPU_IDS", "1-2", 1);  // not an aligned pair
  EXPECT_CONTAINS(errorOf([&] { dm().acquireAvailableDevice(2); }), "aligned");
  ::setenv("XTRAIN_IPU_IDS", "0-3,6", 1);
  EXPECT_EQ(dm().acquireAvailableDevice(4)->getId(), 12);
}

// Every bad list is refused naming the list and the entry at fault (XTRAIN_IPU_IDS=-1 used to be
// blamed on '', the text before its dash), with one syntax: no spaces, signs or hexadecimal.
TEST_F(DevicePool, BadIpuIdsNameTheEntry) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"-1", "the entry '-1' is not a range A-B of IPU ids of the pool"},
      {"4,-1", "the entry '-1' is not a range"},
      {"8", "the entry '8' is not an IPU id of the pool"},
      {"1-9", "the entry '1-9' is not a range"},
      {"a", "the entry 'a' is not an IPU id"},
      {"+1", "the entry '+1' is not an IPU id"},
      {"0x1", "the entry '0x1' is not an IPU id"},
      {" 1", "the entry ' 1' is not an IPU id"},
      {"1 ", "the entry '1 ' is not an IPU id"},
      {"1-", "the entry '1-' is not a range"},
      {"1--2", "the entry '1--2' is not a range"},
      {"99999999999", "the entry '99999999999' is not an IPU id"},
      {"1,,2", "entry 2 is empty"},
      {",1", "entry 1 is empty"},
      {"1,", "entry 2 is empty"},
      {"3-1", "the range '3-1' ends before it starts"},
      {"2,2", "IPU 2 is named twice (by the entries '2' and '2')"},
      {"0-3,2", "IPU 2 is named twice (by the entries '0-3' and '2')"},
  };
  for (const auto& [bad, why] : cases) {
    ::setenv("XTRAIN_IPU_IDS", bad.c_str(), 1);
    const std::string e = errorOf([&] { dm().acquireAvailableDevice(); });
    EXPECT_CONTAINS(e, "XTRAIN_IPU_IDS='" + bad + "': expected a comma-separated list of IPU ids");
    EXPECT_CONTAINS(e, "0..7 (XTRAIN_NUM_IPUS=8)");
    EXPECT_CONTAINS(e, why);
  }
}

TEST_F(DevicePool, BadEnvironmentIsNamed) {
  for (const char* bad : {"lots", " 8", "8 ", "0x8", "+8", "0", "65537", "8.0"}) {
    ::setenv("XTRAIN_NUM_IPUS", bad, 1);
    EXPECT_CONTAINS(
        errorOf([&] { dm().acquireAvailableDevice(); }),
        std::string("XTRAIN_NUM_IPUS='") + bad + "': expected a whole number from 1 to 65536");
  }
  ::setenv("XTRAIN_NUM_IPUS", "8", 1);
  ::setenv("XTRAIN_IPU_LOCK_DIR", (lockDir_ + "/nested/dir").c_str(), 1);
  EXPECT_TRUE(dm().acquireAvailableDevice());  // created on demand
  EXPECT_TRUE(std::filesystem::exists(lockDir_ + "/nested/dir/ipu0.lock"));
  ::setenv("XTRAIN_IPU_LOCK_DIR", "/proc/xtrain-cannot-exist", 1);
  EXPECT_CONTAINS(errorOf([&] { dm().acquireAvailableDevice(); }), "XTRAIN_IPU_LOCK_DIR");
}

TEST_F(DevicePool, AcquisitionIsExclusiveAcrossProcesses) {
  HolderProcess child(0);
  ASSERT_TRUE(child.waitUntilHeld()) << "the child could not acquire IPU 0";
  EXPECT_EQ(dm().tryAcquireDeviceById(0), nullptr);
  EXPECT_EQ(dm().tryAcquireDeviceById(8), nullptr);  // the pair {0,1}
  const std::string msg = errorOf([&] { dm().acquireDeviceById(0); });
  EXPECT_CONTAINS(msg, "held by process " + std::to_string(child.pid()));
  EXPECT_EQ(dm().acquireAvailableDevice()->getId(), 1);
  EXPECT_FALSE(dm().enumerateDevices(SyncPattern::Full, 1)[0]->isAvailable());

  ASSERT_TRUE(child.release()) << "the child did not exit cleanly";
  auto dev = dm().tryAcquireDeviceById(0);
  ASSERT_TRUE(dev);
  EXPECT_TRUE(dev->isAttached());
}

TEST_F(DevicePool, MultiIpuDeviceHeldByAnotherProcess) {
  HolderProcess child(12);  // IPUs 0..3
  ASSERT_TRUE(child.waitUntilHeld());
  for (int id : {0, 1, 2, 3, 8, 9, 12, 14}) {
    EXPECT_EQ(dm().tryAcquireDeviceById(id), nullptr) << id;
  }
  EXPECT_EQ(dm().acquireAvailableDevice(2)->getId(), 10);
  EXPECT_EQ(dm().acquireAvailableDevice(4)->getId(), 13);
  ASSERT_TRUE(child.release());
  EXPECT_TRUE(dm().tryAcquireDeviceById(12));
}

TEST_F(DevicePool, LocksAreReleasedWhenTheHolderDies) {
  HolderProcess child(0);
  ASSERT_TRUE(child.waitUntilHeld());
  EXPECT_EQ(dm().tryAcquireDeviceById(0), nullptr);
  ASSERT_TRUE(child.kill());
  EXPECT_TRUE(dm().tryAcquireDeviceById(0));
}

TEST_F(DevicePool, ChildCannotTakeWhatTheParentHolds) {
  auto mine = dm().acquireDeviceById(9);  // IPUs 2, 3
  ASSERT_TRUE(mine);
  // The child inherits the parent's locked files but acquires through files it opens itself.
  HolderProcess child(3);
  EXPECT_FALSE(child.waitUntilHeld()) << "the child acquired IPU 3 held by the parent";
}

}  // namespace
}  // namespace xtrain
