// The data movement ops (Gather, Concat, Slice, Squeeze, Unsqueeze, Reshape, Expand, Transpose,
// Split, Flatten) and the new copying ops (Tile, Pad, Trilu, GatherElements, GatherND) on every
// element type exporters compute shapes with: each one's result on INT64, INT32, BOOL and FLOAT16
// equals its FLOAT result converted. And a shape subgraph as PyTorch writes it.
#include <gtest/gtest.h>

#include <cmath>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

HostTensor i64(const Shape& shape, const std::vector<int64_t>& v) {
  return HostTensor::fromVector<int64_t>(shape, v);
}

// Small integers (exact in every type; 0/1 for BOOL).
HostTensor values(const Shape& shape, uint64_t seed, DataType type) {
  HostTensor t = randomTensor(shape, seed, -3.0f, 3.0f);
  for (auto& v : t.span<float>())
    v = type == DataType::BOOL ? (v > 0 ? 1.0f : 0.0f) : std::round(v);
  return t;
}

struct Case {
  std::string type;
  std::vector<Shape> dataShapes;   // the float inputs
  std::vector<HostTensor> consts;  // integer inputs after them
  Attributes attrs;
  int numOutputs = 1;
};

TEST(ShapeOpsAnyType, EveryCopyingOpOnEveryElementType) {
  const std::vector<Case> cases = {
      {"Gather", {{4, 3}}, {i64({2}, {-1, 2})}, attrs({{"axis", int64_t{0}}}), 1},
      {"Gather", {{4, 3}}, {i64({}, {1})}, attrs({{"axis", int64_t{1}}}), 1},
      {"Concat", {{2, 3}, {2, 1}, {2, 0}}, {}, attrs({{"axis", int64_t{1}}}), 1},
      {"Slice",
       {{5, 4}},
       {i64({2}, {4, 1}), i64({2}, {0, 3}), i64({2}, {0, 1}), i64({2}, {-2, 1})},
       {},
       1},
      {"Squeeze", {{1, 3, 1}}, {i64({1}, {2})}, {}, 1},
      {"Unsqueeze", {{3}}, {i64({2}, {0, -1})}, {}, 1},
      {"Reshape", {{2, 6}}, {i64({3}, {3, -1, 2})}, {}, 1},
      {"Flatten", {{2, 3, 2}}, {}, attrs({{"axis", int64_t{2}}}), 1},
      {"Expand", {{3, 1}}, {i64({3}, {2, 3, 4})}, {}, 1},
      {"Transpose", {{2, 3, 4}}, {}, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}), 1},
      {"Split", {{6, 2}}, {i64({2}, {2, 4})}, attrs({{"axis", int64_t{0}}}), 2},
      {"Tile", {{2, 3}}, {i64({2}, {2, 2})}, {}, 1},
      {"Pad", {{2, 3}}, {i64({4}, {1, 0, 0, 2})}, attrs({{"mode", std::string("edge")}}), 1},
      {"Trilu", {{3, 3}}, {i64({}, {1})}, {}, 1},
      {"GatherElements", {{3, 3}}, {i64({2, 3}, {0, -1, 2, 1, 1, 0})}, {}, 1},
      {"GatherND", {{3, 3}}, {i64({2, 2}, {0, 2, -1, 1})}, {}, 1},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    for (DataType t : {DataType::INT64, DataType::INT32, DataType::BOOL, DataType::FLOAT16}) {
      std::vector<HostTensor> asFloat, asType;
      for (const Shape& s : c.dataShapes) {
        asFloat.push_back(values(s, seed++, t));
        asType.push_back(asFloat.back().castTo(t));
      }
      for (const HostTensor& k : c.consts) {
        asFloat.push_back(k);
        asType.push_back(k);
      }
      auto build = [&](ir::Graph& g, auto in) {
        return addOp(g, c.type, in, c.attrs, c.numOutputs);
      };
      auto want = runForward(build, asFloat);
      auto got = runForward(build, asType);
      for (size_t o = 0; o < want.size(); ++o) {
        EXPECT_EQ(got[o].dataType(), t) << c.type;
        EXPECT_TRUE(allClose(got[o].castTo(DataType::FLOAT), want[o], 0, 0))
            << c.type << " " << dataTypeName(t) << " output " << o;
      }
    }
  }
}

// x.shape[0] and -1 in a reshape, as torch.onnx writes it: Shape -> Gather -> Unsqueeze -> Concat
// -> Reshape, all on INT64 tensors computed by the kernels.
TEST(ShapeOpsAnyType, PyTorchStyleShapeSubgraphRuns) {
  HostTensor x = randomTensor({4, 3, 2}, 5);
  auto out = runForward(
      [](ir::Graph& g, auto in) {
        TensorId shape = addOp(g, "Shape", {in[0]})[0];
        TensorId dim0 = addOp(g, "Gather", {shape, in[1]}, attrs({{"axis", int64_t{0}}}))[0];
        TensorId un = addOp(g, "Unsqueeze", {dim0}, attrs({{"axes", std::vector<int64_t>{0}}}), 1,
                            ir::kOnnxDomain, 11)[0];
        TensorId cat = addOp(g, "Concat", {un, in[2]}, attrs({{"axis", int64_t{0}}}))[0];
        TensorId size = addOp(g, "Size", {in[0]})[0];
        TensorId cumsum = addOp(g, "CumSum", {cat, in[3]})[0];
        return std::vector<TensorId>{cat, size, cumsum};
      },
      {x, i64({}, {0}), i64({1}, {-1}), i64({}, {0})});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(out[1].toVector<int64_t>(), (std::vector<int64_t>{24}));
  EXPECT_EQ(out[2].toVector<int64_t>(), (std::vector<int64_t>{4, 3}));
}

TEST(ShapeOpsAnyType, GatherNegativeAndOutOfRangeIndicesOnInt64Shapes) {
  HostTensor shape = i64({3}, {7, 8, 9});
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in); },
                        {shape, i64({2}, {-1, -3})});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{9, 7}));
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in); },
                   {shape, i64({1}, {-4})});
      },
      {"Gather 'op_under_test'", "index -4", "size 3"});
}

}  // namespace
}  // namespace xtrain::testing

namespace xtrain::testing {
namespace {

// The computing kernels refuse FLOAT16 and run promoted: their FLOAT16 result is the FLOAT result
// of the rounded inputs, rounded.
TEST(ComputingOpsFloat16, RunPromoted) {
  struct Case {
    std::string type;
    std::vector<Shape> shapes;
    std::vector<HostTensor> consts;
    Attributes attrs;
    int numOutputs;
    int opset;
  };
  const std::vector<Case> cases = {
      {"TopK", {{3, 5}}, {i64({1}, {2})}, {}, 2, 11},
      {"CumSum", {{3, 5}}, {i64({}, {1})}, attrs({{"reverse", int64_t{1}}}), 1, 14},
      {"Einsum", {{3, 4}, {4, 2}}, {}, attrs({{"equation", std::string("ij,jk->ik")}}), 1, 12},
      {"Einsum", {{3, 3}}, {}, attrs({{"equation", std::string("ii->")}}), 1, 12},
      {"ArgMax", {{3, 5}}, {}, attrs({{"axis", int64_t{1}}}), 1, 13},
      {"Pad", {{3, 5}}, {i64({4}, {1, 2, 0, 1})}, attrs({{"mode", std::string("reflect")}}), 1, 13},
  };
  uint64_t seed = 50;
  for (const Case& c : cases) {
    std::vector<HostTensor> asFloat, asHalf;
    for (const Shape& s : c.shapes) {
      asHalf.push_back(randomTensor(s, seed++).castTo(DataType::FLOAT16));
      asFloat.push_back(asHalf.back().castTo(DataType::FLOAT));
    }
    for (const HostTensor& k : c.consts) {
      asFloat.push_back(k);
      asHalf.push_back(k);
    }
    auto build = [&](ir::Graph& g, auto in) {
      return addOp(g, c.type, in, c.attrs, c.numOutputs, ir::kOnnxDomain, c.opset);
    };
    auto want = runForward(build, asFloat);
    auto got = runForward(build, asHalf);
    for (size_t o = 0; o < want.size(); ++o) {
      const HostTensor rounded =
          want[o].dataType() == DataType::FLOAT ? want[o].castTo(DataType::FLOAT16) : want[o];
      EXPECT_TRUE(allClose(got[o], rounded, 0, 0)) << c.type << " output " << o;
    }
  }
}

}  // namespace
}  // namespace xtrain::testing
