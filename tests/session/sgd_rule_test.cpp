// SGD's full update rule (include/xtrain/optimizer.hpp) checked against the formula computed in the
// test: nesterov, dampening, weight decay, velocity scaling, loss scaling and per-weight values
// (insertSpecific).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <utility>

#include "testing/error_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

// loss = sum(a * x) + sum(b * x): d loss / d a = d loss / d b = x.
struct Model {
  std::string proto;
  TensorId x, loss;
};

Model build(const std::vector<float>& a0, const std::vector<float>& b0) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  Model m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {3}), "x");
  auto a = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({3}, a0), "a");
  auto bb = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({3}, b0), "b");
  m.loss = b->aiGraphcoreOpset1().identityloss(
      {onnx.add({onnx.mul({a, m.x}), onnx.mul({bb, m.x})})}, ReductionType::Sum);
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

struct Hyper {
  float lr, wd, mm, dm, vs;
};

// The documented rule, in double: v stored scaled by vs.
void reference(std::vector<double>& w, std::vector<double>& v, const std::vector<float>& g,
               const Hyper& h, bool nesterov) {
  for (size_t i = 0; i < w.size(); ++i) {
    const double gi = g[i] + h.wd * w[i];
    v[i] = h.mm * v[i] + (1 - h.dm) * h.vs * gi;
    w[i] -= nesterov ? h.lr / h.vs * (h.vs * gi + h.mm * v[i]) : h.lr / h.vs * v[i];
  }
}

class SgdRule : public ::testing::TestWithParam<bool> {};

TEST_P(SgdRule, MatchesTheDocumentedFormula) {
  const bool nesterov = GetParam();
  const std::vector<float> a0{0.5f, -1.0f, 2.0f}, b0{1.0f, 0.25f, -0.5f};
  const Model m = build(a0, b0);
  const Hyper ha{0.1f, 0.05f, 0.9f, 0.3f, 2.0f};
  const Hyper hb{0.02f, 0.0f, 0.5f, 0.0f, 1.0f};
  SGD sgd(OptimizerValue(ha.lr, false), OptimizerValue(ha.wd, true), OptimizerValue(ha.mm, true),
          OptimizerValue(ha.dm, true), OptimizerValue(ha.vs, true), OptimizerValue(4.0f, true),
          OptimizerValue(nesterov ? 1.0f : 0.0f, true));
  sgd.insertSpecific("b", {{"learningRate", {hb.lr, false}},
                           {"weightDecay", {hb.wd, true}},
                           {"momentum", {hb.mm, true}},
                           {"dampening", {hb.dm, true}},
                           {"velocityScaling", {hb.vs, true}}});
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, sgd, device);
  s->prepareDevice();
  s->weightsFromHost();

  std::vector<double> wa(a0.begin(), a0.end()), wb(b0.begin(), b0.end()), va(3, 0.0), vb(3, 0.0);
  const std::vector<std::vector<float>> xs{
      {1.0f, 2.0f, -3.0f}, {0.5f, -1.0f, 4.0f}, {2.0f, 0.0f, 1.0f}};
  for (const auto& xv : xs) {
    std::vector<float> x = xv;
    NDArrayWrapper<float> xa(x.data(), Shape{3});
    StepIO io({{m.x, xa}}, {});
    s->run(io);
    reference(wa, va, xv, ha, nesterov);
    reference(wb, vb, xv, hb, nesterov);
  }
  s->weightsToHost();
  std::vector<float> ga(3), gb(3), gva(3), gvb(3);
  WeightsIO wio;
  wio.insert("a", {ga.data(), TensorInfo(DataType::FLOAT, {3})});
  wio.insert("b", {gb.data(), TensorInfo(DataType::FLOAT, {3})});
  wio.insert("Accl___a", {gva.data(), TensorInfo(DataType::FLOAT, {3})});
  wio.insert("Accl___b", {gvb.data(), TensorInfo(DataType::FLOAT, {3})});
  s->readWeights(wio);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(ga[i], wa[i], 1e-5 * (1 + std::abs(wa[i]))) << "a[" << i << "]";
    EXPECT_NEAR(gb[i], wb[i], 1e-5 * (1 + std::abs(wb[i]))) << "b[" << i << "]";
    EXPECT_NEAR(gva[i], va[i], 1e-5 * (1 + std::abs(va[i]))) << "velocity of a[" << i << "]";
    EXPECT_NEAR(gvb[i], vb[i], 1e-5 * (1 + std::abs(vb[i]))) << "velocity of b[" << i << "]";
  }
}

INSTANTIATE_TEST_SUITE_P(Nesterov, SgdRule, ::testing::Bool());

TEST(SgdRule, WithoutMomentumThereIsNoVelocityAndTheStepIsPlain) {
  const Model m = build({1.0f, 1.0f, 1.0f}, {0.0f, 0.0f, 0.0f});
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, ConstSGD(0.5f, 0.1f),
                                                device);
  s->prepareDevice();
  s->weightsFromHost();
  std::vector<float> x{1.0f, -2.0f, 0.0f};
  NDArrayWrapper<float> xa(x.data(), Shape{3});
  StepIO io({{m.x, xa}}, {});
  s->run(io);
  s->weightsToHost();
  std::vector<float> a(3);
  WeightsIO wio;
  wio.insert("a", {a.data(), TensorInfo(DataType::FLOAT, {3})});
  s->readWeights(wio);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(a[i], 1.0f - 0.5f * (x[i] + 0.1f * 1.0f), 1e-6);
  EXPECT_FALSE(s->hasInfo("Accl___a"));
}

// Runs the three inputs of MatchesTheDocumentedFormula through `sgd` and returns the weights a
// and b after them.
std::pair<std::vector<float>, std::vector<float>> trainThreeSteps(const Model& m, const SGD& sgd) {
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, sgd, device);
  s->prepareDevice();
  s->weightsFromHost();
  for (std::vector<float> x :
       {std::vector<float>{1.0f, 2.0f, -3.0f}, {0.5f, -1.0f, 4.0f}, {2.0f, 0.0f, 1.0f}}) {
    NDArrayWrapper<float> xa(x.data(), Shape{3});
    StepIO io({{m.x, xa}}, {});
    s->run(io);
  }
  s->weightsToHost();
  std::vector<float> a(3), b(3);
  WeightsIO wio;
  wio.insert("a", {a.data(), TensorInfo(DataType::FLOAT, {3})});
  wio.insert("b", {b.data(), TensorInfo(DataType::FLOAT, {3})});
  s->readWeights(wio);
  return {a, b};
}

// Nesterov per weight, as PopART's SGD has it (a default and insertSpecific values): a follows
// Nesterov's step and b the plain one in the same session, each checked against the rule worked
// by hand in double.
TEST(SgdRule, NesterovIsAValueOfEachWeight) {
  const std::vector<float> a0{0.5f, -1.0f, 2.0f}, b0{1.0f, 0.25f, -0.5f};
  const Model m = build(a0, b0);
  const Hyper h{0.1f, 0.05f, 0.9f, 0.0f, 2.0f};
  const std::vector<std::vector<float>> xs{
      {1.0f, 2.0f, -3.0f}, {0.5f, -1.0f, 4.0f}, {2.0f, 0.0f, 1.0f}};
  std::vector<double> wa(a0.begin(), a0.end()), wb(b0.begin(), b0.end()), va(3, 0.0), vb(3, 0.0);
  std::vector<double> waPlain = wa, wbNesterov = wb, vaPlain = va, vbNesterov = vb;
  for (const auto& x : xs) {
    reference(wa, va, x, h, /*nesterov=*/true);
    reference(wb, vb, x, h, /*nesterov=*/false);
    reference(waPlain, vaPlain, x, h, /*nesterov=*/false);
    reference(wbNesterov, vbNesterov, x, h, /*nesterov=*/true);
  }
  // The two rules give different weights here, so each weight's result tells which one it got.
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_GT(std::abs(wa[i] - waPlain[i]), 1e-3);
    ASSERT_GT(std::abs(wb[i] - wbNesterov[i]), 1e-3);
  }
  auto expectWeights = [&](const std::pair<std::vector<float>, std::vector<float>>& got,
                           const std::vector<double>& a, const std::vector<double>& b) {
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_NEAR(got.first[i], a[i], 1e-5 * (1 + std::abs(a[i]))) << "a[" << i << "]";
      EXPECT_NEAR(got.second[i], b[i], 1e-5 * (1 + std::abs(b[i]))) << "b[" << i << "]";
    }
  };
  const std::map<std::string, std::pair<float, bool>> defaults{
      {"defaultLearningRate", {h.lr, false}}, {"defaultWeightDecay", {h.wd, true}},
      {"defaultMomentum", {h.mm, true}},      {"defaultVelocityScaling", {h.vs, true}},
      {"lossScaling", {4.0f, true}},          {"nesterov", {1.0f, true}}};

  // Nesterov by default, off for b through the map form of insertSpecific.
  SGD sgd(defaults);
  sgd.insertSpecific("b", {{"nesterov", {0.0f, true}}});
  EXPECT_EQ(sgd.valuesFor("a").nesterov.val(), 1.0f);
  EXPECT_EQ(sgd.valuesFor("b").nesterov.val(), 0.0f);
  EXPECT_EQ(sgd.valuesFor("b").momentum.val(), h.mm);  // the keys not given keep the defaults
  expectWeights(trainThreeSteps(m, sgd), wa, wb);

  // Off by default (the positional constructor), on for a through PopART's positional
  // insertSpecific: the same two rules.
  SGD positional(OptimizerValue(h.lr, false), OptimizerValue(h.wd, true),
                 OptimizerValue(h.mm, true), OptimizerValue(h.dm, true), OptimizerValue(h.vs, true),
                 OptimizerValue(4.0f, true), OptimizerValue(0.0f, true));
  positional.insertSpecific("a", OptimizerValue(h.lr, false), OptimizerValue(h.wd, true),
                            OptimizerValue(h.mm, true), OptimizerValue(h.dm, true),
                            OptimizerValue(h.vs, true), OptimizerValue(1.0f, true));
  expectWeights(trainThreeSteps(m, positional), wa, wb);
}

TEST(SgdRule, NesterovOfAWeightIsFixedWhenTheSessionIsBuilt) {
  const Model m = build({0.5f, -1.0f, 2.0f}, {1.0f, 0.25f, -0.5f});
  SGD sgd({{"defaultLearningRate", {0.1f, false}},
           {"defaultMomentum", {0.9f, true}},
           {"nesterov", {1.0f, false}}});
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, sgd, device);
  s->prepareDevice();
  SGD next = sgd;
  next.insertSpecific("b", {{"nesterov", {0.0f, false}}});
  expectError([&] { s->updateOptimizerFromHost(&next); },
              {"nesterov of weight 'b'", "fixed when the session is built"});
  SGD sameRule = sgd;
  sameRule.insertSpecific("b", {{"learningRate", {0.05f, false}}});
  EXPECT_NO_THROW(s->updateOptimizerFromHost(&sameRule));
}

TEST(SgdRule, InvalidHyperparametersAreRefused) {
  expectError(
      [] {
        SGD({{"defaultNesterov", {1.0f, true}}});
      },
      {"unknown hyperparameter 'defaultNesterov'", "nesterov"});
  expectError([] { SGD({{"nesterov", {std::nanf(""), true}}}); }, {"nesterov", "finite"});
  EXPECT_THROW(SGD({{"defaultLearningRate", {-1.0f, true}}}), error);
  EXPECT_THROW(SGD({{"defaultMomentum", {1.5f, true}}}), error);
  EXPECT_THROW(SGD({{"noSuchThing", {1.0f, true}}}), error);
  EXPECT_THROW(SGD({{"lossScaling", {0.0f, true}}}), error);
  SGD sgd;
  EXPECT_THROW(sgd.insertSpecific("w", {{"learnignRate", {0.1f, true}}}), error);
}

}  // namespace
}  // namespace xtrain::testing
