#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// How a test passes the output size: scales or sizes, and in which ONNX form.
struct ResizeCase {
  ResizeCase(Shape x_, std::vector<float> scales_, Shape sizes_, std::string mode_,
             std::string ctm_, std::string nearestMode_ = "round_prefer_floor",
             float cubicA_ = -0.75f, bool excludeOutside_ = false)
      : x(std::move(x_)),
        scales(std::move(scales_)),
        sizes(std::move(sizes_)),
        mode(std::move(mode_)),
        ctm(std::move(ctm_)),
        nearestMode(std::move(nearestMode_)),
        cubicA(cubicA_),
        excludeOutside(excludeOutside_) {}
  Shape x;
  std::vector<float> scales;  // empty: sizes given
  Shape sizes;                // empty: scales given
  std::string mode, ctm, nearestMode;
  float cubicA;
  bool excludeOutside;
};

TensorId addConst(ir::Graph& g, const std::string& id, HostTensor value) {
  const TensorInfo info = value.info();
  g.addTensor(id, info, ir::TensorKind::Const, std::make_shared<HostTensor>(std::move(value)));
  return id;
}

HostTensor floats(const std::vector<float>& v) {
  return HostTensor::fromVector<float>({static_cast<int64_t>(v.size())}, v);
}
HostTensor int64s(const Shape& v) {
  return HostTensor::fromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// Resize at `opset` in its opset-11+ form: X, roi (empty), scales (empty when sizes are used),
// sizes.
BuildFn resizeBuild(const ResizeCase& c, int opset = 13) {
  return [c, opset](ir::Graph& g, const std::vector<TensorId>& ids) {
    Attributes a = attrs({{"mode", c.mode},
                          {"coordinate_transformation_mode", c.ctm},
                          {"nearest_mode", c.nearestMode},
                          {"cubic_coeff_a", c.cubicA},
                          {"exclude_outside", int64_t{c.excludeOutside ? 1 : 0}}});
    std::vector<TensorId> in{ids[0], addConst(g, "roi", floats({})),
                             addConst(g, "scales", floats(c.scales))};
    if (!c.sizes.empty()) in.push_back(addConst(g, "sizes", int64s(c.sizes)));
    return addOp(g, "Resize", in, a, 1, ir::kOnnxDomain, opset);
  };
}

// Naive reference: every output element is the sum over the corners (one tap per axis for
// nearest, two for linear, four for cubic) of the product of per-axis weights. The source
// coordinates are FLOAT arithmetic, as PopART's (a nearest index on a rounding boundary depends
// on it); the sums are DOUBLE.
HostTensor refResize(const HostTensor& X, const ResizeCase& c) {
  const Shape& in = X.shape();
  const size_t rank = in.size();
  Shape out = c.sizes;
  if (out.empty()) {
    for (size_t d = 0; d < rank; ++d) {
      out.push_back(static_cast<int64_t>(std::floor(static_cast<float>(in[d]) * c.scales[d])));
    }
  }
  // Per axis and output index: (index, weight) pairs.
  std::vector<std::vector<std::vector<std::pair<int64_t, double>>>> taps(rank);
  for (size_t d = 0; d < rank; ++d) {
    const float scale =
        c.scales.empty() ? static_cast<float>(out[d]) / static_cast<float>(in[d]) : c.scales[d];
    const float length = static_cast<float>(in[d]) * scale;
    auto clampIdx = [&](int64_t i) {
      return std::min<int64_t>(std::max<int64_t>(i, 0), in[d] - 1);
    };
    for (int64_t o = 0; o < out[d]; ++o) {
      const float fo = static_cast<float>(o);
      float x = 0;
      if (c.ctm == "half_pixel") {
        x = (fo + 0.5f) / scale - 0.5f;
      } else if (c.ctm == "pytorch_half_pixel") {
        x = length > 1 ? (fo + 0.5f) / scale - 0.5f : 0.0f;
      } else if (c.ctm == "align_corners") {
        x = length == 1 ? 0.0f : fo * static_cast<float>(in[d] - 1) / (length - 1);
      } else if (c.ctm == "tf_half_pixel_for_nn") {
        x = (fo + 0.5f) / scale;
      } else {
        x = fo / scale;
      }
      std::vector<std::pair<int64_t, double>> t;
      const bool pytorch = c.mode == "nearest" && c.nearestMode == "pytorch";
      if (pytorch ? in[d] == out[d] : scale == 1.0f) {
        t.push_back({o, 1.0});  // PopART leaves such an axis alone
      } else if (c.mode == "nearest") {
        int64_t i = 0;
        const float lo = std::floor(x);
        if (pytorch) {
          i = static_cast<int64_t>(std::floor(fo / scale));
        } else if (c.nearestMode == "floor") {
          i = static_cast<int64_t>(lo);
        } else if (c.nearestMode == "ceil") {
          i = static_cast<int64_t>(std::ceil(x));
        } else if (x - lo == 0.5f) {
          i = static_cast<int64_t>(c.nearestMode == "round_prefer_ceil" ? lo + 1 : lo);
        } else {
          i = static_cast<int64_t>(x - lo < 0.5f ? lo : lo + 1);
        }
        t.push_back({clampIdx(i), 1.0});
      } else if (c.mode == "linear") {
        // Neighbours floor(x) and floor(x)+1, taken at the edge outside the input.
        const float xc = std::min(std::max(x, 0.0f), static_cast<float>(in[d] - 1));
        const int64_t lo = static_cast<int64_t>(std::floor(xc));
        const double w = xc - static_cast<float>(lo);
        t.push_back({clampIdx(lo), 1.0 - w});
        t.push_back({clampIdx(lo + 1), w});
      } else {
        // Cubic: neighbours floor(x)-1 .. floor(x)+2 at distances 1+r, r, 1-r, 2-r, with Keys'
        // kernel W(s) = (a+2)|s|^3 - (a+3)|s|^2 + 1 (|s| <= 1), a|s|^3 - 5a|s|^2 + 8a|s| - 4a
        // (1 < |s| < 2).
        const double a = c.cubicA;
        auto W = [a](double s) {
          s = std::fabs(s);
          return s <= 1 ? (a + 2) * s * s * s - (a + 3) * s * s + 1
                        : a * s * s * s - 5 * a * s * s + 8 * a * s - 4 * a;
        };
        const int64_t lo = static_cast<int64_t>(std::floor(x));
        const double r = static_cast<double>(x) - static_cast<double>(lo);
        double sum = 0;
        std::vector<std::pair<int64_t, double>> raw;
        for (int k = -1; k <= 2; ++k) {
          double w = W(r - k);
          if (c.excludeOutside && (lo + k < 0 || lo + k >= in[d])) w = 0;
          raw.push_back({lo + k, w});
          sum += w;
        }
        for (auto& [i, w] : raw) t.push_back({clampIdx(i), c.excludeOutside ? w / sum : w});
      }
      taps[d].push_back(std::move(t));
    }
  }
  HostTensor Y(TensorInfo(DataType::FLOAT, out));
  std::vector<int64_t> pos(rank, 0);
  for (int64_t e = 0; e < Y.nelms(); ++e) {
    int64_t rem = e;
    for (size_t d = rank; d-- > 0;) {
      pos[d] = rem % out[d];
      rem /= out[d];
    }
    // Enumerate corners with an odometer over tap choices.
    double sum = 0;
    std::vector<size_t> choice(rank, 0);
    while (true) {
      double w = 1;
      int64_t flat = 0;
      for (size_t d = 0; d < rank; ++d) {
        const auto& t = taps[d][static_cast<size_t>(pos[d])][choice[d]];
        w *= t.second;
        flat = flat * in[d] + t.first;
      }
      sum += w * X.data<float>()[flat];
      size_t d = rank;
      while (d-- > 0) {
        if (++choice[d] < taps[d][static_cast<size_t>(pos[d])].size()) break;
        choice[d] = 0;
      }
      if (d == static_cast<size_t>(-1)) break;
    }
    Y.data<float>()[e] = static_cast<float>(sum);
  }
  return Y;
}

class ResizeForward : public ::testing::TestWithParam<ResizeCase> {};

TEST_P(ResizeForward, MatchesNaiveResize) {
  const ResizeCase& c = GetParam();
  const std::vector<HostTensor> in{randomTensor(c.x, 3)};
  auto out = runForward(resizeBuild(c), in);
  EXPECT_TRUE(allClose(out[0], refResize(in[0], c), 1e-5, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(
    Nearest, ResizeForward,
    ::testing::Values(
        ResizeCase{{2, 3, 4, 5}, {1, 1, 2, 2}, {}, "nearest", "asymmetric", "floor"},
        ResizeCase{{2, 3, 4, 5}, {1, 1, 1.7f, 0.6f}, {}, "nearest", "half_pixel"},
        ResizeCase{
            {2, 3, 4, 5}, {1, 1, 1.7f, 0.6f}, {}, "nearest", "half_pixel", "round_prefer_ceil"},
        ResizeCase{{2, 3, 4, 5}, {1, 1, 1.5f, 0.5f}, {}, "nearest", "half_pixel"},
        ResizeCase{
            {2, 3, 4, 5}, {1, 1, 1.5f, 0.5f}, {}, "nearest", "half_pixel", "round_prefer_ceil"},
        ResizeCase{{2, 3, 4, 5}, {1, 1, 2.5f, 0.7f}, {}, "nearest", "asymmetric", "ceil"},
        ResizeCase{{2, 3, 4, 5}, {1, 1, 2.5f, 0.7f}, {}, "nearest", "pytorch_half_pixel", "floor"},
        ResizeCase{{2, 3, 4, 5}, {}, {2, 3, 7, 3}, "nearest", "align_corners"},
        ResizeCase{{2, 3, 4, 5}, {}, {2, 3, 7, 1}, "nearest", "pytorch_half_pixel"},
        ResizeCase{
            {2, 3, 4, 5}, {1, 1, 1, 1}, {}, "nearest", "tf_half_pixel_for_nn", "round_prefer_ceil"},
        ResizeCase{
            {3, 4, 5}, {2, 1.5f, 0.4f}, {}, "nearest", "asymmetric", "floor"},  // every axis, batch
                                                                                // included
        ResizeCase{{7}, {}, {3}, "nearest", "half_pixel"}));

INSTANTIATE_TEST_SUITE_P(
    Linear, ResizeForward,
    ::testing::Values(ResizeCase{{2, 3, 4, 5}, {1, 1, 2, 2}, {}, "linear", "half_pixel"},
                      ResizeCase{{2, 3, 4, 5}, {1, 1, 2, 2}, {}, "linear", "align_corners"},
                      ResizeCase{{2, 3, 4, 5}, {1, 1, 2, 2}, {}, "linear", "asymmetric"},
                      ResizeCase{{2, 3, 4, 5}, {}, {2, 3, 7, 3}, "linear", "pytorch_half_pixel"},
                      ResizeCase{{2, 3, 4, 5}, {}, {2, 3, 1, 9}, "linear", "pytorch_half_pixel"},
                      ResizeCase{{2, 3, 4, 5}, {1, 1, 0.5f, 0.6f}, {}, "linear", "half_pixel"},
                      ResizeCase{{2, 3, 4, 5}, {}, {2, 3, 7, 3}, "linear", "align_corners"},
                      ResizeCase{{2, 3, 4, 5}, {}, {3, 3, 4, 5}, "linear", "half_pixel"},
                      ResizeCase{{3, 4, 5}, {}, {5, 2, 8}, "linear", "half_pixel"},  // trilinear
                      ResizeCase{
                          {2, 3, 2, 3, 4}, {1, 1, 2, 1.5f, 0.5f}, {}, "linear", "half_pixel"},
                      ResizeCase{{6}, {2.5f}, {}, "linear", "align_corners"}));

// align_corners and pytorch_half_pixel take in * scale as the output length, not the floored
// size; a scale of 1.12 on 8 elements keeps the size and moves the values.
INSTANTIATE_TEST_SUITE_P(
    FractionalLength, ResizeForward,
    ::testing::Values(ResizeCase{{1, 1, 5, 3}, {1, 1, 2.3f, 2.5f}, {}, "linear", "align_corners"},
                      ResizeCase{{1, 1, 5, 3}, {1, 1, 2.3f, 2.5f}, {}, "nearest", "align_corners"},
                      ResizeCase{{2, 3}, {0.7f, 0.4f}, {}, "linear", "pytorch_half_pixel"},
                      ResizeCase{{8}, {1.12f}, {}, "nearest", "half_pixel"},
                      ResizeCase{{8}, {1.12f}, {}, "linear", "asymmetric"},
                      ResizeCase{{1, 1, 10}, {1, 1, 0.7f}, {}, "linear", "pytorch_half_pixel"},
                      ResizeCase{{1, 1, 2}, {1, 1, 3.0001f}, {}, "nearest", "half_pixel"},
                      ResizeCase{{1, 1, 6}, {1, 1, 0.51f}, {}, "nearest", "half_pixel"}));

// PopART's "pytorch" nearest mode: floor(o / scale) whatever the transformation; an axis whose
// size is unchanged is left alone.
INSTANTIATE_TEST_SUITE_P(
    PyTorchNearest, ResizeForward,
    ::testing::Values(
        ResizeCase{{1, 1, 5, 3}, {1, 1, 2.3f, 2.5f}, {}, "nearest", "half_pixel", "pytorch"},
        ResizeCase{{1, 1, 5, 3}, {1, 1, 0.3f, 0.5f}, {}, "nearest", "align_corners", "pytorch"},
        ResizeCase{{1, 1, 8}, {1, 1, 1.12f}, {}, "nearest", "half_pixel", "pytorch"},
        ResizeCase{{1, 1, 2, 8}, {1, 1, 1, 0.375f}, {}, "nearest", "asymmetric", "pytorch"},
        ResizeCase{{4, 4}, {}, {5, 3}, "nearest", "half_pixel", "pytorch"}));

// Cubic (Keys' kernel), with the default a = -0.75, another a, and exclude_outside.
INSTANTIATE_TEST_SUITE_P(
    Cubic, ResizeForward,
    ::testing::Values(
        ResizeCase{{2, 2}, {2, 3}, {}, "cubic", "half_pixel"},
        ResizeCase{{5, 3}, {2.3f, 2.5f}, {}, "cubic", "pytorch_half_pixel"},
        ResizeCase{{5, 3}, {2.3f, 2.5f}, {}, "cubic", "align_corners"},
        ResizeCase{{5, 3}, {2.3f, 2.5f}, {}, "cubic", "asymmetric"},
        ResizeCase{{2, 8}, {1, 0.375f}, {}, "cubic", "half_pixel"},
        ResizeCase{{5, 3, 4}, {2.3f, 2.5f, 0.5f}, {}, "cubic", "half_pixel"},
        ResizeCase{
            {1, 2, 4, 4}, {}, {1, 2, 7, 3}, "cubic", "half_pixel", "round_prefer_floor", -0.5f},
        ResizeCase{{1, 2, 4, 4},
                   {1, 1, 2, 0.5f},
                   {},
                   "cubic",
                   "half_pixel",
                   "round_prefer_floor",
                   -0.75f,
                   true},
        ResizeCase{{8}, {1.12f}, {}, "cubic", "half_pixel"},
        ResizeCase{{1}, {3}, {}, "cubic", "half_pixel"}));

// What PyTorch 1.13's F.interpolate computes (values from torch), through the nodes its ONNX
// exporter writes at opsets 11-17.
TEST(ResizePyTorch, InterpolateExportsMatchTorch) {
  const HostTensor x = HostTensor::fromVector<float>({1, 1, 2, 3}, {1, 4, 2, 0, 3, 5});
  struct Golden {
    ResizeCase c;
    std::vector<float> y;
  };
  const std::vector<Golden> cases{
      // F.interpolate(x, scale_factor=2, mode="nearest") and nn.Upsample(scale_factor=2)
      {{{1, 1, 2, 3}, {1, 1, 2, 2}, {}, "nearest", "asymmetric", "floor"},
       {1, 1, 4, 4, 2, 2, 1, 1, 4, 4, 2, 2, 0, 0, 3, 3, 5, 5, 0, 0, 3, 3, 5, 5}},
      // mode="bilinear", align_corners=False
      {{{1, 1, 2, 3}, {1, 1, 2, 2}, {}, "linear", "half_pixel", "floor"},
       {1,     1.75f, 3.25f, 3.5f, 2.5f, 2,     0.75f, 1.5f,  3,     3.5f, 3,    2.75f,
        0.25f, 1,     2.5f,  3.5f, 4,    4.25f, 0,     0.75f, 2.25f, 3.5f, 4.5f, 5}},
      // mode="bilinear", align_corners=True
      {{{1, 1, 2, 3}, {1, 1, 2, 2}, {}, "linear", "align_corners", "floor"},
       {1,         2.2f,      3.4f,      3.6f, 2.8f,      2,         0.666667f, 1.866667f,
        3.066667f, 3.533333f, 3.266667f, 3,    0.333333f, 1.533333f, 2.733333f, 3.466666f,
        3.733333f, 4,         0,         1.2f, 2.4f,      3.4f,      4.2f,      5}},
      // size=(3, 5), mode="bilinear", align_corners=False
      {{{1, 1, 2, 3}, {}, {1, 1, 3, 5}, "linear", "half_pixel", "floor"},
       {1, 2.2f, 4, 2.8f, 2, 0.5f, 1.7f, 3.5f, 3.5f, 3.5f, 0, 1.2f, 3, 4.2f, 5}},
      // size=(3, 5), mode="nearest"
      {{{1, 1, 2, 3}, {}, {1, 1, 3, 5}, "nearest", "asymmetric", "floor"},
       {1, 1, 4, 4, 2, 1, 1, 4, 4, 2, 0, 0, 3, 3, 5}},
  };
  for (const auto& [c, y] : cases) {
    for (int opset : {11, 13, 17}) {
      auto out = runForward(resizeBuild(c, opset), {x});
      Shape shape = c.sizes;
      if (shape.empty()) shape = {1, 1, 4, 6};
      EXPECT_TRUE(allClose(out[0], HostTensor::fromVector<float>(shape, y), 1e-5, 1e-6))
          << c.mode << " " << c.ctm << " opset " << opset;
    }
  }
}

// PyTorch 1.13's F.interpolate (values from torch) against cubic (bicubic, a = -0.75) and PopART's
// "pytorch" nearest mode (mode="nearest" with a scale_factor, recompute_scale_factor=False).
TEST(ResizePyTorch, BicubicAndPyTorchNearestMatchTorch) {
  const HostTensor x = HostTensor::fromVector<float>({1, 1, 2, 3}, {1, 4, 2, 0, 3, 5});
  const ResizeCase bicubic{{1, 1, 2, 3}, {1, 1, 2, 2}, {}, "cubic", "half_pixel"};
  EXPECT_TRUE(allClose(
      runForward(resizeBuild(bicubic), {x})[0],
      HostTensor::fromVector<float>(
          {1, 1, 4, 6}, {0.7890625f,   1.8703003f, 3.6812134f, 3.873169f,  2.3377686f, 1.4281616f,
                         0.45703125f,  1.4915771f, 3.2091064f, 3.842041f,  3.032959f,  2.564331f,
                         -0.08984375f, 0.8677979f, 2.4315186f, 3.7907715f, 4.177979f,  4.435669f,
                         -0.421875f,   0.4890747f, 1.9594116f, 3.7596436f, 4.873169f,  5.571838f}),
      1e-5, 1e-5));
  const ResizeCase corners{{1, 1, 2, 3}, {1, 1, 2, 2}, {}, "cubic", "align_corners"};
  EXPECT_TRUE(allClose(
      runForward(resizeBuild(corners), {x})[0],
      HostTensor::fromVector<float>(
          {1, 1, 4, 6}, {1.0f,        2.308f,     3.664f,     3.936f,     2.992f,     2.0f,
                         0.6851851f,  1.9025179f, 3.2282958f, 3.842814f,  3.4478505f, 2.9444432f,
                         0.31481504f, 1.4254818f, 2.7157047f, 3.7331862f, 3.9841483f, 4.0555558f,
                         0.0f,        1.02f,      2.28f,      3.64f,      4.44f,      5.0f}),
      1e-5, 1e-5));
  const ResizeCase nearest{{1, 1, 2, 3}, {1, 1, 2.5f, 1.5f}, {},
                           "nearest",    "half_pixel",       "pytorch"};
  EXPECT_TRUE(allClose(runForward(resizeBuild(nearest), {x})[0],
                       HostTensor::fromVector<float>({1, 1, 5, 4}, {1, 1, 4, 2, 1, 1, 4, 2, 1, 1, 4,
                                                                    2, 0, 0, 3, 5, 0, 0, 3, 5})));
}

// Resize 13+ with scales only (roi and sizes absent), as PyTorch writes it.
TEST(ResizeOpsets, Opset13ScalesWithoutRoi) {
  const ResizeCase c{{1, 2, 3, 3}, {1, 1, 2, 2}, {}, "linear", "half_pixel"};
  const std::vector<HostTensor> in{randomTensor(c.x, 4)};
  auto out = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize", {ids[0], "", addConst(g, "s", floats({1, 1, 2, 2}))},
                     attrs({{"mode", std::string("linear")}}), 1, ir::kOnnxDomain, 13);
      },
      in);
  EXPECT_TRUE(allClose(out[0], refResize(in[0], c), 1e-5, 1e-6));
}

// Resize 10 as PopART reads it: scales only, nearest_mode "pytorch" and half_pixel by default,
// the opset-11 attributes when the node has them. Upsample 7/9: nearest "pytorch", linear
// asymmetric (ONNX's).
TEST(ResizeOpsets, Resize10AndUpsample) {
  const HostTensor x = HostTensor::fromVector<float>({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto down = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize", {ids[0], addConst(g, "s", floats({1, 1, 0.6f, 0.6f}))},
                     attrs({{"mode", std::string("nearest")}}), 1, ir::kOnnxDomain, 10);
      },
      {x});
  // floor(o / 0.6) for o = 0, 1: input columns 0 and 1 of row 0.
  EXPECT_TRUE(allClose(down[0], HostTensor::fromVector<float>({1, 1, 1, 2}, {1, 2})));

  const std::vector<HostTensor> in{randomTensor({1, 2, 3, 4}, 6)};
  const ResizeCase linear10{{1, 2, 3, 4}, {1, 1, 2, 1.5f}, {}, "linear", "half_pixel"};
  auto r10 = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize", {ids[0], addConst(g, "s", floats({1, 1, 2, 1.5f}))},
                     attrs({{"mode", std::string("linear")}}), 1, ir::kOnnxDomain, 10);
      },
      in);
  EXPECT_TRUE(allClose(r10[0], refResize(in[0], linear10), 1e-5, 1e-6));
  const ResizeCase nearest10{{1, 2, 3, 4}, {1, 1, 2.5f, 0.6f}, {},
                             "nearest",    "align_corners",    "round_prefer_ceil"};
  auto r10attrs = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize", {ids[0], addConst(g, "s", floats({1, 1, 2.5f, 0.6f}))},
                     attrs({{"nearest_mode", std::string("round_prefer_ceil")},
                            {"coordinate_transformation_mode", std::string("align_corners")}}),
                     1, ir::kOnnxDomain, 10);
      },
      in);
  EXPECT_TRUE(allClose(r10attrs[0], refResize(in[0], nearest10), 1e-5, 1e-6));

  const ResizeCase up{{1, 2, 3, 4}, {1, 1, 2, 1.5f}, {}, "linear", "asymmetric"};
  const HostTensor expected = refResize(in[0], up);
  auto u9 = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Upsample", {ids[0], addConst(g, "s", floats({1, 1, 2, 1.5f}))},
                     attrs({{"mode", std::string("linear")}}), 1, ir::kOnnxDomain, 9);
      },
      in);
  EXPECT_TRUE(allClose(u9[0], expected, 1e-5, 1e-6));
  auto u7 = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(
            g, "Upsample", {ids[0]},
            attrs({{"mode", std::string("linear")}, {"scales", std::vector<float>{1, 1, 2, 1.5f}}}),
            1, ir::kOnnxDomain, 7);
      },
      in);
  EXPECT_TRUE(allClose(u7[0], expected, 1e-5, 1e-6));

  const ResizeCase nn{{1, 2, 3, 4}, {1, 1, 2.5f, 1.12f}, {}, "nearest", "half_pixel", "pytorch"};
  auto u9n = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Upsample", {ids[0], addConst(g, "s", floats({1, 1, 2.5f, 1.12f}))}, {}, 1,
                     ir::kOnnxDomain, 9);
      },
      in);
  EXPECT_TRUE(allClose(u9n[0], refResize(in[0], nn), 1e-5, 1e-6));
}

TEST(ResizeCanonical, InputsBecomeAttributes) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {1, 2, 3, 4}), ir::TensorKind::Stream);
  const TensorId y = addOp(g, "Upsample", {"x", addConst(g, "s", floats({1, 1, 2, 2}))},
                           attrs({{"mode", std::string("nearest")}}), 1, ir::kOnnxDomain, 9)[0];
  const ir::Op& op = g.op(g.tensor(y).producer);
  EXPECT_EQ(op.type, "Resize");
  EXPECT_EQ(op.inputs.size(), 1u);
  EXPECT_EQ(op.attrs.getString("coordinate_transformation_mode"), "asymmetric");
  EXPECT_EQ(op.attrs.getString("nearest_mode"), "pytorch");
  EXPECT_EQ(op.attrs.getInts("sizes"), (Shape{1, 2, 6, 8}));
  EXPECT_EQ(g.tensor(y).info.shape(), (Shape{1, 2, 6, 8}));

  const TensorId z = addOp(g, "Resize",
                           {"x", addConst(g, "roi", floats({})), addConst(g, "sc", floats({})),
                            addConst(g, "sz", int64s({1, 2, 5, 7}))},
                           attrs({{"mode", std::string("linear")}, {"cubic_coeff_a", -0.75f}}), 1,
                           ir::kOnnxDomain, 11)[0];
  const ir::Op& r = g.op(g.tensor(z).producer);
  EXPECT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.attrs.getString("coordinate_transformation_mode"), "half_pixel");
  EXPECT_FALSE(r.attrs.has("scales"));
  EXPECT_FALSE(r.attrs.has("cubic_coeff_a"));
  EXPECT_EQ(g.tensor(z).info.shape(), (Shape{1, 2, 5, 7}));

  // Cubic keeps its coefficient and exclude_outside; the output size is floor(in * scale) in
  // FLOAT (10 * 0.7f is 7 there).
  g.addTensor("w", TensorInfo(DataType::FLOAT, {1, 10}), ir::TensorKind::Stream);
  const TensorId c = addOp(
      g, "Resize", {"w", addConst(g, "roi2", floats({})), addConst(g, "sc2", floats({1, 0.7f}))},
      attrs({{"mode", std::string("cubic")}}), 1, ir::kOnnxDomain, 11)[0];
  const ir::Op& cubic = g.op(g.tensor(c).producer);
  EXPECT_EQ(cubic.attrs.getFloat("cubic_coeff_a"), -0.75f);
  EXPECT_EQ(cubic.attrs.getInt("exclude_outside"), 0);
  EXPECT_EQ(g.tensor(c).info.shape(), (Shape{1, 7}));
}

// FLOAT16 runs promoted: computed in FLOAT, stored as FLOAT16.
TEST(ResizeForward, Float16) {
  const ResizeCase c{{1, 2, 3, 4}, {1, 1, 2, 1.5f}, {}, "linear", "half_pixel"};
  const HostTensor x = randomTensor(c.x, 11).castTo(DataType::FLOAT16);
  auto out = runForward(resizeBuild(c), {x});
  ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
  EXPECT_TRUE(allClose(out[0].castTo(DataType::FLOAT), refResize(x.castTo(DataType::FLOAT), c),
                       2e-3, 2e-3));
}

class ResizeGradient : public ::testing::TestWithParam<ResizeCase> {};

TEST_P(ResizeGradient, MatchesFiniteDifferences) {
  const ResizeCase& c = GetParam();
  expectGradientsMatch(resizeBuild(c), {randomTensor(c.x, 8)});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ResizeGradient,
    ::testing::Values(
        ResizeCase{{2, 2, 3, 3}, {1, 1, 2, 2}, {}, "nearest", "asymmetric", "floor"},
        ResizeCase{{1, 2, 4, 5}, {1, 1, 1.5f, 0.6f}, {}, "nearest", "half_pixel"},
        ResizeCase{{2, 2, 3, 3}, {1, 1, 2, 2}, {}, "linear", "half_pixel"},
        ResizeCase{{1, 2, 3, 4}, {}, {1, 2, 5, 7}, "linear", "align_corners"},
        ResizeCase{{1, 2, 4, 5}, {1, 1, 0.5f, 0.6f}, {}, "linear", "pytorch_half_pixel"},
        ResizeCase{{3, 4, 5}, {}, {2, 6, 3}, "linear", "asymmetric"},
        ResizeCase{{1, 1, 5, 3}, {1, 1, 2.3f, 2.5f}, {}, "nearest", "half_pixel", "pytorch"},
        ResizeCase{{1, 1, 5, 3}, {1, 1, 0.3f, 0.5f}, {}, "nearest", "half_pixel", "pytorch"},
        ResizeCase{{1, 1, 2, 2}, {1, 1, 2, 3}, {}, "cubic", "pytorch_half_pixel"},
        ResizeCase{{1, 1, 5, 4}, {1, 1, 0.5f, 0.5f}, {}, "cubic", "half_pixel"},
        ResizeCase{{2, 8}, {1, 0.375f}, {}, "cubic", "align_corners", "floor", -0.5f, true}));

void expectResizeError(const BuildFn& build, const std::vector<std::string>& parts) {
  expectError([&] { runForward(build, {randomTensor({1, 2, 3, 4}, 1)}); }, parts);
}

TEST(ResizeErrors, RefusedModesAndBadInputs) {
  const ResizeCase base{{1, 2, 3, 4}, {1, 1, 2, 2}, {}, "linear", "half_pixel"};
  expectResizeError(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize", {ids[0], "", addConst(g, "s", floats({1, 1, 2, 2}))},
                     attrs({{"mode", std::string("cubic")}, {"exclude_outside", int64_t{2}}}), 1,
                     ir::kOnnxDomain, 13);
      },
      {"Resize", "exclude_outside is 2"});
  ResizeCase crop = base;
  crop.ctm = "tf_crop_and_resize";
  expectResizeError(resizeBuild(crop), {"Resize", "'tf_crop_and_resize' is not implemented"});
  ResizeCase badMode = base;
  badMode.mode = "bilinear";
  expectResizeError(resizeBuild(badMode), {"Resize", "mode 'bilinear'"});
  ResizeCase badNearest = base;
  badNearest.nearestMode = "round";
  expectResizeError(resizeBuild(badNearest), {"Resize", "nearest_mode 'round'"});
  ResizeCase badCount{{1, 2, 3, 4}, {2, 2}, {}, "linear", "half_pixel"};
  expectResizeError(resizeBuild(badCount), {"Resize", "scales has 2 values", "rank 4"});
  ResizeCase negative{{1, 2, 3, 4}, {1, 1, -2, 2}, {}, "linear", "half_pixel"};
  expectResizeError(resizeBuild(negative), {"Resize", "scales must be positive"});
  ResizeCase huge{{1, 2, 3, 4}, {1, 1, 1e30f, 2}, {}, "linear", "half_pixel"};
  expectResizeError(resizeBuild(huge), {"Resize", "give an output dimension"});
  ResizeCase zeroSize{{1, 2, 3, 4}, {}, {1, 2, 0, 4}, "linear", "half_pixel"};
  expectResizeError(resizeBuild(zeroSize), {"Resize", "sizes [1,2,0,4]"});
  expectResizeError(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize",
                     {ids[0], "", addConst(g, "s", floats({1, 1, 2, 2})),
                      addConst(g, "z", int64s({1, 2, 6, 8}))},
                     {}, 1, ir::kOnnxDomain, 13);
      },
      {"Resize op has inputs for `sizes` and `scales`. Only one of these tensors should be "
       "present"});
  expectResizeError(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize", {ids[0], "", addConst(g, "s", floats({}))}, {}, 1,
                     ir::kOnnxDomain, 13);
      },
      {"Resize", "one of the inputs scales (2) and sizes (3)"});
  expectResizeError(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize", {ids[0], "", "", addConst(g, "z", floats({1, 2, 6, 8}))}, {}, 1,
                     ir::kOnnxDomain, 13);
      },
      {"Resize", "'z'", "used as 'sizes'", "expected INT64"});
  expectResizeError(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        g.addTensor("sv", TensorInfo(DataType::FLOAT, {4}), ir::TensorKind::Stream);
        return addOp(g, "Resize", {ids[0], "", "sv"}, {}, 1, ir::kOnnxDomain, 13);
      },
      {"Resize", "'sv'", "is not a constant"});
  expectResizeError(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize", {ids[0], "", addConst(g, "s", floats({1, 1, 0.5f, 0.5f}))},
                     attrs({{"mode", std::string("linear")}, {"antialias", int64_t{1}}}), 1,
                     ir::kOnnxDomain, 13);
      },
      {"Resize", "antialias"});
  expectResizeError(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Upsample", {ids[0], addConst(g, "s", floats({1, 1, 0.5f, 1}))}, {}, 1,
                     ir::kOnnxDomain, 9);
      },
      {"Upsample", "scales must be >= 1"});
  expectResizeError(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Upsample", {ids[0]}, {}, 1, ir::kOnnxDomain, 7);
      },
      {"Upsample", "attribute 'scales' is required"});
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, const std::vector<TensorId>& ids) {
              return addOp(g, "Resize", {ids[0], "", addConst(g, "s", floats({2}))}, {}, 1,
                           ir::kOnnxDomain, 13);
            },
            {HostTensor::fromVector<int64_t>({2}, {1, 2})});
      },
      {"Resize", "FLOAT"});
}

}  // namespace
}  // namespace xtrain::testing
