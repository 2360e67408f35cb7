#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// How a test passes the output size: scales or sizes, and in which ONNX form.
struct ResizeCase {
  ResizeCase(Shape x_, std::vector<float> scales_, Shape sizes_, std::string mode_,
             std::string ctm_, std::string nearestMode_ = "round_prefer_floor")
      : x(std::move(x_)),
        scales(std::move(scales_)),
        sizes(std::move(sizes_)),
        mode(std::move(mode_)),
        ctm(std::move(ctm_)),
        nearestMode(std::move(nearestMode_)) {}
  Shape x;
  std::vector<float> scales;  // empty: sizes given
  Shape sizes;                // empty: scales given
  std::string mode, ctm, nearestMode;
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
                          {"nearest_mode", c.nearestMode}});
    std::vector<TensorId> in{ids[0], addConst(g, "roi", floats({})),
                             addConst(g, "scales", floats(c.scales))};
    if (!c.sizes.empty()) in.push_back(addConst(g, "sizes", int64s(c.sizes)));
    return addOp(g, "Resize", in, a, 1, ir::kOnnxDomain, opset);
  };
}

// Naive reference in double: every output element is the sum over the 2^rank corners of the
// product of per-axis weights (nearest: one corner with weight 1).
HostTensor refResize(const HostTensor& X, const ResizeCase& c, bool legacySimple = false) {
  const Shape& in = X.shape();
  const size_t rank = in.size();
  Shape out = c.sizes;
  if (out.empty()) {
    for (size_t d = 0; d < rank; ++d) {
      out.push_back(static_cast<int64_t>(std::floor(in[d] * static_cast<double>(c.scales[d]))));
    }
  }
  // Per axis and output index: (index, weight) pairs.
  std::vector<std::vector<std::vector<std::pair<int64_t, double>>>> taps(rank);
  for (size_t d = 0; d < rank; ++d) {
    const double scale = c.scales.empty() ? static_cast<double>(out[d]) / in[d] : c.scales[d];
    for (int64_t o = 0; o < out[d]; ++o) {
      double x = 0;
      if (c.ctm == "half_pixel") {
        x = (o + 0.5) / scale - 0.5;
      } else if (c.ctm == "pytorch_half_pixel") {
        x = out[d] > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
      } else if (c.ctm == "align_corners") {
        x = out[d] > 1 ? o * (in[d] - 1.0) / (out[d] - 1.0) : 0.0;
      } else if (c.ctm == "tf_half_pixel_for_nn") {
        x = (o + 0.5) / scale;
      } else {
        x = o / scale;
      }
      std::vector<std::pair<int64_t, double>> t;
      if (c.mode == "nearest") {
        int64_t i = 0;
        const double frac = x - std::floor(x);
        if (legacySimple) {
          i = static_cast<int64_t>(scale >= 1 ? std::floor(x) : std::ceil(x));
        } else if (c.nearestMode == "floor") {
          i = static_cast<int64_t>(std::floor(x));
        } else if (c.nearestMode == "ceil") {
          i = static_cast<int64_t>(std::ceil(x));
        } else if (frac == 0.5) {
          i = static_cast<int64_t>(c.nearestMode == "round_prefer_ceil" ? std::ceil(x)
                                                                        : std::floor(x));
        } else {
          i = static_cast<int64_t>(std::round(x));
        }
        t.push_back({std::min<int64_t>(std::max<int64_t>(i, 0), in[d] - 1), 1.0});
      } else {
        // Linear: neighbours floor(x) and floor(x)+1, taken at the edge outside the input.
        const int64_t lo = static_cast<int64_t>(std::floor(x));
        const double w = x - lo;
        auto clampIdx = [&](int64_t i) {
          return std::min<int64_t>(std::max<int64_t>(i, 0), in[d] - 1);
        };
        t.push_back({clampIdx(lo), 1.0 - w});
        t.push_back({clampIdx(lo + 1), w});
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

// Resize 10 and Upsample 7/9: scales only, asymmetric transformation; nearest takes floor when
// upsampling and ceil when downsampling (ONNX's resize_downsample_nearest example at opset 10).
TEST(ResizeOpsets, Resize10AndUpsample) {
  const HostTensor x = HostTensor::fromVector<float>({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto down = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize", {ids[0], addConst(g, "s", floats({1, 1, 0.6f, 0.6f}))},
                     attrs({{"mode", std::string("nearest")}}), 1, ir::kOnnxDomain, 10);
      },
      {x});
  EXPECT_TRUE(allClose(down[0], HostTensor::fromVector<float>({1, 1, 1, 2}, {1, 3})));

  const ResizeCase up{{1, 2, 3, 4}, {1, 1, 2, 1.5f}, {}, "linear", "asymmetric"};
  const std::vector<HostTensor> in{randomTensor(up.x, 6)};
  const HostTensor expected = refResize(in[0], up);
  auto r10 = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Resize", {ids[0], addConst(g, "s", floats({1, 1, 2, 1.5f}))},
                     attrs({{"mode", std::string("linear")}}), 1, ir::kOnnxDomain, 10);
      },
      in);
  EXPECT_TRUE(allClose(r10[0], expected, 1e-5, 1e-6));
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

  const ResizeCase nn{{1, 2, 3, 4}, {1, 1, 2, 3}, {}, "nearest", "asymmetric", "floor"};
  auto u9n = runForward(
      [](ir::Graph& g, const std::vector<TensorId>& ids) {
        return addOp(g, "Upsample", {ids[0], addConst(g, "s", floats({1, 1, 2, 3}))}, {}, 1,
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
  EXPECT_EQ(op.attrs.getString("nearest_mode"), "floor");
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
    ::testing::Values(ResizeCase{{2, 2, 3, 3}, {1, 1, 2, 2}, {}, "nearest", "asymmetric", "floor"},
                      ResizeCase{{1, 2, 4, 5}, {1, 1, 1.5f, 0.6f}, {}, "nearest", "half_pixel"},
                      ResizeCase{{2, 2, 3, 3}, {1, 1, 2, 2}, {}, "linear", "half_pixel"},
                      ResizeCase{{1, 2, 3, 4}, {}, {1, 2, 5, 7}, "linear", "align_corners"},
                      ResizeCase{
                          {1, 2, 4, 5}, {1, 1, 0.5f, 0.6f}, {}, "linear", "pytorch_half_pixel"},
                      ResizeCase{{3, 4, 5}, {}, {2, 6, 3}, "linear", "asymmetric"}));

void expectResizeError(const BuildFn& build, const std::vector<std::string>& parts) {
  expectError([&] { runForward(build, {randomTensor({1, 2, 3, 4}, 1)}); }, parts);
}

TEST(ResizeErrors, RefusedModesAndBadInputs) {
  const ResizeCase base{{1, 2, 3, 4}, {1, 1, 2, 2}, {}, "linear", "half_pixel"};
  ResizeCase cubic = base;
  cubic.mode = "cubic";
  expectResizeError(resizeBuild(cubic), {"Resize", "mode 'cubic' is not implemented"});
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
      {"Resize", "scales and sizes are both given"});
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
      {"Resize", "'sv'", "must be a constant"});
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
