// DeviceConnectionType::OnDemand in a session: prepareDevice compiles (lowers, plans and checks
// memory) before it attaches, so a model that does not fit never held the IPUs, and the attach
// retries for the attach timeout. Another DeviceInfo of this process holds the IPUs while the
// session compiles: the locks are per open file, so an attach before compiling would fail (or, with
// the holder gone, leave the IPUs taken), and each test would see it.
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

#include "testing/error_testing.hpp"
#include "testing/private_ipu_pool.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

// y = x @ W with W of 6 x cols floats: cols 40000 is 960,000 bytes, more than an IPU of one tile
// (624 KiB) holds; cols 8 fits anywhere.
std::string linearModel(int64_t cols) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {1, 6}), "x");
  const std::vector<float> w(static_cast<size_t>(6 * cols), 0.5f);
  const TensorId weight =
      b->addInitializedInputTensor(ConstVoidData::fromVector<float>({6, cols}, w), "W");
  b->addOutputTensor(onnx.matmul({x, weight}, "y"));
  return b->getModelProto();
}

std::unique_ptr<InferenceSession> sessionOn(std::shared_ptr<DeviceInfo> device, int64_t cols) {
  // (An inference session needs an anchor that an op computes, as PopART's does.)
  return InferenceSession::createFromOnnxModel(
      linearModel(cols), DataFlow(1, std::vector<TensorId>{"y:0"}), std::move(device));
}

// A private pool of 8 IPUs (testing/private_ipu_pool.hpp).
class OnDemandAttach : public PrivateIpuPoolTest {
 protected:
  void TearDown() override {
    if (releaser_.joinable()) releaser_.join();
    PrivateIpuPoolTest::TearDown();
  }

  const std::string me_ = "held by process " + std::to_string(::getpid());
  std::thread releaser_;
};

// The message of the exception prepareDevice throws, prefixed with its kind.
std::string prepareFailure(Session& s) {
  try {
    s.prepareDevice();
  } catch (const OutOfMemoryException& e) {
    return std::string("OutOfMemoryException: ") + e.what();
  } catch (const runtime_error& e) {
    return std::string("runtime_error: ") + e.what();
  } catch (const error& e) {
    return std::string("error: ") + e.what();
  }
  return "no exception";
}

TEST_F(OnDemandAttach, ModelThatDoesNotFitNeverTakesTheIpus) {
  auto device =
      dm().acquireAvailableDevice(1, 1, SyncPattern::Full, DeviceConnectionType::OnDemand);
  ASSERT_EQ(device->getId(), 0);
  ASSERT_FALSE(device->isAttached());
  // Held elsewhere while the session compiles: attaching first would fail with "busy".
  auto holder = dm().acquireDeviceById(0);
  auto s = sessionOn(device, 40000);
  const std::string whileHeld = prepareFailure(*s);
  EXPECT_EQ(whileHeld.rfind("OutOfMemoryException: ", 0), 0u) << whileHeld;
  EXPECT_FALSE(device->isAttached());
  EXPECT_TRUE(holder->isAttached());

  // Free: attaching first would succeed and leave the IPU taken after the failed compile.
  holder->detach();
  auto again = sessionOn(device, 40000);
  const std::string whileFree = prepareFailure(*again);
  EXPECT_EQ(whileFree.rfind("OutOfMemoryException: ", 0), 0u) << whileFree;
  EXPECT_FALSE(device->isAttached());
  EXPECT_TRUE(dm().tryAcquireDeviceById(0)) << "the failed compile left IPU 0 taken";
}

TEST_F(OnDemandAttach, AttachesAfterCompiling) {
  auto device = dm().acquireDeviceById(2, SyncPattern::Full, DeviceConnectionType::OnDemand);
  auto s = sessionOn(device, 8);
  EXPECT_FALSE(device->isAttached());
  s->prepareDevice();
  EXPECT_TRUE(device->isAttached());
  EXPECT_EQ(dm().tryAcquireDeviceById(2), nullptr);
}

TEST_F(OnDemandAttach, WaitsForTheAttachTimeout) {
  dm().setOnDemandAttachTimeout(60);
  auto device = dm().acquireDeviceById(2, SyncPattern::Full, DeviceConnectionType::OnDemand);
  auto holder = dm().acquireDeviceById(2);
  auto s = sessionOn(device, 8);
  std::atomic<bool> released{false};
  releaser_ = std::thread([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    released = true;  // before the detach, so the attach that follows it sees it
    holder->detach();
  });
  const auto start = std::chrono::steady_clock::now();
  s->prepareDevice();
  EXPECT_TRUE(released.load());
  EXPECT_TRUE(device->isAttached());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST_F(OnDemandAttach, BusyDeviceIsARuntimeErrorNamingTheHolder) {
  auto device = dm().acquireDeviceById(2, SyncPattern::Full, DeviceConnectionType::OnDemand);
  auto holder = dm().acquireDeviceById(2);
  auto s = sessionOn(device, 8);
  const std::string onDemand = prepareFailure(*s);
  EXPECT_CONTAINS(onDemand, "runtime_error: failed to attach to device 2");
  EXPECT_CONTAINS(onDemand, "IPU 2 is " + me_);
  EXPECT_CONTAINS(onDemand, "waited 0 s");
  EXPECT_FALSE(device->isAttached());
  // The failed prepareDevice can be retried once the device is free.
  holder->detach();
  s->prepareDevice();
  EXPECT_TRUE(device->isAttached());

  // An Always device the caller detached is attached again before compiling.
  auto always = dm().acquireDeviceById(3);
  always->detach();
  auto other = dm().acquireDeviceById(3);
  auto t = sessionOn(always, 8);
  const std::string busy = prepareFailure(*t);
  EXPECT_CONTAINS(busy, "runtime_error: cannot attach to device 3: IPU 3 is " + me_);
  other->detach();
  t->prepareDevice();
  EXPECT_TRUE(always->isAttached());
}

}  // namespace
}  // namespace xtrain::testing
