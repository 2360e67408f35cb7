// Edge cases of the tensor, indexing and einsum ops: empty tensors, size-1 dimensions, k = 0, NaN
// indices. Each must give the defined (empty or reference) result, never touch memory out of
// bounds (this file runs under ASan/UBSan in the sanitizer presets).
#include <gtest/gtest.h>

#include <limits>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

HostTensor i64(const Shape& shape, const std::vector<int64_t>& v) {
  return HostTensor::fromVector<int64_t>(shape, v);
}

std::vector<HostTensor> run(const std::string& type, const std::vector<HostTensor>& inputs,
                            Attributes a = {}, int numOutputs = 1, int opset = 16) {
  return runForward(
      [&](ir::Graph& g, auto in) {
        return addOp(g, type, in, a, numOutputs, ir::kOnnxDomain, opset);
      },
      inputs);
}

TEST(TensorEdgeCases, EmptyTensorsGiveEmptyOrZeroResults) {
  const HostTensor empty = randomTensor({3, 0}, 1);
  EXPECT_EQ(run("Tile", {empty, i64({2}, {2, 3})})[0].shape(), (Shape{6, 0}));
  EXPECT_EQ(run("Tile", {randomTensor({2, 3}, 1), i64({2}, {0, 3})})[0].shape(), (Shape{0, 9}));
  auto padded = run("Pad", {empty, i64({4}, {0, 1, 0, 1})});  // constant pad of an empty row
  EXPECT_EQ(padded[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(padded[0].toVector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(run("CumSum", {empty, i64({}, {1})})[0].shape(), (Shape{3, 0}));
  EXPECT_EQ(run("Trilu", {empty})[0].shape(), (Shape{3, 0}));
  EXPECT_EQ(run("ArgMax", {empty}, attrs({{"axis", int64_t{0}}}))[0].shape(), (Shape{1, 0}));
  auto topk = run("TopK", {randomTensor({3, 4}, 2), i64({1}, {0})}, {}, 2);
  EXPECT_EQ(topk[0].shape(), (Shape{3, 0}));
  EXPECT_EQ(run("GatherElements", {randomTensor({3, 2}, 1), i64({0, 2}, {})})[0].shape(),
            (Shape{0, 2}));
  EXPECT_EQ(run("GatherND", {randomTensor({3, 2}, 1), i64({0, 1}, {})})[0].shape(), (Shape{0, 2}));
  auto scattered = run("ScatterND", {randomTensor({3, 2}, 1), i64({0, 1}, {}),
                                     HostTensor(TensorInfo(DataType::FLOAT, {0, 2}))});
  EXPECT_EQ(scattered[0].shape(), (Shape{3, 2}));
  // A contraction over an empty label is zero; an empty output label gives an empty output.
  auto zero = run("Einsum", {randomTensor({2, 0}, 1), randomTensor({0, 3}, 2)},
                  attrs({{"equation", std::string("ij,jk->ik")}}), 1, 12);
  EXPECT_EQ(zero[0].toVector<float>(), std::vector<float>(6, 0.0f));
  zero = run("Einsum", {randomTensor({2, 0}, 1), randomTensor({0, 3}, 2), randomTensor({3}, 3)},
             attrs({{"equation", std::string("ij,jk,k->i")}}), 1, 12);
  EXPECT_EQ(zero[0].toVector<float>(), std::vector<float>(2, 0.0f));
  EXPECT_EQ(run("Einsum", {randomTensor({0, 4}, 1), randomTensor({4, 3}, 2)},
                attrs({{"equation", std::string("ij,jk->ik")}}), 1, 12)[0]
                .shape(),
            (Shape{0, 3}));
  EXPECT_EQ(run("OneHot", {i64({0}, {}), i64({}, {3}), i64({2}, {0, 1})}, {}, 1, 11)[0].shape(),
            (Shape{0, 3}));
}

TEST(TensorEdgeCases, OneHotNanAndHugeFloatIndicesAreOff) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = runForward(
      [&](ir::Graph& g, auto) {
        auto c = [&](const std::string& id, const HostTensor& v) {
          g.addTensor(id, v.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(v));
          return id;
        };
        return addOp(g, "OneHot",
                     {c("i", HostTensor::fromVector<float>({3}, {nan, 1e30f, -1.0f})),
                      c("d", i64({}, {2})), c("v", i64({2}, {0, 1}))},
                     {}, 1, ir::kOnnxDomain, 11);
      },
      {});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0, 0, 1}));
}

TEST(TensorEdgeCases, SizeOneDimensionsEverywhere) {
  HostTensor x = randomTensor({1, 1, 1}, 4);
  for (std::string mode : {"constant", "edge"}) {
    auto out = run("Pad", {x, i64({6}, {0, 2, 1, 0, 0, 1})}, attrs({{"mode", mode}}));
    EXPECT_EQ(out[0].shape(), (Shape{1, 3, 3}));
  }
  EXPECT_EQ(run("TopK", {x, i64({1}, {1})}, {}, 2)[1].toVector<int64_t>(),
            (std::vector<int64_t>{0}));
  EXPECT_EQ(
      run("CumSum", {x, i64({}, {-1})}, attrs({{"exclusive", int64_t{1}}}))[0].toVector<float>(),
      (std::vector<float>{0.0f}));
  auto e = run("Einsum", {x}, attrs({{"equation", std::string("iii->")}}), 1, 12);
  EXPECT_EQ(e[0].toVector<float>(), x.toVector<float>());
}

}  // namespace
}  // namespace xtrain::testing
