// A PopART-style C++ training script: build an MLP with the Builder, train it with SGD on a simulated IPU,
// read the trained weights back and save the model. Port a PopART script by changing the namespace.
#include <cmath>
#include <iostream>
#include <random>
#include <vector>

#include <xtrain/builder.hpp>
#include <xtrain/devicemanager.hpp>
#include <xtrain/session.hpp>

int main(int argc, char** argv) {
  using namespace xtrain;
  const int64_t batch = 16, features = 8, classes = 3, steps = 60;

  // The model: x -> MatMul + bias -> Relu -> MatMul + bias -> softmax cross-entropy.
  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> init(-0.3f, 0.3f);
  auto weight = [&](Shape shape, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(shapeNelms(shape)));
    for (auto& e : v) e = init(rng);
    return builder->addInitializedInputTensor(ConstVoidData::fromVector<float>(shape, v), name);
  };
  TensorId x = builder->addInputTensor(TensorInfo("FLOAT", {batch, features}), "x");
  TensorId labels = builder->addInputTensor(TensorInfo("INT32", {batch}), "labels");
  TensorId h = onnx.relu({onnx.add({onnx.matmul({x, weight({features, 16}, "W1")}), weight({16}, "b1")})});
  TensorId logits = onnx.add({onnx.matmul({h, weight({16, classes}, "W2")}), weight({classes}, "b2")});
  TensorId loss = onnx.softmaxcrossentropyloss({logits, labels}, 1, std::nullopt, "mean", "loss")[0];
  builder->addOutputTensor(loss);

  // Session: one simulated IPU, SGD with momentum.
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "1"}});
  auto session = TrainingSession::createFromOnnxModel(
      builder->getModelProto(), DataFlow(1, {{loss, AnchorReturnType("ALL")}}), loss,
      SGD({{"defaultLearningRate", {0.1f, false}}, {"defaultMomentum", {0.9f, true}}}), device);
  session->prepareDevice();
  session->weightsFromHost();

  // Data: the class is the index of the largest of the first three features.
  std::normal_distribution<float> normal;
  std::vector<float> xs(batch * features);
  std::vector<int32_t> ys(batch);
  float lossValue = 0, first = 0;
  NDArrayWrapper<float> xa(xs.data(), {batch, features});
  NDArrayWrapper<int32_t> ya(ys.data(), {batch});
  NDArrayWrapper<float> la(&lossValue, Shape{});
  StepIO stepio({{x, xa}, {labels, ya}}, {{loss, la}});
  for (int64_t step = 0; step < steps; ++step) {
    for (int64_t i = 0; i < batch; ++i) {
      for (int64_t f = 0; f < features; ++f) xs[i * features + f] = normal(rng);
      ys[i] = static_cast<int32_t>(std::max_element(&xs[i * features], &xs[i * features] + classes) -
                                   &xs[i * features]);
    }
    session->run(stepio);
    if (step == 0) first = lossValue;
    if (step % 10 == 0 || step + 1 == steps) std::cout << "step " << step << " loss " << lossValue << "\n";
  }
  if (argc > 1) session->modelToHost(argv[1]);
  std::cout << "loss " << first << " -> " << lossValue << "\n";
  return std::isfinite(lossValue) && lossValue < first ? 0 : 1;
}
