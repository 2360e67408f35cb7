// The buffer plan: activations share bytes only when they are never live at the same time, a
// shape-only op's output lies over its input, and whatever the session uses by id keeps its own.
#include "session/buffer_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

using session::BufferPlan;
using session::BufferReuse;

// x -> a = Relu(x) -> b = Relu(a) -> f = Flatten(b) -> c = Relu(f) -> d = Relu(c) -> e = Add(d, w),
// every tensor 32 floats (128 bytes); e is the graph's output.
struct Chain {
  ir::Graph g;
  TensorId a, b, f, c, d, e;
  Chain() {
    g.addTensor("x", TensorInfo(DataType::FLOAT, {4, 8}), ir::TensorKind::Stream);
    g.addTensor("w", TensorInfo(DataType::FLOAT, {1, 32}), ir::TensorKind::Variable,
                std::make_shared<HostTensor>(TensorInfo(DataType::FLOAT, {1, 32})));
    g.inputs() = {"x"};
    a = addOp(g, "Relu", {"x"})[0];
    b = addOp(g, "Relu", {a})[0];
    f = addOp(g, "Flatten", {b}, attrs({{"axis", int64_t{0}}}))[0];
    c = addOp(g, "Relu", {f})[0];
    d = addOp(g, "Relu", {c})[0];
    e = addOp(g, "Add", {d, "w"})[0];
    g.outputs() = {e};
  }
  std::vector<TensorId> ids() const {
    std::vector<TensorId> v;
    for (const auto& [id, t] : g.tensors()) v.push_back(id);
    return v;
  }
  int64_t offset(const BufferPlan& plan, const TensorId& id) const {
    const auto v = ids();
    return plan.offsets[static_cast<size_t>(std::find(v.begin(), v.end(), id) - v.begin())];
  }
};

TEST(BufferPlan, TensorsLiveAtTheSameTimeNeverShareBytes) {
  Chain m;
  const BufferPlan plan = session::planBuffers(m.g, m.ids(), {}, BufferReuse::Full);
  // a [Relu 0, read by 1], b-f [1, 3], c [3, 4], d [4, 5]: two slots of 128 bytes.
  EXPECT_EQ(plan.blockBytes, 256u);
  EXPECT_EQ(plan.plannedTensors, 5);
  EXPECT_EQ(plan.aliases, 1);
  EXPECT_EQ(m.offset(plan, m.f), m.offset(plan, m.b));
  EXPECT_NE(m.offset(plan, m.a), m.offset(plan, m.b));
  EXPECT_NE(m.offset(plan, m.c), m.offset(plan, m.b));
  EXPECT_NE(m.offset(plan, m.d), m.offset(plan, m.c));
  EXPECT_EQ(m.offset(plan, m.c), m.offset(plan, m.a));  // a is dead when c is written
}

TEST(BufferPlan, StreamsWeightsOutputsAndKeptTensorsHaveTheirOwn) {
  Chain m;
  const BufferPlan plan = session::planBuffers(m.g, m.ids(), {m.c}, BufferReuse::Full);
  for (const TensorId& id : {TensorId("x"), TensorId("w"), m.e, m.c}) {
    EXPECT_EQ(m.offset(plan, id), -1) << id;
  }
  EXPECT_GE(m.offset(plan, m.d), 0);
}

TEST(BufferPlan, AliasOnlySharesNothingButShapeOps) {
  Chain m;
  const BufferPlan plan = session::planBuffers(m.g, m.ids(), {}, BufferReuse::AliasOnly);
  EXPECT_EQ(plan.blockBytes, 4u * 128u);
  EXPECT_EQ(m.offset(plan, m.f), m.offset(plan, m.b));
  const BufferPlan off = session::planBuffers(m.g, m.ids(), {}, BufferReuse::Off);
  EXPECT_EQ(off.blockBytes, 0u);
  for (int64_t o : off.offsets) EXPECT_EQ(o, -1);
}

TEST(BufferPlan, ViewsShareTheirBlock) {
  auto block = std::shared_ptr<std::byte>(static_cast<std::byte*>(std::aligned_alloc(64, 128)),
                                          [](std::byte* p) { std::free(p); });
  const TensorInfo info(DataType::FLOAT, {4});
  HostTensor v = HostTensor::view(info, block.get() + 64, block);
  HostTensor w = HostTensor::view(info, block.get() + 64, block);
  v.data<float>()[2] = 7.0f;
  EXPECT_TRUE(v.isView());
  EXPECT_EQ(w.data<float>()[2], 7.0f);
  // Assigning to a view writes into the block; a copy of a view owns its bytes.
  const HostTensor value = HostTensor::fromVector<float>({4}, {1, 2, 3, 4});
  w = value;
  EXPECT_EQ(v.data<float>()[3], 4.0f);
  HostTensor copy = v;
  EXPECT_FALSE(copy.isView());
  copy.data<float>()[0] = 9.0f;
  EXPECT_EQ(v.data<float>()[0], 1.0f);
}

}  // namespace
}  // namespace xtrain::testing
