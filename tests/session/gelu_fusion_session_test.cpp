// Training a model with the tanh-GELU subgraph torch.onnx writes gives the same weights with the
// fusion pass (src/ir/fusion, on by default) as without it (XTRAIN_FUSION=0), to 1e-5 relative.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "testing/error_testing.hpp"
#include "testing/process_testing.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::testing {
namespace {

// buildMlpModel's MLP (the same weight names) with 0.5 x (1 + tanh(c (x + 0.044715 x^3))) as its
// activation, written as torch.onnx exports it.
MlpModel buildGeluMlp() {
  MlpModel m;
  m.batch = 4;
  m.in = 8;
  m.hidden = 15;
  m.out = 5;
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-0.8f, 0.8f);
  auto weight = [&](Shape s, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(shapeNelms(s)));
    for (auto& e : v) e = u(rng);
    return b->addInitializedInputTensor(ConstVoidData::fromVector<float>(s, v), name);
  };
  auto scalar = [&](float v) { return onnx.constant(ConstVoidData::fromVector<float>({}, {v})); };
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {m.batch, m.in}), "x");
  m.labels = b->addInputTensor(TensorInfo(DataType::INT32, {m.batch}), "labels");
  auto x = onnx.add({onnx.matmul({m.x, weight({m.in, m.hidden}, "W1")}), weight({m.hidden}, "b1")});
  const float c = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  auto cube = onnx.mul({x, onnx.mul({x, x})});
  auto inner = onnx.mul({scalar(c), onnx.add({x, onnx.mul({scalar(0.044715f), cube})})});
  auto h = onnx.mul({scalar(0.5f), onnx.mul({x, onnx.add({scalar(1.0f), onnx.tanh({inner})})})});
  auto logits =
      onnx.add({onnx.matmul({h, weight({m.hidden, m.out}, "W2")}), weight({m.out}, "b2")});
  m.loss = onnx.softmaxcrossentropyloss({logits, m.labels}, 1, std::nullopt, "mean")[0];
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

std::vector<float> trainedWeights(const char* fusion) {
  ScopedEnv env("XTRAIN_FUSION", fusion);
  const MlpModel m = buildGeluMlp();
  auto s = makeMlpSession(m, SessionOptions(), ConstSGD(0.1f, 0, 0.9f));
  trainMlpSteps(*s, m, 1, 0, 1, 0, 8);
  return readTensors(*s, mlpWeightsAndVelocities());
}

TEST(GeluFusionTraining, FusedTrainsAsUnfused) {
  const std::vector<float> fused = trainedWeights(nullptr);
  const std::vector<float> unfused = trainedWeights("0");
  ASSERT_EQ(fused.size(), unfused.size());
  const std::vector<float> initial = [] {
    ScopedEnv env("XTRAIN_FUSION", "0");
    const MlpModel m = buildGeluMlp();
    auto s = makeMlpSession(m, SessionOptions(), ConstSGD(0.1f, 0, 0.9f));
    return readTensors(*s, mlpWeightsAndVelocities());
  }();
  size_t changed = 0, differ = 0;
  for (size_t i = 0; i < fused.size(); ++i) {
    changed += fused[i] != initial[i] ? 1 : 0;
    const double tol = 1e-5 * std::max(1.0, std::fabs(static_cast<double>(unfused[i])));
    if (std::fabs(static_cast<double>(fused[i]) - unfused[i]) > tol) {
      if (differ < 5) ADD_FAILURE() << "element " << i << ": " << fused[i] << " vs " << unfused[i];
      ++differ;
    }
  }
  EXPECT_EQ(differ, 0u);
  EXPECT_GT(changed, fused.size() / 2) << "training changed the weights";
}

// What the session logs (module session, level Info) while it is made with XTRAIN_FUSION=`fusion`:
// "fusion: 1 GELU subgraphs -> Gelu" when the pass ran.
std::string sessionLogWith(const char* fusion) {
  const std::filesystem::path file =
      std::filesystem::path(::testing::TempDir()) /
      ("xtrain_fusion_switch_" + std::to_string(::getpid()) + ".log");
  std::filesystem::remove(file);
  {
    ScopedEnv env("XTRAIN_FUSION", fusion);
    ScopedEnv dest("XTRAIN_LOG_DEST", file.c_str());
    logging::configureFromEnvironment();
    logging::setLevel(logging::Module::session, logging::Level::Info);
    const MlpModel m = buildGeluMlp();
    auto s = makeMlpSession(m, SessionOptions(), ConstSGD(0.1f, 0, 0.9f));
    logging::flush();
  }
  logging::configureFromEnvironment();  // back to the destination and levels of before
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(file);
  return text.str();
}

TEST(GeluFusionSwitch, OnByDefaultAndOffByEverySpellingOfOff) {
  for (const char* on : {static_cast<const char*>(nullptr), "1", "on", "true"}) {
    EXPECT_NE(sessionLogWith(on).find("fusion: 1 GELU subgraphs -> Gelu"), std::string::npos)
        << "XTRAIN_FUSION=" << (on ? on : "(unset)");
  }
  // "off" used to leave fusion on: only "0" was understood.
  for (const char* off : {"0", "off", "false", "OFF"}) {
    const std::string log = sessionLogWith(off);
    EXPECT_NE(log.find("session built"), std::string::npos) << log;
    EXPECT_EQ(log.find("fusion:"), std::string::npos) << "XTRAIN_FUSION=" << off << ": " << log;
  }
}

TEST(GeluFusionSwitch, AnUnknownValueIsRefusedNamingIt) {
  ScopedEnv env("XTRAIN_FUSION", "bogus");
  const MlpModel m = buildGeluMlp();
  expectError([&] { makeMlpSession(m, SessionOptions(), ConstSGD(0.1f, 0, 0.9f)); },
              {"XTRAIN_FUSION='bogus'", "0, 1, false, true, off or on"});
}

}  // namespace
}  // namespace xtrain::testing
