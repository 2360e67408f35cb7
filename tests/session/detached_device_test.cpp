// A session whose device was detached (DeviceInfo::detach()) no longer holds its IPUs, so it must
// not use them: another session may have taken them (issue 27: two holders of one IPU, both
// running). Every call that touches the device throws runtime_error saying so; an Always device
// is usable again once the caller attaches it, an OnDemand one is attached again when needed, and
// a session attached again goes on where it stopped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "testing/error_testing.hpp"
#include "testing/private_ipu_pool.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"
#include "xtrain/optimizer.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

const ConstSGD kSgd(0.1f, 0.01f, 0.9f);

// The message of the runtime_error fn throws; a test failure (and "") for anything else.
std::string runtimeErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const runtime_error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected an xtrain::runtime_error, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected an xtrain::runtime_error: the session used a detached device";
  return {};
}

void trainSteps(TrainingSession& s, const MlpModel& m, int64_t first, int64_t steps) {
  trainMlpSteps(s, m, 1, 0, 1, first, steps);
}

class DetachedDevice : public PrivateIpuPoolTest {
 protected:
  const std::string me_ = "held by process " + std::to_string(::getpid());
};

TEST_F(DetachedDevice, AnAlwaysDeviceMustBeAttachedAgainBeforeTheSessionUsesIt) {
  const MlpModel m = buildMlpModel();
  auto device = dm().acquireDeviceById(0);
  auto s = makeMlpSession(m, {}, kSgd, device);
  trainSteps(*s, m, 0, 2);
  s->saveCheckpoint(path("step-2"));
  device->detach();

  struct Call {
    const char* name;
    std::function<void()> fn;
  };
  const std::vector<Call> calls = {
      {"run", [&] { trainSteps(*s, m, 2, 1); }},
      {"weightsFromHost", [&] { s->weightsFromHost(); }},
      {"weightsToHost", [&] { s->weightsToHost(); }},
      {"modelToHost", [&] { s->modelToHost(path("model.onnx")); }},
      {"broadcastWeights", [&] { s->broadcastWeights(0); }},
      {"updateOptimizerFromHost", [&] { s->updateOptimizerFromHost(&kSgd); }},
      {"saveCheckpoint", [&] { s->saveCheckpoint(path("while-detached")); }},
      {"loadCheckpoint", [&] { s->loadCheckpoint(path("step-2")); }},
      {"loadLatestCheckpoint", [&] { s->loadLatestCheckpoint(dir_.string()); }},
  };
  for (const Call& c : calls) {
    const std::string what = runtimeErrorOf(c.fn);
    EXPECT_CONTAINS(what, std::string(c.name) + ": device 0 is detached");
    EXPECT_CONTAINS(what, "call attach() on the device");
  }
  EXPECT_FALSE(std::filesystem::exists(path("model.onnx")));
  EXPECT_FALSE(std::filesystem::exists(path("while-detached")));

  // The IPU is free: another session takes it and trains. The first cannot attach meanwhile, and
  // its error names the holder.
  auto other = dm().acquireDeviceById(0);
  auto t = makeMlpSession(m, {}, kSgd, other);
  trainSteps(*t, m, 0, 1);
  EXPECT_FALSE(device->attach());
  EXPECT_CONTAINS(runtimeErrorOf([&] { trainSteps(*s, m, 2, 1); }), "IPU 0 is " + me_);

  // Attached again once the other has let go, the session goes on from its step 2 as if it had
  // never been detached.
  other->detach();
  ASSERT_TRUE(device->attach());
  trainSteps(*s, m, 2, 2);
  auto straight = makeMlpSession(m, {}, kSgd, dm().acquireDeviceById(2));
  trainSteps(*straight, m, 0, 4);
  EXPECT_EQ(readTensors(*s, mlpWeightsAndVelocities()),
            readTensors(*straight, mlpWeightsAndVelocities()));
}

TEST_F(DetachedDevice, AnOnDemandDeviceIsAttachedAgainWhenTheSessionNeedsIt) {
  const MlpModel m = buildMlpModel();
  auto device = dm().acquireDeviceById(1, SyncPattern::Full, DeviceConnectionType::OnDemand);
  auto s = makeMlpSession(m, {}, kSgd, device);
  ASSERT_TRUE(device->isAttached());
  device->detach();

  auto holder = dm().acquireDeviceById(1);
  const std::string busy = runtimeErrorOf([&] { trainSteps(*s, m, 0, 1); });
  EXPECT_CONTAINS(busy,
                  "run: device 1 (DeviceConnectionType::OnDemand) was detached and could not be "
                  "attached again: IPU 1 is " +
                      me_);
  EXPECT_CONTAINS(busy, "waited 0 s");
  EXPECT_FALSE(device->isAttached());

  holder->detach();
  trainSteps(*s, m, 0, 1);
  EXPECT_TRUE(device->isAttached());
  EXPECT_EQ(dm().tryAcquireDeviceById(1), nullptr) << "the session runs without holding IPU 1";
}

TEST_F(DetachedDevice, AnIpuModelDeviceDetachedDoesNotRunUntilAttached) {
  const MlpModel m = buildMlpModel();
  auto device = dm().createIpuModelDevice({{"numIPUs", "1"}});
  auto s = makeMlpSession(m, {}, kSgd, device);
  device->detach();
  EXPECT_CONTAINS(runtimeErrorOf([&] { trainSteps(*s, m, 0, 1); }),
                  "run: device 0 is detached (DeviceInfo::detach() was called");
  ASSERT_TRUE(device->attach());
  trainSteps(*s, m, 0, 1);
}

}  // namespace
}  // namespace xtrain::testing
