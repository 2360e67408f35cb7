// Patterns (xtrain/patterns.hpp): PopART's levels, names and checks; a session refuses a set
// without a mandatory pattern while runtime asserts are on, and computes the same with any set.
#include "xtrain/patterns.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "xtrain/builder.hpp"
#include "xtrain/error.hpp"
#include "xtrain/session.hpp"

namespace xtrain {
namespace {

std::string messageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

TEST(Patterns, LevelsHoldWhatPopartsLevelsHold) {
  const auto names = Patterns::getAllPreAliasPatternNames();
  ASSERT_EQ(names.size(), 55u);
  const Patterns none(PatternsLevel::NoPatterns), minimal(PatternsLevel::Minimal),
      all(PatternsLevel::All), byDefault;
  EXPECT_TRUE(byDefault == Patterns(PatternsLevel::Default));
  for (const auto& n : names) {
    EXPECT_FALSE(none.isPatternEnabled(n)) << n;
    EXPECT_TRUE(all.isPatternEnabled(n)) << n;
    EXPECT_EQ(minimal.isPatternEnabled(n), Patterns::isMandatory(n)) << n;
    // Every mandatory pattern is on by default.
    if (Patterns::isMandatory(n)) {
      EXPECT_TRUE(byDefault.isPatternEnabled(n)) << n;
    }
  }
  EXPECT_TRUE(byDefault.isPatternEnabled("PreUniRepl"));
  EXPECT_FALSE(byDefault.isPatternEnabled("SplitGather"));  // off by default
  EXPECT_TRUE(Patterns::isMandatory("MatMulOp"));
  EXPECT_FALSE(Patterns::isMandatory("PadSum"));
  EXPECT_FALSE(Patterns::isMandatory("NotAPattern"));
  EXPECT_FALSE(none.isInPlaceEnabled());
  EXPECT_FALSE(minimal.isInPlaceEnabled());
  EXPECT_TRUE(byDefault.isInPlaceEnabled());
  EXPECT_TRUE(all.isInPlaceEnabled());
}

TEST(Patterns, NamedSetsAndToggles) {
  Patterns p(std::vector<std::string>{"PreUniRepl", "InPlace"});
  EXPECT_EQ(p.enabledPatternNames(), std::vector<std::string>{"PreUniRepl"});
  EXPECT_TRUE(p.isInPlaceEnabled());
  EXPECT_TRUE(p.isPatternEnabled("InPlace"));
  p.enablePattern("PreUniRepl", false).enablePattern("OpToIdentity", true).enableInPlace(false);
  EXPECT_EQ(p.enabledPatternNames(), std::vector<std::string>{"OpToIdentity"});
  EXPECT_FALSE(p.isInPlaceEnabled());
  EXPECT_TRUE(p != Patterns(std::vector<std::string>{}));
}

TEST(Patterns, UnknownNamesAreRefusedByName) {
  EXPECT_EQ(messageOf([] { Patterns(std::vector<std::string>{"Bogus"}); }),
            "Unknown pattern Bogus");
  EXPECT_EQ(messageOf([] { Patterns(std::vector<std::string>{"Inplace"}); }),
            "Unknown pattern Inplace, did you mean InPlace?");
  EXPECT_EQ(messageOf([] { Patterns().enablePattern("Bogus", true); }), "Unknown pattern Bogus");
  EXPECT_EQ(messageOf([] { (void)Patterns().isPatternEnabled("Bogus"); }), "Unknown pattern Bogus");
}

TEST(Patterns, MandatoryPatternsWhileRuntimeAssertsAreOn) {
  EXPECT_EQ(messageOf([] { Patterns().ensureAllMandatoryPreAliasPatternsAreEnabled(); }), "");
  EXPECT_EQ(messageOf([] {
              Patterns(PatternsLevel::NoPatterns).ensureAllMandatoryPreAliasPatternsAreEnabled();
            }),
            "Pattern 'AbsGradOp' must be enabled");  // the first mandatory one by name
  Patterns p;
  p.enablePattern("MatMulOp", false);
  EXPECT_EQ(messageOf([&] { p.ensureAllMandatoryPreAliasPatternsAreEnabled(); }),
            "Pattern 'MatMulOp' must be enabled");
  EXPECT_TRUE(p.getRuntimeAssertsOn());
  EXPECT_FALSE(p.enableRuntimeAsserts(false).getRuntimeAssertsOn());
}

// A 2x2 matmul inference: the sessions' check of the set, and the same numbers with any set.
std::vector<float> runMatMul(const Patterns& patterns) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2, 2}), "x");
  const std::vector<float> w{1, 2, 3, 4};
  const TensorId y =
      onnx.matmul({x, b->addInitializedInputTensor(ConstVoidData::fromVector<float>({2, 2}, w))});
  b->addOutputTensor(y);
  auto device = DeviceManager::createDeviceManager().createCpuDevice();
  auto s = InferenceSession::createFromOnnxModel(b->getModelProto(), DataFlow(1, {y}), device, {},
                                                 {}, patterns);
  s->prepareDevice();
  std::vector<float> in{1, 0, 0, 1}, out(4);
  NDArrayWrapper<float> inArray(in.data(), {2, 2}), outArray(out.data(), {2, 2});
  std::map<TensorId, IArray&> inputs{{x, inArray}}, anchors{{y, outArray}};
  StepIO io(inputs, anchors);
  s->run(io);
  return out;
}

TEST(PatternsInSessions, ASessionChecksTheSetAndComputesTheSameWithAny) {
  EXPECT_EQ(runMatMul(Patterns()), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(runMatMul(Patterns(PatternsLevel::All)), (std::vector<float>{1, 2, 3, 4}));
  Patterns none(PatternsLevel::NoPatterns);
  EXPECT_EQ(messageOf([&] { runMatMul(none); }), "Pattern 'AbsGradOp' must be enabled");
  EXPECT_EQ(runMatMul(none.enableRuntimeAsserts(false)), (std::vector<float>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace xtrain
