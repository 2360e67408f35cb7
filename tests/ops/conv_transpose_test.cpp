#include <gtest/gtest.h>

#include "ir/graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// Naive transposed convolution in double: X [N, C, spatial...] (1 to 3 spatial dims), W [C, M/g,
// k...], explicit pads [begin..., end...] and output_padding; every input element scatters
// X * W into Y at o = i * stride - pad_begin + k * dilation.
HostTensor refConvTranspose(const HostTensor& X, const HostTensor& W, const HostTensor* B,
                            const Shape& strides, const Shape& pads, const Shape& dilations,
                            const Shape& outputPadding, int64_t group) {
  const Shape& xs = X.shape();
  const Shape& ws = W.shape();
  const size_t nd = xs.size() - 2;
  Shape in(3, 1), k(3, 1), s(3, 1), d(3, 1), pb(3, 0), out(3, 1);
  for (size_t i = 0; i < nd; ++i) {
    const size_t j = 3 - nd + i;
    in[j] = xs[2 + i];
    k[j] = ws[2 + i];
    s[j] = strides[i];
    d[j] = dilations[i];
    pb[j] = pads[i];
    out[j] = s[j] * (in[j] - 1) + outputPadding[i] + (k[j] - 1) * d[j] + 1 - pads[i] - pads[i + nd];
  }
  const int64_t n = xs[0], c = xs[1], cg = c / group, mg = ws[1], m = mg * group;
  Shape ys{n, m};
  for (size_t i = 0; i < nd; ++i) ys.push_back(out[3 - nd + i]);
  std::vector<double> acc(static_cast<size_t>(shapeNelms(ys)), 0.0);
  const float* px = X.data<float>();
  const float* pw = W.data<float>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ic = 0; ic < c; ++ic) {
      const int64_t g = ic / cg;
      for (int64_t i0 = 0; i0 < in[0]; ++i0) {
        for (int64_t i1 = 0; i1 < in[1]; ++i1) {
          for (int64_t i2 = 0; i2 < in[2]; ++i2) {
            const double xv = px[(((b * c + ic) * in[0] + i0) * in[1] + i1) * in[2] + i2];
            for (int64_t om = 0; om < mg; ++om) {
              const int64_t oc = g * mg + om;
              for (int64_t k0 = 0; k0 < k[0]; ++k0) {
                for (int64_t k1 = 0; k1 < k[1]; ++k1) {
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t o0 = i0 * s[0] - pb[0] + k0 * d[0];
                    const int64_t o1 = i1 * s[1] - pb[1] + k1 * d[1];
                    const int64_t o2 = i2 * s[2] - pb[2] + k2 * d[2];
                    if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1] || o2 < 0 ||
                        o2 >= out[2]) {
                      continue;
                    }
                    const int64_t wi = (((ic * mg + om) * k[0] + k0) * k[1] + k1) * k[2] + k2;
                    acc[static_cast<size_t>((((b * m + oc) * out[0] + o0) * out[1] + o1) * out[2] +
                                            o2)] += xv * pw[wi];
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  HostTensor Y(TensorInfo(DataType::FLOAT, ys));
  const int64_t plane = out[0] * out[1] * out[2];
  for (int64_t i = 0; i < Y.nelms(); ++i) {
    const double bias = B ? B->data<float>()[(i / plane) % m] : 0.0;
    Y.data<float>()[i] = static_cast<float>(acc[static_cast<size_t>(i)] + bias);
  }
  return Y;
}

struct CtCase {
  CtCase(Shape x_, Shape w_, Shape strides_ = {}, Shape pads_ = {}, Shape dilations_ = {},
         Shape outputPadding_ = {}, int64_t group_ = 1, bool bias_ = false,
         std::string autoPad_ = {}, Shape outputShape_ = {}, int opset_ = 13,
         Shape expectPads_ = {}, Shape expectOutputPadding_ = {})
      : x(std::move(x_)),
        w(std::move(w_)),
        strides(std::move(strides_)),
        pads(std::move(pads_)),
        dilations(std::move(dilations_)),
        outputPadding(std::move(outputPadding_)),
        group(group_),
        bias(bias_),
        autoPad(std::move(autoPad_)),
        outputShape(std::move(outputShape_)),
        opset(opset_),
        expectPads(std::move(expectPads_)),
        expectOutputPadding(std::move(expectOutputPadding_)) {}
  Shape x, w;                                     // X [N, C, spatial...], W [C, M/group, k...]
  Shape strides, pads, dilations, outputPadding;  // empty: attribute not set
  int64_t group;
  bool bias;
  std::string autoPad;  // empty: not set
  Shape outputShape;    // empty: not set
  int opset;
  Shape expectPads;  // the pads ONNX's rules give (when auto_pad or output_shape set them)
  Shape expectOutputPadding;
};

Attributes ctAttrs(const CtCase& c) {
  Attributes a;
  if (!c.strides.empty()) a.set("strides", c.strides);
  if (!c.pads.empty()) a.set("pads", c.pads);
  if (!c.dilations.empty()) a.set("dilations", c.dilations);
  if (!c.outputPadding.empty()) a.set("output_padding", c.outputPadding);
  if (c.group != 1) a.set("group", c.group);
  if (!c.autoPad.empty()) a.set("auto_pad", c.autoPad);
  if (!c.outputShape.empty()) a.set("output_shape", c.outputShape);
  return a;
}

std::vector<HostTensor> ctInputs(const CtCase& c, uint64_t seed) {
  std::vector<HostTensor> in{randomTensor(c.x, seed), randomTensor(c.w, seed + 1)};
  if (c.bias) in.push_back(randomTensor({c.w[1] * c.group}, seed + 2));
  return in;
}

BuildFn ctBuild(const CtCase& c) {
  return [c](ir::Graph& g, const std::vector<TensorId>& ids) {
    return addOp(g, "ConvTranspose", ids, ctAttrs(c), 1, ir::kOnnxDomain, c.opset);
  };
}

class ConvTransposeForward : public ::testing::TestWithParam<CtCase> {};

TEST_P(ConvTransposeForward, MatchesNaiveTransposedConvolution) {
  const CtCase& c = GetParam();
  const size_t nd = c.x.size() - 2;
  auto in = ctInputs(c, 1);
  auto out = runForward(ctBuild(c), in);
  const Shape strides = c.strides.empty() ? Shape(nd, 1) : c.strides;
  const Shape dilations = c.dilations.empty() ? Shape(nd, 1) : c.dilations;
  const Shape pads =
      !c.expectPads.empty() ? c.expectPads : (c.pads.empty() ? Shape(2 * nd, 0) : c.pads);
  const Shape outputPadding = !c.expectOutputPadding.empty() ? c.expectOutputPadding
                              : c.outputPadding.empty()      ? Shape(nd, 0)
                                                             : c.outputPadding;
  const HostTensor expected = refConvTranspose(in[0], in[1], c.bias ? &in[2] : nullptr, strides,
                                               pads, dilations, outputPadding, c.group);
  if (!c.outputShape.empty()) {
    const Shape spatial(out[0].shape().begin() + 2, out[0].shape().end());
    EXPECT_EQ(spatial, Shape(c.outputShape.end() - static_cast<int64_t>(nd), c.outputShape.end()));
  }
  EXPECT_TRUE(allClose(out[0], expected, 1e-4, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConvTransposeForward,
    ::testing::Values(
        CtCase{{1, 1, 3, 3}, {1, 1, 3, 3}},
        // nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1): the U-Net upsampler
        CtCase{{2, 4, 5, 6}, {4, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, {1, 1}, 1, true},
        CtCase{{1, 2, 4, 4}, {2, 5, 2, 2}, {2, 2}, {}, {}, {}, 1, true},
        CtCase{{2, 6, 3, 4}, {6, 2, 3, 2}, {2, 1}, {0, 1, 1, 0}, {}, {1, 0}, 3, true},  // groups
        CtCase{{1, 4, 3, 3}, {4, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, {}, 4, false},     // depthwise
        CtCase{{1, 2, 4, 3}, {2, 3, 3, 2}, {1, 2}, {2, 0, 1, 1}, {2, 3}, {0, 1}, 1, true},
        CtCase{{2, 3, 6}, {3, 2, 4}, {3}, {1, 2}, {}, {2}, 1, true},  // 1-D
        CtCase{{1, 2, 2, 3, 3},
               {2, 3, 2, 3, 2},
               {2, 1, 2},
               {1, 0, 0, 0, 1, 1},
               {},
               {1, 0, 0},
               1,
               true},  // 3-D
        CtCase{{1, 2, 3, 3},
               {2, 2, 3, 3},
               {2, 2},
               {},
               {},
               {},
               1,
               false,
               "SAME_UPPER",
               {},
               13,
               {0, 0, 1, 1}},
        CtCase{{1, 2, 3, 3},
               {2, 2, 3, 3},
               {2, 2},
               {},
               {},
               {},
               1,
               false,
               "SAME_LOWER",
               {},
               13,
               {1, 1, 0, 0}},
        // opsets before 11 split an odd total padding the other way round
        CtCase{{1, 2, 3, 3},
               {2, 2, 3, 3},
               {2, 2},
               {},
               {},
               {},
               1,
               false,
               "SAME_UPPER",
               {},
               9,
               {1, 1, 0, 0}},
        CtCase{{1, 2, 3, 3},
               {2, 2, 3, 3},
               {2, 2},
               {},
               {},
               {},
               1,
               false,
               "SAME_LOWER",
               {},
               9,
               {0, 0, 1, 1}},
        CtCase{{1, 2, 3, 3},
               {2, 2, 3, 3},
               {2, 2},
               {5, 5, 5, 5},
               {},
               {},
               1,
               true,
               "VALID",
               {},
               13,
               {0, 0, 0, 0}},
        // output_shape overrides pads: total padding 7 - 6 = 1 and 7 - 4 = 3
        CtCase{{1, 2, 3, 3},
               {2, 2, 3, 3},
               {2, 2},
               {3, 3, 3, 3},
               {},
               {},
               1,
               true,
               "",
               {6, 4},
               13,
               {1, 2, 0, 1}},
        CtCase{{1, 2, 3, 3},
               {2, 2, 3, 3},
               {2, 2},
               {},
               {},
               {},
               1,
               true,
               "",
               {1, 3, 6, 4},
               9,
               {0, 1, 1, 2}},
        // output_shape larger than the kernel reaches: the extra row is bias only
        CtCase{{1, 2, 3, 3},
               {2, 2, 3, 3},
               {2, 2},
               {},
               {},
               {},
               1,
               true,
               "",
               {8, 7},
               13,
               {0, 0, 0, 0},
               {1, 0}},
        CtCase{{0, 2, 3, 3}, {2, 2, 3, 3}}));  // empty batch

// FLOAT16 runs promoted: computed in FLOAT, stored as FLOAT16.
TEST(ConvTransposeForward, Float16) {
  const CtCase c{{1, 2, 3, 3}, {2, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, {1, 1}, 1, true};
  std::vector<HostTensor> in = ctInputs(c, 12);
  for (auto& t : in) t = t.castTo(DataType::FLOAT16);
  auto out = runForward(ctBuild(c), in);
  ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
  const HostTensor b = in[2].castTo(DataType::FLOAT);
  EXPECT_TRUE(
      allClose(out[0].castTo(DataType::FLOAT),
               refConvTranspose(in[0].castTo(DataType::FLOAT), in[1].castTo(DataType::FLOAT), &b,
                                {2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1),
               5e-3, 5e-3));
}

class ConvTransposeGrad : public ::testing::TestWithParam<CtCase> {};

TEST_P(ConvTransposeGrad, MatchesFiniteDifferences) {
  const CtCase& c = GetParam();
  expectGradientsMatch(ctBuild(c), ctInputs(c, 5));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConvTransposeGrad,
    ::testing::Values(
        CtCase{{1, 2, 3, 3}, {2, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, {1, 1}, 1, true},
        CtCase{{2, 4, 3, 2}, {4, 1, 2, 3}, {1, 2}, {0, 1, 1, 0}, {2, 1}, {0, 1}, 2, true},
        CtCase{{1, 3, 3, 3}, {3, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, {}, 3, false},
        CtCase{{2, 2, 4}, {2, 3, 3}, {2}, {1, 0}, {}, {1}, 1, true},
        CtCase{{1, 2, 2, 2, 3}, {2, 2, 2, 2, 2}, {2, 1, 2}, {}, {}, {}, 1, true},
        CtCase{{1, 2, 3, 3}, {2, 2, 3, 3}, {2, 2}, {}, {}, {}, 1, true, "SAME_LOWER"}));

TEST(ConvTransposeGrad, OnlyBiasOrOnlyWeights) {
  CtCase c{{1, 2, 3, 3}, {2, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, {1, 1}, 1, true};
  GradCheckOptions opts;
  opts.wrt = {2};
  expectGradientsMatch(ctBuild(c), ctInputs(c, 9), opts);
  opts.wrt = {1};
  expectGradientsMatch(ctBuild(c), ctInputs(c, 10), opts);
}

TEST(ConvTransposeCanonical, ResolvesAutoPadAndOutputShape) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {1, 2, 3, 3}), ir::TensorKind::Stream);
  g.addTensor("w", TensorInfo(DataType::FLOAT, {2, 4, 3, 3}), ir::TensorKind::Stream);
  const TensorId y = addOp(g, "ConvTranspose", {"x", "w"},
                           attrs({{"strides", Shape{2, 2}}, {"output_shape", Shape{6, 6}}}))[0];
  const ir::Op& op = g.op(g.tensor(y).producer);
  EXPECT_FALSE(op.attrs.has("output_shape"));
  EXPECT_FALSE(op.attrs.has("auto_pad"));
  EXPECT_EQ(op.attrs.getInts("pads"), (Shape{1, 1, 0, 0}));
  EXPECT_EQ(op.attrs.getInts("output_padding"), (Shape{0, 0}));
  EXPECT_EQ(op.attrs.getInts("kernel_shape"), (Shape{3, 3}));
  EXPECT_EQ(op.attrs.getInt("group"), 1);
  EXPECT_EQ(g.tensor(y).info.shape(), (Shape{1, 4, 6, 6}));
}

void expectCtError(const CtCase& c, const std::vector<std::string>& parts) {
  expectError([&] { runForward(ctBuild(c), ctInputs(c, 1)); }, parts);
}

TEST(ConvTransposeErrors, BadShapesAndAttributes) {
  expectCtError({{1, 3, 4, 4}, {2, 2, 3, 3}}, {"ConvTranspose", "channel mismatch", "[2,2,3,3]"});
  expectCtError({{1, 3, 4, 4}, {3, 2, 3, 3}, {}, {}, {}, {}, 2},
                {"ConvTranspose", "group 2", "[1,3,4,4]"});
  expectCtError({{1, 2, 4, 4}, {2, 2, 3}}, {"ConvTranspose", "rank", "[2,2,3]"});
  expectCtError({{1, 2}, {2, 2}}, {"ConvTranspose", "1 to 3 spatial dimensions"});
  expectCtError({{1, 2, 2, 2, 2, 2}, {2, 2, 1, 1, 1, 1}},
                {"ConvTranspose", "1 to 3 spatial dimensions"});
  expectCtError({{1, 2, 4, 4}, {2, 2, 3, 3}, {2, 2}, {}, {}, {2, 0}},
                {"ConvTranspose", "output_padding [2,0]", "less than strides [2,2]"});
  expectCtError({{1, 2, 4, 4}, {2, 2, 3, 3}, {}, {}, {}, {}, 1, false, "SAME"},
                {"ConvTranspose", "auto_pad 'SAME'"});
  expectCtError({{1, 2, 4, 4}, {2, 2, 3, 3}, {}, {}, {}, {}, 1, false, "", {5, 5, 5}},
                {"ConvTranspose", "output_shape [5,5,5]", "2 values"});
  expectCtError({{1, 2, 2, 2}, {2, 2, 3, 3}, {}, {3, 3, 3, 3}},
                {"ConvTranspose", "remove the whole output"});
  expectCtError({{1, 2, 4, 4}, {2, 2, 3, 3}, {0, 1}}, {"ConvTranspose", "strides [0,1]"});
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, const std::vector<TensorId>& ids) {
              return addOp(g, "ConvTranspose", ids);
            },
            {randomTensor({1, 2, 4, 4}, 1), randomTensor({2, 3, 3, 3}, 2), randomTensor({2}, 3)});
      },
      {"ConvTranspose", "bias B [2]", "[3]"});
}

}  // namespace
}  // namespace xtrain::testing
