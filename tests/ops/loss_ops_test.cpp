#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "device/kernels/kernel_threads.hpp"
#include "testing/op_testing.hpp"
#include "testing/session_log.hpp"

namespace xtrain::testing {
namespace {

// Mean reductions give small gradients; a tighter absolute tolerance than the default keeps the
// check meaningful for them.
GradCheckOptions tight(std::vector<size_t> wrt = {}) {
  GradCheckOptions o;
  o.atol = 3e-4;
  o.wrt = std::move(wrt);
  return o;
}

// "No ignore index" for the references (a sentinel rather than std::optional keeps valgrind quiet:
// gcc may read an empty optional's payload speculatively).
constexpr int64_t kNoIgnore = std::numeric_limits<int64_t>::min();

float at(const HostTensor& t, int64_t i) {
  return t.span<float>()[static_cast<size_t>(i)];
}

// ---------------------------------------------------------------------------------------------------------
// SoftmaxCrossEntropyLoss

struct SceRef {
  HostTensor loss, logProb;
};

// scores [N, C, S...], labels [N, S...] (read as doubles), weights [C] or null.
SceRef refSce(const HostTensor& scores, const HostTensor& labels, const HostTensor* weights,
              const std::string& reduction, int64_t ignore) {
  const Shape& sh = scores.shape();
  const int64_t n = sh[0], c = sh[1];
  int64_t s = 1;
  for (size_t d = 2; d < sh.size(); ++d) s *= sh[d];
  SceRef r{HostTensor(TensorInfo(DataType::FLOAT, reduction == "none" ? labels.shape() : Shape{})),
           HostTensor(scores.info())};
  auto x = [&](int64_t i, int64_t j, int64_t k) {
    return static_cast<double>(at(scores, (i * c + j) * s + k));
  };
  double total = 0, wsum = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < s; ++k) {
      double m = -INFINITY;
      for (int64_t j = 0; j < c; ++j) m = std::max(m, x(i, j, k));
      double z = 0;
      for (int64_t j = 0; j < c; ++j) z += std::exp(x(i, j, k) - m);
      const double lse = m + std::log(z);
      for (int64_t j = 0; j < c; ++j) {
        r.logProb.span<float>()[static_cast<size_t>((i * c + j) * s + k)] =
            static_cast<float>(x(i, j, k) - lse);
      }
      const auto label = static_cast<int64_t>(labels.getAsDouble(i * s + k));
      double l = 0, w = 0;
      if (label != ignore) {
        w = weights != nullptr ? at(*weights, label) : 1.0;
        l = -w * (x(i, label, k) - lse);
      }
      if (reduction == "none")
        r.loss.span<float>()[static_cast<size_t>(i * s + k)] = static_cast<float>(l);
      total += l;
      wsum += w;
    }
  }
  if (reduction == "sum") r.loss.span<float>()[0] = static_cast<float>(total);
  if (reduction == "mean")
    r.loss.span<float>()[0] = wsum != 0 ? static_cast<float>(total / wsum) : 0.0f;
  return r;
}

BuildFn sce(const std::string& reduction, std::optional<int64_t> ignore, int numOutputs,
            int opset = 13) {
  Attributes a;
  a.set("reduction", reduction);
  if (ignore) a.set("ignore_index", *ignore);
  return [a, numOutputs, opset](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, "SoftmaxCrossEntropyLoss", in, a, numOutputs, ir::kOnnxDomain, opset);
  };
}

class SceReductions : public ::testing::TestWithParam<std::string> {};

TEST_P(SceReductions, TwoDimensionalMatchesReference) {
  const std::string red = GetParam();
  auto x = randomTensor({4, 5}, 1, -3.0f, 3.0f);
  auto y = HostTensor::fromVector<int64_t>({4}, {0, 4, 2, 2});
  auto out = runForward(sce(red, std::nullopt, 2, 12), {x, y});
  auto ref = refSce(x, y, nullptr, red, kNoIgnore);
  EXPECT_TRUE(allClose(out[0], ref.loss, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(out[1], ref.logProb, 1e-5, 1e-6));
}

TEST_P(SceReductions, SpatialWithWeightsAndIgnoreIndexMatchesReference) {
  const std::string red = GetParam();
  auto x = randomTensor({2, 3, 2, 2}, 2, -3.0f, 3.0f);
  auto y = HostTensor::fromVector<int32_t>({2, 2, 2}, {0, 1, 2, -1, 2, -1, 1, 0});
  auto w = randomTensor({3}, 3, 0.5f, 2.0f);
  auto out = runForward(sce(red, -1, 2), {x, y, w});
  auto ref = refSce(x, y, &w, red, -1);
  EXPECT_TRUE(allClose(out[0], ref.loss, 1e-5, 1e-6));
  EXPECT_TRUE(allClose(out[1], ref.logProb, 1e-5, 1e-6));
}

TEST_P(SceReductions, GradientsMatchFiniteDifferences) {
  const std::string red = GetParam();
  const GradCheckOptions o = tight({0});
  auto x = randomTensor({3, 4}, 4, -2.0f, 2.0f);
  auto y = HostTensor::fromVector<int64_t>({3}, {1, 3, 0});
  expectGradientsMatch(sce(red, std::nullopt, 1), {x, y}, o);
  // Spatial, weighted, with an ignored label, and log_prob as a second differentiated output.
  auto xs = randomTensor({2, 3, 2}, 5, -2.0f, 2.0f);
  auto ys = HostTensor::fromVector<int32_t>({2, 2}, {2, 5, 5, 1});
  auto w = randomTensor({3}, 6, 0.5f, 2.0f);
  expectGradientsMatch(sce(red, 5, 1), {xs, ys, w}, o);
  expectGradientsMatch(sce(red, 5, 2), {xs, ys, w}, o);
}

INSTANTIATE_TEST_SUITE_P(Sce, SceReductions, ::testing::Values("mean", "sum", "none"));

// A language model's loss ([tokens, vocabulary] scores; and a spatial one): the grad, run as its
// own op, against softmax - onehot scaled by the reduction, computed in double; some labels
// ignored, weighted or not; the same to the bit on 1 and 2 kernel threads.
TEST(Sce, LargeGradMatchesFormulaOnAnyThreadCount) {
  for (const Shape& shape : {Shape{300, 200}, Shape{6, 50, 40}}) {
    for (bool weighted : {false, true}) {
      SCOPED_TRACE(shapeToString(shape) + (weighted ? " weighted" : ""));
      const int64_t n = shape[0], c = shape[1], s = shape.size() > 2 ? shape[2] : 1;
      auto x = randomTensor(shape, 40, -6.0f, 6.0f);
      Shape labelShape{n};
      if (shape.size() > 2) labelShape.push_back(s);
      HostTensor y(TensorInfo(DataType::INT64, labelShape));
      for (int64_t i = 0; i < n * s; ++i)
        y.span<int64_t>()[static_cast<size_t>(i)] = i % 7 == 3 ? -1 : (i * 37) % c;
      auto w = randomTensor({c}, 41, 0.5f, 2.0f);
      auto dLoss = HostTensor::fromVector<float>({}, {0.75f});
      const auto lp = refSce(x, y, weighted ? &w : nullptr, "mean", -1).logProb;
      double wsum = 0;
      for (int64_t i = 0; i < n * s; ++i) {
        const int64_t label = y.span<int64_t>()[static_cast<size_t>(i)];
        if (label >= 0) wsum += weighted ? at(w, label) : 1.0;
      }
      HostTensor ref(x.info());
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = 0; k < s; ++k) {
          const int64_t label = y.span<int64_t>()[static_cast<size_t>(i * s + k)];
          const double coef = label < 0 ? 0.0 : (weighted ? at(w, label) : 1.0) * 0.75 / wsum;
          for (int64_t j = 0; j < c; ++j) {
            const int64_t e = (i * c + j) * s + k;
            ref.setFromDouble(e, coef * (std::exp(lp.getAsDouble(e)) - (j == label ? 1.0 : 0.0)));
          }
        }
      }
      const BuildFn grad = [&](ir::Graph& g, std::vector<TensorId> in) {
        if (!weighted) in.pop_back();
        return addOp(g, "SoftmaxCrossEntropyGrad", in,
                     attrs({{"reduction", std::string("mean")}, {"ignore_index", int64_t{-1}}}), 1,
                     ir::kXtrainDomain, 0);
      };
      device::setKernelThreadsForThisThread(1);
      auto one = runForward(grad, {dLoss, x, y, w});
      device::setKernelThreadsForThisThread(2);
      auto two = runForward(grad, {dLoss, x, y, w});
      EXPECT_TRUE(allClose(one[0], ref, 1e-5, 1e-7));
      EXPECT_EQ(std::memcmp(one[0].raw(), two[0].raw(), one[0].nbytes()), 0);
    }
  }
}

// The forward on a language model's [tokens, vocabulary] scores (rows spread over threads): every
// reduction, weighted, some labels ignored, log_prob too, against the reference; the same to the
// bit on 1 and 2 kernel threads.
TEST(Sce, LargeRowsMatchReferenceOnAnyThreadCount) {
  auto x = randomTensor({300, 200}, 42, -6.0f, 6.0f);
  HostTensor y(TensorInfo(DataType::INT64, {300}));
  for (int64_t i = 0; i < 300; ++i) {
    y.span<int64_t>()[static_cast<size_t>(i)] = i % 7 == 3 ? -1 : (i * 37) % 200;
  }
  auto w = randomTensor({200}, 43, 0.5f, 2.0f);
  for (const std::string red : {"mean", "sum", "none"}) {
    SCOPED_TRACE(red);
    auto ref = refSce(x, y, &w, red, -1);
    device::setKernelThreadsForThisThread(1);
    auto one = runForward(sce(red, -1, 2), {x, y, w});
    device::setKernelThreadsForThisThread(2);
    auto two = runForward(sce(red, -1, 2), {x, y, w});
    EXPECT_TRUE(allClose(one[0], ref.loss, 1e-5, 1e-6));
    EXPECT_TRUE(allClose(one[1], ref.logProb, 1e-5, 1e-6));
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(std::memcmp(one[k].raw(), two[k].raw(), one[k].nbytes()), 0) << "output " << k;
    }
  }
}

TEST(Sce, DefaultReductionIsMeanAndLargeScoresStayFinite) {
  auto x = HostTensor::fromVector<float>({2, 3}, {1000.0f, -1000.0f, 999.0f, -5e3f, 5e3f, 0.0f});
  auto y = HostTensor::fromVector<int64_t>({2}, {2, 1});
  auto out = runForward(
      [](ir::Graph& g, auto in) { return addOp(g, "SoftmaxCrossEntropyLoss", in); }, {x, y});
  ASSERT_EQ(out[0].shape(), Shape{});
  // The reference works in double; a naive exp() of these scores would overflow float.
  EXPECT_TRUE(allClose(out[0], refSce(x, y, nullptr, "mean", kNoIgnore).loss, 1e-5, 1e-5));
  EXPECT_TRUE(std::isfinite(at(out[0], 0)));
}

TEST(Sce, AllLabelsIgnoredGivesZeroLossAndGradient) {
  auto x = randomTensor({2, 3}, 7);
  auto y = HostTensor::fromVector<int64_t>({2}, {-100, -100});
  auto out = runForward(sce("mean", -100, 1), {x, y});
  EXPECT_EQ(at(out[0], 0), 0.0f);
  GradCheckOptions o;
  o.wrt = {0};
  expectGradientsMatch(sce("mean", -100, 1), {x, y}, o);
}

TEST(Sce, EmptyBatch) {
  auto x = HostTensor(TensorInfo(DataType::FLOAT, {0, 3}));
  auto y = HostTensor(TensorInfo(DataType::INT64, {0}));
  EXPECT_EQ(at(runForward(sce("mean", std::nullopt, 1), {x, y})[0], 0), 0.0f);
  EXPECT_EQ(runForward(sce("none", std::nullopt, 1), {x, y})[0].shape(), Shape{0});
}

TEST(Sce, LabelOutOfRangeIsARuntimeErrorNamingOpAndLabel) {
  auto x = randomTensor({3, 4}, 8);
  auto y = HostTensor::fromVector<int64_t>({3}, {1, 7, 0});
  expectError(
      [&] {
        runForward(sce("mean", std::nullopt, 1), {x, y});
      },
      {"SoftmaxCrossEntropyLoss", "label 7", "[0, 4)"});
  auto yn = HostTensor::fromVector<int32_t>({3}, {1, -3, 0});
  expectError(
      [&] {
        runForward(sce("none", -1, 1), {x, yn});
      },
      {"SoftmaxCrossEntropyLoss", "label -3", "ignore index -1"});
}

TEST(Sce, ShapeMismatchesNameTheOp) {
  auto x = randomTensor({3, 4, 2}, 9);
  auto y = HostTensor::fromVector<int64_t>({3, 4}, std::vector<int64_t>(12, 0));
  expectError(
      [&] {
        runForward(sce("mean", std::nullopt, 1), {x, y});
      },
      {"SoftmaxCrossEntropyLoss", "labels INT64[3,4]", "scores FLOAT[3,4,2]", "[3,2]"});
  auto y2 = HostTensor::fromVector<int64_t>({3, 2}, std::vector<int64_t>(6, 0));
  auto w = randomTensor({3}, 10);
  expectError(
      [&] {
        runForward(sce("mean", std::nullopt, 1), {x, y2, w});
      },
      {"SoftmaxCrossEntropyLoss", "weights", "FLOAT[3]", "FLOAT[4]"});
  auto yf = randomTensor({3, 2}, 11);
  expectError(
      [&] {
        runForward(sce("mean", std::nullopt, 1), {x, yf});
      },
      {"SoftmaxCrossEntropyLoss", "INT32 or INT64"});
  expectError(
      [&] {
        runForward(sce("average", std::nullopt, 1), {x, y2});
      },
      {"SoftmaxCrossEntropyLoss", "average"});
}

// ---------------------------------------------------------------------------------------------------------
// ai.graphcore Nll, L1, IdentityLoss. reduction: 0 Sum, 1 Mean, 2 NoReduction.

BuildFn graphcore(const std::string& type, Attributes a) {
  return [type, a](ir::Graph& g, const std::vector<TensorId>& in) {
    return addOp(g, type, in, a, 1, ir::kGraphcoreDomain);
  };
}

Attributes nllAttrs(int64_t reduction, std::optional<int64_t> ignore = std::nullopt,
                    bool logProb = false) {
  Attributes a;
  a.set("reduction", reduction);
  if (ignore) a.set("ignoreIndex", *ignore);
  a.set("inputIsLogProbability", int64_t{logProb ? 1 : 0});
  return a;
}

// probs [R..., C] (classes last), labels [R...].
HostTensor refNll(const HostTensor& probs, const HostTensor& labels, int64_t reduction,
                  int64_t ignore, bool logProb) {
  const int64_t c = probs.shape().back();
  const int64_t rows = labels.nelms();
  HostTensor out(TensorInfo(DataType::FLOAT, reduction == 2 ? labels.shape() : Shape{}));
  double total = 0;
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const auto label = static_cast<int64_t>(labels.getAsDouble(r));
    double l = 0;
    if (label != ignore) {
      const double p = at(probs, r * c + label);
      l = logProb ? -p : -std::log(p);
      ++count;
    }
    if (reduction == 2) out.span<float>()[static_cast<size_t>(r)] = static_cast<float>(l);
    total += l;
  }
  if (reduction == 0) out.span<float>()[0] = static_cast<float>(total);
  if (reduction == 1) out.span<float>()[0] = count ? static_cast<float>(total / count) : 0.0f;
  return out;
}

class GraphcoreReductions : public ::testing::TestWithParam<int64_t> {};

TEST_P(GraphcoreReductions, NllMatchesReference) {
  const int64_t red = GetParam();
  auto p = randomTensor({4, 3}, 20, 0.1f, 1.0f);
  auto y = HostTensor::fromVector<int32_t>({4}, {0, 2, 1, 2});
  EXPECT_TRUE(allClose(runForward(graphcore("Nll", nllAttrs(red)), {p, y})[0],
                       refNll(p, y, red, kNoIgnore, false), 1e-5, 1e-6));
  // Classes last for higher ranks; an ignored label; log-probability input; INT64 labels.
  auto p3 = randomTensor({2, 3, 4}, 21, -2.0f, -0.1f);
  auto y3 = HostTensor::fromVector<int64_t>({2, 3}, {0, 3, 9, 1, 9, 2});
  EXPECT_TRUE(allClose(runForward(graphcore("Nll", nllAttrs(red, 9, true)), {p3, y3})[0],
                       refNll(p3, y3, red, 9, true), 1e-5, 1e-6));
  auto yu = HostTensor::fromVector<uint32_t>({4}, {1, 1, 0, 2});
  EXPECT_TRUE(allClose(runForward(graphcore("Nll", nllAttrs(red, 1)), {p, yu})[0],
                       refNll(p, yu, red, 1, false), 1e-5, 1e-6));
}

// PopART's semantics (its one-hot encoding gives an all-zero row): a label past the classes, or
// negative, selects no class: loss term -log(1e-7) (0 for log-probabilities), counted in a mean,
// no gradient. The ignore index is still left out of both.
TEST_P(GraphcoreReductions, NllLabelOutsideTheClassesSelectsNoClass) {
  const int64_t red = GetParam();
  auto p = randomTensor({4, 3}, 24, 0.1f, 1.0f);
  auto y = HostTensor::fromVector<int32_t>({4}, {0, 7, -2, 2});
  const double noClass = -std::log(1e-7);
  const double l0 = -std::log(at(p, 0)), l3 = -std::log(at(p, 3 * 3 + 2));
  const HostTensor out = runForward(graphcore("Nll", nllAttrs(red)), {p, y})[0];
  if (red == 2) {
    const std::vector<double> want = {l0, noClass, noClass, l3};
    for (int64_t r = 0; r < 4; ++r) EXPECT_NEAR(at(out, r), want[static_cast<size_t>(r)], 1e-4);
  } else {
    const double sum = l0 + 2 * noClass + l3;
    EXPECT_NEAR(at(out, 0), red == 0 ? sum : sum / 4, 1e-4);
  }
  // With an ignore index: ignored rows drop out of the mean, rows with no class stay in it.
  auto yi = HostTensor::fromVector<int64_t>({4}, {0, 5, 1, 2});
  const HostTensor outI = runForward(graphcore("Nll", nllAttrs(red, 1)), {p, yi})[0];
  if (red == 1) {
    EXPECT_NEAR(at(outI, 0), (l0 + noClass + l3) / 3, 1e-4);
  }
  // Log-probability input: the term is 0.
  auto lp = randomTensor({2, 3}, 25, -2.0f, -0.1f);
  auto yl = HostTensor::fromVector<int32_t>({2}, {3, 1});
  const HostTensor outL =
      runForward(graphcore("Nll", nllAttrs(red, std::nullopt, true)), {lp, yl})[0];
  if (red == 0) {
    EXPECT_NEAR(at(outL, 0), -at(lp, 4), 1e-6);
  }
  if (red == 1) {
    EXPECT_NEAR(at(outL, 0), -at(lp, 4) / 2, 1e-6);
  }
  // The term does not depend on the probabilities: the gradient is the finite differences' (0).
  expectGradientsMatch(graphcore("Nll", nllAttrs(red)), {p, y}, tight());
  expectGradientsMatch(graphcore("Nll", nllAttrs(red, 1)), {p, yi}, tight());
}

TEST_P(GraphcoreReductions, NllGradientsMatchFiniteDifferences) {
  const int64_t red = GetParam();
  auto p = randomTensor({4, 3}, 22, 0.1f, 1.0f);
  auto y = HostTensor::fromVector<int32_t>({4}, {0, 2, 1, 2});
  expectGradientsMatch(graphcore("Nll", nllAttrs(red)), {p, y}, tight());
  expectGradientsMatch(graphcore("Nll", nllAttrs(red, 2)), {p, y}, tight());
  auto p3 = randomTensor({2, 2, 3}, 23, -2.0f, -0.1f);
  auto y3 = HostTensor::fromVector<int64_t>({2, 2}, {0, 2, 1, 1});
  expectGradientsMatch(graphcore("Nll", nllAttrs(red, std::nullopt, true)), {p3, y3}, tight());
}

TEST_P(GraphcoreReductions, L1MatchesReferenceAndGradient) {
  const int64_t red = GetParam();
  // |x| >= 0.2 so finite differences never cross the kink at 0.
  auto x = randomTensor({3, 4}, 24, 0.2f, 1.0f);
  for (int64_t i = 0; i < x.nelms(); i += 2) x.span<float>()[static_cast<size_t>(i)] *= -1.0f;
  const float lambda = 0.3f;
  auto out = runForward(graphcore("L1", attrs({{"lambda", lambda}, {"reduction", red}})), {x});
  double sum = 0;
  HostTensor ref(TensorInfo(DataType::FLOAT, red == 2 ? x.shape() : Shape{}));
  for (int64_t i = 0; i < x.nelms(); ++i) {
    sum += lambda * std::abs(at(x, i));
    if (red == 2) ref.span<float>()[static_cast<size_t>(i)] = lambda * std::abs(at(x, i));
  }
  if (red != 2) ref.span<float>()[0] = static_cast<float>(red == 1 ? sum / 12 : sum);
  EXPECT_TRUE(allClose(out[0], ref, 1e-5, 1e-6));
  expectGradientsMatch(graphcore("L1", attrs({{"lambda", lambda}, {"reduction", red}})), {x},
                       tight());
}

TEST_P(GraphcoreReductions, IdentityLossMatchesReferenceAndGradient) {
  const int64_t red = GetParam();
  auto x = randomTensor({2, 3}, 25);
  auto out = runForward(graphcore("IdentityLoss", attrs({{"reduction", red}})), {x});
  if (red == 2) {
    EXPECT_TRUE(allClose(out[0], x));
  } else {
    double sum = 0;
    for (int64_t i = 0; i < 6; ++i) sum += at(x, i);
    EXPECT_EQ(out[0].shape(), Shape{});
    EXPECT_NEAR(at(out[0], 0), red == 1 ? sum / 6 : sum, 1e-6);
  }
  expectGradientsMatch(graphcore("IdentityLoss", attrs({{"reduction", red}})), {x}, tight());
  auto s = HostTensor::scalar(2.5f);
  expectGradientsMatch(graphcore("IdentityLoss", attrs({{"reduction", red}})), {s});
}

INSTANTIATE_TEST_SUITE_P(ReductionType, GraphcoreReductions, ::testing::Values(0, 1, 2));

TEST(GraphcoreLosses, DefaultsAndPopartStringReduction) {
  auto x = HostTensor::fromVector<float>({4}, {1, -2, 3, -4});
  // Default reduction is Mean.
  EXPECT_NEAR(at(runForward(graphcore("IdentityLoss", {}), {x})[0], 0), -0.5, 1e-6);
  // PopART's ONNX files spell the reduction as a string.
  EXPECT_NEAR(
      at(runForward(graphcore("IdentityLoss", attrs({{"reduction", std::string("Sum")}})), {x})[0],
         0),
      -2.0, 1e-6);
  EXPECT_EQ(
      runForward(graphcore("L1", attrs({{"lambda", 1.0f}, {"reduction", std::string("None")}})),
                 {x})[0]
          .shape(),
      Shape{4});
}

TEST(GraphcoreLosses, NllMeanCountsOnlyNonIgnoredAndAllIgnoredIsZero) {
  auto p = HostTensor::fromVector<float>({3, 2}, {0.5f, 0.5f, 0.25f, 0.75f, 0.9f, 0.1f});
  auto y = HostTensor::fromVector<int32_t>({3}, {0, -1, 0});
  const float want = static_cast<float>(-(std::log(0.5) + std::log(0.9)) / 2);
  EXPECT_NEAR(at(runForward(graphcore("Nll", nllAttrs(1, -1)), {p, y})[0], 0), want, 1e-6);
  auto all = HostTensor::fromVector<int32_t>({3}, {-1, -1, -1});
  EXPECT_EQ(at(runForward(graphcore("Nll", nllAttrs(1, -1)), {p, all})[0], 0), 0.0f);
  // Narrow label types work too.
  auto y8 = HostTensor::fromVector<uint8_t>({3}, {1, 1, 0});
  EXPECT_TRUE(allClose(runForward(graphcore("Nll", nllAttrs(0)), {p, y8})[0],
                       refNll(p, y8, 0, kNoIgnore, false), 1e-5, 1e-6));
}

// A uint64 label is compared and printed as stored: 2^63 + 5 was cast to a negative int64 and
// reported so, and 2^64 - 1 was taken for the ignore index -1.
// A label outside the classes is not an error for PopART's Nll (NllLabelOutsideTheClasses...
// above), but it is a bug in a real program: the first one is logged, as stored (a uint64 of
// 2^63 + 5 is that number), once per op.
class NllLabelWarning : public xtrain::testing::SessionLogTest {};

TEST_F(NllLabelWarning, FirstLabelOutsideTheClassesIsLoggedOnceAsStored) {
  logging::setLevel(logging::Module::devicex, logging::Level::Warn);
  auto p = randomTensor({3, 4}, 28, 0.1f, 1.0f);
  auto y = HostTensor::fromVector<uint64_t>({3}, {1, (uint64_t{1} << 63) + 5, 9});
  runForward(graphcore("Nll", nllAttrs(1)), {p, y});
  std::string log = logText();
  EXPECT_NE(log.find("label 9223372036854775813 at position 1 of the labels is outside [0, 4)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("as in PopART it selects no class"), std::string::npos) << log;
  EXPECT_EQ(log.find("label 9 "), std::string::npos) << "logged more than once per op:\n" << log;
  auto yMax = HostTensor::fromVector<uint64_t>({3}, {1, ~uint64_t{0}, 0});
  runForward(graphcore("Nll", nllAttrs(1, -1)), {p, yMax});
  log = logText();
  EXPECT_NE(log.find("label 18446744073709551615 at position 1"), std::string::npos) << log;
  EXPECT_NE(log.find("is not the ignore index -1"), std::string::npos) << log;
}

TEST(GraphcoreLosses, NllErrorsNameTheOp) {
  auto p = randomTensor({3, 4}, 26, 0.1f, 1.0f);
  auto y = HostTensor::fromVector<int32_t>({3}, {0, 3, 1});
  auto y2 = HostTensor::fromVector<int32_t>({4}, {0, 1, 2, 3});
  expectError(
      [&] {
        runForward(graphcore("Nll", nllAttrs(1)), {p, y2});
      },
      {"Nll", "INT32[4]", "FLOAT[3,4]", "[3]"});
  expectError([&] { runForward(graphcore("Nll", nllAttrs(5)), {p, y}); }, {"Nll", "reduction 5"});
  auto yf = randomTensor({3}, 27);
  expectError(
      [&] {
        runForward(graphcore("Nll", nllAttrs(1)), {p, yf});
      },
      {"Nll", "label is FLOAT"});
}

TEST(GraphcoreLosses, L1WithoutLambdaNamesTheOp) {
  auto x = randomTensor({3}, 28);
  expectError(
      [&] {
        runForward(graphcore("L1", attrs({{"reduction", int64_t{0}}})), {x});
      },
      {"L1", "lambda"});
  expectError(
      [&] {
        runForward(graphcore("L1", attrs({{"lambda", 1.0f}, {"reduction", std::string("Avg")}})),
                   {x});
      },
      {"L1", "Avg"});
}

}  // namespace
}  // namespace xtrain::testing
