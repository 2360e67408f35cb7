// Waiting for busy IPUs: XTRAIN_WAIT_FOR_IPU in the acquisitions, DeviceManager::
// setOnDemandAttachTimeout and DeviceInfo::tryAttachUntilTimeout. A second DeviceInfo of this
// process holds the IPUs (the locks are per open file, so it conflicts like another process would);
// a thread releases them when a test needs it. Waits are bounded; the only timing checks are
// "waited at least" and "finished within a generous bound".
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "device/ipu/ipu_wait.hpp"
#include "testing/error_testing.hpp"
#include "testing/private_ipu_pool.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

using testing::errorOf;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A private pool of 8 IPUs (testing/private_ipu_pool.hpp), devicex logging at info; restored
// afterwards.
class DeviceWait : public testing::PrivateIpuPoolTest {
 protected:
  void SetUp() override {
    PrivateIpuPoolTest::SetUp();
    savedLevel_ = logging::getLevel(logging::Module::devicex);
    logging::setLevel(logging::Module::devicex, logging::Level::Info);
  }
  void TearDown() override {
    if (releaser_.joinable()) releaser_.join();
    logging::setLevel(logging::Module::devicex, savedLevel_);
    PrivateIpuPoolTest::TearDown();
  }

  // Detaches `holder` from another thread after ~200 ms and records when (released_, releasedAt_).
  void releaseSoon(std::shared_ptr<DeviceInfo> holder) {
    releaser_ = std::thread([this, holder = std::move(holder)] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      // Set before the detach: whoever gets the IPU after it sees them (set after, a fast
      // acquirer could return first).
      releasedAt_ = Clock::now();
      released_ = true;
      holder->detach();
    });
  }

  const std::string me_ = "held by process " + std::to_string(::getpid());
  logging::Level savedLevel_ = logging::Level::Off;
  std::thread releaser_;
  std::atomic<bool> released_{false};
  Clock::time_point releasedAt_;
};

TEST_F(DeviceWait, WaitForIpuValues) {
  EXPECT_EQ(device::waitForIpuSeconds(), 0.0);  // unset
  for (const auto& [text, seconds] :
       std::vector<std::pair<std::string, double>>{{"", 0},
                                                   {"0", 0},
                                                   {"30", 30},
                                                   {"2s", 2},
                                                   {"500ms", 0.5},
                                                   {"0.5", 0.5},
                                                   {"2592000", 2592000}}) {
    ::setenv("XTRAIN_WAIT_FOR_IPU", text.c_str(), 1);
    EXPECT_EQ(device::waitForIpuSeconds(), seconds) << "'" << text << "'";
  }
  // One syntax with every other duration (common/env_value.hpp): no space, sign or exponent.
  for (const char* bad :
       {"-1", "abc", "1e3", "inf", "nan", "1.2.3", ".", "0x10", " 2 ", "2592001", "1e10"}) {
    ::setenv("XTRAIN_WAIT_FOR_IPU", bad, 1);
    const std::string e = errorOf([] { device::waitForIpuSeconds(); });
    EXPECT_CONTAINS(e, std::string("XTRAIN_WAIT_FOR_IPU='") + bad +
                           "': expected a duration of 0 or more and at most 2592000 s (30 days)");
  }
  // The acquisitions read it at each call, before taking anything: a free device does not hide a
  // bad value.
  ::setenv("XTRAIN_WAIT_FOR_IPU", "soon", 1);
  EXPECT_CONTAINS(errorOf([&] { dm().acquireAvailableDevice(); }), "XTRAIN_WAIT_FOR_IPU='soon'");
  EXPECT_CONTAINS(errorOf([&] { dm().acquireDeviceById(3); }), "XTRAIN_WAIT_FOR_IPU='soon'");
  EXPECT_TRUE(dm().tryAcquireDeviceById(3));  // the try* calls never wait, so never read it
}

TEST_F(DeviceWait, AcquireByIdWaitsForTheHolderToRelease) {
  auto holder = dm().acquireDeviceById(9);  // IPUs 2, 3
  ::setenv("XTRAIN_WAIT_FOR_IPU", "60", 1);
  releaseSoon(holder);
  ::testing::internal::CaptureStderr();
  std::shared_ptr<DeviceInfo> got;
  std::string e;
  try {
    got = dm().acquireDeviceById(3);
  } catch (const error& x) {
    e = x.what();
  }
  logging::flush();
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(e, "") << log;
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->isAttached());
  ASSERT_TRUE(released_.load());  // it returned after the release, not before
  EXPECT_CONTAINS(
      log,
      "acquireDeviceById: device 3 (IPUs [3]): waiting up to 60 s (XTRAIN_WAIT_FOR_IPU) "
      "for busy IPUs: IPU 3 is " +
          me_);
  EXPECT_CONTAINS(log, "IPU 3 is " + me_);
  EXPECT_CONTAINS(log, "acquireDeviceById: device 3 (IPUs [3]): got the IPUs after waiting");
}

TEST_F(DeviceWait, AcquireAvailableWaitsForAFreeDevice) {
  ::setenv("XTRAIN_IPU_IDS", "4,5", 1);
  auto holder = dm().acquireAvailableDevice(2);  // the only pair of IPUs 4, 5
  ::setenv("XTRAIN_WAIT_FOR_IPU", "60", 1);
  releaseSoon(holder);
  const auto start = Clock::now();
  auto got = dm().acquireAvailableDevice(1);
  ASSERT_TRUE(released_.load());
  EXPECT_EQ(got->getId(), 4);
  EXPECT_TRUE(got->isAttached());
  EXPECT_GE(Clock::now(), releasedAt_);
  EXPECT_LT(secondsSince(start), 30.0);
}

TEST_F(DeviceWait, AcquireGivesUpAfterTheWaitNamingTheHolder) {
  auto holder = dm().acquireDeviceById(0);
  ::setenv("XTRAIN_WAIT_FOR_IPU", "1", 1);
  ::testing::internal::CaptureStderr();
  auto start = Clock::now();
  const std::string byId = errorOf([&] { dm().acquireDeviceById(0); });
  const double waitedById = secondsSince(start);
  ::setenv("XTRAIN_NUM_IPUS", "1", 1);
  start = Clock::now();
  const std::string available = errorOf([&] { dm().acquireAvailableDevice(1); });
  const double waitedAvailable = secondsSince(start);
  logging::flush();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_GE(waitedById, 1.0);
  EXPECT_LT(waitedById, 30.0);
  EXPECT_CONTAINS(byId, "device 0 (IPUs [0]) is busy after waiting 1 s (XTRAIN_WAIT_FOR_IPU)");
  EXPECT_CONTAINS(byId, "IPU 0 is " + me_);
  EXPECT_GE(waitedAvailable, 1.0);
  EXPECT_LT(waitedAvailable, 30.0);
  EXPECT_CONTAINS(available, "no free device of 1 IPUs among devices [0] after waiting 1 s");
  EXPECT_CONTAINS(available, "IPU 0 is " + me_);
  EXPECT_CONTAINS(log, "acquireDeviceById: device 0 (IPUs [0]): waiting up to 1 s");
  EXPECT_CONTAINS(log, "acquireDeviceById: device 0 (IPUs [0]): gave up after waiting");
  EXPECT_CONTAINS(log, "acquireAvailableDevice: a device of 1 IPUs among devices [0]: gave up");
  EXPECT_TRUE(holder->isAttached());
}

TEST_F(DeviceWait, TryAcquireNeverWaits) {
  auto holder = dm().acquireDeviceById(0);
  ::setenv("XTRAIN_WAIT_FOR_IPU", "60", 1);
  const auto start = Clock::now();
  EXPECT_EQ(dm().tryAcquireDeviceById(0), nullptr);
  ::setenv("XTRAIN_NUM_IPUS", "1", 1);
  EXPECT_EQ(dm().tryAcquireAvailableDevice(1), nullptr);
  EXPECT_LT(secondsSince(start), 30.0);  // it would take 120 s if they waited
}

TEST_F(DeviceWait, OnDemandAttachTimeoutIsInheritedAndRetried) {
  EXPECT_EQ(dm().getOnDemandAttachTimeout(), 0u);
  auto before = dm().enumerateDevices(SyncPattern::Full, 1, DeviceType::Ipu,
                                      DeviceConnectionType::OnDemand)[0];
  dm().setOnDemandAttachTimeout(60);
  EXPECT_EQ(dm().getOnDemandAttachTimeout(), 60u);
  auto listed = dm().enumerateDevices(SyncPattern::Full, 1, DeviceType::Ipu,
                                      DeviceConnectionType::OnDemand)[0];
  auto acquired = dm().acquireDeviceById(1, SyncPattern::Full, DeviceConnectionType::OnDemand);
  auto available =
      dm().acquireAvailableDevice(2, 0, SyncPattern::Full, DeviceConnectionType::OnDemand);
  EXPECT_EQ(before->getOnDemandAttachTimeout(), 0u);  // a device keeps the value it was made with
  EXPECT_EQ(listed->getOnDemandAttachTimeout(), 60u);
  EXPECT_EQ(acquired->getOnDemandAttachTimeout(), 60u);
  EXPECT_EQ(available->getOnDemandAttachTimeout(), 60u);

  auto holder = dm().acquireDeviceById(0);
  EXPECT_FALSE(before->tryAttachUntilTimeout());  // timeout 0: one try
  releaseSoon(holder);
  const auto start = Clock::now();
  EXPECT_TRUE(listed->tryAttachUntilTimeout());
  ASSERT_TRUE(released_.load());
  EXPECT_TRUE(listed->isAttached());
  EXPECT_LT(secondsSince(start), 30.0);
  EXPECT_TRUE(listed->tryAttachUntilTimeout());  // attached already

  const std::string tooLong = errorOf([&] { dm().setOnDemandAttachTimeout(2592001); });
  EXPECT_CONTAINS(tooLong, "setOnDemandAttachTimeout: 2592001 s is too long; at most 2592000");
  EXPECT_CONTAINS(errorOf([&] { listed->setOnDemandAttachTimeout(4000000000u); }), "too long");
  EXPECT_EQ(dm().getOnDemandAttachTimeout(), 60u);  // unchanged by the refused value
}

TEST_F(DeviceWait, TryAttachGivesUpAfterTheTimeout) {
  auto holder = dm().acquireDeviceById(0);
  auto device = dm().enumerateDevices()[0];
  device->setOnDemandAttachTimeout(1);
  ::testing::internal::CaptureStderr();
  auto start = Clock::now();
  EXPECT_FALSE(device->tryAttachUntilTimeout());
  const double waited = secondsSince(start);
  logging::flush();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_GE(waited, 1.0);
  EXPECT_LT(waited, 30.0);
  EXPECT_FALSE(device->isAttached());
  EXPECT_CONTAINS(
      log,
      "attaching device 0 (IPUs [0]): waiting up to 1 s (the attach timeout) for busy IPUs: "
      "IPU 0 is " +
          me_);
  EXPECT_CONTAINS(log, "attaching device 0 (IPUs [0]): gave up after waiting");

  // XTRAIN_WAIT_FOR_IPU lengthens a shorter attach timeout.
  device->setOnDemandAttachTimeout(0);
  ::setenv("XTRAIN_WAIT_FOR_IPU", "1", 1);
  ::testing::internal::CaptureStderr();
  start = Clock::now();
  EXPECT_FALSE(device->tryAttachUntilTimeout());
  EXPECT_GE(secondsSince(start), 1.0);
  logging::flush();
  EXPECT_CONTAINS(::testing::internal::GetCapturedStderr(),
                  "waiting up to 1 s (XTRAIN_WAIT_FOR_IPU) for busy IPUs");

  auto offline = dm().createOfflineIPUDevice();
  EXPECT_CONTAINS(errorOf([&] { offline->tryAttachUntilTimeout(); }), "offline");
}

}  // namespace
}  // namespace xtrain
