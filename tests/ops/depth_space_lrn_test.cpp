// DepthToSpace / SpaceToDepth (ai.onnx, ai.graphcore, ai.xtrain) and ai.onnx LRN: forward against
// naive index loops written from the ONNX definitions, gradients against finite differences, error
// messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// ---- DepthToSpace / SpaceToDepth

// DepthToSpace by the ONNX definition's reshape-transpose-reshape, as index arithmetic on
// [N, C, H, W]: DCR views the channels as [b, b, C'], CRD as [C', b, b].
HostTensor depthToSpaceRef(const HostTensor& x, int64_t b, bool dcr) {
  const Shape& s = x.shape();
  const int64_t n = s[0], c = s[1] / (b * b), h = s[2], w = s[3];
  HostTensor y(TensorInfo(x.dataType(), {n, c, h * b, w * b}));
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t y0 = 0; y0 < h * b; ++y0)
        for (int64_t x0 = 0; x0 < w * b; ++x0) {
          const int64_t i = y0 % b, j = x0 % b;
          const int64_t k = dcr ? (i * b + j) * c + ic : ic * b * b + i * b + j;
          const int64_t src = ((in * s[1] + k) * h + y0 / b) * w + x0 / b;
          const int64_t dst = ((in * c + ic) * h * b + y0) * w * b + x0;
          y.setFromDouble(dst, x.getAsDouble(src));
        }
  return y;
}

// SpaceToDepth (DCR order; CRD for ai.xtrain's mode): the inverse, by the same index map.
HostTensor spaceToDepthRef(const HostTensor& x, int64_t b, bool dcr) {
  const Shape& s = x.shape();
  const int64_t n = s[0], c = s[1], h = s[2] / b, w = s[3] / b;
  HostTensor y(TensorInfo(x.dataType(), {n, c * b * b, h, w}));
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t y0 = 0; y0 < s[2]; ++y0)
        for (int64_t x0 = 0; x0 < s[3]; ++x0) {
          const int64_t i = y0 % b, j = x0 % b;
          const int64_t k = dcr ? (i * b + j) * c + ic : ic * b * b + i * b + j;
          const int64_t src = ((in * c + ic) * s[2] + y0) * s[3] + x0;
          const int64_t dst = ((in * c * b * b + k) * h + y0 / b) * w + x0 / b;
          y.setFromDouble(dst, x.getAsDouble(src));
        }
  return y;
}

BuildFn d2s(int64_t b, const std::string& mode, const std::string& domain = ir::kOnnxDomain) {
  return [=](ir::Graph& g, auto in) {
    Attributes a = attrs({{"blocksize", b}});
    if (!mode.empty()) a.set("mode", mode);
    return addOp(g, "DepthToSpace", in, a, 1, domain);
  };
}

BuildFn s2d(int64_t b, const std::string& mode = "", const std::string& domain = ir::kOnnxDomain) {
  return [=](ir::Graph& g, auto in) {
    Attributes a = attrs({{"blocksize", b}});
    if (!mode.empty()) a.set("mode", mode);
    return addOp(g, "SpaceToDepth", in, a, 1, domain);
  };
}

TEST(DepthToSpace, BothModesMatchReference) {
  for (int64_t b : {1, 2, 3}) {
    const HostTensor x = randomTensor({2, 2 * b * b, 3, 2}, 5 + static_cast<uint64_t>(b));
    for (const std::string mode : {"DCR", "CRD"}) {
      auto y = runForward(d2s(b, mode), {x});
      EXPECT_TRUE(allClose(y[0], depthToSpaceRef(x, b, mode == "DCR"), 0, 0))
          << mode << " blocksize " << b;
      auto gc = runForward(d2s(b, mode, ir::kGraphcoreDomain), {x});
      EXPECT_TRUE(allClose(gc[0], y[0], 0, 0)) << "ai.graphcore " << mode;
    }
    // No mode: DCR (ONNX's default, and the only form of DepthToSpace-1).
    EXPECT_TRUE(allClose(runForward(d2s(b, ""), {x})[0], depthToSpaceRef(x, b, true), 0, 0));
  }
}

TEST(DepthToSpace, MovesIntegersAndHalvesUnchanged) {
  HostTensor x(TensorInfo(DataType::INT64, {1, 8, 2, 3}));
  for (int64_t i = 0; i < x.nelms(); ++i) x.setFromDouble(i, static_cast<double>(i * 1000003));
  auto y = runForward(d2s(2, "CRD"), {x});
  EXPECT_EQ(y[0].toVector<int64_t>(), depthToSpaceRef(x, 2, false).toVector<int64_t>());
  HostTensor h(TensorInfo(DataType::FLOAT16, {1, 4, 1, 2}));
  for (int64_t i = 0; i < h.nelms(); ++i) h.setFromDouble(i, 0.5 * static_cast<double>(i));
  auto yh = runForward(s2d(1), {h});
  EXPECT_TRUE(allClose(yh[0], h, 0, 0));
}

TEST(SpaceToDepth, MatchesReferenceAndInvertsDepthToSpace) {
  const HostTensor x = randomTensor({2, 3, 4, 6}, 9);
  auto y = runForward(s2d(2), {x});
  EXPECT_TRUE(allClose(y[0], spaceToDepthRef(x, 2, true), 0, 0));
  auto crd = runForward(s2d(2, "CRD", ir::kXtrainDomain), {x});
  EXPECT_TRUE(allClose(crd[0], spaceToDepthRef(x, 2, false), 0, 0));
  for (const std::string mode : {"DCR", "CRD"}) {
    auto back = runForward(
        [mode](ir::Graph& g, auto in) {
          auto d = addOp(g, "SpaceToDepth", in, attrs({{"blocksize", int64_t{2}}, {"mode", mode}}),
                         1, ir::kXtrainDomain);
          return addOp(g, "DepthToSpace", d, attrs({{"blocksize", int64_t{2}}, {"mode", mode}}));
        },
        {x});
    EXPECT_TRUE(allClose(back[0], x, 0, 0)) << mode;
  }
}

TEST(DepthToSpace, GradientsMatchFiniteDifferences) {
  const HostTensor x = randomTensor({2, 8, 2, 3}, 13);
  expectGradientsMatch(d2s(2, "DCR"), {x});
  expectGradientsMatch(d2s(2, "CRD"), {x});
  expectGradientsMatch(d2s(2, "CRD", ir::kGraphcoreDomain), {x});
  expectGradientsMatch(s2d(2), {randomTensor({1, 2, 4, 6}, 17)});
}

TEST(DepthToSpace, BadShapesAndAttributesAreRefused) {
  const HostTensor x = randomTensor({1, 8, 2, 3}, 1);
  expectError([&] { runForward(d2s(3, "DCR"), {x}); },
              {"DepthToSpace", "FLOAT[1,8,2,3]", "not a multiple of blocksize^2 = 9"});
  expectError([&] { runForward(d2s(2, "RCD"), {x}); }, {"DepthToSpace", "mode", "RCD"});
  expectError([&] { runForward(d2s(0, "DCR"), {x}); }, {"DepthToSpace", "blocksize is 0"});
  expectError(
      [&] {
        runForward(d2s(2, "DCR"), {randomTensor({8, 2, 3}, 1)});
      },
      {"DepthToSpace", "rank-4"});
  expectError(
      [&] {
        runForward(s2d(2), {randomTensor({1, 1, 3, 4}, 1)});
      },
      {"SpaceToDepth", "not multiples of blocksize 2"});
  expectError(
      [&] { runForward([](ir::Graph& g, auto in) { return addOp(g, "DepthToSpace", in); }, {x}); },
      {"DepthToSpace", "blocksize is required"});
}

// ---- LRN

// Y = X / (bias + alpha/size * S)^beta, S the sum of squares over the channel window, by plain
// loops over [N, C, S] in double precision.
HostTensor lrnRef(const HostTensor& x, int64_t size, double alpha, double beta, double bias) {
  const Shape& s = x.shape();
  const int64_t n = s[0], c = s[1], sp = x.nelms() / std::max<int64_t>(1, n * c);
  HostTensor y(x.info());
  const int64_t before = (size - 1) / 2, after = size / 2;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t k = 0; k < sp; ++k) {
        double sum = 0;
        for (int64_t j = std::max<int64_t>(0, ic - before); j <= std::min(c - 1, ic + after); ++j) {
          const double v = x.getAsDouble((in * c + j) * sp + k);
          sum += v * v;
        }
        const int64_t at = (in * c + ic) * sp + k;
        y.setFromDouble(at, x.getAsDouble(at) / std::pow(bias + alpha / size * sum, beta));
      }
  return y;
}

BuildFn lrn(int64_t size, float alpha, float beta, float bias) {
  return [=](ir::Graph& g, auto in) {
    return addOp(g, "LRN", in,
                 attrs({{"size", size}, {"alpha", alpha}, {"beta", beta}, {"bias", bias}}));
  };
}

TEST(LrnOp, MatchesReferenceForEveryWindowSize) {
  const HostTensor x = randomTensor({2, 7, 3, 2}, 23, -2, 2);
  for (int64_t size = 1; size <= 9; ++size) {
    auto y = runForward(lrn(size, 0.3f, 0.75f, 1.5f), {x});
    EXPECT_TRUE(allClose(y[0], lrnRef(x, size, 0.3, 0.75, 1.5), 1e-5, 1e-6)) << "size " << size;
  }
  // Rank 3, and ONNX's defaults (alpha 1e-4, beta 0.75, bias 1).
  const HostTensor r3 = randomTensor({1, 4, 5}, 29, -3, 3);
  auto y = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "LRN", in, attrs({{"size", int64_t{3}}}));
      },
      {r3});
  EXPECT_TRUE(allClose(y[0], lrnRef(r3, 3, 1e-4, 0.75, 1.0), 1e-5, 1e-6));
}

TEST(LrnOp, GradientMatchesFiniteDifferences) {
  const HostTensor x = randomTensor({2, 5, 2, 2}, 31, -1.5f, 1.5f);
  for (int64_t size : {1, 2, 3, 4, 7}) {
    expectGradientsMatch(lrn(size, 0.8f, 0.75f, 1.0f), {x});
  }
  expectGradientsMatch(lrn(3, 2.0f, 1.3f, 2.0f), {randomTensor({1, 4, 3}, 37)});
}

TEST(LrnOp, BadInputIsRefused) {
  expectError(
      [&] {
        runForward(lrn(3, 1e-4f, 0.75f, 1.0f), {randomTensor({4, 5}, 1)});
      },
      {"LRN", "FLOAT[4,5]", "rank 3 or more"});
  expectError(
      [&] {
        runForward(lrn(0, 1e-4f, 0.75f, 1.0f), {randomTensor({1, 4, 5}, 1)});
      },
      {"LRN", "size is 0"});
  expectError(
      [&] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "LRN", in); },
                   {randomTensor({1, 4, 5}, 1)});
      },
      {"LRN", "size is required"});
  auto i = HostTensor::fromVector<int32_t>({1, 2, 1}, {1, 2});
  expectError([&] { runForward(lrn(1, 1e-4f, 0.75f, 1.0f), {i}); }, {"LRN", "INT32[1,2,1]"});
}

}  // namespace
}  // namespace xtrain::testing
