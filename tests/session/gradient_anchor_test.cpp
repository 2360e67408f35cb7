// Anchors of gradients (Gradient___<t>, PopART's reservedGradientPrefix()): d(loss)/dt of a weight,
// an activation and an input, per micro-batch, against the analytic gradients of
// loss = sum(x W), and what sessions refuse.
#include <gtest/gtest.h>

#include "testing/error_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

struct Model {
  std::string proto;
  TensorId x, y, loss;
};

const std::vector<float> kW = {1, 2, 3, 4, 5, 6};  // [3, 2]

// x [2, 3] -> y = x W [2, 2] -> loss = sum(y); an unused input `other`.
Model buildModel() {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  Model m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2, 3}), "x");
  const TensorId w =
      b->addInitializedInputTensor(ConstVoidData::fromVector<float>({3, 2}, kW), "W");
  m.y = onnx.matmul({m.x, w}, "y");
  m.loss = onnx.reducesum({m.y}, {}, 0);
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

std::map<TensorId, std::vector<float>> trainOnce(const Model& m,
                                                 const std::vector<TensorId>& anchors,
                                                 const std::vector<float>& x) {
  auto device = DeviceManager::createDeviceManager().createCpuDevice();
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1, anchors), m.loss,
                                                ConstSGD(0.1f), device);
  s->prepareDevice();
  s->weightsFromHost();
  auto arrays = s->initAnchorArrays();
  std::vector<float> in = x;
  NDArrayWrapper<float> xArray(in.data(), {2, 3});
  std::map<TensorId, IArray&> inputs{{m.x, xArray}}, outputs;
  for (auto& [id, a] : arrays) outputs.emplace(id, *a);
  StepIO io(inputs, outputs);
  s->run(io);
  std::map<TensorId, std::vector<float>> out;
  for (auto& [id, a] : arrays) {
    const auto* p = static_cast<const float*>(a->data());
    out[id] = std::vector<float>(p, p + a->nelms());
  }
  return out;
}

TEST(GradientAnchors, WeightActivationAndInputMatchTheAnalyticGradients) {
  const Model m = buildModel();
  const std::string g = reservedGradientPrefix();
  const std::vector<float> x = {1, -1, 2, 0, 3, -2};
  auto out = trainOnce(m, {g + "W", g + m.y, g + m.x}, x);
  // dL/dy = ones; dL/dW[i][j] = sum_r x[r][i]; dL/dx[r][i] = sum_j W[i][j].
  EXPECT_EQ(out.at(g + m.y), std::vector<float>(4, 1.0f));
  EXPECT_EQ(out.at(g + "W"), (std::vector<float>{1, 1, 2, 2, 0, 0}));
  EXPECT_EQ(out.at(g + m.x), (std::vector<float>{3, 7, 11, 3, 7, 11}));
}

TEST(GradientAnchors, WhatSessionsRefuse) {
  const Model m = buildModel();
  const std::string g = reservedGradientPrefix();
  EXPECT_CONTAINS(errorOf([&] { trainOnce(m, {g + "nope"}, std::vector<float>(6)); }),
                  "anchor 'Gradient___nope' is the gradient of 'nope', which is not a tensor");
  auto device = DeviceManager::createDeviceManager().createCpuDevice();
  EXPECT_CONTAINS(errorOf([&] {
                    InferenceSession::createFromOnnxModel(m.proto, DataFlow(1, {g + "W"}), device);
                  }),
                  "only a TrainingSession computes");
}

}  // namespace
}  // namespace xtrain::testing
