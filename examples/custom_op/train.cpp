// Trains a small regression model whose hidden layer is the custom op com.acme::LeakyCube, defined
// in the shared library leaky_cube (loaded here with dlopen, which registers the op).
//
// First it checks LeakyCube's gradient against central finite differences, with an inference
// session evaluating the loss at perturbed weights; then it trains with SGD and prints the loss
// falling. Exits 0 when both hold.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <vector>
#include <xtrain/builder.hpp>
#include <xtrain/customop.hpp>
#include <xtrain/devicemanager.hpp>
#include <xtrain/session.hpp>

using namespace xtrain;

namespace {

constexpr int64_t kBatch = 16, kIn = 4, kHidden = 8;

struct Model {
  std::string proto;
  TensorId x, target, loss, w1, w2;
};

// x [16,4] -> MatMul W1 -> LeakyCube(alpha 0.2) -> MatMul W2 -> mean squared error to target
// [16,1].
Model buildModel(const std::vector<float>& w1, const std::vector<float>& w2) {
  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  Model m;
  m.x = builder->addInputTensor(TensorInfo("FLOAT", {kBatch, kIn}), "x");
  m.target = builder->addInputTensor(TensorInfo("FLOAT", {kBatch, 1}), "target");
  m.w1 = builder->addInitializedInputTensor(ConstVoidData::fromVector<float>({kIn, kHidden}, w1),
                                            "W1");
  m.w2 =
      builder->addInitializedInputTensor(ConstVoidData::fromVector<float>({kHidden, 1}, w2), "W2");
  const OperatorIdentifier leakyCube("com.acme", "LeakyCube", 1);
  TensorId h = builder->customOp(leakyCube, 1, {onnx.matmul({m.x, m.w1})}, 1, {{"alpha", 0.2f}},
                                 "leaky_cube")[0];
  // The Builder infers through the custom op with the op's own shape function.
  if (builder->getTensorShape(h) != Shape{kBatch, kHidden}) throw error("unexpected shape");
  TensorId d = onnx.sub({onnx.matmul({h, m.w2}), m.target});
  m.loss = builder->aiGraphcoreOpset1().identityloss({onnx.mul({d, d})}, ReductionType::Mean);
  builder->addOutputTensor(m.loss);
  m.proto = builder->getModelProto();
  return m;
}

struct Data {
  std::vector<float> x, target;
};

// The loss of the model with these weights on `data` (an inference session).
float evaluate(const std::vector<float>& w1, const std::vector<float>& w2, const Data& data,
               std::shared_ptr<DeviceInfo> device) {
  Model m = buildModel(w1, w2);
  auto s = InferenceSession::createFromOnnxModel(
      m.proto, DataFlow(1, {{m.loss, AnchorReturnType("ALL")}}), device);
  s->prepareDevice();
  s->weightsFromHost();
  std::vector<float> x = data.x, t = data.target;
  float loss = 0;
  NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
  NDArrayWrapper<float> ta(t.data(), s->expectedInputBufferShape(m.target));
  NDArrayWrapper<float> la(&loss, s->expectedAnchorBufferShape(m.loss));
  StepIO io({{m.x, xa}, {m.target, ta}}, {{m.loss, la}});
  s->run(io);
  return loss;
}

}  // namespace

int main() {
  if (dlopen(LEAKY_CUBE_LIBRARY, RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::cerr << "cannot load " << LEAKY_CUBE_LIBRARY << ": " << dlerror() << "\n";
    return 1;
  }
  if (!isCustomOpRegistered("com.acme", "LeakyCube")) {
    std::cerr << "loading the library did not register com.acme::LeakyCube\n";
    return 1;
  }
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> w1(kIn * kHidden), w2(kHidden);
  for (auto& v : w1) v = 0.5f * normal(rng);
  for (auto& v : w2) v = 0.5f * normal(rng);
  auto draw = [&] {
    Data d;
    d.x.resize(kBatch * kIn);
    for (auto& v : d.x) v = normal(rng);
    for (int64_t i = 0; i < kBatch; ++i) {
      const float* x = &d.x[i * kIn];
      d.target.push_back(0.5f * x[0] * x[1] + x[2] - 0.5f * x[3]);
    }
    return d;
  };
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", "1"}});

  // 1. The gradient of the loss with respect to W1 (through LeakyCube and LeakyCubeGrad): one SGD
  //    step of learning rate lr moves W1 by -lr * gradient; compare with central differences.
  const Data probe = draw();
  const float lr = 1e-3f;
  Model m = buildModel(w1, w2);
  auto s = TrainingSession::createFromOnnxModel(
      m.proto, DataFlow(1, {{m.loss, AnchorReturnType("ALL")}}), m.loss, ConstSGD(lr), device);
  s->prepareDevice();
  s->weightsFromHost();
  {
    std::vector<float> x = probe.x, t = probe.target;
    float loss = 0;
    NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
    NDArrayWrapper<float> ta(t.data(), s->expectedInputBufferShape(m.target));
    NDArrayWrapper<float> la(&loss, s->expectedAnchorBufferShape(m.loss));
    StepIO io({{m.x, xa}, {m.target, ta}}, {{m.loss, la}});
    s->run(io);
  }
  s->weightsToHost();
  std::vector<float> stepped(w1.size());
  WeightsIO wio;
  wio.insert(m.w1, {stepped.data(), TensorInfo("FLOAT", {kIn, kHidden})});
  s->readWeights(wio);
  s.reset();  // the device serves one session at a time
  double worst = 0;
  for (size_t i = 0; i < w1.size(); ++i) {
    const float eps = 1e-2f;
    std::vector<float> plus = w1, minus = w1;
    plus[i] += eps;
    minus[i] -= eps;
    const double numeric =
        (evaluate(plus, w2, probe, device) - evaluate(minus, w2, probe, device)) / (2.0 * eps);
    const double analytic = (w1[i] - stepped[i]) / lr;
    worst = std::max(worst, std::fabs(numeric - analytic) / (1e-2 + std::fabs(numeric)));
  }
  std::cout << "LeakyCube gradient vs finite differences: worst relative error " << worst << "\n";
  if (!(worst < 5e-2)) return 1;

  // 2. Training.
  s = TrainingSession::createFromOnnxModel(
      m.proto, DataFlow(1, {{m.loss, AnchorReturnType("ALL")}}), m.loss, ConstSGD(0.005f), device);
  s->prepareDevice();
  s->weightsFromHost();
  float first = 0, last = 0;
  const int steps = 300;
  for (int step = 0; step < steps; ++step) {
    Data d = draw();
    float loss = 0;
    NDArrayWrapper<float> xa(d.x.data(), s->expectedInputBufferShape(m.x));
    NDArrayWrapper<float> ta(d.target.data(), s->expectedInputBufferShape(m.target));
    NDArrayWrapper<float> la(&loss, s->expectedAnchorBufferShape(m.loss));
    StepIO io({{m.x, xa}, {m.target, ta}}, {{m.loss, la}});
    s->run(io);
    if (step < 20) first += loss / 20;
    if (step >= steps - 20) last += loss / 20;
    if (step % 50 == 0) std::cout << "step " << step << " loss " << loss << "\n";
  }
  std::cout << "mean loss of the first 20 steps " << first << " -> last 20 steps " << last << "\n";
  return std::isfinite(last) && last < 0.5f * first ? 0 : 1;
}
