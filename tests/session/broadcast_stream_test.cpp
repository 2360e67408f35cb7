// ReplicatedStreamMode::Broadcast (docs/replication-semantics.md section 6): an input every replica
// receives whole, fed without a replica dimension, through StepIO buffers and IStepIO callbacks.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <vector>

#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

struct Model {
  std::string proto;
  TensorId x, y, out;
};

// out = x + y, x broadcast and y replicated (scalars).
Model buildModel() {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  Model m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {}),
                          InputSettings(ReplicatedStreamMode::Broadcast), "x");
  m.y = b->addInputTensor(TensorInfo(DataType::FLOAT, {}), "y");
  m.out = onnx.add({m.x, m.y}, "out");
  b->addOutputTensor(m.out);
  m.proto = b->getModelProto();
  return m;
}

std::unique_ptr<InferenceSession> makeSession(const Model& m, int bps, int64_t replicas) {
  SessionOptions o;
  o.enableReplicatedGraphs = true;
  o.replicatedGraphCount = replicas;
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(replicas)}});
  auto s = InferenceSession::createFromOnnxModel(m.proto, DataFlow(bps, {m.out}), device, {}, o);
  s->prepareDevice();
  return s;
}

// bps 3, 2 replicas: x [3] goes to both replicas, y [3, 2] one value each.
TEST(BroadcastStream, EveryReplicaGetsTheSameMicroBatch) {
  const Model m = buildModel();
  auto s = makeSession(m, 3, 2);
  EXPECT_EQ(s->expectedInputBufferShape(m.x), (Shape{3}));
  EXPECT_EQ(s->expectedInputBufferShape(m.y), (Shape{3, 2}));
  std::vector<float> x = {1, 2, 3}, y = {10, 20, 30, 40, 50, 60}, out(6, -1);
  NDArrayWrapper<float> xa(x.data(), {3}), ya(y.data(), {3, 2}), oa(out.data(), {3, 2});
  StepIO io({{m.x, xa}, {m.y, ya}}, {{m.out, oa}});
  s->run(io);
  EXPECT_EQ(out, (std::vector<float>{11, 21, 32, 42, 53, 63}));
}

TEST(BroadcastStream, ABufferWithAReplicaDimensionIsRefused) {
  const Model m = buildModel();
  auto s = makeSession(m, 3, 2);
  std::vector<float> x(6), y(6), out(6);
  NDArrayWrapper<float> xa(x.data(), {3, 2}), ya(y.data(), {3, 2}), oa(out.data(), {3, 2});
  StepIO io({{m.x, xa}, {m.y, ya}}, {{m.out, oa}});
  try {
    s->run(io);
    ADD_FAILURE() << "a [3,2] buffer was accepted for a broadcast input of [3]";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("broadcast"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
}

// Callbacks: one in() per micro-batch for the broadcast input (isBroadcast set), one per replica
// for the replicated one.
class CountingStepIO : public IStepIO {
 public:
  ConstVoidData in(TensorId id, int64_t, bool, bool isBroadcast) override {
    ++calls[id];
    broadcastFlags[id] = isBroadcast;
    value = id == "x" ? 100.0f * static_cast<float>(calls[id]) : static_cast<float>(calls[id]);
    ConstVoidData d;
    d.data = &value;
    d.info = TensorInfo(DataType::FLOAT, {});
    return d;
  }
  void inComplete(TensorId, int64_t, bool) override {}
  MutableVoidData out(TensorId, int64_t) override {
    outputs.push_back(0);
    MutableVoidData d;
    d.data = &outputs.back();
    d.info = TensorInfo(DataType::FLOAT, {});
    return d;
  }
  void outComplete(TensorId) override {}

  std::map<TensorId, int> calls;
  std::map<TensorId, bool> broadcastFlags;
  float value = 0;
  std::deque<float> outputs;
};

TEST(BroadcastStream, CallbacksAskOncePerMicroBatch) {
  const Model m = buildModel();
  auto s = makeSession(m, 2, 2);
  CountingStepIO io;
  s->run(io);
  EXPECT_EQ(io.calls["x"], 2);
  EXPECT_EQ(io.calls["y"], 4);
  EXPECT_TRUE(io.broadcastFlags["x"]);
  EXPECT_FALSE(io.broadcastFlags["y"]);
  EXPECT_EQ(std::vector<float>(io.outputs.begin(), io.outputs.end()),
            (std::vector<float>{101, 102, 203, 204}));
}

}  // namespace
}  // namespace xtrain::testing
