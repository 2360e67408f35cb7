#include "testing/training_testing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "session/model_io.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::testing {

MlpModel buildMlpModel(int64_t batch, int64_t in, int64_t hidden, int64_t out, unsigned seed,
                       const std::string& activation) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto weight = [&](Shape s, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(shapeNelms(s)));
    for (auto& e : v) e = u(rng);
    return b->addInitializedInputTensor(ConstVoidData::fromVector<float>(s, v), name);
  };
  MlpModel m;
  m.batch = batch;
  m.in = in;
  m.hidden = hidden;
  m.out = out;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {batch, in}), "x");
  m.labels = b->addInputTensor(TensorInfo(DataType::INT32, {batch}), "labels");
  auto pre = onnx.add({onnx.matmul({m.x, weight({in, hidden}, "W1")}), weight({hidden}, "b1")});
  auto h = activation == "Sigmoid" ? onnx.sigmoid({pre}) : onnx.relu({pre});
  auto logits = onnx.add({onnx.matmul({h, weight({hidden, out}, "W2")}), weight({out}, "b2")});
  m.loss = onnx.softmaxcrossentropyloss({logits, m.labels}, 1, std::nullopt, "mean")[0];
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

std::unique_ptr<TrainingSession> makeMlpSession(const MlpModel& m, const SessionOptions& options,
                                                const Optimizer& optimizer,
                                                std::shared_ptr<DeviceInfo> device) {
  if (!device) {
    device = DeviceManager::createDeviceManager().createIpuModelDevice(
        {{"numIPUs", std::to_string(options.getLocalReplicationFactor())}});
  }
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, optimizer, device, {},
                                                options);
  s->prepareDevice();
  s->weightsFromHost();
  return s;
}

void trainMlpSteps(TrainingSession& s, const MlpModel& m, int64_t globalReplicas,
                   int64_t replicaOffset, int64_t af, int64_t firstStep, int64_t steps) {
  const int64_t L = s.getSessionOptions().getLocalReplicationFactor();
  const int64_t sample = m.batch * m.in;
  for (int64_t step = firstStep; step < firstStep + steps; ++step) {
    std::mt19937 rng(static_cast<unsigned>(1000 + step));
    std::normal_distribution<float> normal;
    // [af, G, batch, in] for the whole job; this instance keeps its replicas.
    std::vector<float> x(static_cast<size_t>(af * globalReplicas * sample));
    std::vector<int32_t> y(static_cast<size_t>(af * globalReplicas * m.batch));
    for (auto& v : x) v = normal(rng);
    for (auto& v : y) v = static_cast<int32_t>(rng() % static_cast<unsigned>(m.out));
    std::vector<float> xs;
    std::vector<int32_t> ys;
    for (int64_t a = 0; a < af; ++a) {
      const auto xb = x.begin() + (a * globalReplicas + replicaOffset) * sample;
      xs.insert(xs.end(), xb, xb + L * sample);
      const auto yb = y.begin() + (a * globalReplicas + replicaOffset) * m.batch;
      ys.insert(ys.end(), yb, yb + L * m.batch);
    }
    NDArrayWrapper<float> xa(xs.data(), s.expectedInputBufferShape(m.x));
    NDArrayWrapper<int32_t> ya(ys.data(), s.expectedInputBufferShape(m.labels));
    StepIO io({{m.x, xa}, {m.labels, ya}}, {});
    s.run(io);
  }
}

std::vector<float> readTensors(TrainingSession& s, const std::vector<TensorId>& ids) {
  s.weightsToHost();
  std::vector<float> all;
  for (const auto& id : ids) {
    // Sharded optimizer state (Accl___W, Accl1___W, ...) is whole on the host: its weight's shape.
    // Adam's step count (Step___W) is a scalar, never sharded.
    const auto sep = id.find("___");
    const bool perElement = sep != std::string::npos && id.rfind("Step___", 0) != 0;
    const std::string weight = perElement ? id.substr(sep + 3) : id;
    // In the tensor's own type (FLOAT, or FLOAT16 read as float).
    HostTensor host(TensorInfo(s.getInfo(id).dataType(), s.getInfo(weight).shape()));
    WeightsIO io;
    io.insert(id, {host.raw(), host.info()});
    s.readWeights(io);
    for (int64_t i = 0; i < host.nelms(); ++i) {
      all.push_back(static_cast<float>(host.getAsDouble(i)));
    }
  }
  return all;
}

void expectSameInitializers(const std::string& a, const std::string& b, double tolerance) {
  const auto wa = session::readInitializers(a);
  const auto wb = session::readInitializers(b);
  ASSERT_EQ(wa.size(), wb.size()) << a << " vs " << b;
  for (const auto& [id, ta] : wa) {
    ASSERT_TRUE(wb.count(id)) << id << " is missing from " << b;
    const HostTensor& tb = wb.at(id);
    ASSERT_EQ(ta.info(), tb.info()) << id;
    if (tolerance == 0) {
      EXPECT_EQ(std::memcmp(ta.raw(), tb.raw(), ta.nbytes()), 0) << id << ": " << a << " vs " << b;
      continue;
    }
    double worst = 0;
    for (int64_t i = 0; i < ta.nelms(); ++i) {
      const double x = ta.getAsDouble(i), y = tb.getAsDouble(i);
      worst = std::max(worst, std::abs(x - y) / std::max(1.0, std::abs(x)));
    }
    EXPECT_LE(worst, tolerance) << id << ": " << a << " vs " << b;
  }
}

std::vector<TensorId> mlpWeightsAndVelocities() {
  return {"W1", "b1", "W2", "b2", "Accl___W1", "Accl___b1", "Accl___W2", "Accl___b2"};
}

CommandResult runTestsUnderXrun(const std::string& layout, const std::string& testBinary,
                                const std::string& filter, const std::string& env) {
  return runCommand(env + " ./xrun " + layout + " ./" + testBinary + " --gtest_filter=" + filter);
}

}  // namespace xtrain::testing
