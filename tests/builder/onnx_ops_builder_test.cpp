// The Builder's further ai.onnx methods (src/ir/builder/opsets_more.cpp): each model runs in an
// InferenceSession and matches a naive reference written here; the differentiable ops also take
// one SGD step (learning rate 1) whose weight change matches a central finite difference of the
// reference: unary, binary, reduction and index ops (onnx_ops_forms_test.cpp has the rest).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "builder/onnx_ops_testing.hpp"
#include "testing/error_testing.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/session.hpp"

namespace xtrain {
namespace {

using namespace xtrain::testing;  // NOLINT: the helpers of onnx_ops_testing.hpp

struct UnaryCase {
  const char* name;
  std::function<TensorId(AiOnnxOpset14&, const TensorId&)> op;
  std::function<double(double)> ref;
};

// Every unary method: forward on [2, 5] and its gradient (zero for ceil, floor and sign).
TEST(BuilderOnnxOps, UnaryMatchReferencesAndGradients) {
  using O = AiOnnxOpset14;
  const std::vector<UnaryCase> cases = {
      {"ceil", [](O& o, const TensorId& x) { return o.ceil({x}); },
       [](double x) { return std::ceil(x); }},
      {"floor", [](O& o, const TensorId& x) { return o.floor({x}); },
       [](double x) { return std::floor(x); }},
      {"cos", [](O& o, const TensorId& x) { return o.cos({x}); },
       [](double x) { return std::cos(x); }},
      {"sin", [](O& o, const TensorId& x) { return o.sin({x}); },
       [](double x) { return std::sin(x); }},
      {"erf", [](O& o, const TensorId& x) { return o.erf({x}); },
       [](double x) { return std::erf(x); }},
      {"reciprocal", [](O& o, const TensorId& x) { return o.reciprocal({x}); },
       [](double x) { return 1 / x; }},
      {"sign", [](O& o, const TensorId& x) { return o.sign({x}); },
       [](double x) { return x > 0 ? 1.0 : -1.0; }},
      {"softplus", [](O& o, const TensorId& x) { return o.softplus({x}); },
       [](double x) { return std::log1p(std::exp(x)); }},
      {"softsign", [](O& o, const TensorId& x) { return o.softsign({x}); },
       [](double x) { return x / (1 + std::abs(x)); }},
      {"elu", [](O& o, const TensorId& x) { return o.elu({x}, 0.5f); },
       [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }},
      {"leakyrelu", [](O& o, const TensorId& x) { return o.leakyrelu({x}); },
       [](double x) { return x > 0 ? x : 0.01 * x; }},
      {"selu", [](O& o, const TensorId& x) { return o.selu({x}); },
       [](double x) { return 1.0507 * (x > 0 ? x : 1.67326 * std::expm1(x)); }},
      {"hardsigmoid", [](O& o, const TensorId& x) { return o.hardsigmoid({x}); },
       [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }},
      {"celu", [](O& o, const TensorId& x) { return o.celu({x}, 2.0f); },
       [](double x) { return std::max(0.0, x) + std::min(0.0, 2 * std::expm1(x / 2)); }},
      {"hardswish", [](O& o, const TensorId& x) { return o.hardswish({x}); },
       [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }},
  };
  const Shape shape{2, 5};
  const std::vector<float> x0 = randomFloats(10, 1, -4.0f, 4.0f);
  for (const auto& c : cases) {
    auto b = Builder::create();
    O o = b->aiOnnxOpset14();
    const TensorId x = b->addInputTensor(TensorInfo("FLOAT", shape), "x");
    const TensorId y = c.op(o, x);
    EXPECT_EQ(b->getTensorShape(y), shape) << c.name;
    const auto out = run(*b, {y}, {{x, {shape, x0}}});
    expectNear(out[0], mapValues(toDoubles(x0), c.ref), 1e-5, c.name);
    expectGradient<O>(
        &Builder::aiOnnxOpset14, shape, x0,
        [&](Builder&, O& o2, const TensorId& w) { return c.op(o2, w); },
        [&](const Values& v) { return mapValues(v, c.ref); }, c.name);
  }
}

// The comparisons and logical ops (BOOL outputs), max/min, prelu, where, clip and mod.
TEST(BuilderOnnxOps, BinaryMatchReferences) {
  auto b = Builder::create();
  auto o = b->aiOnnxOpset12();
  const Shape shape{4};
  const std::vector<float> xv = {1.0f, -2.0f, 3.0f, 0.5f}, yv = {1.0f, 2.0f, -3.0f, 4.0f};
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", shape), "x");
  const TensorId y = b->addInputTensor(TensorInfo("FLOAT", shape), "y");
  const TensorId p = o.greater({x, o.constant(ConstVoidData::fromVector<float>({}, {0.0f}))});
  const TensorId q = o.less({y, o.constant(ConstVoidData::fromVector<float>({}, {2.5f}))});
  const TensorId lo = o.constant(ConstVoidData::fromVector<float>({}, {-1.0f}));
  const TensorId hi = o.constant(ConstVoidData::fromVector<float>({}, {2.0f}));
  const TensorId slope = o.constant(ConstVoidData::fromVector<float>({1}, {0.25f}));
  const std::vector<TensorId> outs = {
      o.equal({x, y}),       o.greater({x, y}),     o.less({x, y}),       o.greaterorequal({x, y}),
      o.lessorequal({x, y}), o.logical_and({p, q}), o.logical_or({p, q}), o.logical_xor({p, q}),
      o.logical_not({p}),    o.max({x, y, lo}),     o.min({x, y}),        o.prelu({x, slope}),
      o.where({p, x, y}),    o.clip({x, lo, hi}),   o.clip({x, "", hi}),  o.mod({x, hi}, 1)};
  const auto r = run(*b, outs, {{x, {shape, xv}}, {y, {shape, yv}}});
  std::vector<Values> want(outs.size());
  for (size_t i = 0; i < 4; ++i) {
    const double a = xv[i], c = yv[i];
    const bool pa = a > 0, qc = c < 2.5;
    const Values row = {
        a == c ? 1.0 : 0.0, a > c ? 1.0 : 0.0,        a < c ? 1.0 : 0.0,    a >= c ? 1.0 : 0.0,
        a <= c ? 1.0 : 0.0, pa && qc ? 1.0 : 0.0,     pa || qc ? 1.0 : 0.0, pa != qc ? 1.0 : 0.0,
        pa ? 0.0 : 1.0,     std::max({a, c, -1.0}),   std::min(a, c),       a > 0 ? a : 0.25 * a,
        pa ? a : c,         std::clamp(a, -1.0, 2.0), std::min(a, 2.0),     std::fmod(a, 2.0)};
    for (size_t k = 0; k < row.size(); ++k) want[k].push_back(row[k]);
  }
  for (size_t k = 0; k < outs.size(); ++k) expectNear(r[k], want[k], 1e-6, outs[k]);

  auto bi = Builder::create();
  auto oi = bi->aiOnnxOpset11();
  const TensorId m = oi.mod({oi.constant(ConstVoidData::fromVector<int64_t>({3}, {7, -7, 7})),
                             oi.constant(ConstVoidData::fromVector<int64_t>({3}, {3, 3, -3}))});
  expectNear(run(*bi, {m})[0], {1, 2, -2}, 0, "integer mod: the divisor's sign");
}

// Reductions over axis 1 of a [2, 3, 4] (keepdims 1) and over everything (keepdims 0).
TEST(BuilderOnnxOps, ReductionsMatchReferences) {
  using O = AiOnnxOpset17;
  using Reduce =
      TensorId (AiOnnxOpset11::*)(const std::vector<TensorId>&, std::optional<std::vector<int64_t>>,
                                  int64_t, const std::string&);
  struct Case {
    const char* name;
    Reduce method;
    double init;
    std::function<double(double, double)> step;
    std::function<double(double)> finish;
  };
  const auto id = [](double v) { return v; };
  const std::vector<Case> cases = {
      {"reducel1", &O::reducel1, 0, [](double a, double v) { return a + std::abs(v); }, id},
      {"reducel2", &O::reducel2, 0, [](double a, double v) { return a + v * v; },
       [](double a) { return std::sqrt(a); }},
      {"reducelogsumexp", &O::reducelogsumexp, 0,
       [](double a, double v) { return a + std::exp(v); }, [](double a) { return std::log(a); }},
      {"reducemax", &O::reducemax, -1e9, [](double a, double v) { return std::max(a, v); }, id},
      {"reducemin", &O::reducemin, 1e9, [](double a, double v) { return std::min(a, v); }, id},
      {"reduceprod", &O::reduceprod, 1, [](double a, double v) { return a * v; }, id},
      {"reducesumsquare", &O::reducesumsquare, 0, [](double a, double v) { return a + v * v; },
       id}};
  const Shape shape{2, 3, 4};
  // Distinct values in [0.5, 1.5): a tie would make max/min's gradient a matter of convention.
  std::vector<float> x0(24);
  for (size_t i = 0; i < x0.size(); ++i) x0[i] = 0.5f + 0.04f * static_cast<float>((i * 7) % 24);
  for (const auto& c : cases) {
    const RefFn overAxis1 = [&](const Values& v) {
      Values out(8, c.init);
      for (size_t i = 0; i < 2; ++i) {
        for (size_t j = 0; j < 3; ++j) {
          for (size_t k = 0; k < 4; ++k)
            out[i * 4 + k] = c.step(out[i * 4 + k], v[(i * 3 + j) * 4 + k]);
        }
      }
      return mapValues(out, c.finish);
    };
    double all = c.init;
    for (float v : x0) all = c.step(all, v);
    auto b = Builder::create();
    O o = b->aiOnnxOpset17();
    const TensorId x = b->addInputTensor(TensorInfo("FLOAT", shape), "x");
    const TensorId r1 = (o.*c.method)({x}, std::vector<int64_t>{-2}, 1, "");
    const TensorId r2 = (o.*c.method)({x}, {}, 0, "");
    // axes given but empty (PopART's form): no axis reduced, elementwise.
    const TensorId r3 = (o.*c.method)({x}, std::vector<int64_t>{}, 0, "");
    EXPECT_EQ(b->getTensorShape(r3), shape) << c.name;
    EXPECT_EQ(b->getTensorShape(r1), (Shape{2, 1, 4})) << c.name;
    EXPECT_EQ(b->getTensorShape(r2), Shape{}) << c.name;
    const auto out = run(*b, {r1, r2, r3}, {{x, {shape, x0}}});
    expectNear(out[0], overAxis1(toDoubles(x0)), 1e-5, c.name);
    expectNear(out[1], {c.finish(all)}, 1e-5, c.name);
    expectNear(out[2],
               mapValues(toDoubles(x0), [&](double v) { return c.finish(c.step(c.init, v)); }),
               1e-5, c.name);
    expectGradient<O>(
        &Builder::aiOnnxOpset17, shape, x0,
        [&](Builder&, O& o2, const TensorId& w) {
          return (o2.*c.method)({w}, std::vector<int64_t>{1}, 1, "");
        },
        overAxis1, c.name);
  }
}

// Index ops: argmax/argmin, cumsum, topk, onehot, the gathers and the scatters.
TEST(BuilderOnnxOps, IndexOpsMatchReferences) {
  using O = AiOnnxOpset11;
  const Shape shape{2, 3};
  const std::vector<float> x0 = {0.5f, -1.0f, 2.0f, 3.0f, 0.25f, -0.5f};
  auto i64 = [](O& o, const Shape& s, std::vector<int64_t> v) {
    return o.constant(ConstVoidData::fromVector<int64_t>(s, v));
  };
  auto b = Builder::create();
  O o = b->aiOnnxOpset11();
  const TensorId x = b->addInputTensor(TensorInfo("FLOAT", shape), "x");
  const TensorId upd = o.constant(ConstVoidData::fromVector<float>({1, 3}, {7, 8, 9}));
  const auto topk = o.topk({x, i64(o, {1}, {2})}, 1);
  const std::vector<TensorId> outs = {
      o.argmax({x}, 1, 0),
      o.argmin({x}),
      o.cumsum({x, i64(o, {}, {1})}, 1, 1),
      topk[0],
      topk[1],
      o.onehot({i64(o, {2}, {2, 0}), i64(o, {}, {3}),
                o.constant(ConstVoidData::fromVector<float>({2}, {0, 5}))}),
      o.gatherelements({x, i64(o, {1, 3}, {1, 0, 1})}),
      o.gathernd({x, i64(o, {2, 2}, {1, 2, 0, 1})}),
      o.scatter({x, i64(o, {1, 3}, {1, 0, 1}), upd}),
      o.scatterelements({x, i64(o, {1, 3}, {0, 1, 0}), upd}, 0),
      o.scatternd({x, i64(o, {1, 1}, {0}), upd})};
  const auto r = run(*b, outs, {{x, {shape, x0}}});
  const std::vector<Values> want = {{2, 0},
                                    {0, 0, 1},
                                    {1.0, 2.0, 0.0, -0.25, -0.5, 0.0},  // exclusive, reverse
                                    {2.0, 0.5, 3.0, 0.25},
                                    {2, 0, 0, 1},
                                    {0, 0, 5, 5, 0, 0},
                                    {3.0, -1.0, -0.5},
                                    {-0.5, -1.0},
                                    {0.5, 8, 2.0, 7, 0.25, 9},
                                    {7, -1.0, 9, 3.0, 8, -0.5},
                                    {7, 8, 9, 3.0, 0.25, -0.5}};
  for (size_t k = 0; k < outs.size(); ++k) expectNear(r[k], want[k], 1e-6, outs[k]);

  expectGradient<O>(
      &Builder::aiOnnxOpset11, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.topk({w, i64(o2, {1}, {2})}, 1)[0];
      },
      [](const Values& v) {
        Values out;
        for (size_t i = 0; i < 2; ++i) {
          Values row(v.begin() + static_cast<long>(i * 3),
                     v.begin() + static_cast<long>(i * 3 + 3));
          std::sort(row.rbegin(), row.rend());
          out.insert(out.end(), row.begin(), row.begin() + 2);
        }
        return out;
      },
      "topk");
  expectGradient<O>(
      &Builder::aiOnnxOpset11, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.cumsum({w, i64(o2, {}, {1})});
      },
      [](const Values& v) {
        return Values{v[0], v[0] + v[1], v[0] + v[1] + v[2], v[3], v[3] + v[4], v[3] + v[4] + v[5]};
      },
      "cumsum");
  expectGradient<O>(
      &Builder::aiOnnxOpset11, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.gatherelements({w, i64(o2, {1, 3}, {1, 0, 1})});
      },
      [](const Values& v) {
        return Values{v[3], v[1], v[5]};
      },
      "gatherelements");
  expectGradient<O>(
      &Builder::aiOnnxOpset11, shape, x0,
      [&](Builder&, O& o2, const TensorId& w) {
        return o2.scatternd({w, i64(o2, {1, 1}, {0}),
                             o2.constant(ConstVoidData::fromVector<float>({1, 3}, {7, 8, 9}))});
      },
      [](const Values& v) { return Values{7, 8, 9, v[3], v[4], v[5]}; }, "scatternd");
}

}  // namespace
}  // namespace xtrain
