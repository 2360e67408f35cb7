// MultiConv (ai.graphcore): each output against a naive convolution (1, 2 and 3 spatial
// dimensions, strides, pads, dilations, a bias, groups inferred from the shapes), gradients against
// finite differences, option checks and errors.
#include <gtest/gtest.h>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// Naive convolution of x [N, C, s...] with w [M, C/g, k...], g = C / w[1], over any number of
// spatial dimensions; pads [begin..., end...].
HostTensor naiveConv(const HostTensor& x, const HostTensor& w, const HostTensor* bias,
                     const Shape& strides, const Shape& pads, const Shape& dilations) {
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  const size_t nd = xs.size() - 2;
  const int64_t g = xs[1] / ws[1], cg = ws[1], mg = ws[0] / g;
  Shape ys{xs[0], ws[0]};
  for (size_t d = 0; d < nd; ++d) {
    ys.push_back(
        (xs[d + 2] + pads[d] + pads[d + nd] - (ws[d + 2] - 1) * dilations[d] - 1) / strides[d] + 1);
  }
  HostTensor y(TensorInfo(DataType::FLOAT, ys));
  int64_t kernelSize = 1;
  for (size_t d = 0; d < nd; ++d) kernelSize *= ws[d + 2];
  const int64_t outSpatial = y.nelms() / (ys[0] * ys[1]);
  for (int64_t n = 0; n < ys[0]; ++n) {
    for (int64_t m = 0; m < ys[1]; ++m) {
      for (int64_t o = 0; o < outSpatial; ++o) {
        double acc = bias != nullptr ? bias->getAsDouble(m) : 0.0;
        for (int64_t c = 0; c < cg; ++c) {
          for (int64_t k = 0; k < kernelSize; ++k) {
            // Decompose o and k into per-dimension indices (last dimension fastest).
            int64_t oRest = o, kRest = k, xIndex = 0, stride = 1;
            bool inside = true;
            for (size_t d = nd; d-- > 0;) {
              const int64_t od = oRest % ys[d + 2], kd = kRest % ws[d + 2];
              oRest /= ys[d + 2];
              kRest /= ws[d + 2];
              const int64_t id = od * strides[d] - pads[d] + kd * dilations[d];
              if (id < 0 || id >= xs[d + 2]) inside = false;
              xIndex += id * stride;
              stride *= xs[d + 2];
            }
            if (!inside) continue;
            const int64_t channel = (m / mg) * cg + c;
            acc += x.getAsDouble((n * xs[1] + channel) * stride + xIndex) *
                   w.getAsDouble((m * cg + c) * kernelSize + k);
          }
        }
        y.setFromDouble((n * ys[1] + m) * outSpatial + o, acc);
      }
    }
  }
  return y;
}

// slots: for each of the op's inputs, the index of the test input it takes, or -1 (absent bias).
BuildFn multiConv(Attributes a, int numConvs, std::vector<int> slots) {
  return [a, numConvs, slots](ir::Graph& g, const std::vector<TensorId>& in) {
    std::vector<TensorId> ids;
    for (int s : slots) ids.push_back(s < 0 ? TensorId() : in.at(static_cast<size_t>(s)));
    return addOp(g, "MultiConv", ids, a, numConvs, ir::kGraphcoreDomain, 1);
  };
}

TEST(MultiConv, EachOutputIsItsConvolution) {
  // conv 0: 1-D with bias, stride 2, pads; conv 1: 2-D grouped (4 channels, weights of 2: group 2),
  // dilation 2, no bias; conv 2: 3-D.
  auto x0 = randomTensor({2, 3, 7}, 1), w0 = randomTensor({4, 3, 3}, 2), b0 = randomTensor({4}, 3);
  auto x1 = randomTensor({1, 4, 6, 5}, 4), w1 = randomTensor({6, 2, 2, 2}, 5);
  auto x2 = randomTensor({1, 2, 3, 4, 3}, 6), w2 = randomTensor({2, 2, 2, 2, 2}, 7);
  Attributes a = attrs({{"strides", Shape{2, 1, 1, 1, 1, 1}},
                        {"pads", Shape{1, 2, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0}},
                        {"dilations", Shape{1, 2, 2, 1, 1, 1}}});
  auto out = runForward(multiConv(a, 3, {0, 1, 2, 3, 4, -1, 5, 6}), {x0, w0, b0, x1, w1, x2, w2});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(allClose(out[0], naiveConv(x0, w0, &b0, {2}, {1, 2}, {1}), 1e-5, 1e-5));
  EXPECT_TRUE(
      allClose(out[1], naiveConv(x1, w1, nullptr, {1, 1}, {0, 1, 1, 0}, {2, 2}), 1e-5, 1e-5));
  EXPECT_TRUE(allClose(out[2], naiveConv(x2, w2, nullptr, {1, 1, 1}, {0, 0, 1, 0, 0, 0}, {1, 1, 1}),
                       1e-5, 1e-5));
}

TEST(MultiConv, DefaultsAndPlanningOptions) {
  auto x0 = randomTensor({1, 2, 4, 4}, 8), w0 = randomTensor({3, 2, 3, 3}, 9);
  auto x1 = randomTensor({2, 1, 5}, 10), w1 = randomTensor({2, 1, 2}, 11);
  Attributes a = attrs({{"planType", std::string("serial")},
                        {"cycleBackOff", 0.3f},
                        {"perConvReservedTiles", int64_t{100}},
                        {"__available_memory", std::vector<float>{0.9f, 0.2f}},
                        {"__partials_type", std::vector<std::string>{"float", "HALF"}},
                        {"__enable_conv_dithering", Shape{1, 0}}});
  auto out = runForward(multiConv(a, 2, {0, 1, -1, 2, 3}), {x0, w0, x1, w1});
  EXPECT_TRUE(
      allClose(out[0], naiveConv(x0, w0, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}), 1e-5, 1e-5));
  EXPECT_TRUE(allClose(out[1], naiveConv(x1, w1, nullptr, {1}, {0, 0}, {1}), 1e-5, 1e-5));
}

TEST(MultiConv, GradientsMatchFiniteDifferences) {
  auto x0 = randomTensor({1, 2, 5}, 12), w0 = randomTensor({2, 2, 2}, 13),
       b0 = randomTensor({2}, 14);
  auto x1 = randomTensor({2, 2, 3, 3}, 15), w1 = randomTensor({2, 1, 2, 2}, 16);
  Attributes a = attrs({{"strides", Shape{2, 1, 1}}, {"pads", Shape{1, 0, 1, 0, 0, 1}}});
  GradCheckOptions o;
  o.wrt = {0, 1, 2, 3, 4};
  expectGradientsMatch(multiConv(a, 2, {0, 1, 2, 3, 4}), {x0, w0, b0, x1, w1}, o);
}

TEST(MultiConv, ErrorsNameTheOpAndTheOption) {
  auto x = randomTensor({1, 2, 4, 4}, 17), w = randomTensor({3, 2, 3, 3}, 18);
  auto run = [&](Attributes a) { runForward(multiConv(std::move(a), 1, {0, 1}), {x, w}); };
  expectError(
      [&] {
        run(attrs({{"inDilations", Shape{2, 1}}}));
      },
      {"MultiConv", "inDilations", "not implemented"});
  expectError(
      [&] {
        run(attrs({{"outPads", Shape{0, 0, 1, 0}}}));
      },
      {"MultiConv", "outPads", "not implemented"});
  expectError(
      [&] {
        run(attrs({{"strides", Shape{1, 1, 1}}}));
      },
      {"MultiConv", "strides has 3 values", "expected 2"});
  expectError(
      [&] {
        run(attrs({{"planType", std::string("diagonal")}}));
      },
      {"MultiConv", "planType 'diagonal'"});
  expectError(
      [&] {
        run(attrs({{"__available_memory", std::vector<float>{1.5f}}}));
      },
      {"MultiConv", "(0,1]"});
  expectError(
      [&] {
        run(attrs({{"__partials_type", std::vector<std::string>{"double"}}}));
      },
      {"MultiConv", "partialsType 'double'"});
  expectError([&] { run(attrs({{"cycleBackOff", 1.0f}})); }, {"MultiConv", "cycleBackOff"});
  expectError(
      [&] {
        runForward(multiConv({}, 1, {0, 1}), {x, randomTensor({3, 3, 3, 3}, 19)});
      },
      {"MultiConv", "convolution 0", "not a multiple"});
}

}  // namespace
}  // namespace xtrain::testing
