// ai.graphcore ReduceMedian, Sort and Bucketize against naive references (every axis subset, ties,
// NaN, integer types, FLOAT16), their gradients against finite differences, and their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// ---- ReduceMedian
// ----------------------------------------------------------------------------------

Attributes medianAttrs(std::optional<std::vector<int64_t>> axes, int64_t keepdims) {
  Attributes a;
  if (axes) a.set("axes", *axes);
  a.set("keepdims", keepdims);
  return a;
}

BuildFn median(std::optional<std::vector<int64_t>> axes, int64_t keepdims) {
  return [=](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, "ReduceMedian", in, medianAttrs(axes, keepdims), 2, ir::kGraphcoreDomain, 1);
  };
}

// The reference: each reduced set gathered by plain index arithmetic in row-major order of the
// reduced axes, sorted stably (NaN last), element (n - 1) / 2 taken with its position.
std::pair<HostTensor, HostTensor> medianRef(const HostTensor& x, std::vector<int64_t> axes,
                                            bool keepdims) {
  const Shape& s = x.shape();
  const auto rank = static_cast<int64_t>(s.size());
  for (auto& a : axes) a = a < 0 ? a + rank : a;
  std::vector<bool> red(s.size(), false);
  for (auto a : axes) red[static_cast<size_t>(a)] = true;
  Shape out, kept;
  int64_t setSize = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    kept.push_back(red[d] ? 1 : s[d]);
    if (red[d]) setSize *= s[d];
    if (!red[d]) out.push_back(s[d]);
    if (red[d] && keepdims) out.push_back(1);
  }
  const auto outN = static_cast<size_t>(shapeNelms(kept));
  std::vector<std::vector<std::pair<double, int64_t>>> sets(outN);
  for (int64_t i = 0; i < x.nelms(); ++i) {
    std::vector<int64_t> idx(s.size());
    int64_t rem = i;
    for (size_t d = s.size(); d-- > 0;) {
      idx[d] = rem % s[d];
      rem /= s[d];
    }
    int64_t o = 0, j = 0;
    for (size_t d = 0; d < s.size(); ++d) {
      if (red[d]) {
        j = j * s[d] + idx[d];
      } else {
        o = o * s[d] + idx[d];
      }
    }
    sets[static_cast<size_t>(o)].push_back({x.getAsDouble(i), j});
  }
  HostTensor values(TensorInfo(x.dataType(), out)), indices(TensorInfo(DataType::INT32, out));
  for (size_t o = 0; o < outN; ++o) {
    auto set = sets[o];
    std::sort(set.begin(), set.end(), [](const auto& a, const auto& b) {
      const bool an = std::isnan(a.first), bn = std::isnan(b.first);
      if (an || bn) return an == bn ? a.second < b.second : bn;
      return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    const auto& m = set.at((set.size() - 1) / 2);
    values.setFromDouble(static_cast<int64_t>(o), m.first);
    indices.setFromDouble(static_cast<int64_t>(o), static_cast<double>(m.second));
  }
  EXPECT_EQ(static_cast<size_t>(setSize), sets.empty() ? size_t{1} : sets[0].size());
  return {values, indices};
}

// Small integers as floats: many ties, so the index among equal values is checked too.
HostTensor tiedTensor(const Shape& shape, uint64_t seed, DataType type) {
  HostTensor r = randomTensor(shape, seed, 0.0f, 5.0f);
  HostTensor t(TensorInfo(type, shape));
  for (int64_t i = 0; i < r.nelms(); ++i) t.setFromDouble(i, std::floor(r.getAsDouble(i)));
  return t;
}

TEST(ReduceMedian, EveryAxisSubsetMatchesReference) {
  for (DataType type : {DataType::FLOAT, DataType::INT32, DataType::INT64, DataType::UINT32}) {
    const HostTensor x = tiedTensor({2, 3, 1, 4}, 21, type);
    for (int mask = 0; mask < 32; ++mask) {
      std::vector<int64_t> axes;
      for (int64_t d = 0; d < 4; ++d) {
        if (mask & (1 << d)) axes.push_back(mask & 16 ? d - 4 : d);
      }
      for (int64_t keep : {0, 1}) {
        auto out = runForward(median(axes, keep), {x});
        auto [values, indices] = medianRef(x, axes, keep != 0);
        EXPECT_TRUE(allClose(out[0], values, 0, 0))
            << dataTypeName(type) << " axes " << shapeToString(axes) << " keepdims " << keep;
        EXPECT_TRUE(allClose(out[1], indices, 0, 0))
            << dataTypeName(type) << " axes " << shapeToString(axes) << " keepdims " << keep;
      }
    }
  }
}

TEST(ReduceMedian, AbsentAxesReduceEverythingAndEmptyAxesNothing) {
  const HostTensor x = randomTensor({3, 5}, 22);
  auto all = runForward(median(std::nullopt, 0), {x});
  EXPECT_EQ(all[0].shape(), Shape{});
  EXPECT_TRUE(allClose(all[0], medianRef(x, {0, 1}, false).first, 0, 0));
  auto kept = runForward(median(std::nullopt, 1), {x});
  EXPECT_EQ(kept[0].shape(), (Shape{1, 1}));
  auto none = runForward(median(std::vector<int64_t>{}, 1), {x});
  EXPECT_TRUE(allClose(none[0], x, 0, 0));
  EXPECT_EQ(none[1].toVector<int32_t>(), std::vector<int32_t>(15, 0));
}

TEST(ReduceMedian, EvenCountsTakeTheLowerMiddleAndNaNSortsLast) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = HostTensor::fromVector<float>({2, 4}, {4, 1, 3, 2, nan, 1, nan, 0});
  auto out = runForward(median(std::vector<int64_t>{1}, 0), {x});
  EXPECT_EQ(out[0].toVector<float>(), (std::vector<float>{2, 1}));
  EXPECT_EQ(out[1].toVector<int32_t>(), (std::vector<int32_t>{3, 1}));
}

TEST(ReduceMedian, Float16RunsPromotedExactly) {
  const HostTensor x = randomTensor({4, 7}, 23).castTo(DataType::FLOAT16);
  auto out = runForward(median(std::vector<int64_t>{-1}, 1), {x});
  ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
  auto [values, indices] = medianRef(x, {1}, true);
  EXPECT_TRUE(allClose(out[0], values, 0, 0));
  EXPECT_TRUE(allClose(out[1], indices, 0, 0));
}

TEST(ReduceMedian, GradientGoesToTheMedianElement) {
  // Distinct values: the median is a differentiable selection at the probe points.
  HostTensor x(TensorInfo(DataType::FLOAT, {3, 4, 5}));
  for (int64_t i = 0; i < x.nelms(); ++i) x.setFromDouble(i, 0.1 * ((i * 37) % 60) - 3.0);
  for (const auto& axes : {std::vector<int64_t>{1}, std::vector<int64_t>{0, 2},
                           std::vector<int64_t>{}, std::vector<int64_t>{0, 1, 2}}) {
    for (int64_t keep : {0, 1}) {
      BuildFn values = [&](ir::Graph& g, const std::vector<TensorId>& in) {
        return std::vector<TensorId>{median(axes, keep)(g, in)[0]};
      };
      expectGradientsMatch(values, {x});
    }
  }
}

TEST(ReduceMedian, ErrorsNameTheOpAndTheProblem) {
  const HostTensor x = randomTensor({2, 3}, 24);
  expectError([&] { runForward(median(std::vector<int64_t>{2}, 1), {x}); },
              {"ReduceMedian", "axis 2 is out of range", "FLOAT[2,3]"});
  expectError(
      [&] {
        runForward(median(std::vector<int64_t>{1, -1}, 1), {x});
      },
      {"ReduceMedian", "axis -1 is repeated"});
  HostTensor empty(TensorInfo(DataType::FLOAT, {0, 3}));
  expectError([&] { runForward(median(std::vector<int64_t>{0}, 1), {empty}); },
              {"ReduceMedian", "no elements", "no median"});
  HostTensor b(TensorInfo(DataType::BOOL, {2}));
  expectError([&] { runForward(median(std::nullopt, 1), {b}); },
              {"ReduceMedian", "BOOL", "expected FLOAT, FLOAT16, INT32, INT64 or UINT32"});
}

// ---- Sort
// ------------------------------------------------------------------------------------------

// Equal element for element, NaN equal to NaN.
::testing::AssertionResult sameValues(const HostTensor& a, const HostTensor& b) {
  if (a.info() != b.info()) {
    return ::testing::AssertionFailure() << a.info().toString() << " vs " << b.info().toString();
  }
  for (int64_t i = 0; i < a.nelms(); ++i) {
    const double x = a.getAsDouble(i), y = b.getAsDouble(i);
    if (x != y && !(std::isnan(x) && std::isnan(y))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y;
    }
  }
  return ::testing::AssertionSuccess();
}

BuildFn sortOp(int64_t axis, int64_t descending) {
  return [=](ir::Graph& g, const std::vector<TensorId>& in) {
    Attributes a;
    a.set("axis", axis);
    a.set("descending", descending);
    a.set("stable", int64_t{1});
    return addOp(g, "Sort", in, a, 2, ir::kGraphcoreDomain, 1);
  };
}

// Reference: every line along the axis sorted stably by plain index arithmetic (NaN largest).
std::pair<HostTensor, HostTensor> sortRef(const HostTensor& x, int64_t axis, bool descending) {
  const Shape& s = x.shape();
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (d < axis) outer *= s[static_cast<size_t>(d)];
    if (d > axis) inner *= s[static_cast<size_t>(d)];
  }
  const int64_t n = s[static_cast<size_t>(axis)];
  HostTensor values(x.info()), indices(TensorInfo(DataType::INT32, s));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) order[static_cast<size_t>(j)] = j;
      auto at = [&](int64_t j) { return x.getAsDouble((o * n + j) * inner + i); };
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const double va = at(a), vb = at(b);
        const bool na = std::isnan(va), nb = std::isnan(vb);
        if (na != nb) return descending ? na : nb;  // NaN is the largest value
        if (na) return false;
        return descending ? va > vb : va < vb;
      });
      for (int64_t j = 0; j < n; ++j) {
        values.setFromDouble((o * n + j) * inner + i, at(order[static_cast<size_t>(j)]));
        indices.setFromDouble((o * n + j) * inner + i,
                              static_cast<double>(order[static_cast<size_t>(j)]));
      }
    }
  }
  return {values, indices};
}

TEST(SortOp, EveryAxisBothOrdersWithTiesAndNaN) {
  HostTensor x = tiedTensor({3, 4, 5}, 31, DataType::FLOAT);
  x.setFromDouble(7, std::numeric_limits<double>::quiet_NaN());
  x.setFromDouble(30, std::numeric_limits<double>::quiet_NaN());
  for (DataType type : {DataType::FLOAT, DataType::INT32, DataType::INT64}) {
    const HostTensor in = type == DataType::FLOAT ? x : tiedTensor({3, 4, 5}, 32, type);
    for (int64_t axis : {0, 1, 2, -1}) {
      for (int64_t desc : {0, 1}) {
        auto out = runForward(sortOp(axis, desc), {in});
        auto [values, indices] = sortRef(in, axis, desc != 0);
        EXPECT_TRUE(sameValues(out[0], values))
            << dataTypeName(type) << " axis " << axis << " descending " << desc;
        EXPECT_TRUE(allClose(out[1], indices, 0, 0))
            << dataTypeName(type) << " axis " << axis << " descending " << desc;
      }
    }
  }
}

TEST(SortOp, GradientFollowsThePermutation) {
  HostTensor x(TensorInfo(DataType::FLOAT, {4, 6}));
  for (int64_t i = 0; i < x.nelms(); ++i) x.setFromDouble(i, 0.1 * ((i * 7) % 24) - 1.0);
  for (int64_t axis : {0, 1}) {
    for (int64_t desc : {0, 1}) {
      BuildFn values = [&](ir::Graph& g, const std::vector<TensorId>& in) {
        return std::vector<TensorId>{sortOp(axis, desc)(g, in)[0]};
      };
      expectGradientsMatch(values, {x});
    }
  }
}

TEST(SortOp, ErrorsNameTheOpAndTheProblem) {
  expectError([] { runForward(sortOp(2, 0), {randomTensor({2, 3}, 33)}); }, {"Sort", "axis 2"});
  expectError([] { runForward(sortOp(0, 0), {HostTensor::scalar(1.0f)}); }, {"Sort", "scalar"});
  expectError([] { runForward(sortOp(0, 2), {randomTensor({2}, 34)}); },
              {"Sort", "descending is 2"});
}

// ---- Bucketize
// -------------------------------------------------------------------------------------

BuildFn bucketize(int64_t right) {
  return [=](ir::Graph& g, const std::vector<TensorId>& in) {
    Attributes a;
    a.set("right", right);
    return addOp(g, "Bucketize", in, a, 1, ir::kGraphcoreDomain, 1);
  };
}

TEST(Bucketize, SortedBoundariesCountBoundariesBelow) {
  const HostTensor x = randomTensor({3, 40}, 41, -2.0f, 12.0f);
  auto b = HostTensor::fromVector<float>({6}, {0, 1, 1, 2.5f, 7, 10});
  for (int64_t right : {0, 1}) {
    auto out = runForward(bucketize(right), {x, b});
    ASSERT_EQ(out[0].info(), TensorInfo(DataType::INT32, x.shape()));
    for (int64_t i = 0; i < x.nelms(); ++i) {
      // Reference: the number of boundaries below x (right: at or below).
      int32_t count = 0;
      for (float v : b.toVector<float>()) {
        const double e = x.getAsDouble(i);
        count += right ? (v <= e) : (v < e);
      }
      EXPECT_EQ(out[0].data<int32_t>()[i], count) << "right " << right << " element " << i;
    }
  }
  // Values on the boundaries go left (right = 0) or right (right = 1).
  auto on = HostTensor::fromVector<float>({3}, {1, 0, 10});
  EXPECT_EQ(runForward(bucketize(0), {on, b})[0].toVector<int32_t>(),
            (std::vector<int32_t>{1, 0, 5}));
  EXPECT_EQ(runForward(bucketize(1), {on, b})[0].toVector<int32_t>(),
            (std::vector<int32_t>{3, 1, 6}));
}

TEST(Bucketize, NaNInfinityIntegersAndUnsortedBoundaries) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto x = HostTensor::fromVector<float>({5}, {nan, inf, -inf, 1.5f, 0});
  auto b = HostTensor::fromVector<float>({3}, {0, 1, 2});
  EXPECT_EQ(runForward(bucketize(0), {x, b})[0].toVector<int32_t>(),
            (std::vector<int32_t>{3, 3, 0, 2, 0}));
  EXPECT_EQ(runForward(bucketize(1), {x, b})[0].toVector<int32_t>(),
            (std::vector<int32_t>{3, 3, 0, 2, 1}));
  // Unsorted boundaries: the first bucket whose interval holds the value (torch.bucketize gives
  // the same for these).
  auto xi = HostTensor::fromVector<int32_t>({9}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto bi = HostTensor::fromVector<int32_t>({6}, {1, 2, 3, 6, 4, 5});
  EXPECT_EQ(runForward(bucketize(0), {xi, bi})[0].toVector<int32_t>(),
            (std::vector<int32_t>{0, 1, 2, 3, 3, 3, 6, 6, 6}));
  EXPECT_EQ(runForward(bucketize(1), {xi, bi})[0].toVector<int32_t>(),
            (std::vector<int32_t>{1, 2, 3, 3, 3, 6, 6, 6, 6}));
}

TEST(Bucketize, ErrorsNameTheOpAndTheProblem) {
  const HostTensor x = randomTensor({4}, 42);
  expectError(
      [&] {
        runForward(bucketize(0), {x, randomTensor({2, 2}, 43)});
      },
      {"Bucketize", "not a 1-D tensor"});
  expectError(
      [&] {
        runForward(bucketize(0), {x, HostTensor::fromVector<int32_t>({2}, {1, 2})});
      },
      {"Bucketize", "different data types"});
  expectError(
      [&] {
        runForward(bucketize(2), {x, randomTensor({2}, 44)});
      },
      {"Bucketize", "right is 2"});
}

}  // namespace
}  // namespace xtrain::testing
