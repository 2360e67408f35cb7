// Builder::customOp with PopART's two signatures (docs/custom-ops.md): the Python order (opName,
// opVersion, domain, inputs, attributes, numOutputs, name) and the C++ form (OperatorIdentifier,
// opsetVersion, ...), both writing the same node; the attribute values a popart::any may hold, each
// to its ONNX attribute kind; and the values refused, before the node is added.
#include <gtest/gtest.h>

#include <any>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ir/onnx/onnx_proto_utils.hpp"
#include "testing/error_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain {
namespace {

using xtrain::testing::expectError;

onnx::ModelProto parse(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  return m;
}

const onnx::AttributeProto& attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a;
  }
  ADD_FAILURE() << "no attribute " << name;
  static const onnx::AttributeProto none;
  return none;
}

int64_t opsetOf(const onnx::ModelProto& m, const std::string& domain) {
  for (const auto& o : m.opset_import()) {
    if (o.domain() == domain) return o.version();
  }
  return -1;
}

TEST(CustomOpSignature, PythonOrderWritesTheNode) {
  auto b = Builder::create();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  // PopART: builder.customOp(opName, opVersion, domain, inputs, attributes, numOutputs, name).
  const auto outs = b->customOp("LeakyCube", 3, "com.acme", {x}, {{"alpha", 0.25f}}, 2, "cube");
  ASSERT_EQ(outs.size(), 2u);
  const onnx::ModelProto m = parse(b->getModelProto());
  ASSERT_EQ(m.graph().node_size(), 1);
  const onnx::NodeProto& n = m.graph().node(0);
  EXPECT_EQ(n.op_type(), "LeakyCube");
  EXPECT_EQ(n.domain(), "com.acme");
  EXPECT_EQ(n.input_size(), 1);
  EXPECT_EQ(n.input(0), x);
  EXPECT_EQ(n.output_size(), 2);
  EXPECT_NE(n.name().find("cube"), std::string::npos) << n.name();
  EXPECT_EQ(opsetOf(m, "com.acme"), 3);
  EXPECT_EQ(attr(n, "alpha").type(), onnx::AttributeProto::FLOAT);
  EXPECT_EQ(attr(n, "alpha").f(), 0.25f);
  // numOutputs and name have PopART's defaults (1, "").
  auto b2 = Builder::create();
  const TensorId x2 = b2->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  EXPECT_EQ(b2->customOp("LeakyCube", 1, "com.acme", {x2}, {}).size(), 1u);
}

TEST(CustomOpSignature, CppFormWritesTheSameNode) {
  auto python = Builder::create();
  auto cpp = Builder::create();
  const TensorId x1 = python->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  const TensorId x2 = cpp->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  const std::map<std::string, any> attributes{{"alpha", 0.5f}, {"mode", std::string("fast")}};
  python->customOp("LeakyCube", 2, "com.acme", {x1}, attributes, 1, "n");
  // PopART's C++ Builder: the OperatorIdentifier's version is not written; opsetVersion is.
  cpp->customOp(OperatorIdentifier("com.acme", "LeakyCube", 7), 2, {x2}, 1, attributes, "n");
  EXPECT_EQ(parse(python->getModelProto()).graph().SerializeAsString(),
            parse(cpp->getModelProto()).graph().SerializeAsString());
  EXPECT_EQ(opsetOf(parse(cpp->getModelProto()), "com.acme"), 2);
}

TEST(CustomOpSignature, CppFormWithOutputIds) {
  auto b = Builder::create();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  b->customOp(OperatorIdentifier("com.acme", "Split2"), 1, {x}, {"low", "high"},
              {{"axis", int64_t{0}}}, "split");
  const onnx::ModelProto m = parse(b->getModelProto());
  ASSERT_EQ(m.graph().node_size(), 1);
  const onnx::NodeProto& n = m.graph().node(0);
  ASSERT_EQ(n.output_size(), 2);
  EXPECT_EQ(n.output(0), "low");
  EXPECT_EQ(n.output(1), "high");
  EXPECT_EQ(attr(n, "axis").i(), 0);
  // The ids can be used as inputs of later nodes; taken or empty ids are refused.
  b->customOp(OperatorIdentifier("com.acme", "Join"), 1, {"low", "high"}, {"joined"}, {});
  expectError([&] { b->customOp(OperatorIdentifier("com.acme", "Op"), 1, {x}, {"low"}, {}); },
              {"output 0 ('low') is already a tensor"});
  expectError(
      [&] {
        b->customOp(OperatorIdentifier("com.acme", "Op"), 1, {x}, {"a", "a"}, {});
      },
      {"output 1 ('a') is already a tensor"});
  expectError([&] { b->customOp(OperatorIdentifier("com.acme", "Op"), 1, {x}, {""}, {}); },
              {"output 0 has an empty id"});
  EXPECT_EQ(parse(b->getModelProto()).graph().node_size(), 2);
}

TEST(CustomOpSignature, EveryPopartAttributeTypeBecomesItsOnnxKind) {
  auto b = Builder::create();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  char text[] = "mutable";
  const std::map<std::string, any> attributes{{"i64", int64_t{-5}},
                                              {"i32", int32_t{-7}},
                                              {"u32", uint32_t{4000000000u}},
                                              {"u64", uint64_t{9}},
                                              {"flag", true},
                                              {"f", 1.5f},
                                              {"s", std::string("str")},
                                              {"cs", "literal"},  // a const char*
                                              {"ms", static_cast<char*>(text)},
                                              {"ints", std::vector<int64_t>{1, -2, 3}},
                                              {"floats", std::vector<float>{0.5f, -1.0f}},
                                              {"strings", std::vector<std::string>{"a", "b"}}};
  b->customOp("Probe", 1, "com.acme", {x}, attributes);
  const onnx::ModelProto m = parse(b->getModelProto());
  const onnx::NodeProto& n = m.graph().node(0);
  EXPECT_EQ(n.attribute_size(), static_cast<int>(attributes.size()));
  using A = onnx::AttributeProto;
  auto expectInt = [&](const char* name, int64_t v) {
    EXPECT_EQ(attr(n, name).type(), A::INT) << name;
    EXPECT_EQ(attr(n, name).i(), v) << name;
  };
  expectInt("i64", -5);
  expectInt("i32", -7);
  expectInt("u32", 4000000000);
  expectInt("u64", 9);
  expectInt("flag", 1);
  EXPECT_EQ(attr(n, "f").type(), A::FLOAT);
  EXPECT_EQ(attr(n, "f").f(), 1.5f);
  EXPECT_EQ(attr(n, "s").type(), A::STRING);
  EXPECT_EQ(attr(n, "s").s(), "str");
  EXPECT_EQ(attr(n, "cs").s(), "literal");
  EXPECT_EQ(attr(n, "ms").s(), "mutable");
  EXPECT_EQ(attr(n, "ints").type(), A::INTS);
  EXPECT_EQ(std::vector<int64_t>(attr(n, "ints").ints().begin(), attr(n, "ints").ints().end()),
            (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(attr(n, "floats").type(), A::FLOATS);
  EXPECT_EQ(
      std::vector<float>(attr(n, "floats").floats().begin(), attr(n, "floats").floats().end()),
      (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(attr(n, "strings").type(), A::STRINGS);
  ASSERT_EQ(attr(n, "strings").strings_size(), 2);
  EXPECT_EQ(attr(n, "strings").strings(1), "b");
}

TEST(CustomOpSignature, UnsupportedValuesAreRefusedBeforeTheNodeIsAdded) {
  auto b = Builder::create();
  const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {2}), "x");
  const std::string before = b->getModelProto();
  // A double (0.2 rather than 0.2f) is what PopART's Builder refuses too.
  expectError(
      [&] {
        b->customOp("Op", 1, "com.acme", {x}, {{"alpha", 0.2}});
      },
      {"attribute 'alpha'", "double", "0.5f"});
  expectError(
      [&] {
        b->customOp("Op", 1, "com.acme", {x}, {{"ints", std::vector<int>{1, 2}}});
      },
      {"attribute 'ints'", "std::vector<int64_t>"});
  expectError(
      [&] {
        b->customOp("Op", 1, "com.acme", {x}, {{"empty", any()}});
      },
      {"attribute 'empty'", "no value"});
  expectError(
      [&] {
        b->customOp("Op", 1, "com.acme", {x}, {{"big", std::numeric_limits<uint64_t>::max()}});
      },
      {"attribute 'big'", "int64"});
  expectError([&] { b->customOp("", 1, "com.acme", {x}, {}); }, {"op type must not be empty"});
  // Nothing of the refused calls is in the model.
  EXPECT_EQ(b->getModelProto(), before);
}

}  // namespace
}  // namespace xtrain
