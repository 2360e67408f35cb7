// The Builder's further ai.onnx methods, continued: shape ops, layers and recurrent ops against
// naive references (with gradients), the node forms written (deprecated Scatter and Upsample,
// attributes by opset), the opset versions, and the errors for bad arity and attributes.
#include <gtest/gtest.h>

#include <cmath>

#include "builder/onnx_ops_testing.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"
#include "testing/error_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain {
namespace {

using namespace xtrain::testing;  // NOLINT: the helpers of onnx_ops_testing.hpp

TensorId i64(AiOnnxOpset11& o, const Shape& s, const std::vector<int64_t>& v) {
  return o.constant(ConstVoidData::fromVector<int64_t>(s, v));
}
TensorId f32(AiOnnxOpset11& o, const Shape& s, const std::vector<float>& v) {
  return o.constant(ConstVoidData::fromVector<float>(s, v));
}

// shape, size, expand, tile, range, constantofshape, pad, trilu, castlike, Shape-15's start/end.
TEST(BuilderOnnxOps, ShapeOpsMatchReferences) {
  using O = AiOnnxOpset15;
  const Shape shape{2, 3};
  const std::vector<float> x0 = {0.5f, -1.0f, 2.0f, 3.0f, 0.25f, -2.5f};
  auto b = Builder::create();
  O o = b->aiOnnxOpset15();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", shape), "x");
  const std::vector<TensorId> outs = {
      o.shape({x}),
      o.shape({x}, -1),
      o.size({x}),
      o.expand({f32(o, {2, 1}, {1, 2}), i64(o, {2}, {2, 2})}),
      o.tile({x, i64(o, {2}, {1, 2})}),
      o.range({f32(o, {}, {1}), f32(o, {}, {2}), f32(o, {}, {0.25f})}),
      o.constantofshape({i64(o, {2}, {1, 2})}, ConstVoidData::fromVector<float>({1}, {4.5f})),
      o.pad({x, i64(o, {4}, {0, 1, 0, 0}), f32(o, {}, {9})}),
      o.pad({x, i64(o, {4}, {0, 0, 0, 2})}, "reflect"),
      o.pad({x, i64(o, {4}, {0, 2, 0, 0})}, "edge"),
      o.trilu({x}),
      o.trilu({x, i64(o, {}, {-1})}, 0),
      o.castlike({x, i64(o, {1}, {0})})};
  const auto r = run(*b, outs, {{x, {shape, x0}}});
  const std::vector<Values> want = {{2, 3},
                                    {3},
                                    {6},
                                    {1, 1, 2, 2},
                                    {0.5, -1, 2, 0.5, -1, 2, 3, 0.25, -2.5, 3, 0.25, -2.5},
                                    {1, 1.25, 1.5, 1.75},
                                    {4.5, 4.5},
                                    {9, 0.5, -1, 2, 9, 3, 0.25, -2.5},
                                    {0.5, -1, 2, -1, 0.5, 3, 0.25, -2.5, 0.25, 3},
                                    {0.5, 0.5, 0.5, -1, 2, 3, 3, 3, 0.25, -2.5},
                                    {0.5, -1, 2, 0, 0.25, -2.5},
                                    {0, 0, 0, 3, 0, 0},
                                    {0, -1, 2, 3, 0, -2}};
  for (size_t k = 0; k < outs.size(); ++k) expectNear(r[k], want[k], 1e-6, outs[k]);
  EXPECT_EQ(b->getTensorDataType(outs.back()), DataType::INT64);

  expectGradient<O>(
      &Builder::aiOnnxOpset15, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.pad({w, i64(o2, {4}, {0, 0, 0, 2})}, "reflect");
      },
      [](const Values& v) {
        return Values{v[0], v[1], v[2], v[1], v[0], v[3], v[4], v[5], v[4], v[3]};
      },
      "pad reflect");
  expectGradient<O>(
      &Builder::aiOnnxOpset15, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.tile({w, i64(o2, {2}, {2, 1})});
      },
      [](const Values& v) {
        Values out = v;
        out.insert(out.end(), v.begin(), v.end());
        return out;
      },
      "tile");
  expectGradient<O>(
      &Builder::aiOnnxOpset15, {2, 1}, {0.5f, -1.0f},
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.expand({w, i64(o2, {2}, {2, 3})});
      },
      [](const Values& v) { return Values{v[0], v[0], v[0], v[1], v[1], v[1]}; }, "expand");
  expectGradient<O>(
      &Builder::aiOnnxOpset15, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) { return o2.trilu({w}, 0); },
      [](const Values& v) { return Values{v[0], 0, 0, v[3], v[4], 0}; }, "trilu");
}

// resize and upsample (nearest, x2), convtranspose (stride 2), instancenormalization, einsum,
// negativeloglikelihoodloss.
TEST(BuilderOnnxOps, LayersMatchReferences) {
  using O = AiOnnxOpset13;
  const Shape shape{1, 1, 2, 2};
  const std::vector<float> x0 = {1.0f, -2.0f, 0.5f, 3.0f};
  const std::vector<float> scales = {1, 1, 2, 2};
  const RefFn nearest = [](const Values& v) {
    Values out(16);
    for (size_t i = 0; i < 4; ++i) {
      for (size_t j = 0; j < 4; ++j) out[i * 4 + j] = v[(i / 2) * 2 + j / 2];
    }
    return out;
  };
  // ConvTranspose of a [1,1,2,2] by the kernel [1,1,2,2] k, stride 2: each input pixel paints k.
  const std::vector<float> k = {1.0f, 2.0f, -1.0f, 0.5f};
  const RefFn convT = [&](const Values& v) {
    Values out(16);
    for (size_t i = 0; i < 2; ++i) {
      for (size_t j = 0; j < 2; ++j) {
        for (size_t a = 0; a < 2; ++a) {
          for (size_t c = 0; c < 2; ++c)
            out[(2 * i + a) * 4 + 2 * j + c] = v[i * 2 + j] * k[a * 2 + c];
        }
      }
    }
    return out;
  };
  // InstanceNormalization of [1, 2, 2] (two channels of two), scale (2, -1), bias (0.5, 0).
  const RefFn inorm = [](const Values& v) {
    Values out(4);
    const double scale[2] = {2, -1}, bias[2] = {0.5, 0};
    for (size_t c = 0; c < 2; ++c) {
      const double m = (v[2 * c] + v[2 * c + 1]) / 2;
      const double var =
          ((v[2 * c] - m) * (v[2 * c] - m) + (v[2 * c + 1] - m) * (v[2 * c + 1] - m)) / 2;
      for (size_t i = 0; i < 2; ++i)
        out[2 * c + i] = (v[2 * c + i] - m) / std::sqrt(var + 1e-2) * scale[c] + bias[c];
    }
    return out;
  };
  auto b = Builder::create();
  O o = b->aiOnnxOpset13();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", shape), "x");
  const TensorId x3 = o.reshape({x, i64(o, {3}, {1, 2, 2})});
  const TensorId logp = o.reshape({x, i64(o, {2}, {2, 2})});
  const std::vector<TensorId> outs = {
      o.resize({x, "", f32(o, {4}, scales)}),
      o.upsample({x, f32(o, {4}, scales)}),
      o.convtranspose({x, f32(o, shape, k)}, {}, 1, {}, {}, {}, {}, {2, 2}),
      o.instancenormalization({x3, f32(o, {2}, {2, -1}), f32(o, {2}, {0.5f, 0})}, 1e-2f),
      o.einsum({logp}, "ij->ji"),
      o.negativeloglikelihoodloss({logp, i64(o, {2}, {1, 0})}),
      o.negativeloglikelihoodloss({logp, i64(o, {2}, {1, 0})}, 0, "sum")};
  const auto r = run(*b, outs, {{x, {shape, x0}}});
  const Values v = toDoubles(x0);
  expectNear(r[0], nearest(v), 1e-6, "resize");
  expectNear(r[1], nearest(v), 1e-6, "upsample");
  expectNear(r[2], convT(v), 1e-6, "convtranspose");
  expectNear(r[3], inorm(v), 1e-5, "instancenormalization");
  expectNear(r[4], {1.0, 0.5, -2.0, 3.0}, 1e-6, "einsum");
  expectNear(r[5], {(2.0 - 0.5) / 2}, 1e-6, "nll mean");
  expectNear(r[6], {2.0}, 1e-6, "nll sum, ignore_index 0");

  const auto reshape = [&](O& o2, const TensorId& w, std::vector<int64_t> s) {
    return o2.reshape({w, i64(o2, {static_cast<int64_t>(s.size())}, s)});
  };
  expectGradient<O>(
      &Builder::aiOnnxOpset13, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.upsample({w, f32(o2, {4}, scales)});
      },
      nearest, "upsample");
  expectGradient<O>(
      &Builder::aiOnnxOpset13, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.convtranspose({w, f32(o2, shape, k)}, {}, 1, {}, {}, {}, {}, {2, 2});
      },
      convT, "convtranspose");
  expectGradient<O>(
      &Builder::aiOnnxOpset13, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.instancenormalization(
            {reshape(o2, w, {1, 2, 2}), f32(o2, {2}, {2, -1}), f32(o2, {2}, {0.5f, 0})}, 1e-2f);
      },
      inorm, "instancenormalization");
  expectGradient<O>(
      &Builder::aiOnnxOpset13, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.negativeloglikelihoodloss({reshape(o2, w, {2, 2}), i64(o2, {2}, {1, 0})});
      },
      [](const Values& w) { return Values{-(w[1] + w[2]) / 2}; }, "nll");
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// rnn, gru and lstm, one direction, hidden 2, input 1, batch 1, three steps, default activations:
// Y matches the ONNX recurrences written out here, and its gradient with respect to X.
TEST(BuilderOnnxOps, RecurrentMatchReferences) {
  using O = AiOnnxOpset13;
  const Shape shape{3, 1, 1};
  const std::vector<float> x0 = {0.5f, -1.0f, 0.25f};
  for (const int gates : {1, 3, 4}) {
    const char* name = gates == 1 ? "rnn" : gates == 3 ? "gru" : "lstm";
    SCOPED_TRACE(name);
    const size_t hsz = 2, n = gates * hsz;
    const std::vector<float> w = randomFloats(n, 11, -0.8f, 0.8f);
    const std::vector<float> rw = randomFloats(n * hsz, 12, -0.8f, 0.8f);
    const std::vector<float> bias = randomFloats(2 * n, 13, -0.5f, 0.5f);
    const RefFn ref = [&](const Values& xs) {
      Values h(hsz, 0.0), c(hsz, 0.0), y;
      for (double xt : xs) {
        Values g(n);  // X W^T + Wb + H R^T + Rb, per gate row
        for (size_t j = 0; j < n; ++j) {
          g[j] = xt * w[j] + bias[j] + bias[n + j];
          for (size_t m = 0; m < hsz; ++m) g[j] += h[m] * rw[j * hsz + m];
        }
        Values hn(hsz), reset(hsz);
        for (size_t u = 0; u < hsz; ++u) reset[u] = sigmoid(g[hsz + u]);
        for (size_t u = 0; u < hsz; ++u) {
          if (gates == 1) {
            hn[u] = std::tanh(g[u]);
          } else if (gates == 3) {  // z, r, h; linear_before_reset 0
            const double z = sigmoid(g[u]);
            double hh = xt * w[2 * hsz + u] + bias[2 * hsz + u] + bias[n + 2 * hsz + u];
            for (size_t m = 0; m < hsz; ++m) hh += reset[m] * h[m] * rw[(2 * hsz + u) * hsz + m];
            hn[u] = (1 - z) * std::tanh(hh) + z * h[u];
          } else {  // i, o, f, c
            c[u] = sigmoid(g[2 * hsz + u]) * c[u] + sigmoid(g[u]) * std::tanh(g[3 * hsz + u]);
            hn[u] = sigmoid(g[hsz + u]) * std::tanh(c[u]);
          }
        }
        h = hn;
        y.insert(y.end(), h.begin(), h.end());
      }
      return y;
    };
    const auto build = [&](O& o, const TensorId& xt) {
      const int64_t rows = static_cast<int64_t>(n);
      const std::vector<TensorId> args = {xt, f32(o, {1, rows, 1}, w), f32(o, {1, rows, 2}, rw),
                                          f32(o, {1, 2 * rows}, bias)};
      if (gates == 1) return o.rnn(args, 2, {}, {}, {}, std::nullopt, "forward", 2);
      if (gates == 3) return o.gru(args, 2, {}, {}, {}, std::nullopt, "forward", 2);
      return o.lstm(args, 3, {}, {}, {}, std::nullopt, "forward", 2);
    };
    auto b = Builder::create();
    O o = b->aiOnnxOpset13();
    const TensorId x = b->addInputTensor(TensorInfo("FLOAT", shape), "x");
    const auto outs = build(o, x);
    EXPECT_EQ(b->getTensorShape(outs[0]), (Shape{3, 1, 1, 2}));
    const auto r = run(*b, outs, {{x, {shape, x0}}});
    const Values y = ref(toDoubles(x0));
    expectNear(r[0], y, 1e-5, "Y");
    expectNear(r[1], Values(y.end() - 2, y.end()), 1e-5, "Y_h");
    expectGradient<O>(
        &Builder::aiOnnxOpset13, shape, x0,
        [&](Builder&, O& o2, const TensorId& xt) { return build(o2, xt)[0]; }, ref, name);
  }
}

onnx::ModelProto parse(Builder& b) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(b.getModelProto()));
  return m;
}

const onnx::NodeProto& nodeOf(const onnx::ModelProto& m, const TensorId& out) {
  for (const auto& n : m.graph().node()) {
    for (const auto& o : n.output()) {
      if (o == out) return n;
    }
  }
  throw error("no node makes {}", out);
}

std::vector<std::string> attrNames(const onnx::NodeProto& n) {
  std::vector<std::string> names;
  for (const auto& a : n.attribute()) names.push_back(a.name());
  return names;
}

// Deprecated Scatter and Upsample become ScatterElements and Resize; reductions keep axes an
// attribute to 17; optional attributes are left out; ConstantOfShape's value is a [1] tensor.
TEST(BuilderOnnxOps, NodeForms) {
  auto b = Builder::create();
  auto o = b->aiOnnxOpset17();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", {1, 1, 2, 2}), "x");
  const TensorId sc = o.scatter({x, i64(o, {1, 1, 2, 2}, {0, 0, 1, 1}), x}, 2);
  const TensorId up = o.upsample({x, f32(o, {4}, {1, 1, 2, 2})}, "linear");
  const TensorId rm = o.reducemax({x}, std::vector<int64_t>{1, 2}, 0);
  const TensorId cs =
      o.constantofshape({i64(o, {1}, {3})}, ConstVoidData::fromVector<int32_t>({}, {4}));
  const auto lstm = o.lstm(
      {o.reshape({x, i64(o, {3}, {2, 1, 2})}), f32(o, {1, 4, 2}, std::vector<float>(8, 0.1f)),
       f32(o, {1, 4, 1}, std::vector<float>(4, 0.1f))},
      1);
  const TensorId sh = o.shape({x}, 1, 3);
  const auto m = parse(*b);
  EXPECT_EQ(nodeOf(m, sc).op_type(), "ScatterElements");
  const auto& u = nodeOf(m, up);
  EXPECT_EQ(u.op_type(), "Resize");
  EXPECT_EQ(u.input_size(), 3);
  EXPECT_EQ(attrNames(u),
            (std::vector<std::string>{"coordinate_transformation_mode", "mode", "nearest_mode"}));
  EXPECT_EQ(nodeOf(m, rm).input_size(), 1);
  EXPECT_EQ(attrNames(nodeOf(m, rm)), (std::vector<std::string>{"axes", "keepdims"}));
  EXPECT_EQ(b->getTensorShape(rm), (Shape{1, 2}));
  EXPECT_EQ(b->getTensorDataType(cs), DataType::INT32);
  EXPECT_EQ(nodeOf(m, cs).attribute(0).t().dims_size(), 1);
  EXPECT_EQ(attrNames(nodeOf(m, lstm[0])),
            (std::vector<std::string>{"input_forget"}));  // PopART's: only what is not a default
  EXPECT_EQ(b->getTensorShape(lstm[0]), (Shape{2, 1, 1, 1}));
  EXPECT_EQ(b->getTensorShape(sh), (Shape{2}));
  b->addOutputTensor(up);
  const auto r = run(*b, {sc, cs, sh}, {{x, {{1, 1, 2, 2}, {1, 2, 3, 4}}}});
  expectNear(r[0], {1, 2, 3, 4}, 0, "scatter of x onto itself");
  expectNear(r[1], {4, 4, 4}, 0, "constantofshape INT32");
  expectNear(r[2], {1, 2}, 0, "shape 1..3");
}

// Each aiOnnxOpsetN() gives an object whose getOpsetVersion() is N and a model importing opset N;
// the methods of later opsets exist from their version on.
TEST(BuilderOnnxOps, OpsetVersionsAgree) {
  const auto check = [](auto get, int v) {
    auto b = Builder::create();
    auto o = ((*b).*get)();
    EXPECT_EQ(o.getOpsetVersion(), v);
    const auto m = parse(*b);
    EXPECT_EQ(ir::onnxutil::onnxOpsetOf(m), v);
  };
  check(&Builder::aiOnnxOpset11, 11);
  check(&Builder::aiOnnxOpset12, 12);
  check(&Builder::aiOnnxOpset13, 13);
  check(&Builder::aiOnnxOpset14, 14);
  check(&Builder::aiOnnxOpset15, 15);
  check(&Builder::aiOnnxOpset16, 16);
  check(&Builder::aiOnnxOpset17, 17);
  auto b = Builder::create();
  EXPECT_EQ(b->aiGraphcoreOpset1().getOpsetVersion(), 1);
}

TEST(BuilderOnnxOps, BadArityAndAttributes) {
  auto b = Builder::create();
  auto o = b->aiOnnxOpset15();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", {2, 3}), "x");
  expectError([&] { o.sin({x, x}); }, {"sin takes 1 input tensors, got 2"});
  expectError([&] { o.where({x, x}); }, {"where takes 3 input tensors, got 2"});
  expectError([&] { o.max({}); }, {"max takes at least 1 input tensors, got 0"});
  expectError([&] { o.topk({x}); }, {"topk takes 2 input tensors, got 1"});
  expectError([&] { o.resize({}); }, {"resize takes 1 to 4 input tensors, got 0"});
  expectError([&] { o.pad({x, x}, "wrap"); }, {"pad: mode 'wrap' is not one of", "reflect"});
  expectError([&] { o.upsample({x, x}, "cubic"); }, {"upsample: mode 'cubic'"});
  expectError(
      [&] {
        o.resize({x, x, x}, "half_pixel", -0.75f, 0, 0, "nearest", "nearest");
      },
      {"nearest_mode 'nearest'"});
  expectError(
      [&] {
        o.lstm({x, x, x}, 4);
      },
      {"lstm has an invalid number of outputs: 4 (it has 1 to 3)"});
  expectError(
      [&] {
        o.gru({x, x, x}, 1, {}, {}, {}, std::nullopt, "up");
      },
      {"gru: direction 'up'"});
  expectError([&] { o.mod({x, x}, 2); }, {"mod: fmod must be 0 or 1, got 2"});
  expectError([&] { o.trilu({x}, -1); }, {"trilu: upper must be 0 or 1"});
  expectError([&] { o.einsum({x}, ""); }, {"einsum needs an equation"});
  expectError(
      [&] {
        o.negativeloglikelihoodloss({x, x}, std::nullopt, "avg");
      },
      {"reduction 'avg'"});
  expectError(
      [&] {
        o.constantofshape({x}, ConstVoidData::fromVector<float>({2}, {1, 2}));
      },
      {"constantofshape", "one element", "[2]"});
  expectError([&] { o.cos({"missing"}); }, {"missing"});
  // Shape inference reports what ONNX refuses (here a Tile without its repeats' rank).
  const TensorId t = o.tile({x, i64(o, {3}, {1, 2, 3})});
  expectError([&] { b->getTensorShape(t); }, {"Tile"});
}

}  // namespace
}  // namespace xtrain
