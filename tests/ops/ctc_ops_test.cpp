// Ctc and CtcBeamSearchDecoder (ai.graphcore): the loss against a brute-force reference that sums
// the probability of every alignment (all C^T paths, collapsed), each reduction, zeroInfinity and
// outDataType; its gradient against finite differences; the decoder against the exact most
// probable labellings (brute force, with a beam wide enough to be exact); errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// The labelling of a path: repeats merged, then blanks removed.
std::vector<int64_t> collapse(const std::vector<int64_t>& path, int64_t blank) {
  std::vector<int64_t> out;
  for (size_t t = 0; t < path.size(); ++t) {
    if (path[t] != blank && (t == 0 || path[t] != path[t - 1])) out.push_back(path[t]);
  }
  return out;
}

// Probability of each labelling of element n over its first tn steps, by enumerating every path.
std::map<std::vector<int64_t>, double> labellingProbs(const HostTensor& lp, int64_t n, int64_t tn,
                                                      int64_t blank) {
  const int64_t nb = lp.shape()[1], c = lp.shape()[2];
  std::map<std::vector<int64_t>, double> probs;
  std::vector<int64_t> path(static_cast<size_t>(tn), 0);
  while (true) {
    double logp = 0;
    for (int64_t t = 0; t < tn; ++t) logp += lp.getAsDouble((t * nb + n) * c + path[t]);
    probs[collapse(path, blank)] += std::exp(logp);
    int64_t t = 0;
    while (t < tn && ++path[t] == c) path[t++] = 0;
    if (t == tn) break;
  }
  return probs;
}

// reduction: 0 Sum, 1 Mean, 2 NoReduction.
HostTensor refCtc(const HostTensor& lp, const HostTensor& targets, const HostTensor& inLen,
                  const HostTensor& tgtLen, int64_t blank, int64_t reduction, bool zeroInf) {
  const int64_t n = lp.shape()[1], s = targets.shape()[1];
  HostTensor out(TensorInfo(DataType::FLOAT, reduction == 2 ? Shape{n} : Shape{}));
  double total = 0;
  for (int64_t b = 0; b < n; ++b) {
    const auto tl = static_cast<int64_t>(tgtLen.getAsDouble(b));
    std::vector<int64_t> label;
    for (int64_t i = 0; i < tl; ++i)
      label.push_back(static_cast<int64_t>(targets.getAsDouble(b * s + i)));
    auto probs = labellingProbs(lp, b, static_cast<int64_t>(inLen.getAsDouble(b)), blank);
    double loss = -std::log(probs.count(label) ? probs[label] : 0.0);
    if (zeroInf && std::isinf(loss)) loss = 0;
    if (reduction == 2) out.setFromDouble(b, loss);
    total += reduction == 1 ? loss / std::max<int64_t>(tl, 1) : loss;
  }
  if (reduction == 0) out.setFromDouble(0, total);
  if (reduction == 1) out.setFromDouble(0, total / static_cast<double>(n));
  return out;
}

BuildFn ctc(int64_t reduction, int64_t blank, bool zeroInf = false, int64_t outType = 0,
            int outputs = 2) {
  Attributes a = attrs({{"reduction", reduction},
                        {"blank", blank},
                        {"zeroInfinity", int64_t{zeroInf ? 1 : 0}},
                        {"outDataType", outType}});
  return [a, outputs](ir::Graph& g, const std::vector<TensorId>& in) {
    auto outs = addOp(g, "Ctc", in, a, outputs, ir::kGraphcoreDomain, 1);
    return std::vector<TensorId>{outs[0]};
  };
}

// [T, N, C] log-softmax of uniform random logits.
HostTensor logSoftmax(const Shape& shape, uint64_t seed) {
  HostTensor x = randomTensor(shape, seed, 0.0f, 2.0f);
  const int64_t rows = shape[0] * shape[1], c = shape[2];
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t k = 0; k < c; ++k) sum += std::exp(x.getAsDouble(r * c + k));
    for (int64_t k = 0; k < c; ++k)
      x.setFromDouble(r * c + k, x.getAsDouble(r * c + k) - std::log(sum));
  }
  return x;
}

class CtcReductions : public ::testing::TestWithParam<int64_t> {};

TEST_P(CtcReductions, MatchesBruteForce) {
  const int64_t red = GetParam();
  // T = 5, N = 4, C = 3: lengths cover an empty target, a repeat (needs a blank between), a
  // shorter input and blank 0 and 2.
  auto lp = logSoftmax({5, 4, 3}, 11);
  for (int64_t blank : {0, 2}) {
    const uint32_t a = blank == 0 ? 1 : 0, b = blank == 0 ? 2 : 1;
    auto targets = HostTensor::fromVector<uint32_t>({4, 3}, {a, b, a, b, b, a, a, a, a, b, a, a});
    auto inLen = HostTensor::fromVector<uint32_t>({4}, {5, 5, 4, 3});
    auto tgtLen = HostTensor::fromVector<int32_t>({4}, {3, 2, 0, 2});
    auto out = runForward(ctc(red, blank), {lp, targets, inLen, tgtLen});
    EXPECT_TRUE(allClose(out[0], refCtc(lp, targets, inLen, tgtLen, blank, red, false), 1e-5, 1e-6))
        << "blank " << blank;
  }
}

TEST_P(CtcReductions, ZeroInfinityZeroesImpossibleTargets) {
  const int64_t red = GetParam();
  auto lp = logSoftmax({3, 3, 3}, 12);
  // Element 2 needs 3 steps for "1 2 1" but has 2; elements 0 ("1 1", a blank between the
  // repeats: 3 steps) and 1 fit.
  auto targets = HostTensor::fromVector<int32_t>({3, 3}, {1, 1, 0, 2, 1, 0, 1, 2, 1});
  auto inLen = HostTensor::fromVector<int32_t>({3}, {3, 3, 2});
  auto tgtLen = HostTensor::fromVector<uint32_t>({3}, {2, 2, 3});
  auto zeroed = runForward(ctc(red, 0, true), {lp, targets, inLen, tgtLen});
  EXPECT_TRUE(allClose(zeroed[0], refCtc(lp, targets, inLen, tgtLen, 0, red, true), 1e-5, 1e-6));
  auto inf = runForward(ctc(red, 0, false), {lp, targets, inLen, tgtLen});
  const auto v = inf[0].toVector<float>();
  const float impossible = red == 2 ? v[2] : v[0];
  EXPECT_TRUE(std::isinf(impossible) && impossible > 0) << impossible;
}

TEST_P(CtcReductions, GradientsMatchFiniteDifferences) {
  const int64_t red = GetParam();
  GradCheckOptions o;
  o.wrt = {0};
  o.atol = 1e-3;
  auto lp = logSoftmax({4, 3, 3}, 13);
  auto targets = HostTensor::fromVector<uint32_t>({3, 2}, {1, 2, 2, 2, 1, 0});
  auto inLen = HostTensor::fromVector<uint32_t>({3}, {4, 4, 3});
  auto tgtLen = HostTensor::fromVector<uint32_t>({3}, {2, 2, 1});
  expectGradientsMatch(ctc(red, 0), {lp, targets, inLen, tgtLen}, o);
  // zeroInfinity: element 0 ("1 1" in 2 steps) is impossible and gets no gradient.
  auto inLen2 = HostTensor::fromVector<uint32_t>({3}, {2, 4, 3});
  auto targets2 = HostTensor::fromVector<uint32_t>({3, 2}, {1, 1, 2, 2, 1, 0});
  expectGradientsMatch(ctc(red, 0, true), {lp, targets2, inLen2, tgtLen}, o);
}

INSTANTIATE_TEST_SUITE_P(Ctc, CtcReductions, ::testing::Values(0, 1, 2));

TEST(Ctc, OutDataTypeAndShapes) {
  auto lp = logSoftmax({2, 1, 2}, 14);
  auto targets = HostTensor::fromVector<uint32_t>({1, 1}, {1});
  auto len = HostTensor::fromVector<uint32_t>({1}, {2});
  auto tl = HostTensor::fromVector<uint32_t>({1}, {1});
  auto half = runForward(ctc(2, 0, false, 10), {lp, targets, len, tl});
  EXPECT_EQ(half[0].info(), TensorInfo(DataType::FLOAT16, {1}));
  auto ref = refCtc(lp, targets, len, tl, 0, 2, false);
  EXPECT_NEAR(half[0].getAsDouble(0), ref.getAsDouble(0), 2e-3);
  // Only the loss output: the forward runs without the gradient output.
  auto single = runForward(ctc(1, 0, false, 0, 1), {lp, targets, len, tl});
  EXPECT_EQ(single[0].shape(), Shape{});
}

TEST(Ctc, ErrorsNameTheOpAndTheInput) {
  auto lp = logSoftmax({3, 2, 3}, 15);
  auto len = HostTensor::fromVector<uint32_t>({2}, {3, 3});
  auto targets = HostTensor::fromVector<uint32_t>({2, 2}, {1, 2, 1, 2});
  expectError(
      [&] {
        runForward(ctc(1, 0), {lp, targets, len, HostTensor::fromVector<uint32_t>({2}, {3, 1})});
      },
      {"Ctc", "targetLengths[0] = 3", "[0, 2]"});
  expectError(
      [&] {
        runForward(ctc(1, 0), {lp, HostTensor::fromVector<uint32_t>({2, 2}, {1, 0, 1, 2}), len,
                               HostTensor::fromVector<uint32_t>({2}, {2, 2})});
      },
      {"Ctc", "targets[0, 1] = 0", "blank 0"});
  expectError(
      [&] {
        runForward(ctc(1, 0), {lp, targets, HostTensor::fromVector<uint32_t>({2}, {4, 3}),
                               HostTensor::fromVector<uint32_t>({2}, {1, 1})});
      },
      {"Ctc", "inputLengths[0] = 4"});
  expectError([&] { runForward(ctc(1, 3), {lp, targets, len, len}); }, {"Ctc", "blank 3"});
  expectError(
      [&] {
        runForward(ctc(1, 0),
                   {lp, HostTensor::fromVector<int64_t>({2, 2}, {1, 2, 1, 2}), len, len});
      },
      {"Ctc", "targets (input 1)", "UINT32 or INT32"});
  expectError(
      [&] {
        runForward(ctc(1, 0), {lp, targets, HostTensor::fromVector<uint32_t>({3}, {1, 1, 1}), len});
      },
      {"Ctc", "inputLengths (input 2)"});
}

// The decoder with a beam at least as wide as the number of labellings is exact: its top paths are
// the labellings of highest total probability.
TEST(CtcBeamSearchDecoder, WideBeamFindsTheMostProbableLabellings) {
  const int64_t t = 4, n = 2, c = 3, top = 3;
  auto lp = logSoftmax({t, n, c}, 16);
  auto lengths = HostTensor::fromVector<uint32_t>({n}, {4, 3});
  for (int64_t blank : {0, 2}) {
    Attributes a = attrs({{"blank", blank}, {"beam_width", int64_t{100}}, {"top_paths", top}});
    auto out = runForward(
        [a](ir::Graph& g, const std::vector<TensorId>& in) {
          return addOp(g, "CtcBeamSearchDecoder", in, a, 3, ir::kGraphcoreDomain, 1);
        },
        {lp, lengths});
    ASSERT_EQ(out[2].info(), TensorInfo(DataType::UINT32, {n, top, t}));
    for (int64_t b = 0; b < n; ++b) {
      auto probs = labellingProbs(lp, b, static_cast<int64_t>(lengths.getAsDouble(b)), blank);
      std::vector<std::pair<double, std::vector<int64_t>>> ranked;
      for (const auto& [label, p] : probs) ranked.emplace_back(p, label);
      std::sort(ranked.rbegin(), ranked.rend());
      for (int64_t k = 0; k < top; ++k) {
        const int64_t o = b * top + k;
        EXPECT_NEAR(out[0].getAsDouble(o), std::log(ranked[k].first), 1e-5) << b << " " << k;
        const auto& label = ranked[k].second;
        ASSERT_EQ(out[1].getAsDouble(o), static_cast<double>(label.size()));
        for (int64_t i = 0; i < t; ++i) {
          const double want = i < static_cast<int64_t>(label.size()) ? label[i] : 0.0;
          EXPECT_EQ(out[2].getAsDouble(o * t + i), want) << b << " " << k << " " << i;
        }
      }
    }
  }
}

TEST(CtcBeamSearchDecoder, ErrorsNameTheOp) {
  auto lp = logSoftmax({2, 1, 3}, 17);
  auto run = [&](int64_t width, int64_t top, const HostTensor& lengths) {
    Attributes a = attrs({{"blank", int64_t{0}}, {"beam_width", width}, {"top_paths", top}});
    runForward(
        [a](ir::Graph& g, const std::vector<TensorId>& in) {
          return addOp(g, "CtcBeamSearchDecoder", in, a, 3, ir::kGraphcoreDomain, 1);
        },
        {lp, lengths});
  };
  auto ok = HostTensor::fromVector<uint32_t>({1}, {2});
  expectError([&] { run(2, 3, ok); }, {"CtcBeamSearchDecoder", "top_paths 3"});
  expectError([&] { run(2, 1, HostTensor::fromVector<uint32_t>({1}, {3})); },
              {"CtcBeamSearchDecoder", "dataLengths[0] = 3"});
  expectError([&] { run(2, 1, HostTensor::fromVector<int32_t>({1}, {2})); },
              {"CtcBeamSearchDecoder", "dataLengths (input 1)", "UINT32"});
}

}  // namespace
}  // namespace xtrain::testing
