// Batch serialization's plan (session/batch_serial.hpp): which ops run on slices, which
// activations live one slice at a time, what the serialized ops cost, and that the graph's shapes
// come back as they were.
#include "session/batch_serial.hpp"

#include <gtest/gtest.h>

#include "testing/op_testing.hpp"
#include "xtrain/error.hpp"

namespace xtrain::testing {
namespace {

// x [8, 4] -> a = Relu(x) -> r = ReduceSum(a, axis 0) [1, 4] -> c = Add(a, r) -> d = Relu(c),
// and z = Reshape(a, [8, 4] as [32]) -> n = Neg(z). d and n are the graph's outputs.
struct Model {
  ir::Graph g;
  TensorId a, r, c, d, z, n;
  Model() {
    g.addTensor("x", TensorInfo(DataType::FLOAT, {8, 4}), ir::TensorKind::Stream);
    g.inputs() = {"x"};
    a = addOp(g, "Relu", {"x"})[0];
    r = addOp(g, "ReduceSum", {a},
              attrs({{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{1}}}))[0];
    c = addOp(g, "Add", {a, r})[0];
    d = addOp(g, "Relu", {c})[0];
    z = addOp(g, "Reshape", {a}, attrs({{"shape", std::vector<int64_t>{32}}}))[0];
    n = addOp(g, "Neg", {z})[0];
    g.outputs() = {d, n};
  }
  OpId producer(const TensorId& id) const { return g.tensor(id).producer; }
};

BatchSerializationSettings factor(int f) {
  BatchSerializationSettings s;
  s.factor = f;
  return s;
}

TEST(BatchSerialPlan, OpsOnSlicesAndActivationsOneSliceAtATime) {
  Model m;
  const session::CycleModel cycles(0);
  const uint64_t wholeRelu = cycles.opCycles(m.g, m.g.op(m.producer(m.a)));
  const session::BatchSerialPlan plan = session::planBatchSerialization(m.g, factor(4), {}, cycles);
  // Every op reads a sliced tensor; the Reshape's fixed target [32] is cut to [8].
  EXPECT_EQ(plan.serializedCycles.size(), 6u);
  // a is read after the reduction over the batch (by c): concatenated, whole. c is made and read
  // after it: one slice. z is a's reshape, read in a's stretch: one slice. d and n are outputs.
  EXPECT_FALSE(plan.sliceResident.count(m.a));
  EXPECT_FALSE(plan.sliceResident.count(m.r));  // not sliced: [1, 4] either way
  ASSERT_TRUE(plan.sliceResident.count(m.c));
  EXPECT_EQ(plan.sliceResident.at(m.c).shape(), (Shape{2, 4}));
  ASSERT_TRUE(plan.sliceResident.count(m.z));
  EXPECT_EQ(plan.sliceResident.at(m.z).shape(), (Shape{8}));
  EXPECT_FALSE(plan.sliceResident.count(m.d));
  EXPECT_FALSE(plan.sliceResident.count(m.n));
  // Four launches on [2, 4] each: four instruction overheads, not one.
  EXPECT_GT(plan.serializedCycles.at(m.producer(m.a)),
            wholeRelu + 3 * session::CycleModel::kInstructionOverhead - 1);
  // The plan leaves the graph as it found it: shapes and the Reshape's attribute.
  EXPECT_EQ(m.g.tensor(m.a).info.shape(), (Shape{8, 4}));
  EXPECT_EQ(m.g.tensor(m.z).info.shape(), (Shape{32}));
  EXPECT_EQ(m.g.op(m.producer(m.z)).attrs.getInts("shape"), (std::vector<int64_t>{32}));
  {
    const session::SliceShapes slices(m.g, plan);
    EXPECT_EQ(m.g.tensor(m.c).info.shape(), (Shape{2, 4}));
  }
  EXPECT_EQ(m.g.tensor(m.c).info.shape(), (Shape{8, 4}));
}

TEST(BatchSerialPlan, FactorOneOrZeroPlansNothing) {
  Model m;
  const session::CycleModel cycles(0);
  for (int f : {0, 1}) {
    const auto plan = session::planBatchSerialization(m.g, factor(f), {}, cycles);
    EXPECT_FALSE(plan.enabled());
    EXPECT_TRUE(plan.serializedCycles.empty());
    EXPECT_TRUE(plan.sliceResident.empty());
  }
}

TEST(BatchSerialPlan, AnchorsAreConcatenated) {
  Model m;
  const auto plan = session::planBatchSerialization(m.g, factor(2), {m.c}, session::CycleModel(0));
  EXPECT_FALSE(plan.sliceResident.count(m.c));
  EXPECT_TRUE(plan.sliceResident.count(m.z));
}

TEST(BatchSerialCheck, TheFactorMustDivideTheBatch) {
  Model m;
  SessionOptions o;
  o.batchSerializationSettings.factor = 3;
  try {
    session::checkBatchSerialization(m.g, o, false);
    FAIL() << "factor 3 of a batch of 8 was accepted";
  } catch (const error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("factor = 3 does not divide"), std::string::npos) << what;
    EXPECT_NE(what.find("'x'"), std::string::npos) << what;
    EXPECT_NE(what.find("[8,4]"), std::string::npos) << what;
  }
  o.batchSerializationSettings.factor = 4;
  session::checkBatchSerialization(m.g, o, false);
  // Loop with Fwd: refused in training only, as PopART does.
  o.batchSerializationSettings.method = BatchSerializationMethod::Loop;
  session::checkBatchSerialization(m.g, o, false);
  EXPECT_THROW(session::checkBatchSerialization(m.g, o, true), error);
}

}  // namespace
}  // namespace xtrain::testing
