// GatherElements, ScatterElements (and Scatter), GatherND, ScatterND, TopK, ArgMax and ArgMin:
// forward against reference loops, gradients against finite differences, runtime index errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

HostTensor i64(const Shape& shape, const std::vector<int64_t>& v) {
  return HostTensor::fromVector<int64_t>(shape, v);
}

// Random indices in [-dim, dim) (negative ones allowed by ONNX), or [0, dim) when !negative.
HostTensor randomIndices(const Shape& shape, int64_t dim, uint64_t seed, bool negative = true) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(negative ? -dim : 0, dim - 1);
  HostTensor t(TensorInfo(DataType::INT64, shape));
  for (auto& v : t.span<int64_t>()) v = dist(rng);
  return t;
}

// A permutation of 0..dim-1 per line along axis: scatter indices without duplicates.
HostTensor uniqueIndices(const Shape& shape, int64_t axis, int64_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  HostTensor t(TensorInfo(DataType::INT64, shape));
  const int64_t n = shape[static_cast<size_t>(axis)];
  for (int64_t i = 0; i < t.nelms(); ++i) {
    auto idx = unravel(i, shape);
    if (idx[static_cast<size_t>(axis)] != 0) continue;
    std::vector<int64_t> perm(static_cast<size_t>(dim));
    for (int64_t k = 0; k < dim; ++k) perm[static_cast<size_t>(k)] = k;
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t k = 0; k < n; ++k) {
      idx[static_cast<size_t>(axis)] = k;
      t.span<int64_t>()[static_cast<size_t>(ravel(idx, shape))] = perm[static_cast<size_t>(k)];
    }
  }
  return t;
}

int64_t wrap(int64_t v, int64_t dim) {
  return v < 0 ? v + dim : v;
}

// ---- GatherElements / ScatterElements ----------------------------------------------------------

HostTensor gatherElementsRef(const HostTensor& data, const HostTensor& idx, int64_t axis) {
  HostTensor y(TensorInfo(data.dataType(), idx.shape()));
  const auto a = static_cast<size_t>(axis);
  for (int64_t i = 0; i < idx.nelms(); ++i) {
    auto p = unravel(i, idx.shape());
    p[a] = wrap(static_cast<int64_t>(idx.getAsDouble(i)), data.shape()[a]);
    y.setFromDouble(i, data.getAsDouble(ravel(p, data.shape())));
  }
  return y;
}

HostTensor scatterElementsRef(const HostTensor& data, const HostTensor& idx, const HostTensor& upd,
                              int64_t axis, const std::string& reduction) {
  HostTensor y = data;
  const auto a = static_cast<size_t>(axis);
  for (int64_t i = 0; i < idx.nelms(); ++i) {
    auto p = unravel(i, idx.shape());
    p[a] = wrap(static_cast<int64_t>(idx.getAsDouble(i)), data.shape()[a]);
    const int64_t o = ravel(p, data.shape());
    const double u = upd.getAsDouble(i);
    const double v = y.getAsDouble(o);
    y.setFromDouble(o, reduction == "add" ? v + u : reduction == "mul" ? v * u : u);
  }
  return y;
}

TEST(GatherElementsOp, EveryAxisSmallerIndicesAnyTypeWithGradient) {
  const Shape dataShape{3, 4, 5};
  HostTensor data = randomTensor(dataShape, 1);
  for (int64_t axis = 0; axis < 3; ++axis) {
    Shape idxShape{2, 3, 4};
    idxShape[static_cast<size_t>(axis)] = 6;  // the axis may be longer than data's
    HostTensor idx = randomIndices(idxShape, dataShape[static_cast<size_t>(axis)], 10 + axis);
    auto build = [&](ir::Graph& g, auto in) {
      return addOp(g, "GatherElements", in, attrs({{"axis", axis - 3 * (axis % 2)}}));
    };
    auto out = runForward(build, {data, idx});
    EXPECT_TRUE(allClose(out[0], gatherElementsRef(data, idx, axis), 0, 0)) << axis;
    HostTensor idx32 = idx.castTo(DataType::INT32);
    HostTensor dataI = randomTensor(dataShape, 2, -9, 9).castTo(DataType::INT64);
    out = runForward(build, {dataI, idx32});
    EXPECT_TRUE(allClose(out[0], gatherElementsRef(dataI, idx, axis), 0, 0));
    expectGradientsMatch(build, {data, idx});
  }
}

TEST(GatherElementsOp, OutOfRangeIndexIsARuntimeError) {
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "GatherElements", in); },
                   {randomTensor({3, 2}, 1), i64({1, 2}, {0, -4})});
      },
      {"GatherElements 'op_under_test'", "index -4", "element 1", "size 3"});
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "GatherElements", in); },
                   {randomTensor({3, 2}, 1), i64({1, 3}, {0, 0, 0})});
      },
      {"GatherElements 'op_under_test'", "exceed data"});
}

TEST(ScatterElementsOp, EveryReductionAndAxisWithGradients) {
  const Shape dataShape{4, 5, 3};
  HostTensor data = randomTensor(dataShape, 3, 0.5f, 1.5f);
  for (int64_t axis = 0; axis < 3; ++axis) {
    Shape idxShape{3, 4, 2};
    const int64_t dim = dataShape[static_cast<size_t>(axis)];
    idxShape[static_cast<size_t>(axis)] = std::min<int64_t>(dim, 3);
    HostTensor unique = uniqueIndices(idxShape, axis, dim, 20 + axis);
    HostTensor repeated = randomIndices(idxShape, dim, 30 + axis);
    HostTensor upd = randomTensor(idxShape, 4, 0.5f, 1.5f);
    for (std::string reduction : {"none", "add", "mul"}) {
      const HostTensor& idx = reduction == "none" ? unique : repeated;
      auto build = [&](ir::Graph& g, auto in) {
        return addOp(g, "ScatterElements", in, attrs({{"axis", axis}, {"reduction", reduction}}), 1,
                     ir::kOnnxDomain, 16);
      };
      auto out = runForward(build, {data, idx, upd});
      EXPECT_TRUE(allClose(out[0], scatterElementsRef(data, idx, upd, axis, reduction), 1e-6, 1e-6))
          << reduction << " " << axis;
      expectGradientsMatch(build, {data, idx, upd});
      // INT64 data.
      HostTensor di = data.castTo(DataType::INT64), ui = randomTensor(idxShape, 5, -5, 5);
      ui = ui.castTo(DataType::INT64);
      out = runForward(build, {di, idx, ui});
      EXPECT_TRUE(allClose(out[0], scatterElementsRef(di, idx, ui, axis, reduction), 0, 0));
    }
  }
}

// PopART's Scatter with updates larger than the indices (torch.scatter_'s rule): the update at each
// indices position is used, the others are ignored and get a zero gradient.
TEST(ScatterElementsOp, LargerUpdatesUseTheirLeadingCorner) {
  HostTensor data = randomTensor({3, 5}, 61);
  HostTensor idx = i64({1, 4}, {0, 1, 2, 0});
  HostTensor upd = randomTensor({2, 5}, 62);
  HostTensor corner(TensorInfo(DataType::FLOAT, {1, 4}));
  for (int64_t j = 0; j < 4; ++j) corner.setFromDouble(j, upd.getAsDouble(j));
  for (int opset : {9, 13}) {
    auto build = [opset](ir::Graph& g, auto in) {
      return addOp(g, opset == 9 ? "Scatter" : "ScatterElements", in, {}, 1, ir::kOnnxDomain,
                   opset);
    };
    auto out = runForward(build, {data, idx, upd});
    EXPECT_TRUE(allClose(out[0], scatterElementsRef(data, idx, corner, 0, "none"), 0, 0));
    expectGradientsMatch(build, {data, idx, upd});
  }
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "ScatterElements", in, attrs({{"reduction", std::string("add")}}), 1,
                           ir::kOnnxDomain, 16);
            },
            {data, idx, upd});
      },
      {"ScatterElements", "updates FLOAT[2,5]", "the indices' shape [1,4]"});
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "ScatterElements", in); },
                   {data, idx, randomTensor({1, 3}, 63)});
      },
      {"ScatterElements", "at least as large"});
}

// reduction=mul with zero updates: the updates' gradient counts zeros instead of dividing by them.
TEST(ScatterElementsOp, MulGradientWithZeroUpdates) {
  HostTensor data = randomTensor({3, 2}, 1, 0.5f, 1.5f);
  HostTensor idx = i64({4, 2}, {0, 1, 0, 1, 2, 1, 0, 0});
  HostTensor upd = randomTensor({4, 2}, 2, 0.5f, 1.5f);
  upd.span<float>()[0] = 0.0f;  // position (0,0): one zero among three updates
  upd.span<float>()[3] = 0.0f;  // position (1,1): two zeros
  upd.span<float>()[5] = 0.0f;
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        return addOp(g, "ScatterElements", in, attrs({{"reduction", std::string("mul")}}), 1,
                     ir::kOnnxDomain, 16);
      },
      {data, idx, upd});
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        return addOp(g, "ScatterND", in, attrs({{"reduction", std::string("mul")}}), 1,
                     ir::kOnnxDomain, 16);
      },
      {data, i64({3, 1}, {1, 1, 2}), HostTensor::fromVector<float>({3, 2}, {0, 2, 0, 3, 1, 0})});
}

TEST(ScatterElementsOp, Opset9ScatterAndReductionNeedsOpset16) {
  HostTensor data = randomTensor({3, 3}, 1);
  HostTensor idx = i64({1, 3}, {1, 0, 2});
  HostTensor upd = randomTensor({1, 3}, 2);
  auto out = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "Scatter", in, {}, 1, ir::kOnnxDomain, 9); },
      {data, idx, upd});
  EXPECT_TRUE(allClose(out[0], scatterElementsRef(data, idx, upd, 0, "none"), 0, 0));
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "ScatterElements", in, attrs({{"reduction", std::string("add")}}), 1,
                           ir::kOnnxDomain, 13);
            },
            {data, idx, upd});
      },
      {"ScatterElements 'op_under_test'", "needs opset 16", "opset 13"});
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "ScatterElements", in, attrs({{"reduction", std::string("max")}}), 1,
                           ir::kOnnxDomain, 16);
            },
            {data, idx, upd});
      },
      {"ScatterElements", "reduction 'max'"});
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "ScatterElements", in); },
                   {data, i64({1, 3}, {1, 3, 0}), upd});
      },
      {"ScatterElements 'op_under_test'", "index 3", "element 1"});
}

// ---- GatherND / ScatterND
// -------------------------------------------------------------------------

HostTensor gatherNDRef(const HostTensor& data, const HostTensor& idx, int64_t b) {
  const Shape& ds = data.shape();
  const Shape& is = idx.shape();
  const int64_t k = is.back();
  Shape out(is.begin(), is.end() - 1);
  out.insert(out.end(), ds.begin() + b + k, ds.end());
  HostTensor y(TensorInfo(data.dataType(), out));
  for (int64_t i = 0; i < y.nelms(); ++i) {
    auto o = unravel(i, out);
    // o = [batch (b), tuple position, slice position].
    std::vector<int64_t> ipos(o.begin(), o.begin() + static_cast<int64_t>(is.size()) - 1);
    std::vector<int64_t> dpos(o.begin(), o.begin() + b);
    for (int64_t c = 0; c < k; ++c) {
      ipos.push_back(c);
      dpos.push_back(wrap(static_cast<int64_t>(idx.getAsDouble(ravel(ipos, is))),
                          ds[static_cast<size_t>(b + c)]));
      ipos.pop_back();
    }
    dpos.insert(dpos.end(), o.begin() + static_cast<int64_t>(is.size()) - 1, o.end());
    y.setFromDouble(i, data.getAsDouble(ravel(dpos, ds)));
  }
  return y;
}

TEST(GatherNDOp, TuplesOfEveryLengthAndBatchDimsWithGradient) {
  HostTensor data = randomTensor({2, 3, 4}, 7);
  struct Case {
    Shape idxShape;
    int64_t batchDims;
  };
  for (const Case& c : {Case{{5, 1}, 0}, Case{{2, 2}, 0}, Case{{2, 2, 3}, 0}, Case{{2, 1}, 1},
                        Case{{2, 3, 2}, 1}, Case{{2, 3, 1}, 2}, Case{{2, 4, 1}, 1}}) {
    HostTensor idx(TensorInfo(DataType::INT64, c.idxShape));
    std::mt19937_64 rng(3);
    const int64_t k = c.idxShape.back();
    for (int64_t i = 0; i < idx.nelms(); ++i) {
      const int64_t dim = data.shape()[static_cast<size_t>(c.batchDims + i % k)];
      idx.span<int64_t>()[static_cast<size_t>(i)] =
          std::uniform_int_distribution<int64_t>(-dim, dim - 1)(rng);
    }
    auto build = [&](ir::Graph& g, auto in) {
      return addOp(g, "GatherND", in, attrs({{"batch_dims", c.batchDims}}), 1, ir::kOnnxDomain, 12);
    };
    auto out = runForward(build, {data, idx});
    EXPECT_TRUE(allClose(out[0], gatherNDRef(data, idx, c.batchDims), 0, 0))
        << shapeToString(c.idxShape) << " " << c.batchDims;
    HostTensor di = data.castTo(DataType::INT32);
    out = runForward(build, {di, idx});
    EXPECT_TRUE(allClose(out[0], gatherNDRef(di, idx, c.batchDims), 0, 0));
    expectGradientsMatch(build, {data, idx});
  }
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "GatherND", in); },
                   {data, i64({1, 2}, {1, 3})});
      },
      {"GatherND 'op_under_test'", "index 3", "element 1", "size 3"});
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "GatherND", in, attrs({{"batch_dims", int64_t{1}}}), 1,
                           ir::kOnnxDomain, 11);
            },
            {data, i64({2, 1}, {1, 0})});
      },
      {"GatherND", "batch_dims needs opset 12"});
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "GatherND", in); },
                   {data, i64({1, 4}, {0, 0, 0, 0})});
      },
      {"GatherND", "index 4 dimensions"});
}

HostTensor scatterNDRef(const HostTensor& data, const HostTensor& idx, const HostTensor& upd,
                        const std::string& reduction) {
  HostTensor y = data;
  const Shape& ds = data.shape();
  const Shape& is = idx.shape();
  const int64_t k = is.back();
  for (int64_t i = 0; i < upd.nelms(); ++i) {
    auto u = unravel(i, upd.shape());
    std::vector<int64_t> ipos(u.begin(), u.begin() + static_cast<int64_t>(is.size()) - 1);
    std::vector<int64_t> dpos;
    for (int64_t c = 0; c < k; ++c) {
      ipos.push_back(c);
      dpos.push_back(
          wrap(static_cast<int64_t>(idx.getAsDouble(ravel(ipos, is))), ds[static_cast<size_t>(c)]));
      ipos.pop_back();
    }
    dpos.insert(dpos.end(), u.begin() + static_cast<int64_t>(is.size()) - 1, u.end());
    const int64_t o = ravel(dpos, ds);
    const double v = y.getAsDouble(o), w = upd.getAsDouble(i);
    y.setFromDouble(o, reduction == "add" ? v + w : reduction == "mul" ? v * w : w);
  }
  return y;
}

TEST(ScatterNDOp, EveryReductionWithGradients) {
  HostTensor data = randomTensor({4, 3, 2}, 8, 0.5f, 1.5f);
  // Distinct tuples for "none"; repeated ones for add and mul.
  HostTensor unique = i64({3, 2}, {0, 1, 3, -1, -4, 0});
  HostTensor repeated = i64({2, 2, 1}, {1, -3, 3, 1});
  for (std::string reduction : {"none", "add", "mul"}) {
    const HostTensor& idx = reduction == "none" ? unique : repeated;
    Shape us(idx.shape().begin(), idx.shape().end() - 1);
    for (size_t d = static_cast<size_t>(idx.shape().back()); d < 3; ++d) {
      us.push_back(data.shape()[d]);
    }
    HostTensor upd = randomTensor(us, 9, 0.5f, 1.5f);
    auto build = [&](ir::Graph& g, auto in) {
      return addOp(g, "ScatterND", in, attrs({{"reduction", reduction}}), 1, ir::kOnnxDomain, 16);
    };
    auto out = runForward(build, {data, idx, upd});
    EXPECT_TRUE(allClose(out[0], scatterNDRef(data, idx, upd, reduction), 1e-6, 1e-6)) << reduction;
    expectGradientsMatch(build, {data, idx, upd});
    HostTensor di = data.castTo(DataType::INT64), ui = upd.castTo(DataType::INT64);
    out = runForward(build, {di, idx, ui});
    EXPECT_TRUE(allClose(out[0], scatterNDRef(di, idx, ui, reduction), 0, 0));
  }
  // BOOL data, opset 11 form.
  HostTensor b(TensorInfo(DataType::BOOL, {4}));
  auto out = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "ScatterND", in, {}, 1, ir::kOnnxDomain, 11); },
      {b, i64({2, 1}, {1, 3}),
       HostTensor::fromVector<uint8_t>({2}, {1, 1}).castTo(DataType::BOOL)});
  EXPECT_EQ(out[0].castTo(DataType::UINT8).toVector<uint8_t>(), (std::vector<uint8_t>{0, 1, 0, 1}));
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "ScatterND", in); },
                   {data, i64({1, 1}, {4}), randomTensor({1, 3, 2}, 1)});
      },
      {"ScatterND 'op_under_test'", "index 4", "size 4"});
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "ScatterND", in); },
                   {data, i64({1, 1}, {0}), randomTensor({3, 2}, 1)});
      },
      {"ScatterND 'op_under_test'", "updates", "[1,3,2]"});
}

// ---- TopK
// -------------------------------------------------------------------------------------------

TEST(TopKOp, LargestSmallestTiesEveryAxisAndGradient) {
  HostTensor x = randomTensor({3, 6, 4}, 12);
  // Finite differences need values further apart than their step: a shuffled 0.05 * arange.
  HostTensor untied(x.info());
  {
    std::vector<float> v(static_cast<size_t>(x.nelms()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * static_cast<float>(i) - 1.0f;
    std::shuffle(v.begin(), v.end(), std::mt19937_64(5));
    std::copy(v.begin(), v.end(), untied.span<float>().begin());
  }
  // A few ties: equal values keep index order.
  x.span<float>()[0] = x.span<float>()[4] = x.span<float>()[8] = 0.25f;
  for (int64_t axis = -3; axis < 3; ++axis) {
    const auto a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    const int64_t dim = x.shape()[a];
    for (int64_t largest : {0, 1}) {
      for (int64_t k : {int64_t{1}, int64_t{3}, dim}) {
        auto build = [&](ir::Graph& g, auto in) {
          return addOp(g, "TopK", in, attrs({{"axis", axis}, {"largest", largest}}), 2);
        };
        auto out = runForward(build, {x, i64({1}, {k})});
        Shape os = x.shape();
        os[a] = k;
        HostTensor wantV(TensorInfo(DataType::FLOAT, os)), wantI(TensorInfo(DataType::INT64, os));
        for (int64_t i = 0; i < wantV.nelms(); ++i) {
          auto p = unravel(i, os);
          const int64_t rank = p[a];
          std::vector<std::pair<double, int64_t>> line;
          for (int64_t j = 0; j < dim; ++j) {
            p[a] = j;
            line.push_back({x.getAsDouble(ravel(p, x.shape())), j});
          }
          std::stable_sort(line.begin(), line.end(), [&](auto& l, auto& r) {
            return largest ? l.first > r.first : l.first < r.first;
          });
          wantV.setFromDouble(i, line[static_cast<size_t>(rank)].first);
          wantI.setFromDouble(i, static_cast<double>(line[static_cast<size_t>(rank)].second));
        }
        EXPECT_TRUE(allClose(out[0], wantV, 0, 0)) << axis << " " << largest << " " << k;
        EXPECT_TRUE(allClose(out[1], wantI, 0, 0)) << axis << " " << largest << " " << k;
        if (k == 3) expectGradientsMatch(build, {untied, i64({1}, {k})});
      }
    }
  }
}

TEST(TopKOp, Opset1AttributeKNanAndErrors) {
  HostTensor x = HostTensor::fromVector<float>(
      {5}, {1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f, -1.0f, 3.0f});
  auto out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "TopK", in, attrs({{"k", int64_t{3}}}), 2, ir::kOnnxDomain, 9);
      },
      {x});
  EXPECT_TRUE(std::isnan(out[0].toVector<float>()[0]));
  EXPECT_EQ(out[1].toVector<int64_t>(), (std::vector<int64_t>{1, 2, 4}));
  out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "TopK", in, attrs({{"largest", int64_t{0}}}), 2, ir::kOnnxDomain, 11);
      },
      {x, i64({1}, {2})});
  EXPECT_EQ(out[1].toVector<int64_t>(), (std::vector<int64_t>{3, 0}));
  // INT64 input, ties in index order.
  out = runForward([](ir::Graph& g, auto in) { return addOp(g, "TopK", in, {}, 2); },
                   {i64({6}, {5, -2, 9, 5, 9, 0}), i64({1}, {4})});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{9, 9, 5, 5}));
  EXPECT_EQ(out[1].toVector<int64_t>(), (std::vector<int64_t>{2, 4, 0, 3}));
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "TopK", in, {}, 2); },
                   {x, i64({1}, {6})});
      },
      {"TopK 'op_under_test'", "k is 6", "5 elements"});
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "TopK", in, {}, 2); },
                   {x, randomTensor({1}, 1)});
      },
      {"TopK 'op_under_test'", "must be a constant"});
}

// ---- ArgMax / ArgMin ----------------------------------------------------------------------------

TEST(ArgMaxMinOp, EveryAxisKeepdimsAndSelectLastIndex) {
  HostTensor x = randomTensor({3, 4, 5}, 14);
  // Ties to tell first from last.
  x.span<float>()[1] = x.span<float>()[6] = 5.0f;
  x.span<float>()[2] = x.span<float>()[12] = -5.0f;
  HostTensor xi = randomTensor({3, 4, 5}, 15, -3, 3).castTo(DataType::INT32);
  for (std::string type : {"ArgMax", "ArgMin"}) {
    for (int64_t axis = -3; axis < 3; ++axis) {
      for (int64_t keep : {0, 1}) {
        for (int64_t last : {0, 1}) {
          for (const HostTensor* in : {&x, &xi}) {
            auto out = runForward(
                [&](ir::Graph& g, auto ins) {
                  return addOp(
                      g, type, ins,
                      attrs({{"axis", axis}, {"keepdims", keep}, {"select_last_index", last}}));
                },
                {*in});
            const auto a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
            Shape os = in->shape();
            os[a] = 1;
            HostTensor want(TensorInfo(DataType::INT32, os));
            for (int64_t i = 0; i < want.nelms(); ++i) {
              auto p = unravel(i, os);
              int64_t best = 0;
              double bv = 0;
              for (int64_t j = 0; j < in->shape()[a]; ++j) {
                p[a] = j;
                const double v = in->getAsDouble(ravel(p, in->shape()));
                const bool better = j == 0 || (type == "ArgMax" ? (last ? v >= bv : v > bv)
                                                                : (last ? v <= bv : v < bv));
                if (better) {
                  best = j;
                  bv = v;
                }
              }
              want.setFromDouble(i, static_cast<double>(best));
            }
            if (!keep) os.erase(os.begin() + static_cast<int64_t>(a));
            want.reshape(os);
            EXPECT_TRUE(allClose(out[0], want, 0, 0)) << type << axis << keep << last;
          }
        }
      }
    }
  }
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "ArgMax", in, attrs({{"select_last_index", int64_t{1}}}), 1,
                           ir::kOnnxDomain, 11);
            },
            {x});
      },
      {"ArgMax 'op_under_test'", "select_last_index needs opset 12"});
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "ArgMin", in); },
                   {randomTensor({0, 2}, 1)});
      },
      {"ArgMin 'op_under_test'", "empty"});
}

}  // namespace
}  // namespace xtrain::testing
