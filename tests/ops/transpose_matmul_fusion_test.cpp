// The Transpose/scale fusion of MatMuls (src/ir/fusion/transpose_matmul_fusion.hpp) on the graphs
// torch.onnx writes for nn.Linear, attention with heads split by Reshape + Transpose (GPT, BERT:
// [B,T,H,D] -> [B,H,T,D]) and nn.MultiheadAttention ([T,B*H,D] -> [B*H,T,D]), and the permuted
// MatMulT kernel and gradient it leads to: fused results equal the unfused graph's to 1e-5
// relative, forward and gradient, and the gradients match finite differences; chains whose
// tensors are needed elsewhere, or whose permutations the kernel cannot read, stay.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/autodiff/autodiff.hpp"
#include "ir/fusion/fusion.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

TensorId scalarConst(ir::Graph& g, float v) {
  const TensorId id = g.uniqueId("c");
  g.addTensor(id, TensorInfo(DataType::FLOAT, {}), ir::TensorKind::Const,
              std::make_shared<HostTensor>(HostTensor::scalar(v)));
  return id;
}

TensorId transpose(ir::Graph& g, const TensorId& x, std::vector<int64_t> perm) {
  return addOp(g, "Transpose", {x}, attrs({{"perm", std::move(perm)}}))[0];
}

TensorId reshape(ir::Graph& g, const TensorId& x, const Shape& shape) {
  const TensorId s = g.uniqueId("shape");
  HostTensor v(TensorInfo(DataType::INT64, {static_cast<int64_t>(shape.size())}));
  for (size_t i = 0; i < shape.size(); ++i) v.data<int64_t>()[i] = shape[i];
  g.addTensor(s, v.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(v));
  return addOp(g, "Reshape", {x, s})[0];
}

// nn.Linear on x [.., k] with W [n, k]: MatMul(x, Transpose(W)).
BuildFn linearBuild(bool fuse) {
  return [fuse](ir::Graph& g, const std::vector<TensorId>& in) {
    const TensorId y = addOp(g, "MatMul", {in[0], transpose(g, in[1], {1, 0})})[0];
    if (fuse) {
      EXPECT_EQ(ir::fuseGraph(g, {}).matmul, 1);
    }
    return std::vector<TensorId>{y};
  };
}

// GPT's attention on q, k, v [B, T, H*D]: heads split [B,T,H,D] -> [B,H,T,D], scores scaled by a
// Div after the product, softmax, the heads merged back to [B, T, H*D].
BuildFn gptAttentionBuild(bool fuse, int64_t heads) {
  return [fuse, heads](ir::Graph& g, const std::vector<TensorId>& in) {
    const Shape& s = g.tensor(in[0]).info.shape();
    const Shape split{s[0], s[1], heads, s[2] / heads};
    const TensorId q = transpose(g, reshape(g, in[0], split), {0, 2, 1, 3});
    const TensorId kT = transpose(g, reshape(g, in[1], split), {0, 2, 3, 1});
    const TensorId v = transpose(g, reshape(g, in[2], split), {0, 2, 1, 3});
    const TensorId scores = addOp(g, "MatMul", {q, kT})[0];
    const TensorId p = addOp(g, "Softmax", {addOp(g, "Div", {scores, scalarConst(g, 2.0f)})[0]},
                             attrs({{"axis", int64_t{-1}}}))[0];
    const TensorId h = transpose(g, addOp(g, "MatMul", {p, v})[0], {0, 2, 1, 3});
    const TensorId y = reshape(g, h, s);
    if (fuse) {
      EXPECT_EQ(ir::fuseGraph(g, {}).matmul, 2);
    }
    return std::vector<TensorId>{y};
  };
}

// nn.MultiheadAttention's export on q, k, v [T, B*H, D]: q scaled by a Div before the product,
// k^T as Transpose(1, 2, 0), the result put back to [T, B*H, D].
BuildFn mhaBuild(bool fuse) {
  return [fuse](ir::Graph& g, const std::vector<TensorId>& in) {
    const TensorId q = addOp(g, "Div", {transpose(g, in[0], {1, 0, 2}), scalarConst(g, 3.0f)})[0];
    const TensorId kT = transpose(g, in[1], {1, 2, 0});
    const TensorId v = transpose(g, in[2], {1, 0, 2});
    const TensorId p =
        addOp(g, "Softmax", {addOp(g, "MatMul", {q, kT})[0]}, attrs({{"axis", int64_t{-1}}}))[0];
    const TensorId y = transpose(g, addOp(g, "MatMul", {p, v})[0], {1, 0, 2});
    if (fuse) {
      EXPECT_EQ(ir::fuseGraph(g, {}).matmul, 2);
    }
    return std::vector<TensorId>{y};
  };
}

// d/d(inputs) of sum(outputs[0] * r) through the graph `build` makes.
std::vector<HostTensor> gradients(const BuildFn& build, const std::vector<HostTensor>& inputs) {
  ir::Graph g;
  std::vector<TensorId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ids.push_back("in" + std::to_string(i));
    g.addTensor(ids.back(), inputs[i].info(), ir::TensorKind::Variable,
                std::make_shared<HostTensor>(inputs[i]));
  }
  const TensorId y = build(g, ids)[0];
  g.addTensor("r", g.tensor(y).info, ir::TensorKind::Const,
              std::make_shared<HostTensor>(randomTensor(g.tensor(y).info.shape(), 9)));
  const TensorId loss = addOp(g, "ReduceSumToShape", {addOp(g, "Mul", {y, "r"})[0]},
                              attrs({{"shape", std::vector<int64_t>{}}}), 1, ir::kXtrainDomain)[0];
  const auto grads = ir::autodiff(g, loss, ids);
  session::LoweredGraph lowered(g);
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, 1);
  lowered.run(ir::Phase::Backward, buffers, 1);
  std::vector<HostTensor> out;
  for (const auto& id : ids) {
    out.push_back(buffers[static_cast<size_t>(lowered.bufferIndex(grads.at(id)))]);
  }
  return out;
}

void expectFusedMatchesUnfused(const std::function<BuildFn(bool)>& build,
                               const std::vector<HostTensor>& inputs) {
  const auto unfused = runForward(build(false), inputs);
  const auto fused = runForward(build(true), inputs);
  EXPECT_TRUE(allClose(fused[0], unfused[0], 1e-5, 1e-6)) << "forward";
  const auto gu = gradients(build(false), inputs);
  const auto gf = gradients(build(true), inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_TRUE(allClose(gf[i], gu[i], 1e-5, 1e-6)) << "gradient of input " << i;
  }
}

const ir::Op& onlyOpOfType(const ir::Graph& g, const std::string& type) {
  const ir::Op* found = nullptr;
  for (const auto& [id, op] : g.ops()) {
    if (op->type != type) continue;
    EXPECT_EQ(found, nullptr) << "more than one " << type;
    found = op.get();
  }
  EXPECT_NE(found, nullptr) << "no " << type;
  return *found;
}

TEST(TransposeMatMulFusion, LinearBecomesMatMulTWithTransB) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {2, 3, 4}), ir::TensorKind::Stream);
  g.addTensor("w", TensorInfo(DataType::FLOAT, {5, 4}), ir::TensorKind::Variable);
  const TensorId y = linearBuild(true)(g, {"x", "w"})[0];
  ASSERT_EQ(g.ops().size(), 1u);
  const ir::Op& op = onlyOpOfType(g, "MatMulT");
  EXPECT_EQ(op.inputs, (std::vector<TensorId>{"x", "w"}));
  EXPECT_EQ(op.outputs, std::vector<TensorId>{y});
  EXPECT_EQ(op.attrs.getInt("transB", 0), 1);
  EXPECT_FALSE(op.attrs.has("permB"));
  EXPECT_EQ(g.tensor(y).info.shape(), (Shape{2, 3, 5}));
}

TEST(TransposeMatMulFusion, AttentionFoldsEveryTransposeAndTheScale) {
  ir::Graph g;
  for (const char* t : {"q", "k", "v"}) {
    g.addTensor(t, TensorInfo(DataType::FLOAT, {2, 5, 12}), ir::TensorKind::Stream);
  }
  gptAttentionBuild(true, 3)(g, {"q", "k", "v"});
  for (const auto& [id, op] : g.ops()) {
    EXPECT_NE(op->type, "Transpose");
    EXPECT_NE(op->type, "Div");
  }
  int scaled = 0;
  for (const auto& [id, op] : g.ops()) {
    if (op->type != "MatMulT") continue;
    EXPECT_TRUE(op->attrs.has("permB"));
    if (op->attrs.has("alpha")) {
      ++scaled;
      EXPECT_FLOAT_EQ(op->attrs.getFloat("alpha"), 0.5f);
      EXPECT_EQ(op->attrs.getInts("permA"), (std::vector<int64_t>{0, 2, 1, 3}));
      EXPECT_EQ(op->attrs.getInts("permB"), (std::vector<int64_t>{0, 2, 3, 1}));
    } else {
      EXPECT_EQ(op->attrs.getInts("permY"), (std::vector<int64_t>{0, 2, 1, 3}));
    }
  }
  EXPECT_EQ(scaled, 1);
}

TEST(TransposeMatMulFusion, LinearMatchesUnfused) {
  expectFusedMatchesUnfused(linearBuild, {randomTensor({3, 7, 6}, 1), randomTensor({5, 6}, 2)});
  expectFusedMatchesUnfused(linearBuild, {randomTensor({9, 6}, 3), randomTensor({4, 6}, 4)});
}

TEST(TransposeMatMulFusion, GptAttentionMatchesUnfused) {
  expectFusedMatchesUnfused(
      [](bool f) { return gptAttentionBuild(f, 3); },
      {randomTensor({2, 5, 12}, 1), randomTensor({2, 5, 12}, 2), randomTensor({2, 5, 12}, 3)});
}

TEST(TransposeMatMulFusion, MultiheadAttentionMatchesUnfused) {
  expectFusedMatchesUnfused(mhaBuild, {randomTensor({6, 4, 3}, 1), randomTensor({6, 4, 3}, 2),
                                       randomTensor({6, 4, 3}, 3)});
}

TEST(TransposeMatMulFusion, FusedGradientsMatchFiniteDifferences) {
  expectGradientsMatch(linearBuild(true), {randomTensor({2, 3, 4}, 5), randomTensor({3, 4}, 6)});
  expectGradientsMatch(
      gptAttentionBuild(true, 2),
      {randomTensor({1, 3, 4}, 7), randomTensor({1, 3, 4}, 8), randomTensor({1, 3, 4}, 9)});
  expectGradientsMatch(mhaBuild(true), {randomTensor({3, 2, 2}, 10), randomTensor({3, 2, 2}, 11),
                                        randomTensor({3, 2, 2}, 12)});
}

// A transposed tensor read elsewhere, kept, or a graph output stays, and so does its MatMul.
TEST(TransposeMatMulFusion, NotFusedWhenTheTransposeIsNeededElsewhere) {
  for (int how = 0; how < 3; ++how) {
    ir::Graph g;
    g.addTensor("x", TensorInfo(DataType::FLOAT, {2, 4}), ir::TensorKind::Stream);
    g.addTensor("w", TensorInfo(DataType::FLOAT, {5, 4}), ir::TensorKind::Variable);
    const TensorId wT = transpose(g, "w", {1, 0});
    addOp(g, "MatMul", {"x", wT});
    std::set<TensorId> keep;
    if (how == 0) addOp(g, "Relu", {wT});
    if (how == 1) keep.insert(wT);
    if (how == 2) g.outputs().push_back(wT);
    EXPECT_EQ(ir::fuseGraph(g, keep).matmul, 0) << "way " << how;
    EXPECT_TRUE(g.hasTensor(wT));
  }
}

TEST(TransposeMatMulFusion, PermutationsTheGradientCannotTakeStay) {
  ir::Graph g;
  // A batch permutation of x [4, 2, 3] against a shared matrix: only the weight's transpose folds.
  g.addTensor("x", TensorInfo(DataType::FLOAT, {4, 2, 3}), ir::TensorKind::Stream);
  g.addTensor("w", TensorInfo(DataType::FLOAT, {5, 3}), ir::TensorKind::Variable);
  addOp(g, "MatMul", {transpose(g, "x", {1, 0, 2}), transpose(g, "w", {1, 0})});
  // The innermost dim moved into the batch: oneDNN would run its reference kernel.
  g.addTensor("a", TensorInfo(DataType::FLOAT, {4, 4, 3}), ir::TensorKind::Stream);
  g.addTensor("b", TensorInfo(DataType::FLOAT, {3, 4, 4}), ir::TensorKind::Stream);
  addOp(g, "MatMul", {transpose(g, "a", {2, 0, 1}), "b"});
  // FLOAT16 products stay MatMuls.
  g.addTensor("h", TensorInfo(DataType::FLOAT16, {2, 3}), ir::TensorKind::Stream);
  g.addTensor("hw", TensorInfo(DataType::FLOAT16, {4, 3}), ir::TensorKind::Stream);
  addOp(g, "MatMul", {"h", transpose(g, "hw", {1, 0})});
  EXPECT_EQ(ir::fuseGraph(g, {}).matmul, 1);
  int transposes = 0;
  for (const auto& [id, op] : g.ops()) transposes += op->type == "Transpose";
  EXPECT_EQ(transposes, 3);
}

TEST(TransposeMatMulFusion, MatMulTRefusesABadPermutation) {
  ir::Graph g;
  g.addTensor("a", TensorInfo(DataType::FLOAT, {2, 3, 4}), ir::TensorKind::Stream);
  g.addTensor("b", TensorInfo(DataType::FLOAT, {2, 4, 5}), ir::TensorKind::Stream);
  expectError(
      [&] {
        addOp(g, "MatMulT", {"a", "b"}, attrs({{"permA", std::vector<int64_t>{0, 0, 1}}}), 1,
              ir::kXtrainDomain);
      },
      {"permA [0,0,1] is not a permutation of the 3 dimensions of input 0 [2,3,4]"});
}

}  // namespace
}  // namespace xtrain::testing
