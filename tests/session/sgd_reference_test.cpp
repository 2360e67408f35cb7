// Training correctness against independent numbers: 5 steps of SGD with momentum and weight decay on a small
// MLP and a small CNN, compared with PyTorch (tests/data/make_sgd_reference.py, committed output).
#include <gtest/gtest.h>

#include "testing/op_testing.hpp"
#include "testing/reference_data.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

ConstVoidData valueOf(const HostTensor& t) {
  std::vector<float> v(t.span<float>().begin(), t.span<float>().end());
  return ConstVoidData::fromVector<float>(t.shape(), v);
}

struct Model {
  std::string proto;
  TensorId x, labels, loss;
};

Model buildMlp(const ReferenceData& ref) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  Model m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, ref.at("x/step0").shape()), "x");
  m.labels = b->addInputTensor(TensorInfo(DataType::INT64, ref.at("labels/step0").shape()), "labels");
  auto w1 = b->addInitializedInputTensor(valueOf(ref.at("W1")), "W1");
  auto b1 = b->addInitializedInputTensor(valueOf(ref.at("b1")), "b1");
  auto w2 = b->addInitializedInputTensor(valueOf(ref.at("W2")), "W2");
  auto b2 = b->addInitializedInputTensor(valueOf(ref.at("b2")), "b2");
  auto h = onnx.relu({onnx.add({onnx.matmul({m.x, w1}), b1})});
  auto logits = onnx.add({onnx.matmul({h, w2}), b2});
  m.loss = onnx.softmaxcrossentropyloss({logits, m.labels}, 1, std::nullopt, "mean")[0];
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

Model buildCnn(const ReferenceData& ref) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  Model m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, ref.at("x/step0").shape()), "x");
  m.labels = b->addInputTensor(TensorInfo(DataType::INT64, ref.at("labels/step0").shape()), "labels");
  auto wc = b->addInitializedInputTensor(valueOf(ref.at("Wc")), "Wc");
  auto bc = b->addInitializedInputTensor(valueOf(ref.at("bc")), "bc");
  auto w3 = b->addInitializedInputTensor(valueOf(ref.at("W3")), "W3");
  auto b3 = b->addInitializedInputTensor(valueOf(ref.at("b3")), "b3");
  auto c = onnx.relu({onnx.conv({m.x, wc, bc}, {1, 1}, 1, {3, 3}, {1, 1, 1, 1}, {1, 1})});
  auto p = onnx.maxpool({c}, 1, {2, 2}, 0, {}, {}, 0, {2, 2})[0];
  auto logits = onnx.add({onnx.matmul({onnx.flatten({p}, 1), w3}), b3});
  m.loss = onnx.softmaxcrossentropyloss({logits, m.labels}, 1, std::nullopt, "mean")[0];
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

void trainAndCompare(const std::string& file, Model (*build)(const ReferenceData&),
                     const std::vector<std::string>& weights) {
  const ReferenceData ref = loadReferenceData(std::string(XTRAIN_TEST_DATA_DIR) + "/" + file);
  const Model m = build(ref);
  const float lr = std::stof(ref.hyper.at("lr"));
  const float momentum = std::stof(ref.hyper.at("momentum"));
  const float wd = std::stof(ref.hyper.at("weight_decay"));
  const int steps = std::stoi(ref.hyper.at("steps"));
  ConstSGD sgd(lr, wd, momentum);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto session = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1, {{m.loss, AnchorReturnType("ALL")}}),
                                                      m.loss, sgd, device);
  session->prepareDevice();
  session->weightsFromHost();
  for (int s = 0; s < steps; ++s) {
    HostTensor x = ref.at("x/step" + std::to_string(s));
    HostTensor labels = ref.at("labels/step" + std::to_string(s));
    NDArrayWrapper<float> xa(x.data<float>(), x.shape());
    NDArrayWrapper<int64_t> la(labels.data<int64_t>(), labels.shape());
    float loss = 0;
    NDArrayWrapper<float> lossa(&loss, Shape{});
    StepIO io({{m.x, xa}, {m.labels, la}}, {{m.loss, lossa}});
    session->run(io);
    EXPECT_NEAR(loss, ref.at("loss/step" + std::to_string(s)).data<float>()[0], 1e-5)
        << "loss at step " << s;
  }
  session->weightsToHost();
  for (const auto& w : weights) {
    const HostTensor& want = ref.at("final/" + w);
    const HostTensor& wantV = ref.at("velocity/" + w);
    HostTensor got(want.info()), gotV(wantV.info());
    WeightsIO io;
    io.insert(w, {got.raw(), got.info()});
    io.insert("Accl___" + w, {gotV.raw(), gotV.info()});
    session->readWeights(io);
    EXPECT_TRUE(allClose(got, want, 1e-5, 1e-6)) << "weight " << w;
    EXPECT_TRUE(allClose(gotV, wantV, 1e-5, 1e-6)) << "velocity of " << w;
  }
}

TEST(SgdReference, MlpMatchesPyTorchAfterFiveMomentumSteps) {
  trainAndCompare("sgd_reference_mlp.txt", buildMlp, {"W1", "b1", "W2", "b2"});
}

TEST(SgdReference, CnnMatchesPyTorchAfterFiveMomentumSteps) {
  trainAndCompare("sgd_reference_cnn.txt", buildCnn, {"Wc", "bc", "W3", "b3"});
}

}  // namespace
}  // namespace xtrain::testing
