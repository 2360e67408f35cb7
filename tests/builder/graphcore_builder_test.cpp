// AiGraphcoreOpset1's utility ops: the nodes the Builder writes (op type, domain, attributes), ONNX
// shape inference through them, the ONNX checker, import into the IR, and one model run end to end.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/onnx/onnx_import.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"
#include "session/lowered_graph.hpp"
#include "testing/error_testing.hpp"
#include "xtrain/application_error.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain {
namespace {

using xtrain::testing::expectError;

onnx::ModelProto parse(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  return m;
}

const onnx::NodeProto* findNode(const onnx::ModelProto& m, const std::string& type) {
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == type) return &n;
  }
  ADD_FAILURE() << "no " << type << " node";
  return nullptr;
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

TEST(GraphcoreBuilder, EveryUtilityOpInfersChecksAndImports) {
  auto b = Builder::create();
  b->aiOnnxOpset13();
  auto gc = b->aiGraphcoreOpset1();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", {2, 3, 4}), "x");
  const TensorId y = b->addInputTensor(TensorInfo("FLOAT", {3, 1}), "y");
  const TensorId off =
      b->addInitializedInputTensor(ConstVoidData::fromVector<int32_t>({2}, {1, 2}), "offset");
  const TensorId s = b->addInputTensor(TensorInfo("FLOAT", {1, 3, 2}), "s");
  std::vector<std::pair<TensorId, TensorInfo>> expect;
  auto check = [&](const TensorId& id, const std::string& type, const Shape& shape) {
    expect.emplace_back(id, TensorInfo(type, shape));
    b->addOutputTensor(id);
  };
  const Shape xs{2, 3, 4};
  check(gc.detach({x}), "FLOAT", xs);
  check(gc.nop({x}), "FLOAT", xs);
  check(gc.scale({x}, 2.0f), "FLOAT", xs);
  check(gc.scaledadd({x, y}, 0.5f, 2.0f), "FLOAT", xs);
  check(gc.dynamicslice({x, off}, {0, 2}, {1, 2}, 1), "FLOAT", {1, 3, 2});
  check(gc.dynamicupdate({x, off, s}, {0, 2}, {1, 2}), "FLOAT", xs);
  check(gc.dynamiczero({x, off}, {0, 2}, {1, 2}), "FLOAT", xs);
  check(gc.dynamicadd({x, off, s}, {0, 2}, {1, 2}), "FLOAT", xs);
  check(
      gc.init({4, 2}, static_cast<int64_t>(DataType::FLOAT), static_cast<int64_t>(InitType::Zero)),
      "FLOAT", {4, 2});
  check(gc.init({3}, static_cast<int64_t>(DataType::INT64), 0, 0), "INT64", {3});
  check(gc.printtensor({x}, 0, "p", "x values"), "FLOAT", xs);
  check(gc.remainder({x, y}), "FLOAT", xs);
  check(gc.fmod({x, y}), "FLOAT", xs);
  const TensorId xi = b->addInputTensor(TensorInfo("INT32", {5}), "xi");
  check(gc.remainder({xi, xi}), "INT32", {5});
  check(gc.reverse({x}, {0, 1}), "FLOAT", xs);
  check(gc.round({x}), "FLOAT", xs);
  const TensorId cond = b->addInputTensor(TensorInfo("BOOL", {}), "cond");
  gc.abort({cond}, "maybe_abort");

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

  // The node forms: PopART's op types and attribute names.
  const onnx::ModelProto m = parse(proto);
  const auto* ds = findNode(m, "DynamicSlice");
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->domain(), "ai.graphcore");
  EXPECT_EQ(attr(*ds, "noOverlap")->i(), 1);
  EXPECT_EQ(attr(*ds, "axes")->ints_size(), 2);
  const auto* sa = findNode(m, "ScaledAdd");
  ASSERT_NE(sa, nullptr);
  EXPECT_FLOAT_EQ(attr(*sa, "scale1")->f(), 2.0f);
  const auto* pt = findNode(m, "PrintTensor");
  ASSERT_NE(pt, nullptr);
  EXPECT_EQ(attr(*pt, "title")->s(), "x values");
  EXPECT_EQ(attr(*pt, "print_gradient")->i(), 0);
  EXPECT_EQ(attr(*pt, "separator")->s(), " ");
  const auto* ab = findNode(m, "Abort");
  ASSERT_NE(ab, nullptr);
  EXPECT_EQ(ab->output_size(), 0);
  EXPECT_EQ(ab->name(), "maybe_abort");
  const auto* in = findNode(m, "Init");
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->input_size(), 0);
  EXPECT_EQ(attr(*in, "data_type")->i(), static_cast<int64_t>(DataType::FLOAT));
  EXPECT_EQ(attr(*in, "init_type")->i(), 1);
  EXPECT_EQ(attr(*in, "batch_axis"), nullptr);
  EXPECT_EQ(attr(*findNode(m, "Reverse"), "dimensions")->ints_size(), 2);
}

TEST(GraphcoreBuilder, GroupNormalizationNodeForm) {
  auto b = Builder::create();
  auto gc = b->aiGraphcoreOpset1();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", {2, 6, 5}), "x");
  const TensorId scale = b->addInitializedInputTensor(
      ConstVoidData::fromVector<float>({6}, std::vector<float>(6, 1.0f)), "scale");
  const TensorId bias = b->addInitializedInputTensor(
      ConstVoidData::fromVector<float>({6}, std::vector<float>(6, 0.0f)), "bias");
  const auto outs = gc.groupnormalization({x, scale, bias}, 3, 1e-3f, "gn");
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0], "gn:0");
  EXPECT_EQ(b->getTensorInfo(outs[0]), TensorInfo("FLOAT", {2, 6, 5}));
  EXPECT_EQ(b->getTensorInfo(outs[1]), TensorInfo("FLOAT", {6}));
  EXPECT_EQ(b->getTensorInfo(outs[2]), TensorInfo("FLOAT", {6}));
  for (const auto& o : outs) b->addOutputTensor(o);
  const std::string proto = b->getModelProto();
  try {
    ir::checkOnnxModel(proto);
  } catch (const error& e) {
    ADD_FAILURE() << "checker: " << e.what();
  }
  const onnx::ModelProto m = parse(proto);
  const auto* n = findNode(m, "GroupNormalization");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->domain(), "ai.graphcore");
  ASSERT_EQ(n->input_size(), 3);
  EXPECT_EQ(n->input(0), x);
  EXPECT_EQ(n->input(1), scale);
  EXPECT_EQ(n->input(2), bias);
  EXPECT_EQ(n->output_size(), 3);
  EXPECT_EQ(attr(*n, "num_groups")->i(), 3);
  EXPECT_FLOAT_EQ(attr(*n, "epsilon")->f(), 1e-3f);
  EXPECT_EQ(n->attribute_size(), 2);
  // epsilon defaults to PopART's 1e-5.
  gc.groupnormalization({x, scale, bias}, 2, 1e-5f, "gn_default");
  const onnx::ModelProto m2 = parse(b->getModelProto());
  const onnx::NodeProto& n2 = m2.graph().node(m2.graph().node_size() - 1);
  EXPECT_EQ(n2.name(), "gn_default");
  EXPECT_FLOAT_EQ(attr(n2, "epsilon")->f(), 1e-5f);
  expectError(
      [&] {
        gc.groupnormalization({x, scale, bias}, 0);
      },
      {"groupnormalization", "num_groups"});
  expectError([&] { gc.groupnormalization({x, scale}, 2); }, {"groupnormalization"});
}

TEST(GraphcoreBuilder, MethodErrors) {
  auto b = Builder::create();
  auto gc = b->aiGraphcoreOpset1();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", {4}), "x");
  const TensorId off = b->addInputTensor(TensorInfo("INT32", {1}), "off");
  expectError([&] { gc.dynamicslice({x, off}, {0}, {}); }, {"dynamicslice", "one size per axis"});
  expectError([&] { gc.dynamicslice({x}, {0}, {1}); }, {"dynamicslice"});
  expectError([&] { gc.dynamicupdate({x, off}, {0}, {1}); }, {"dynamicupdate"});
  expectError([&] { gc.init({2}, 99, 1); }, {"init", "data_type 99"});
  expectError([&] { gc.init({2}, 9, 2); }, {"init", "init_type 2"});
  expectError([&] { gc.printtensor({x}, 1, "", "", 1000, 3, 75, 8, 9); },
              {"printtensor", "floatFormat 9"});
  expectError([&] { gc.scaledadd({x}); }, {"scaledadd"});
  expectError([&] { gc.abort({x, x}); }, {"abort"});
  expectError([&] { gc.remainder({x}); }, {"remainder"});
}

// PopART's own Builder writes Init with a tensor_type attribute as well: such a node checks and
// imports.
TEST(GraphcoreBuilder, PopartStyleInitNodeImports) {
  auto b = Builder::create();
  b->aiGraphcoreOpset1();
  const auto outs = b->customOp("Init", 1, "ai.graphcore", {},
                                {{"shape", std::vector<int64_t>{2, 2}},
                                 {"data_type", static_cast<int64_t>(DataType::FLOAT16)},
                                 {"tensor_type", int64_t{0}},
                                 {"init_type", static_cast<int64_t>(InitType::NoInit)},
                                 {"batch_axis", int64_t{0}}});
  b->addOutputTensor(outs.at(0));
  EXPECT_EQ(b->getTensorInfo(outs[0]), TensorInfo("FLOAT16", {2, 2}));
  const std::string proto = b->getModelProto();
  ir::checkOnnxModel(proto);
  ir::OnnxModel m = ir::importOnnxModel(proto);
  EXPECT_EQ(m.graph->tensor(outs[0]).info, TensorInfo("FLOAT16", {2, 2}));
}

// A Builder model with the ops imports and runs: values checked against a hand computation.
TEST(GraphcoreBuilder, ModelRunsEndToEnd) {
  auto b = Builder::create();
  auto gc = b->aiGraphcoreOpset1();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", {3, 4}), "x");
  const TensorId off =
      b->addInitializedInputTensor(ConstVoidData::fromVector<int64_t>({1}, {1}), "off");
  const TensorId sl = gc.dynamicslice({x, off}, {0}, {2});        // rows 1..2
  const TensorId sc = gc.scale({sl}, -2.0f);                      // * -2
  const TensorId rv = gc.reverse({sc}, {1});                      // columns reversed
  const TensorId rm = gc.remainder({rv, gc.init({2, 4}, 9, 1)});  // x % 0 = NaN
  const TensorId rd = gc.round({gc.nop({gc.detach({rv})})});
  b->addOutputTensor(rv);
  b->addOutputTensor(rm);
  b->addOutputTensor(rd);
  ir::OnnxModel m = ir::importOnnxModel(b->getModelProto());
  session::LoweredGraph lowered(*m.graph);
  auto buffers = lowered.makeBuffers();
  HostTensor& xin = buffers[static_cast<size_t>(lowered.bufferIndex(x))];
  for (int64_t i = 0; i < 12; ++i) xin.setFromDouble(i, 0.3 * static_cast<double>(i));
  lowered.run(ir::Phase::Forward, buffers, 1);
  const HostTensor& out = buffers[static_cast<size_t>(lowered.bufferIndex(rv))];
  const HostTensor& rem = buffers[static_cast<size_t>(lowered.bufferIndex(rm))];
  const HostTensor& rnd = buffers[static_cast<size_t>(lowered.bufferIndex(rd))];
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      const double v = -2.0 * 0.3 * static_cast<double>((r + 1) * 4 + (3 - c));
      EXPECT_NEAR(out.getAsDouble(r * 4 + c), v, 1e-5);
      EXPECT_TRUE(std::isnan(rem.getAsDouble(r * 4 + c)));
      EXPECT_EQ(rnd.getAsDouble(r * 4 + c), std::nearbyint(static_cast<float>(v)));
    }
  }
}

// One SGD step of a TrainingSession through DynamicSlice, Scale, Reverse, PrintTensor, Detach and
// ScaledAdd: w moves by -lr * dloss/dw, computed here by hand.
TEST(GraphcoreBuilder, TrainsThroughTheOps) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  auto gc = b->aiGraphcoreOpset1();
  std::vector<float> w0(12);
  for (size_t i = 0; i < w0.size(); ++i) w0[i] = 0.1f * static_cast<float>(i) - 0.4f;
  const TensorId w =
      b->addInitializedInputTensor(ConstVoidData::fromVector<float>({4, 3}, w0), "w");
  const TensorId off =
      b->addInitializedInputTensor(ConstVoidData::fromVector<int32_t>({1}, {1}), "off");
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", {2, 3}), "x");
  const TensorId s = gc.dynamicslice({w, off}, {0}, {2});  // rows 1, 2
  const TensorId u = gc.printtensor({gc.reverse({gc.scale({s}, 2.0f)}, {1})}, 0);
  const TensorId frozen = gc.dynamicslice({gc.detach({w}), off}, {0}, {2});
  const TensorId sum = gc.scaledadd({u, frozen}, 1.0f, 3.0f);
  const TensorId loss = gc.identityloss({onnx.mul({sum, x})}, ReductionType::Sum);
  b->addOutputTensor(loss);

  const float lr = 0.1f;
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto session = TrainingSession::createFromOnnxModel(b->getModelProto(), DataFlow(1), loss,
                                                      ConstSGD(lr), device);
  session->prepareDevice();
  session->weightsFromHost();
  std::vector<float> xv = {1.0f, -2.0f, 0.5f, 3.0f, 0.25f, -1.0f};
  NDArrayWrapper<float> xa(xv.data(), Shape{2, 3});
  StepIO io({{x, xa}}, {});
  session->run(io);
  session->weightsToHost();
  std::vector<float> w1(12);
  WeightsIO wio;
  wio.insert(w, {w1.data(), TensorInfo(DataType::FLOAT, {4, 3})});
  session->readWeights(wio);
  // dloss/dw[r][c] = 2 * x[r-1][2-c] for rows 1 and 2 (the detached path adds nothing), else 0.
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 3; ++c) {
      const double g =
          (r == 1 || r == 2) ? 2.0 * xv[static_cast<size_t>((r - 1) * 3 + (2 - c))] : 0.0;
      EXPECT_NEAR(w1[static_cast<size_t>(r * 3 + c)], w0[static_cast<size_t>(r * 3 + c)] - lr * g,
                  1e-5)
          << r << "," << c;
    }
  }
}

// An unconditional Abort (no inputs, no outputs, as PopART's Builder writes it) passes ONNX's
// checker, which refuses such nodes since ONNX 1.13, and fails the run that reaches it.
TEST(GraphcoreBuilder, AnUnconditionalAbortImportsAndStopsTheRun) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  const TensorId t =
      b->addInitializedInputTensor(ConstVoidData::fromVector<float>({3}, {1.0f, -2.0f, 3.0f}), "t");
  const TensorId o = onnx.abs({t});
  b->aiGraphcoreOpset1().abort({});
  b->addOutputTensor(o);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice({});
  auto session = InferenceSession::createFromOnnxModel(
      b->getModelProto(), DataFlow(1, std::vector<TensorId>{o}), device);
  session->prepareDevice();
  std::vector<float> out(3);
  NDArrayWrapper<float> oa(out.data(), Shape{3});
  StepIO io({}, {{o, oa}});
  expectError([&] { session->run(io); }, {"Abort", "aborted"});
  EXPECT_THROW(session->run(io), application_runtime_error);
}

}  // namespace
}  // namespace xtrain
