// The DataFlow / anchor / StepIO vectors of docs/replication-semantics.md section 6, and
// buffer-shape errors.
#include <gtest/gtest.h>

#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

// x (scalar input) -> four Identity outputs, one per return type; for training also a weight and a
// loss.
struct IdentityModel {
  std::string proto;
  TensorId x, all, everyN, final, sum, loss;
};

IdentityModel buildIdentityModel(bool training) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  IdentityModel m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {}), "x");
  m.all = onnx.identity({m.x}, "all");
  m.everyN = onnx.identity({m.x}, "everyN");
  m.final = onnx.identity({m.x}, "final");
  m.sum = onnx.identity({m.x}, "sum");
  for (const auto& id : {m.all, m.everyN, m.final, m.sum}) b->addOutputTensor(id);
  if (training) {
    auto w = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({}, {1.0f}), "w");
    m.loss = b->aiGraphcoreOpset1().identityloss({onnx.mul({m.x, w})}, ReductionType::Mean);
    b->addOutputTensor(m.loss);
  }
  m.proto = b->getModelProto();
  return m;
}

struct Results {
  std::map<TensorId, std::vector<float>> values;
  std::map<TensorId, Shape> shapes;
};

Results runOnce(bool training, int bps, int everyN, int64_t replicas, int64_t af,
                std::vector<float> input) {
  const IdentityModel m = buildIdentityModel(training);
  DataFlow df(bps, {{m.all, AnchorReturnType("ALL")},
                    {m.everyN, AnchorReturnType("EVERYN", everyN)},
                    {m.final, AnchorReturnType("FINAL")},
                    {m.sum, AnchorReturnType("SUM")}});
  SessionOptions opts;
  if (replicas > 1) {
    opts.enableReplicatedGraphs = true;
    opts.replicatedGraphCount = replicas;
  }
  if (af > 1) {
    opts.enableGradientAccumulation = true;
    opts.accumulationFactor = af;
  }
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(replicas)}});
  std::unique_ptr<Session> session;
  if (training) {
    session =
        TrainingSession::createFromOnnxModel(m.proto, df, m.loss, ConstSGD(0.0f), device, {}, opts);
  } else {
    session = InferenceSession::createFromOnnxModel(m.proto, df, device, {}, opts);
  }
  session->prepareDevice();
  session->weightsFromHost();
  auto anchors = session->initAnchorArrays();
  std::map<TensorId, IArray&> outs;
  for (auto& [id, a] : anchors) outs.emplace(id, *a);
  NDArrayWrapper<float> in(input.data(), session->expectedInputBufferShape(m.x));
  StepIO io({{m.x, in}}, outs);
  session->run(io);
  Results r;
  const std::map<TensorId, std::string> names = {
      {m.all, "all"}, {m.everyN, "everyN"}, {m.final, "final"}, {m.sum, "sum"}};
  for (auto& [id, a] : anchors) {
    const float* p = a->dataAs<float>();
    r.values[names.at(id)].assign(p, p + a->nelms());
    r.shapes[names.at(id)] = a->shape();
  }
  return r;
}

TEST(Anchors, InferenceEightBatchesOneReplica) {
  auto r = runOnce(false, 8, 4, 1, 1, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(r.values["all"], (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(r.shapes["all"], (Shape{8}));
  EXPECT_EQ(r.values["everyN"], (std::vector<float>{4, 8}));
  EXPECT_EQ(r.shapes["everyN"], (Shape{2}));
  EXPECT_EQ(r.values["final"], (std::vector<float>{8}));
  EXPECT_EQ(r.shapes["final"], (Shape{}));
  EXPECT_EQ(r.values["sum"], (std::vector<float>{36}));
}

TEST(Anchors, InferenceTwoReplicasFourBatches) {
  auto r = runOnce(false, 4, 2, 2, 1, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(r.values["everyN"], (std::vector<float>{3, 4, 7, 8}));
  EXPECT_EQ(r.shapes["everyN"], (Shape{2, 2}));
  EXPECT_EQ(r.values["final"], (std::vector<float>{7, 8}));
  EXPECT_EQ(r.shapes["final"], (Shape{2}));
  EXPECT_EQ(r.values["sum"], (std::vector<float>{16, 20}));
  EXPECT_EQ(r.values["all"], (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(r.shapes["all"], (Shape{4, 2}));
}

TEST(Anchors, TrainingTwoReplicasAccumulationTwo) {
  auto r = runOnce(true, 2, 2, 2, 2, {1, 2, 3, 4, 5, 6, 7, 8});
  // EVERYN(2) keeps batch 2 with both of its micro-batches: [[5,6],[7,8]].
  EXPECT_EQ(r.values["everyN"], (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(r.shapes["everyN"], (Shape{2, 2}));
  EXPECT_EQ(r.values["final"], (std::vector<float>{7, 8}));
  EXPECT_EQ(r.values["sum"], (std::vector<float>{16, 20}));
  EXPECT_EQ(r.shapes["all"], (Shape{2, 2, 2}));
}

TEST(Anchors, WrongInputBufferNamesTensorAndShapes) {
  const IdentityModel m = buildIdentityModel(false);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto session = InferenceSession::createFromOnnxModel(
      m.proto, DataFlow(4, {{m.all, AnchorReturnType("ALL")}}), device);
  session->prepareDevice();
  std::vector<float> in(3), out(4);
  NDArrayWrapper<float> ia(in.data(), Shape{3});
  NDArrayWrapper<float> oa(out.data(), Shape{4});
  StepIO io({{m.x, ia}}, {{m.all, oa}});
  try {
    session->run(io);
    FAIL() << "expected an error";
  } catch (const error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'x'"), std::string::npos) << what;
    EXPECT_NE(what.find("[3]"), std::string::npos) << what;
    EXPECT_NE(what.find("[4]"), std::string::npos) << what;
  }
}

TEST(Anchors, DataFlowValidation) {
  EXPECT_THROW(DataFlow(0, std::map<TensorId, AnchorReturnType>{}), error);
  EXPECT_THROW(AnchorReturnType("EVERYN"), error);
  EXPECT_THROW(AnchorReturnType("EVERYN", 0), error);
  EXPECT_THROW(DataFlow(4, {{"a", AnchorReturnType("EVERYN", 8)}}), error);
  EXPECT_THROW(DataFlow(6, {{"a", AnchorReturnType("EVERYN", 4)}}), error);
  try {
    DataFlow(0, std::map<TensorId, AnchorReturnType>{});
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("batches per step must be greater than zero"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace xtrain::testing
