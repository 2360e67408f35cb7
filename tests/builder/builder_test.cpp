// The C++ Builder: ids and name scopes, shapes of op outputs (ONNX shape inference),
// version-appropriate node forms for ai.onnx opsets 11..17 (validated by the ONNX checker),
// ai.graphcore ops, metadata, errors.
#include "xtrain/builder.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "ir/onnx/onnx_import.hpp"
#include "ir/onnx/onnx_metadata.hpp"
#include "ir/op_registry.hpp"
#include "testing/error_testing.hpp"

namespace xtrain {
namespace {

using xtrain::testing::expectError;

namespace fs = std::filesystem;

ConstVoidData floats(const Shape& shape, float v = 0.5f) {
  return ConstVoidData::fromVector<float>(shape, std::vector<float>(shapeNelms(shape), v));
}

TEST(Builder, IdsAreUniqueAndNamedAfterDebugNames) {
  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  const TensorId x = builder->addInputTensor(TensorInfo("FLOAT", {2}), "x");
  const TensorId x1 = builder->addInputTensor("FLOAT", {2}, "x");
  const TensorId anon = builder->addInputTensor(TensorInfo("FLOAT", {2}));
  EXPECT_EQ(x, "x");
  EXPECT_EQ(x1, "x/1");  // PopART's Builder: a repeated input name gets /k
  EXPECT_EQ(anon, "input");
  EXPECT_EQ(onnx.add({x, x1}), "Add:0");
  // A repeated op's outputs get /k too, output by output ("Add:0/1"), as PopART's Builder.
  EXPECT_EQ(onnx.add({x, x1}), "Add:0/1");
  EXPECT_EQ(onnx.add({x, x1}, "sum"), "sum:0");
  EXPECT_EQ(onnx.add({x, x1}, "sum"), "sum:0/1");
  EXPECT_EQ(builder->getInputTensorIds(), (std::vector<TensorId>{"x", "x/1", "input"}));
  EXPECT_TRUE(builder->hasTensor("sum:0/1"));
  EXPECT_FALSE(builder->hasTensor("sum:0/2"));
  // Only the taken output is renamed: a two-output op whose first name is taken keeps its second.
  const TensorId taken = builder->addInputTensor(TensorInfo("FLOAT", {2}), "Split:0");
  EXPECT_EQ(taken, "Split:0");
  EXPECT_EQ(onnx.split({x}, 2, 0, {1, 1}), (std::vector<TensorId>{"Split:0/1", "Split:1"}));
}

TEST(Builder, NameScopesPrefixIdsAndNodeNames) {
  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  builder->pushNameScope("enc");
  const TensorId x = builder->addInputTensor(TensorInfo("FLOAT", {2, 3}), "x");
  const TensorId w = builder->addInitializedInputTensor(floats({3, 4}), "w");
  TensorId y;
  {
    NameScope layer = builder->nameScope("layer0");
    EXPECT_EQ(builder->getNameScope("z"), "enc/layer0/z");
    y = onnx.matmul({x, w}, "fc");
  }
  const TensorId z = onnx.relu({y});
  builder->popNameScope();
  const TensorId top = onnx.identity({z}, "out");
  EXPECT_EQ(x, "enc/x");
  EXPECT_EQ(w, "enc/w");
  EXPECT_EQ(y, "enc/layer0/fc:0");
  EXPECT_EQ(z, "enc/Relu:0");
  EXPECT_EQ(top, "out:0");
  EXPECT_EQ(builder->getNameScope(), "");
  expectError([&] { builder->popNameScope(); }, {"popNameScope", "no name scope"});
  expectError([&] { builder->pushNameScope(""); }, {"pushNameScope", "empty"});
  EXPECT_EQ(builder->getTensorShape(top), (Shape{2, 4}));
  EXPECT_EQ(builder->getTrainableTensorIds(), std::vector<TensorId>{"enc/w"});
  EXPECT_EQ(builder->getValueTensorIds(), (std::vector<TensorId>{y, z, top}));
  EXPECT_TRUE(builder->isInitializer("enc/w"));
  EXPECT_FALSE(builder->isInitializer("enc/x"));
  EXPECT_FALSE(builder->isInitializer(y));

  if (!ir::OpRegistry::instance().find(ir::kOnnxDomain, "MatMul") ||
      !ir::OpRegistry::instance().find(ir::kOnnxDomain, "Relu") ||
      !ir::OpRegistry::instance().find(ir::kOnnxDomain, "Identity")) {
    GTEST_SKIP() << "MatMul/Relu/Identity not registered yet";
  }
  builder->addOutputTensor(top);
  ir::OnnxModel m = ir::importOnnxModel(builder->getModelProto());
  std::vector<std::string> names;
  for (const auto& [id, op] : m.graph->ops()) names.push_back(op->name);
  EXPECT_EQ(names, (std::vector<std::string>{"enc/layer0/fc", "enc/Relu", "out"}));
}

TEST(Builder, ShapeAndTypeOfOpOutputs) {
  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  const TensorId x = builder->addInputTensor(TensorInfo("FLOAT", {2, 3}), "x");
  const TensorId w = builder->addInitializedInputTensor(floats({3, 4}), "w");
  const TensorId y = onnx.matmul({x, w});
  EXPECT_EQ(builder->getTensorShape(y), (Shape{2, 4}));
  EXPECT_EQ(builder->getTensorDataType(y), DataType::FLOAT);
  EXPECT_EQ(builder->getTensorShape(x), (Shape{2, 3}));
  EXPECT_EQ(builder->getTensorShape(w), (Shape{3, 4}));
  // The cache follows the model as it grows.
  const TensorId shape = onnx.constant(ConstVoidData::fromVector<int64_t>({2}, {4, 2}), "shape");
  const TensorId r = onnx.reshape({y, shape});
  EXPECT_EQ(builder->getTensorShape(r), (Shape{4, 2}));
  EXPECT_EQ(builder->getTensorInfo(shape), TensorInfo("INT64", {2}));
  const TensorId c = onnx.cast({r}, "INT32");
  EXPECT_EQ(builder->getTensorDataType(c), DataType::INT32);
  expectError([&] { builder->getTensorShape("nope"); }, {"'nope'", "not a tensor"});

  const TensorId img = builder->addInputTensor(TensorInfo("FLOAT", {1, 2, 4, 4}), "img");
  const auto mp = onnx.maxpool({img}, 2, {2, 2}, 0, {}, {}, 0, {2, 2});
  EXPECT_EQ(builder->getTensorInfo(mp.at(0)), TensorInfo("FLOAT", {1, 2, 2, 2}));
  EXPECT_EQ(builder->getTensorInfo(mp.at(1)), TensorInfo("INT64", {1, 2, 2, 2}));

  const TensorId bad = onnx.add({x, w}, "bad_add");
  expectError([&] { builder->getTensorShape(bad); }, {"bad_add:0", "Add 'bad_add'"});
}

// ONNX's auto_pad, the last argument of conv, maxpool and averagepool: SAME gives ceil(in / stride)
// outputs even for a kernel wider than the input, VALID pads nothing; an unknown value is refused.
TEST(Builder, WindowOpsTakeAutoPad) {
  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  const TensorId img = builder->addInputTensor(TensorInfo("FLOAT", {1, 1, 3, 5}), "img");
  const TensorId same = onnx.averagepool({img}, {5, 5}, 0, 0, {}, {3, 2}, "same", "SAME_UPPER");
  EXPECT_EQ(builder->getTensorShape(same), (Shape{1, 1, 1, 3}));
  const TensorId valid =
      onnx.maxpool({img}, 1, {2, 2}, 0, {}, {}, 0, {1, 1}, "valid", "VALID").at(0);
  EXPECT_EQ(builder->getTensorShape(valid), (Shape{1, 1, 2, 4}));
  const TensorId w = builder->addInitializedInputTensor(floats({2, 1, 3, 3}), "w");
  const TensorId conv = onnx.conv({img, w}, {}, 1, {}, {}, {2, 2}, "conv", "SAME_LOWER");
  EXPECT_EQ(builder->getTensorShape(conv), (Shape{1, 2, 2, 3}));
  // Without auto_pad the 5-wide kernel over 3 elements has no output, as before.
  expectError(
      [&] {
        onnx.averagepool({img}, {5, 5}, 0, 0, {}, {1, 1});
      },
      {"invalid spatial output shape"});
  expectError(
      [&] {
        onnx.maxpool({img}, 1, {2, 2}, 0, {}, {}, 0, {}, "", "SAME");
      },
      {"maxpool", "'SAME'", "SAME_UPPER"});
}

TEST(Builder, ErrorsNameTheOpAndTensor) {
  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  const TensorId x = builder->addInputTensor(TensorInfo("FLOAT", {2}), "x");
  expectError([&] { onnx.add({x, "ghost"}, "plus"); }, {"Add 'plus'", "input 1", "'ghost'"});
  expectError([&] { onnx.add({x}); }, {"add", "2 input tensors", "got 1"});
  expectError([&] { onnx.concat({}, 0); }, {"concat", "at least 1 input tensors", "got 0"});
  expectError([&] { onnx.cast({x}, "NOT_A_TYPE"); }, {"NOT_A_TYPE"});
  expectError([&] { builder->aiOnnxOpset11(); }, {"ai.onnx opset 13", "asked for opset 11"});
  expectError([&] { builder->addOutputTensor("ghost"); }, {"'ghost'"});
  builder->addOutputTensor(x);
  expectError([&] { builder->addOutputTensor(x); }, {"'x'", "already an output"});
  expectError([&] { builder->embedReplicationFactor(0); }, {"replication factor"});
  expectError([&] { onnx.unsqueeze({x}); }, {"unsqueeze", "axes"});
  expectError([&] { onnx.split({x}, 2, 0, {1, 1, 1}); }, {"split", "num_outputs 2"});
  expectError([&] { builder->saveModelProto("/nonexistent/dir/m.onnx"); },
              {"/nonexistent/dir/m.onnx", "cannot"});
}

// Builds one model with every Builder op in ai.onnx opset `version` (+ ai.graphcore), checks each
// output's inferred shape, then runs the ONNX checker on the result: the node forms must be right
// for the version.
// `onnx` is the opset object of `version`; o12 and o17 the same object when it has their methods.
void buildEveryOp(Builder& b, AiOnnxOpset11& onnx, AiOnnxOpset12* o12, AiOnnxOpset17* o17,
                  int version) {
  auto gc = b.aiGraphcoreOpset1();
  const TensorId x = b.addInputTensor(TensorInfo("FLOAT", {2, 3, 4}), "x");
  const TensorId w = b.addInitializedInputTensor(floats({4, 5}), "w");
  const TensorId img = b.addInputTensor(TensorInfo("FLOAT", {2, 3, 4, 4}), "img");
  std::vector<std::pair<TensorId, TensorInfo>> expect;
  auto check = [&](const TensorId& id, const std::string& type, const Shape& shape) {
    expect.emplace_back(id, TensorInfo(type, shape));
    b.addOutputTensor(id);
  };
  const Shape xs{2, 3, 4};
  check(onnx.matmul({x, w}), "FLOAT", {2, 3, 5});
  check(onnx.add({x, x}), "FLOAT", xs);
  check(onnx.sub({x, x}), "FLOAT", xs);
  check(onnx.mul({x, x}), "FLOAT", xs);
  check(onnx.div({x, x}), "FLOAT", xs);
  check(onnx.pow({x, x}), "FLOAT", xs);
  check(onnx.sum({x, x, x}), "FLOAT", xs);
  check(onnx.neg({x}), "FLOAT", xs);
  check(onnx.exp({x}), "FLOAT", xs);
  check(onnx.log({x}), "FLOAT", xs);
  check(onnx.sqrt({x}), "FLOAT", xs);
  check(onnx.relu({x}), "FLOAT", xs);
  check(onnx.sigmoid({x}), "FLOAT", xs);
  check(onnx.tanh({x}), "FLOAT", xs);
  check(onnx.identity({x}), "FLOAT", xs);
  check(onnx.cast({x}, "INT32"), "INT32", xs);
  check(onnx.softmax({x}), "FLOAT", xs);
  check(onnx.softmax({x}, 1), "FLOAT", xs);
  check(onnx.logsoftmax({x}, -1), "FLOAT", xs);
  const TensorId a = b.addInputTensor(TensorInfo("FLOAT", {3, 4}), "a");
  const TensorId bias = b.addInitializedInputTensor(floats({5}), "bias");
  check(onnx.gemm({a, w, bias}), "FLOAT", {3, 5});
  const TensorId wt = b.addInitializedInputTensor(floats({5, 4}), "wt");
  check(onnx.gemm({a, wt}, 0.5f, 1.0f, 0, 1), "FLOAT", {3, 5});
  const TensorId shape = onnx.constant(ConstVoidData::fromVector<int64_t>({2}, {6, 4}), "shape");
  check(onnx.reshape({x, shape}), "FLOAT", {6, 4});
  check(onnx.flatten({x}, 2), "FLOAT", {6, 4});
  check(onnx.transpose({x}, {2, 0, 1}), "FLOAT", {4, 2, 3});
  check(onnx.transpose({x}), "FLOAT", {4, 3, 2});
  check(onnx.concat({x, x}, 1), "FLOAT", {2, 6, 4});
  const auto parts = onnx.split({x}, 2, 2, {1, 3});
  check(parts.at(0), "FLOAT", {2, 3, 1});
  check(parts.at(1), "FLOAT", {2, 3, 3});
  const auto halves = onnx.split({x}, 2, -1);
  check(halves.at(1), "FLOAT", {2, 3, 2});
  check(onnx.slice({x}, {0, 1}, {2, 3}, {1, 2}), "FLOAT",
        {
            2,
            2,
            2,
        });
  check(onnx.slice({x}, {0}, {4}, {}, {2}), "FLOAT", {1, 3, 4});
  const TensorId starts = onnx.constant(ConstVoidData::fromVector<int64_t>({1}, {1}), "st");
  const TensorId ends = onnx.constant(ConstVoidData::fromVector<int64_t>({1}, {3}), "en");
  const TensorId axes = onnx.constant(ConstVoidData::fromVector<int64_t>({1}, {1}), "ax");
  check(onnx.slice({x, starts, ends, axes}), "FLOAT", {2, 2, 4});
  const TensorId u = onnx.unsqueeze({x}, {0, 4});
  check(u, "FLOAT", {1, 2, 3, 4, 1});
  check(onnx.squeeze({u}, {0}), "FLOAT", {2, 3, 4, 1});
  check(onnx.squeeze({u}), "FLOAT", xs);
  const TensorId idx = onnx.constant(ConstVoidData::fromVector<int64_t>({2}, {0, 2}), "idx");
  check(onnx.gather({x, idx}, 1), "FLOAT", {2, 2, 4});
  check(onnx.reducesum({x}, {1}, 0), "FLOAT", {2, 4});
  check(onnx.reducesum({x}), "FLOAT", {1, 1, 1});
  check(onnx.reducemean({x}, {2}), "FLOAT", {2, 3, 1});
  check(onnx.reducemean({x}, {0, 1}, 0), "FLOAT", {4});
  const TensorId scale = b.addInitializedInputTensor(floats({3}, 1.0f), "bn_scale");
  const TensorId shift = b.addInitializedInputTensor(floats({3}, 0.0f), "bn_bias");
  const TensorId mean = b.addInitializedInputTensor(floats({3}, 0.0f), "bn_mean");
  const TensorId var = b.addInitializedInputTensor(floats({3}, 1.0f), "bn_var");
  check(onnx.batchnormalization({img, scale, shift, mean, var})[0], "FLOAT", {2, 3, 4, 4});
  const auto bnTrain =
      onnx.batchnormalization({img, scale, shift, mean, var}, version >= 14 ? 3 : 5, 1e-5f, 0.9f);
  check(bnTrain.at(0), "FLOAT", {2, 3, 4, 4});
  // ONNX infers the running mean/var only for BatchNormalization-14+.
  if (version >= 14) check(bnTrain.at(1), "FLOAT", {3});
  const TensorId filt = b.addInitializedInputTensor(floats({6, 3, 3, 3}), "filt");
  check(onnx.conv({img, filt}, {}, 1, {3, 3}, {1, 1, 1, 1}), "FLOAT", {2, 6, 4, 4});
  check(onnx.conv({img, filt}, {1, 1}, 1, {}, {}, {2, 2}), "FLOAT", {2, 6, 1, 1});
  // (xtrain's MaxPool has no Indices output; ShapeAndTypeOfOpOutputs checks the two-output form.)
  check(onnx.maxpool({img}, 1, {2, 2}, 0, {}, {}, 0, {2, 2}).at(0), "FLOAT", {2, 3, 2, 2});
  check(onnx.averagepool({img}, {2, 2}, 0, 0, {}, {2, 2}), "FLOAT", {2, 3, 2, 2});
  check(onnx.globalaveragepool({img}), "FLOAT", {2, 3, 1, 1});
  const auto drop = onnx.dropout({x}, 2, 0.1f);
  check(drop.at(0), "FLOAT", xs);
  check(drop.at(1), "BOOL", xs);
  check(onnx.constant(ConstVoidData::fromVector<int32_t>({}, {3})), "INT32", {});
  const TensorId scores = b.addInputTensor(TensorInfo("FLOAT", {3, 5}), "scores");
  const TensorId labels64 = b.addInputTensor(TensorInfo("INT64", {3}), "labels64");
  if (o12) {
    const auto sce = o12->softmaxcrossentropyloss({scores, labels64}, 2, -1);
    check(sce.at(0), "FLOAT", {});
    check(sce.at(1), "FLOAT", {3, 5});
    check(o12->softmaxcrossentropyloss({scores, labels64}, 1, std::nullopt, "none").at(0), "FLOAT",
          {3});
  }
  if (o17) {
    const TensorId g = b.addInitializedInputTensor(floats({4}, 1.0f), "ln_g");
    const TensorId be = b.addInitializedInputTensor(floats({4}, 0.0f), "ln_b");
    check(o17->layernormalization({x, g, be}).at(0), "FLOAT", xs);
  }
  // ai.graphcore.
  const TensorId labels = b.addInputTensor(TensorInfo("INT32", {3}), "labels");
  check(gc.identityloss({x}), "FLOAT", {});
  check(gc.identityloss({x}, ReductionType::NoReduction), "FLOAT", xs);
  check(gc.nllloss({scores, labels}, ReductionType::Sum, -100, true), "FLOAT", {});
  check(gc.nllloss({scores, labels}, ReductionType::NoReduction), "FLOAT", {3});
  check(gc.l1loss({x}, 0.1f, ReductionType::Sum), "FLOAT", {});
  check(gc.gelu({x}), "FLOAT", xs);

  for (const auto& [id, info] : expect) {
    EXPECT_EQ(b.getTensorInfo(id), info) << id << " in opset " << version;
  }
  try {
    ir::checkOnnxModel(b.getModelProto());
  } catch (const error& e) {
    ADD_FAILURE() << "opset " << version << ": " << e.what();
  }

  // The IR's ops must agree with ONNX shape inference (once colleagues have registered them all).
  const std::vector<std::string> onnxOps = {"MatMul",
                                            "Add",
                                            "Sub",
                                            "Mul",
                                            "Div",
                                            "Pow",
                                            "Sum",
                                            "Neg",
                                            "Exp",
                                            "Log",
                                            "Sqrt",
                                            "Relu",
                                            "Sigmoid",
                                            "Tanh",
                                            "Identity",
                                            "Cast",
                                            "Softmax",
                                            "LogSoftmax",
                                            "Gemm",
                                            "Reshape",
                                            "Flatten",
                                            "Transpose",
                                            "Concat",
                                            "Split",
                                            "Slice",
                                            "Unsqueeze",
                                            "Squeeze",
                                            "Gather",
                                            "ReduceSum",
                                            "ReduceMean",
                                            "BatchNormalization",
                                            "Conv",
                                            "MaxPool",
                                            "AveragePool",
                                            "GlobalAveragePool",
                                            "Dropout",
                                            "SoftmaxCrossEntropyLoss",
                                            "LayerNormalization"};
  for (const auto& type : onnxOps) {
    if (!ir::OpRegistry::instance().find(ir::kOnnxDomain, type)) return;
  }
  for (const auto& type : {"IdentityLoss", "Nll", "L1", "Gelu"}) {
    if (!ir::OpRegistry::instance().find(ir::kGraphcoreDomain, type)) return;
  }
  try {
    ir::OnnxModel m = ir::importOnnxModel(b.getModelProto());
    EXPECT_EQ(m.graph->onnxOpset(), version);
    for (const auto& [id, info] : expect) {
      EXPECT_EQ(m.graph->tensor(id).info, info) << id << " imported in opset " << version;
    }
  } catch (const error& e) {
    ADD_FAILURE() << "importing the opset " << version << " model: " << e.what();
  }
}

class BuilderOpset : public ::testing::TestWithParam<int> {};

TEST_P(BuilderOpset, EveryOpHasTheVersionsFormAndShape) {
  const int v = GetParam();
  auto b = Builder::create();
  switch (v) {
    case 11: {
      auto o = b->aiOnnxOpset11();
      buildEveryOp(*b, o, nullptr, nullptr, v);
      break;
    }
    case 12: {
      auto o = b->aiOnnxOpset12();
      buildEveryOp(*b, o, &o, nullptr, v);
      break;
    }
    case 13: {
      auto o = b->aiOnnxOpset13();
      buildEveryOp(*b, o, &o, nullptr, v);
      break;
    }
    case 14: {
      auto o = b->aiOnnxOpset14();
      buildEveryOp(*b, o, &o, nullptr, v);
      break;
    }
    case 15: {
      auto o = b->aiOnnxOpset15();
      buildEveryOp(*b, o, &o, nullptr, v);
      break;
    }
    case 16: {
      auto o = b->aiOnnxOpset16();
      buildEveryOp(*b, o, &o, nullptr, v);
      break;
    }
    case 17: {
      auto o = b->aiOnnxOpset17();
      buildEveryOp(*b, o, &o, &o, v);
      break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Supported, BuilderOpset, ::testing::Range(11, 18));

TEST(Builder, MetadataReplicationFactorAndVariableSettings) {
  auto builder = Builder::create();
  builder->aiOnnxOpset13();
  builder->setGraphName("mlp");
  builder->embedReplicationFactor(8);
  const TensorId w = builder->addInitializedInputTensor(
      floats({4, 2, 3}), VariableSettings(CommGroup(CommGroupType::Orthogonal, 2)), "w");
  builder->addOutputTensor(w);
  ir::OnnxModel m = ir::importOnnxModel(builder->getModelProto());  // no ops: needs no registry
  EXPECT_EQ(ir::readReplicationFactor(m.metadata), 8);
  auto s = ir::readVariableSettings(m.metadata, w);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, VariableSettings(CommGroup(CommGroupType::Orthogonal, 2),
                                 VariableRetrievalMode::OnePerGroup));
  EXPECT_EQ(m.graph->tensor(w).kind, ir::TensorKind::Variable);
  EXPECT_EQ(m.graph->tensor(w).info, TensorInfo("FLOAT", {4, 2, 3}));
}

TEST(Builder, SaveAndContinueFromModel) {
  const fs::path path =
      fs::temp_directory_path() / ("xtrain_builder_" + std::to_string(::getpid()) + ".onnx");
  {
    auto builder = Builder::create();
    auto onnx = builder->aiOnnxOpset13();
    const TensorId x = builder->addInputTensor(TensorInfo("FLOAT", {2}), "x");
    builder->addOutputTensor(onnx.add({x, x}, "twice"));
    builder->saveModelProto(path.string());
  }
  auto builder = Builder::createFromOnnxModel(path.string());
  fs::remove(path);
  auto onnx = builder->aiOnnxOpset13();
  EXPECT_EQ(builder->getInputTensorIds(), std::vector<TensorId>{"x"});
  EXPECT_EQ(builder->getOutputTensorIds(), std::vector<TensorId>{"twice:0"});
  const TensorId y = onnx.mul({"twice:0", "x"}, "twice");
  EXPECT_EQ(y, "twice:0/1");
  EXPECT_EQ(builder->getTensorShape(y), (Shape{2}));
  expectError([&] { builder->aiOnnxOpset17(); }, {"opset 13", "17"});
  expectError([&] { Builder::createFromOnnxModel("garbage"); }, {"is not an ONNX model"});
}

TEST(Builder, ConstVoidDataOwnsCopies) {
  ConstVoidData c = ConstVoidData::fromVector<float>({2}, {1.0f, 2.0f});
  ConstVoidData copy = c;
  c = ConstVoidData();
  ASSERT_NE(copy.data, nullptr);
  EXPECT_EQ(static_cast<const float*>(copy.data)[1], 2.0f);
  expectError([] { ConstVoidData::fromVector<float>({3}, {1.0f}); }, {"1 values", "[3]"});
  auto builder = Builder::create();
  expectError(
      [&] { builder->addInitializedInputTensor(ConstVoidData(nullptr, TensorInfo("FLOAT", {2}))); },
      {"no data"});
}

}  // namespace
}  // namespace xtrain
