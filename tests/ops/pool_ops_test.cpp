#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

struct PoolCase {
  PoolCase(Shape x_, Shape kernel_, Shape strides_ = {}, Shape pads_ = {}, Shape dilations_ = {},
           bool ceil_ = false, bool includePad_ = false, std::string autoPad_ = {})
      : x(std::move(x_)),
        kernel(std::move(kernel_)),
        strides(std::move(strides_)),
        pads(std::move(pads_)),
        dilations(std::move(dilations_)),
        ceil(ceil_),
        includePad(includePad_),
        autoPad(std::move(autoPad_)) {}
  Shape x, kernel;
  Shape strides, pads, dilations;  // empty: attribute not set
  bool ceil;
  bool includePad;      // AveragePool's count_include_pad
  std::string autoPad;  // empty: not set
};

size_t nd(const PoolCase& c) {
  return c.x.size() - 2;
}
int64_t strideOf(const PoolCase& c, size_t i) {
  return c.strides.empty() ? 1 : c.strides[i];
}
int64_t dilationOf(const PoolCase& c, size_t i) {
  return c.dilations.empty() ? 1 : c.dilations[i];
}

Shape effectivePads(const PoolCase& c) {
  const size_t n = nd(c);
  if (c.autoPad.empty() || c.autoPad == "NOTSET") {
    return c.pads.empty() ? Shape(2 * n, 0) : c.pads;
  }
  Shape pads(2 * n, 0);
  if (c.autoPad == "VALID") {
    return pads;
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t s = strideOf(c, i), in = c.x[2 + i];
    const int64_t out = (in + s - 1) / s;
    const int64_t total =
        std::max<int64_t>(0, (out - 1) * s + (c.kernel[i] - 1) * dilationOf(c, i) + 1 - in);
    pads[c.autoPad == "SAME_UPPER" ? i : i + n] = total / 2;
    pads[c.autoPad == "SAME_UPPER" ? i + n : i] = total - total / 2;
  }
  return pads;
}

// Naive pooling following onnxruntime / PyTorch: floor or ceil output size (a ceil window starting
// in the end padding is dropped), max ignores padding, average divides by the in-input count or,
// with count_include_pad, by the window clipped to [-pad_begin, in + pad_end).
HostTensor refPool(const HostTensor& X, const PoolCase& c, bool max) {
  const size_t n = nd(c);
  const Shape pads = effectivePads(c);
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1},
          d[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
  Shape ys{c.x[0], c.x[1]};
  for (size_t i = 0; i < n; ++i) {
    const size_t j = 3 - n + i;
    in[j] = c.x[2 + i];
    k[j] = c.kernel[i];
    s[j] = strideOf(c, i);
    d[j] = dilationOf(c, i);
    pb[j] = pads[i];
    pe[j] = pads[i + n];
    const double span = static_cast<double>(in[j] + pb[j] + pe[j] - ((k[j] - 1) * d[j] + 1));
    out[j] = static_cast<int64_t>(c.ceil ? std::ceil(span / s[j]) : std::floor(span / s[j])) + 1;
    if (c.ceil && (out[j] - 1) * s[j] >= in[j] + pb[j]) {
      --out[j];
    }
    ys.push_back(out[j]);
  }
  HostTensor Y(TensorInfo(DataType::FLOAT, ys));
  const float* px = X.data<float>();
  float* py = Y.data<float>();
  const int64_t planes = c.x[0] * c.x[1];
  int64_t o = 0;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t o0 = 0; o0 < out[0]; ++o0) {
      for (int64_t o1 = 0; o1 < out[1]; ++o1) {
        for (int64_t o2 = 0; o2 < out[2]; ++o2, ++o) {
          const int64_t oo[3] = {o0, o1, o2};
          double best = -INFINITY, sum = 0;
          int64_t count = 0, divisor = 1;
          for (int j = 0; j < 3; ++j) {
            const int64_t start = oo[j] * s[j] - pb[j];
            divisor *= std::min(start + k[j], in[j] + pe[j]) - start;
          }
          for (int64_t k0 = 0; k0 < k[0]; ++k0) {
            for (int64_t k1 = 0; k1 < k[1]; ++k1) {
              for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                const int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0];
                const int64_t i1 = o1 * s[1] - pb[1] + k1 * d[1];
                const int64_t i2 = o2 * s[2] - pb[2] + k2 * d[2];
                if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) {
                  continue;
                }
                const double v = px[((p * in[0] + i0) * in[1] + i1) * in[2] + i2];
                best = std::max(best, v);
                sum += v;
                ++count;
              }
            }
          }
          py[o] = static_cast<float>(
              max ? best : sum / static_cast<double>(c.includePad ? divisor : count));
        }
      }
    }
  }
  return Y;
}

Attributes poolAttrs(const PoolCase& c, bool max) {
  Attributes a;
  a.set("kernel_shape", c.kernel);
  if (!c.strides.empty()) {
    a.set("strides", c.strides);
  }
  if (!c.pads.empty()) {
    a.set("pads", c.pads);
  }
  if (!c.dilations.empty()) {
    a.set("dilations", c.dilations);
  }
  if (c.ceil) {
    a.set("ceil_mode", int64_t{1});
  }
  if (!max && c.includePad) {
    a.set("count_include_pad", int64_t{1});
  }
  if (!c.autoPad.empty()) {
    a.set("auto_pad", c.autoPad);
  }
  return a;
}

// Distinct values 0.05 apart in random order, so max pooling has no ties, even after a
// finite-difference step.
HostTensor distinctTensor(const Shape& shape, uint64_t seed) {
  HostTensor t(TensorInfo(DataType::FLOAT, shape));
  std::vector<int> order(static_cast<size_t>(t.nelms()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  for (size_t i = 0; i < order.size(); ++i) {
    t.data<float>()[i] = 0.05f * static_cast<float>(order[i]) - 1.0f;
  }
  return t;
}

const PoolCase kPoolCases[] = {
    {{1, 1, 5, 5}, {2, 2}, {2, 2}},
    {{1, 1, 5, 5}, {2, 2}, {2, 2}, {}, {}, true},
    {{2, 3, 6, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
    {{2, 3, 6, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false, true},
    {{1, 2, 7, 7}, {3, 2}, {2, 3}, {1, 0, 1, 1}, {}, true, true},
    {{1, 2, 8, 6}, {3, 3}, {2, 2}, {0, 1, 0, 0}, {}, true, true},
    {{1, 1, 5, 5}, {3, 3}, {3, 3}, {1, 1, 1, 1}, {}, true, false},  // last ceil window dropped
    {{1, 1, 5, 5}, {3, 3}, {3, 3}, {1, 1, 1, 1}, {}, true, true},
    {{2, 3, 10}, {3}, {2}, {1, 1}, {}, true, true},                // 1-D
    {{1, 2, 4, 5, 5}, {2, 2, 2}, {2, 2, 2}, {}, {}, true, false},  // 3-D
    {{1, 2, 7, 6}, {3, 3}, {2, 2}, {}, {}, false, true, "SAME_UPPER"},
    {{1, 2, 7, 6}, {2, 2}, {1, 1}, {}, {}, false, false, "SAME_LOWER"},
    {{1, 2, 7, 6}, {3, 3}, {2, 2}, {}, {}, false, false, "VALID"},
    {{0, 2, 4, 4}, {2, 2}},  // empty batch
};

// Max pooling additionally with dilations.
const PoolCase kMaxOnlyCases[] = {
    {{1, 2, 7, 7}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {2, 2}},
    {{2, 1, 9, 8}, {3, 2}, {2, 3}, {2, 0, 1, 1}, {2, 3}, true},
};

class PoolForward : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolForward, MaxAndAverageMatchNaivePooling) {
  const PoolCase& c = GetParam();
  auto x = randomTensor(c.x, 3);
  for (bool max : {true, false}) {
    const std::string type = max ? "MaxPool" : "AveragePool";
    auto out = runForward(
        [&](ir::Graph& g, auto in) { return addOp(g, type, in, poolAttrs(c, max)); }, {x});
    EXPECT_TRUE(allClose(out[0], refPool(x, c, max), 1e-5, 1e-6)) << type;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, PoolForward, ::testing::ValuesIn(kPoolCases));

class MaxPoolDilated : public ::testing::TestWithParam<PoolCase> {};

TEST_P(MaxPoolDilated, MatchesNaiveAndGradientsMatch) {
  const PoolCase& c = GetParam();
  auto x = distinctTensor(c.x, 4);
  auto build = [&](ir::Graph& g, auto in) { return addOp(g, "MaxPool", in, poolAttrs(c, true)); };
  EXPECT_TRUE(allClose(runForward(build, {x})[0], refPool(x, c, true)));
  expectGradientsMatch(build, {x});
}

INSTANTIATE_TEST_SUITE_P(Cases, MaxPoolDilated, ::testing::ValuesIn(kMaxOnlyCases));

class PoolGrad : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolGrad, MaxAndAverageMatchFiniteDifferences) {
  const PoolCase& c = GetParam();
  auto x = distinctTensor(c.x, 5);
  for (bool max : {true, false}) {
    const std::string type = max ? "MaxPool" : "AveragePool";
    SCOPED_TRACE(type);
    expectGradientsMatch(
        [&](ir::Graph& g, auto in) { return addOp(g, type, in, poolAttrs(c, max)); }, {x});
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PoolGrad,
    ::testing::Values(PoolCase{{1, 2, 5, 5}, {2, 2}, {2, 2}, {}, {}, true},
                      PoolCase{{2, 1, 6, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false, true},
                      PoolCase{{1, 2, 7, 7}, {3, 2}, {2, 3}, {1, 0, 1, 1}, {}, true, true},
                      PoolCase{{1, 1, 5, 5}, {3, 3}, {1, 1}, {1, 1, 1, 1}},  // overlapping windows
                      PoolCase{{2, 2, 9}, {3}, {2}, {1, 1}, {}, true, false},
                      PoolCase{{1, 1, 5, 6}, {3, 3}, {2, 2}, {}, {}, false, true, "SAME_LOWER"}));

TEST(GlobalAveragePool, ForwardAndGradient) {
  auto x = randomTensor({2, 3, 4, 5}, 6);
  auto build = [](ir::Graph& g, auto in) { return addOp(g, "GlobalAveragePool", in); };
  auto out = runForward(build, {x});
  HostTensor want(TensorInfo(DataType::FLOAT, {2, 3, 1, 1}));
  for (int64_t p = 0; p < 6; ++p) {
    double s = 0;
    for (int64_t i = 0; i < 20; ++i) {
      s += x.data<float>()[p * 20 + i];
    }
    want.data<float>()[p] = static_cast<float>(s / 20);
  }
  EXPECT_TRUE(allClose(out[0], want, 1e-5, 1e-6));
  expectGradientsMatch(build, {x});
  expectGradientsMatch(build, {randomTensor({2, 2, 7}, 7)});
}

void expectPoolError(const std::string& type, const Attributes& attrs, const Shape& x, int outputs,
                     const std::vector<std::string>& parts) {
  try {
    runForward([&](ir::Graph& g, auto in) { return addOp(g, type, in, attrs, outputs); },
               {randomTensor(x, 1)});
    FAIL() << "expected an error";
  } catch (const error& e) {
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
}

TEST(PoolErrors, NameTheOpAndTheProblem) {
  Attributes a;
  a.set("kernel_shape", Shape{2, 2});
  expectPoolError("MaxPool", a, {1, 1, 4, 4}, 2, {"MaxPool", "Indices"});
  expectPoolError("AveragePool", {}, {1, 1, 4, 4}, 1, {"AveragePool", "kernel_shape"});
  expectPoolError("MaxPool", a, {4, 4}, 1, {"MaxPool", "[4,4]"});
  Attributes big = a;
  big.set("pads", Shape{2, 0, 0, 0});
  expectPoolError("AveragePool", big, {1, 1, 4, 4}, 1, {"AveragePool", "pads [2,0,0,0]"});
  Attributes wide;
  wide.set("kernel_shape", Shape{5, 1});
  expectPoolError("MaxPool", wide, {1, 1, 4, 4}, 1, {"MaxPool", "larger than the padded input"});
  expectPoolError("GlobalAveragePool", {}, {3, 4}, 1, {"GlobalAveragePool", "[3,4]"});
}

}  // namespace
}  // namespace xtrain::testing
