// Seeded randomness: Dropout in a TrainingSession is reproducible from setRandomSeed, differs between seeds
// and between replicas, and getRNGState / setRNGState replay a run exactly.
#include <gtest/gtest.h>

#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

struct Model {
  std::string proto;
  TensorId x, out, loss;
};

Model buildDropoutModel() {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  Model m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {64}), "x");
  auto w = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({64}, std::vector<float>(64, 1.0f)), "w");
  m.out = onnx.dropout({onnx.mul({m.x, w})}, 1, 0.5f)[0];
  m.loss = b->aiGraphcoreOpset1().identityloss({m.out}, ReductionType::Sum);
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

class Runner {
 public:
  explicit Runner(int64_t replicas = 1) : m_(buildDropoutModel()) {
    SessionOptions o;
    if (replicas > 1) {
      o.enableReplicatedGraphs = true;
      o.replicatedGraphCount = replicas;
    }
    auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
        {{"numIPUs", std::to_string(replicas)}});
    session_ = TrainingSession::createFromOnnxModel(m_.proto, DataFlow(1, {{m_.out, AnchorReturnType("ALL")}}),
                                                    m_.loss, ConstSGD(0.0f), device, {}, o);
    session_->prepareDevice();
    session_->weightsFromHost();
    x_.assign(static_cast<size_t>(64 * replicas), 1.0f);
    out_.assign(x_.size(), 0.0f);
    replicas_ = replicas;
  }
  std::vector<float> step() {
    NDArrayWrapper<float> xa(x_.data(), session_->expectedInputBufferShape(m_.x));
    NDArrayWrapper<float> oa(out_.data(), session_->expectedAnchorBufferShape(m_.out));
    StepIO io({{m_.x, xa}}, {{m_.out, oa}});
    session_->run(io);
    return out_;
  }
  TrainingSession& session() { return *session_; }

 private:
  Model m_;
  std::unique_ptr<TrainingSession> session_;
  std::vector<float> x_, out_;
  int64_t replicas_ = 1;
};

TEST(Random, DropoutIsReproducibleFromTheSeed) {
  Runner a, b, c;
  a.session().setRandomSeed(42);
  b.session().setRandomSeed(42);
  c.session().setRandomSeed(43);
  const auto ra = a.step(), rb = b.step(), rc = c.step();
  EXPECT_EQ(ra, rb);
  EXPECT_NE(ra, rc);
  int kept = 0;
  for (float v : ra) {
    EXPECT_TRUE(v == 0.0f || v == 2.0f) << v;  // kept elements are scaled by 1 / (1 - 0.5)
    kept += v != 0.0f;
  }
  EXPECT_GT(kept, 16);
  EXPECT_LT(kept, 48);
  EXPECT_NE(a.step(), ra) << "each step draws a new mask";
}

TEST(Random, RngStateReplaysASteps) {
  Runner a;
  a.session().setRandomSeed(7);
  a.step();
  const auto state = a.session().getRNGState();
  const auto next = a.step();
  a.session().setRNGState(state);
  EXPECT_EQ(a.step(), next);
  EXPECT_EQ(a.session().getRandomSeed(), 7u);
  EXPECT_THROW(a.session().setRNGState({1, 2}), error);
}

TEST(Random, ReplicasDrawDistinctMasks) {
  Runner a(2);
  a.session().setRandomSeed(5);
  const auto r = a.step();
  const std::vector<float> first(r.begin(), r.begin() + 64), second(r.begin() + 64, r.end());
  EXPECT_NE(first, second);
}

}  // namespace
}  // namespace xtrain::testing
