#include <gtest/gtest.h>

#include "device/kernels/sgemm.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// Naive numpy matmul: 1-D promotion, optional transposes of the last two dims, broadcast batch
// dims.
HostTensor refMatMul(const HostTensor& A, const HostTensor& B, bool ta = false, bool tb = false,
                     float alpha = 1.0f) {
  Shape a = A.shape(), b = B.shape();
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) {
    a.insert(a.begin(), 1);
  }
  if (b1) {
    b.push_back(1);
  }
  const size_t ra = a.size(), rb = b.size();
  const int64_t m = ta ? a[ra - 1] : a[ra - 2];
  const int64_t k = ta ? a[ra - 2] : a[ra - 1];
  const int64_t n = tb ? b[rb - 2] : b[rb - 1];
  const size_t rank = std::max(ra, rb) - 2;
  Shape ba(rank, 1), bb(rank, 1), by(rank);
  for (size_t i = 0; i < ra - 2; ++i) {
    ba[rank - (ra - 2) + i] = a[i];
  }
  for (size_t i = 0; i < rb - 2; ++i) {
    bb[rank - (rb - 2) + i] = b[i];
  }
  for (size_t i = 0; i < rank; ++i) {
    by[i] = std::max(ba[i], bb[i]);
  }
  Shape yShape = by;
  if (!a1) {
    yShape.push_back(m);
  }
  if (!b1) {
    yShape.push_back(n);
  }
  HostTensor Y(TensorInfo(DataType::FLOAT, yShape));
  const float* pa = A.data<float>();
  const float* pb = B.data<float>();
  float* py = Y.data<float>();
  const int64_t batches = shapeNelms(by);
  for (int64_t t = 0; t < batches; ++t) {
    // Offsets of batch entry t in A and B.
    int64_t rem = t, offA = 0, offB = 0, strideA = 1, strideB = 1;
    for (size_t d = rank; d-- > 0;) {
      const int64_t idx = rem % by[d];
      rem /= by[d];
      offA += (ba[d] == 1 ? 0 : idx) * strideA;
      offB += (bb[d] == 1 ? 0 : idx) * strideB;
      strideA *= ba[d];
      strideB *= bb[d];
    }
    const float* sa = pa + offA * m * k;
    const float* sb = pb + offB * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          const float x = ta ? sa[p * m + i] : sa[i * k + p];
          const float w = tb ? sb[j * k + p] : sb[p * n + j];
          s += static_cast<double>(x) * w;
        }
        py[(t * m + i) * n + j] = static_cast<float>(alpha * s);
      }
    }
  }
  return Y;
}

struct MatMulCase {
  Shape a, b;
};

class MatMulForward : public ::testing::TestWithParam<MatMulCase> {};

TEST_P(MatMulForward, MatchesNaiveNumpyMatmul) {
  const auto& c = GetParam();
  auto a = randomTensor(c.a, 1);
  auto b = randomTensor(c.b, 2);
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "MatMul", in); }, {a, b});
  EXPECT_TRUE(allClose(out[0], refMatMul(a, b), 1e-4, 1e-5));
}

const MatMulCase kMatMulCases[] = {
    {{3, 4}, {4, 5}},       {{4}, {4, 5}},
    {{3, 4}, {4}},          {{4}, {4}},
    {{2, 3, 4}, {4, 5}},    {{3, 4}, {2, 4, 5}},
    {{2, 3, 4}, {2, 4, 5}}, {{2, 1, 3, 4}, {3, 4, 5}},
    {{1, 3, 4}, {2, 4, 5}}, {{2, 1, 3, 4}, {1, 3, 4, 2}},
    {{4}, {2, 3, 4, 5}},    {{2, 3, 3, 4}, {4}},
    {{1, 1}, {1, 1}},       {{0, 4}, {4, 5}},
    {{3, 0}, {0, 5}},       {{2, 0, 4}, {4, 3}},
    {{5, 7, 9}, {9, 6}},
};

INSTANTIATE_TEST_SUITE_P(Shapes, MatMulForward, ::testing::ValuesIn(kMatMulCases));

class MatMulGrad : public ::testing::TestWithParam<MatMulCase> {};

TEST_P(MatMulGrad, MatchesFiniteDifferences) {
  const auto& c = GetParam();
  expectGradientsMatch([](ir::Graph& g, auto in) { return addOp(g, "MatMul", in); },
                       {randomTensor(c.a, 3), randomTensor(c.b, 4)});
}

const MatMulCase kMatMulGradCases[] = {
    {{3, 4}, {4, 2}},
    {{4}, {4, 2}},
    {{3, 4}, {4}},
    {{4}, {4}},
    {{2, 3, 4}, {4, 2}},
    {{3, 4}, {2, 4, 2}},
    {{2, 3, 4}, {2, 4, 2}},
    {{2, 1, 3, 4}, {3, 4, 2}},
    {{4}, {2, 4, 3}},
    {{2, 3, 4}, {4}},
    {{2, 3, 4}, {1, 1, 4, 2}},
};

INSTANTIATE_TEST_SUITE_P(Shapes, MatMulGrad, ::testing::ValuesIn(kMatMulGradCases));

TEST(MatMulT, TransposesViewsAndAlpha) {
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      // op(A) [2, 3, 4] with A broadcast against B's batch, op(B) [4, 5].
      auto a = randomTensor(ta ? Shape{1, 4, 3} : Shape{1, 3, 4}, 10);
      auto b = randomTensor(tb ? Shape{2, 5, 4} : Shape{2, 4, 5}, 11);
      Attributes attrs;
      attrs.set("transA", int64_t{ta});
      attrs.set("transB", int64_t{tb});
      attrs.set("alpha", 0.5f);
      auto out =
          runForward([&](ir::Graph& g,
                         auto in) { return addOp(g, "MatMulT", in, attrs, 1, ir::kXtrainDomain); },
                     {a, b});
      EXPECT_TRUE(allClose(out[0], refMatMul(a, b, ta, tb, 0.5f), 1e-4, 1e-5))
          << "transA " << ta << " transB " << tb;
    }
  }
  // Views: A [6] seen as [2, 3], B [12] seen as [3, 4] transposed to... no: [4, 3] with transB; out
  // [8].
  auto a = randomTensor({6}, 12);
  auto b = randomTensor({12}, 13);
  Attributes attrs;
  attrs.set("transB", int64_t{1});
  attrs.set("viewA", Shape{2, 3});
  attrs.set("viewB", Shape{4, 3});
  attrs.set("outShape", Shape{8});
  auto out = runForward(
      [&](ir::Graph& g, auto in) { return addOp(g, "MatMulT", in, attrs, 1, ir::kXtrainDomain); },
      {a, b});
  HostTensor a2 = a, b2 = b;
  a2.reshape({2, 3});
  b2.reshape({4, 3});
  HostTensor want = refMatMul(a2, b2, false, true);
  want.reshape({8});
  EXPECT_TRUE(allClose(out[0], want, 1e-5, 1e-6));
}

struct GemmCase {
  bool ta, tb;
  float alpha, beta;
  Shape c;  // empty vector + hasC=false: no C
  bool hasC;
};

HostTensor refGemm(const HostTensor& A, const HostTensor& B, const HostTensor* C,
                   const GemmCase& g) {
  HostTensor y = refMatMul(A, B, g.ta, g.tb, g.alpha);
  if (!C) {
    return y;
  }
  const int64_t m = y.shape()[0], n = y.shape()[1];
  const Shape& c = C->shape();
  const int64_t cm = c.size() == 2 ? c[0] : 1;
  const int64_t cn = c.empty() ? 1 : c.back();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      y.data<float>()[i * n + j] +=
          g.beta * C->data<float>()[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
    }
  }
  return y;
}

class GemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTest, ForwardMatchesNaiveAndGradientsMatch) {
  const GemmCase& c = GetParam();
  const int64_t m = 3, k = 4, n = 5;
  std::vector<HostTensor> inputs{randomTensor(c.ta ? Shape{k, m} : Shape{m, k}, 20),
                                 randomTensor(c.tb ? Shape{n, k} : Shape{k, n}, 21)};
  if (c.hasC) {
    inputs.push_back(randomTensor(c.c, 22));
  }
  Attributes attrs;
  attrs.set("transA", int64_t{c.ta});
  attrs.set("transB", int64_t{c.tb});
  attrs.set("alpha", c.alpha);
  attrs.set("beta", c.beta);
  auto build = [&](ir::Graph& g, auto in) { return addOp(g, "Gemm", in, attrs); };
  auto out = runForward(build, inputs);
  EXPECT_TRUE(allClose(out[0], refGemm(inputs[0], inputs[1], c.hasC ? &inputs[2] : nullptr, c),
                       1e-4, 1e-5));
  expectGradientsMatch(build, inputs);
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmTest,
                         ::testing::Values(GemmCase{false, false, 1.0f, 1.0f, {}, false},
                                           GemmCase{true, false, 0.5f, 1.0f, {3, 5}, true},
                                           GemmCase{false, true, 1.0f, 2.0f, {5}, true},
                                           GemmCase{true, true, 2.0f, 0.5f, {3, 1}, true},
                                           GemmCase{
                                               false, false, 1.0f, -1.0f, {}, true},  // scalar C
                                           GemmCase{true, true, 1.5f, 1.0f, {1, 5}, true},
                                           GemmCase{false, true, 1.0f, 0.0f, {3, 5}, true}));

TEST(Gemm, EmptyInnerDimensionGivesBetaC) {
  auto a = HostTensor(TensorInfo(DataType::FLOAT, {2, 0}));
  auto b = HostTensor(TensorInfo(DataType::FLOAT, {0, 3}));
  auto c = HostTensor::fromVector<float>({3}, {1, 2, 3});
  Attributes attrs;
  attrs.set("beta", 2.0f);
  auto out =
      runForward([&](ir::Graph& g, auto in) { return addOp(g, "Gemm", in, attrs); }, {a, b, c});
  EXPECT_TRUE(allClose(out[0], HostTensor::fromVector<float>({2, 3}, {2, 4, 6, 2, 4, 6})));
}

TEST(MatMulErrors, MismatchedInnerDimsNameBothShapes) {
  auto a = randomTensor({2, 3}, 1);
  auto b = randomTensor({4, 5}, 2);
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "MatMul", in); }, {a, b});
      },
      {"MatMul", "[2,3]", "[4,5]", "inner dimensions"});
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Gemm", in); }, {a, b});
      },
      {"Gemm", "[2,3]", "[4,5]"});
}

TEST(MatMulErrors, BatchDimsThatDoNotBroadcast) {
  auto a = randomTensor({2, 3, 4}, 1);
  auto b = randomTensor({3, 4, 5}, 2);
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "MatMul", in); }, {a, b});
      },
      {"MatMul", "[2,3,4]", "[3,4,5]", "broadcast"});
}

TEST(MatMulErrors, GemmRejectsBadRankAndC) {
  auto a = randomTensor({2, 3, 4}, 1);
  auto b = randomTensor({4, 5}, 2);
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Gemm", in); }, {a, b});
      },
      {"Gemm", "2-D", "[2,3,4]"});
  auto a2 = randomTensor({3, 4}, 1);
  auto c = randomTensor({3, 2}, 3);
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Gemm", in); }, {a2, b, c});
      },
      {"Gemm", "C [3,2]", "[3,5]"});
  auto s = HostTensor::scalar(1.0f);
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "MatMul", in); }, {s, b});
      },
      {"MatMul", "rank"});
}

TEST(Sgemm, MatchesNaive) {
  const int64_t m = 37, n = 29, k = 41;
  auto a = randomTensor({m, k}, 5);
  auto b = randomTensor({k, n}, 6);
  HostTensor c(TensorInfo(DataType::FLOAT, {m, n}));
  device::sgemm(a.data<float>(), b.data<float>(), c.data<float>(), m, n, k);
  EXPECT_TRUE(allClose(c, refMatMul(a, b), 1e-4, 1e-5));
}

}  // namespace
}  // namespace xtrain::testing
