// What a training session refuses at creation or preparation, with the culprit named: a loss that
// is not in the model, not a scalar, or that no weight reaches (each once trained silently or was
// blamed on something else), and a batch too large for an IPU (once a SIGFPE inside oneDNN).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "testing/error_testing.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/devicemanager.hpp"

namespace xtrain::testing {
namespace {

struct LinearModel {
  std::string proto;
  TensorId x, logits, inputOnlyLoss, loss;
};

// x [batch, 4] -> logits = x W [batch, 2]; loss = mean(logits); inputOnlyLoss = mean(x).
LinearModel buildLinearModel(int64_t batch) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  LinearModel m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {batch, 4}), "x");
  auto w = b->addInitializedInputTensor(
      ConstVoidData::fromVector<float>({4, 2}, std::vector<float>(8, 0.5f)), "W");
  m.logits = onnx.matmul({m.x, w}, "logits");
  m.loss = onnx.reducemean({m.logits}, {}, 0, "loss");
  m.inputOnlyLoss = onnx.reducemean({m.x}, {}, 0, "inputLoss");
  b->addOutputTensor(m.loss);
  b->addOutputTensor(m.inputOnlyLoss);
  m.proto = b->getModelProto();
  return m;
}

std::unique_ptr<TrainingSession> sessionFor(const LinearModel& m, const TensorId& loss,
                                            const SessionOptions& options = {},
                                            std::map<std::string, std::string> deviceOptions = {
                                                {"numIPUs", "1"}}) {
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(deviceOptions);
  return TrainingSession::createFromOnnxModel(m.proto, DataFlow(1, std::vector<TensorId>{loss}),
                                              loss, SGD(), device, {}, options);
}

TEST(LossChecks, AMissingLossIsNamedAsTheLoss) {
  // The DataFlow anchors it too; the message must be about the loss, not the anchor.
  const std::string msg = errorOf([] { sessionFor(buildLinearModel(2), "nosuch"); });
  EXPECT_CONTAINS(msg, "the loss 'nosuch' is not a tensor of the model");
}

TEST(LossChecks, ANonScalarLossIsRefusedWithItsShape) {
  const LinearModel m = buildLinearModel(2);
  const std::string msg = errorOf([&] { sessionFor(m, m.logits); });
  EXPECT_CONTAINS(msg, "must be a scalar");
  EXPECT_CONTAINS(msg, "FLOAT[2,2]");
}

// As PopART's: a session whose loss no weight reaches runs, trains nothing (a warning says so);
// xtrain's trainer refuses it (tests/tools/xtrain_hardening_test.cpp).
TEST(LossChecks, ALossNoWeightReachesTrainsNothing) {
  const LinearModel m = buildLinearModel(2);
  EXPECT_TRUE(sessionFor(m, m.inputOnlyLoss)->getTrainedWeightIds().empty());
  EXPECT_FALSE(sessionFor(m, m.loss)->getTrainedWeightIds().empty());
}

TEST(SizeChecks, ABatchTooLargeForAnIpuIsOutOfMemoryBeforeAnyKernelIsMade) {
  // 2^32 samples x 4 features: 64 GiB of input. oneDNN once faulted (SIGFPE) making the MatMul
  // primitive for such dimensions, before the memory check ran.
  const LinearModel m = buildLinearModel(int64_t{1} << 32);
  auto session = sessionFor(m, m.loss);
  EXPECT_THROW(session->prepareDevice(), OutOfMemoryException);
}

// engineOptions debug.allowOutOfMemory: an IPU too small for the model is prepared and trains (as
// Poplar compiles it anyway) where it was OutOfMemoryException; but not past what the host holds.
TEST(SizeChecks, AllowOutOfMemoryRunsAnOverflowingIpuButNotAnImpossibleHost) {
  const LinearModel m = buildLinearModel(64);
  const std::map<std::string, std::string> tiny = {
      {"numIPUs", "1"}, {"tilesPerIPU", "1"}, {"memoryPerTile", "1024"}};
  EXPECT_THROW(sessionFor(m, m.loss, {}, tiny)->prepareDevice(), OutOfMemoryException);
  SessionOptions allow;
  allow.engineOptions = {{"debug.allowOutOfMemory", "true"}};
  auto s = sessionFor(m, m.loss, allow, tiny);
  s->prepareDevice();
  EXPECT_NE(s->getSummaryReport().find("OUT OF MEMORY"), std::string::npos)
      << s->getSummaryReport();
  s->weightsFromHost();
  std::vector<float> x(64 * 4, 1.0f), loss(1, 0.0f);
  NDArrayWrapper<float> xa(x.data(), {64, 4});
  NDArrayWrapper<float> la(loss.data(), Shape{});
  StepIO io({{m.x, xa}}, {{m.loss, la}});
  s->run(io);
  EXPECT_FLOAT_EQ(loss[0], 2.0f);  // mean of x W: every logit is 4 x 1 x 0.5
  const LinearModel huge = buildLinearModel(int64_t{1} << 32);
  EXPECT_THROW(sessionFor(huge, huge.loss, allow)->prepareDevice(), OutOfMemoryException);
  allow.engineOptions = {{"debug.allowOutOfMemory", "maybe"}};
  EXPECT_THROW(sessionFor(m, m.loss, allow), error);
}

}  // namespace
}  // namespace xtrain::testing
