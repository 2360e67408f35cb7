// The Builder methods of opsets_misc.cpp (ai.graphcore atan2, swish, geluerf, nearbyint,
// incrementmod, slice, subsample, groupedgather, sequenceslice, normalize_image; ai.onnx mean):
// the nodes written (PopART's op types and attribute names), ONNX shape inference through them
// agreeing with the IR's, the ONNX checker, and the Builder's own argument errors.
#include <gtest/gtest.h>

#include "ir/onnx/onnx_import.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"
#include "testing/error_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain {
namespace {

using xtrain::testing::expectError;

const onnx::NodeProto& node(const onnx::ModelProto& m, const std::string& type) {
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == type) return n;
  }
  throw error("no {} node", type);
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

TEST(MiscOpsBuilder, EveryOpInfersChecksAndImportsWithTheIrsShapes) {
  auto b = Builder::create();
  auto gc = b->aiGraphcoreOpset1();
  auto onnx11 = b->aiOnnxOpset11();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", {2, 3, 4}), "x");
  const TensorId y = b->addInputTensor(TensorInfo("FLOAT", {3, 1}), "y");
  const TensorId idx = b->addInputTensor(TensorInfo("INT32", {2, 5}), "idx");
  const TensorId rows = b->addInputTensor(TensorInfo("UINT32", {2}), "rows");
  const TensorId img = b->addInputTensor(TensorInfo("UINT8", {2, 5, 3}), "img");
  const TensorId half3 = b->addInputTensor(TensorInfo("FLOAT16", {3}), "half3");
  const TensorId counter = b->addInputTensor(TensorInfo("INT32", {}), "counter");
  std::vector<std::pair<TensorId, TensorInfo>> expect;
  auto check = [&](const TensorId& id, const std::string& type, const Shape& shape) {
    expect.emplace_back(id, TensorInfo(type, shape));
    b->addOutputTensor(id);
  };
  const Shape xs{2, 3, 4};
  check(gc.atan2({x, y}), "FLOAT", xs);
  check(gc.swish({x}), "FLOAT", xs);
  check(gc.geluerf({x}), "FLOAT", xs);
  check(gc.nearbyint({x}), "FLOAT", xs);
  check(gc.incrementmod({counter}, 1.0f, 5.0f), "INT32", {});
  check(gc.slice({x}, {-1, 3}, {0, 1}, {2, 1}), "FLOAT", {2, 2, 3});
  check(gc.slice({x}, {1}, {0}), "FLOAT", {1, 3, 4});
  check(gc.subsample({x}, {2, 2, 3}), "FLOAT", {1, 2, 2});  // ceil(n / stride)
  check(gc.groupedgather({x, idx}, 2, 2), "FLOAT", {2, 3, 5});
  check(gc.sequenceslice({x, x, rows, rows, rows}, 1), "FLOAT", xs);
  check(gc.normalize_image({img, half3, half3}, 0.5f), "FLOAT16", {2, 5, 4});
  check(onnx11.mean({x, y, x}), "FLOAT", xs);

  for (const auto& [id, info] : expect) EXPECT_EQ(b->getTensorInfo(id), info) << id;
  const std::string proto = b->getModelProto();
  try {
    ir::checkOnnxModel(proto);
  } catch (const error& e) {
    ADD_FAILURE() << "checker: " << e.what();
  }
  try {
    ir::OnnxModel m = ir::importOnnxModel(proto);
    for (const auto& [id, info] : expect) {
      EXPECT_EQ(m.graph->tensor(id).info, info) << id << " imported";
    }
  } catch (const error& e) {
    ADD_FAILURE() << "import: " << e.what();
  }

  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(proto));
  const auto& sl = node(m, "Slice");
  EXPECT_EQ(sl.domain(), "ai.graphcore");
  EXPECT_EQ(attr(sl, "starts")->ints(0), 0);
  EXPECT_EQ(attr(sl, "ends")->ints(0), -1);
  EXPECT_EQ(attr(node(m, "GroupedGather"), "group_size")->i(), 2);
  EXPECT_FLOAT_EQ(attr(node(m, "IncrementMod"), "modulus")->f(), 5.0f);
  EXPECT_EQ(attr(node(m, "SequenceSlice"), "zeroUnused")->i(), 1);
  EXPECT_FLOAT_EQ(attr(node(m, "NormalizeImage"), "scale")->f(), 0.5f);
  EXPECT_EQ(node(m, "Mean").domain(), "");
}

TEST(MiscOpsBuilder, ArgumentErrorsNameTheMethodAndWhatWasExpected) {
  auto b = Builder::create();
  auto gc = b->aiGraphcoreOpset1();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", {4, 4}), "x");
  // PopART's first sentence, which its tests compare.
  expectError([&] { gc.subsample({x}, {4, 0}); },
              {"Strides invalid. 0 stride at index 1", "subsample", "[4,0]", "positive"});
  expectError([&] { gc.slice({x}, {1, 2}, {0}); }, {"slice", "same length"});
  expectError([&] { gc.incrementmod({x}, 1.0f, 0.0f); }, {"incrementmod", "modulus", "nonzero"});
  expectError([&] { gc.groupedgather({x, x}, 1, 0); }, {"groupedgather", "group_size", "got 0"});
  expectError([&] { gc.normalize_image({x, x, x}, 0.0f); },
              {"normalize_image", "scale should be greater than 0"});
  expectError([&] { gc.atan2({x}); }, {"atan2"});
  expectError([&] { gc.sequenceslice({x, x}, 0); }, {"sequenceslice"});
}

}  // namespace
}  // namespace xtrain
