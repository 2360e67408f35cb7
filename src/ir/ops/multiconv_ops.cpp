// MultiConv (ai.graphcore; PopART's builder.aiGraphcore.multiconv): several independent
// convolutions in one op. On an IPU they are planned together (poplin::multiconv); here each is
// the ONNX Conv it stands for: the kernel runs Conv's kernel once per convolution and the gradient
// is Conv's (ConvGradInput, ConvGradWeight) per convolution.
//
// Canonical form: inputs data_i, weights_i, bias_i (absent: "") for i < numConvs, i.e. 3 numConvs
// slots (the last bias may be trimmed); outputs one per convolution. Attributes: numConvs, and the
// per-convolution lists concatenated in convolution order, always complete: strides and dilations
// (nd_i values each, default 1), pads (2 nd_i each, [begin..., end...], default 0) and group (one
// per convolution, inferred from the shapes as PopART does: data channels / weight channels); nd_i
// is convolution i's number of spatial dimensions (1 to 3). inDilations (all 1) and outPads (all
// 0) are accepted only with those values and then removed: other values are not implemented.
// PopART's planning options are checked and kept, with no effect on a simulator (they choose tile
// mappings and plans on an IPU, not values): planType ("parallel" or "serial"),
// perConvReservedTiles (>= 0), cycleBackOff ([0, 1)), and per convolution __available_memory
// ((0, 1]), __partials_type ("float" or "half", any case) and __enable_conv_dithering (0/1).
#include <algorithm>
#include <cctype>
#include <string>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

size_t numConvsOf(const Op& op) {
  return static_cast<size_t>(op.attrs.getInt("numConvs"));
}

// The spatial dimensions of convolution i (its data's rank - 2), for slicing the attributes.
template <typename RankOf>
std::vector<size_t> spatialDims(size_t n, RankOf rankOf) {
  std::vector<size_t> nd(n);
  for (size_t i = 0; i < n; ++i) nd[i] = rankOf(3 * i) - 2;
  return nd;
}

std::vector<int64_t> sliceInts(const std::vector<int64_t>& all, size_t offset, size_t count) {
  return std::vector<int64_t>(all.begin() + static_cast<std::ptrdiff_t>(offset),
                              all.begin() + static_cast<std::ptrdiff_t>(offset + count));
}

// Convolution i's attributes in Conv's canonical form (see conv_ops.cpp).
Attributes convAttrs(const Attributes& a, const std::vector<size_t>& nd, size_t i,
                     const Shape& weights) {
  size_t off = 0;
  for (size_t k = 0; k < i; ++k) off += nd[k];
  Attributes c;
  c.set("kernel_shape", Shape(weights.begin() + 2, weights.end()));
  c.set("strides", sliceInts(a.getInts("strides"), off, nd[i]));
  c.set("dilations", sliceInts(a.getInts("dilations"), off, nd[i]));
  c.set("pads", sliceInts(a.getInts("pads"), 2 * off, 2 * nd[i]));
  c.set("group", a.getInts("group").at(i));
  return c;
}

void checkOptions(const Op& op, size_t n) {
  const Attributes& a = op.attrs;
  const std::string plan = a.getString("planType", "parallel");
  if (plan != "parallel" && plan != "serial") {
    throw error("{}: planType '{}' is not 'parallel' or 'serial'", op.describe(), plan);
  }
  if (a.getInt("perConvReservedTiles", 0) < 0) {
    throw error("{}: perConvReservedTiles {} is negative", op.describe(),
                a.getInt("perConvReservedTiles"));
  }
  const float backOff = a.getFloat("cycleBackOff", 0.0f);
  if (!(backOff >= 0.0f && backOff < 1.0f)) {
    throw error("{}: cycleBackOff {} is not in [0, 1)", op.describe(), backOff);
  }
  auto checkCount = [&](const char* name, size_t count) {
    if (count != n) {
      throw error("{}: {} has {} values; expected one per convolution ({})", op.describe(), name,
                  count, n);
    }
  };
  if (a.has("__available_memory")) {
    const auto& v = a.getFloats("__available_memory");
    checkCount("availableMemoryProportions", v.size());
    for (float p : v) {
      if (!(p > 0.0f && p <= 1.0f)) {
        throw error("{}: availableMemoryProportion must be in (0,1], got {}", op.describe(), p);
      }
    }
  }
  if (a.has("__partials_type")) {
    const auto& v = a.getStrings("__partials_type");
    checkCount("partialsTypes", v.size());
    for (std::string t : v) {
      std::transform(t.begin(), t.end(), t.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      if (t != "float" && t != "half") {
        throw error("{}: Bad partialsType '{}' (expected 'float' or 'half')", op.describe(), t);
      }
    }
  }
  if (a.has("__enable_conv_dithering")) {
    checkCount("enableConvDithering", a.getInts("__enable_conv_dithering").size());
  }
}

// Fills a per-convolution list attribute (each convolution `per` * nd_i values, default
// `fallback`); refuses a list of the wrong length.
void fillList(Op& op, const char* name, const std::vector<size_t>& nd, size_t per,
              int64_t fallback) {
  size_t total = 0;
  for (size_t d : nd) total += per * d;
  if (!op.attrs.has(name)) {
    op.attrs.set(name, std::vector<int64_t>(total, fallback));
    return;
  }
  const auto& v = op.attrs.getInts(name);
  if (v.size() != total) {
    throw error("{}: {} has {} values; expected {} ({} per spatial dimension of each convolution)",
                op.describe(), name, v.size(), total, per);
  }
}

void canonicalizeMultiConv(Op& op, const Graph& graph) {
  const size_t n = (op.inputs.size() + 2) / 3;
  if (op.attrs.has("numConvs") && static_cast<size_t>(op.attrs.getInt("numConvs")) != n) {
    throw error("{}: numConvs {} does not match the {} inputs (3 per convolution)", op.describe(),
                op.attrs.getInt("numConvs"), op.inputs.size());
  }
  op.attrs.set("numConvs", static_cast<int64_t>(n));
  checkOptions(op, n);
  std::vector<int64_t> groups(n, 1);
  for (size_t i = 0; i < n; ++i) {
    if (!op.hasInput(3 * i) || !op.hasInput(3 * i + 1)) {
      throw error("{}: convolution {} needs data and weights (inputs {} and {})", op.describe(), i,
                  3 * i, 3 * i + 1);
    }
    const Shape& x = graph.tensor(op.inputs[3 * i]).info.shape();
    const Shape& w = graph.tensor(op.inputs[3 * i + 1]).info.shape();
    if (x.size() < 3 || x.size() > 5 || w.size() != x.size()) {
      throw error(
          "{}: convolution {}: data {} must be [N, C, spatial...] with 1 to 3 spatial "
          "dimensions and weights {} of the same rank",
          op.describe(), i, shapeToString(x), shapeToString(w));
    }
    if (w[1] < 1 || x[1] % w[1] != 0) {
      throw error(
          "{}: convolution {}: the data's {} channels ({}) are not a multiple of the "
          "weights' {} input channels ({})",
          op.describe(), i, x[1], shapeToString(x), w[1], shapeToString(w));
    }
    groups[i] = x[1] / w[1];
  }
  const std::vector<size_t> nd =
      spatialDims(n, [&](size_t k) { return graph.tensor(op.inputs[k]).info.shape().size(); });
  fillList(op, "strides", nd, 1, 1);
  fillList(op, "dilations", nd, 1, 1);
  fillList(op, "pads", nd, 2, 0);
  fillList(op, "inDilations", nd, 1, 1);
  fillList(op, "outPads", nd, 2, 0);
  for (const char* name : {"inDilations", "outPads"}) {
    const int64_t neutral = std::string(name) == "inDilations" ? 1 : 0;
    for (int64_t v : op.attrs.getInts(name)) {
      if (v != neutral) {
        throw error("{}: {} other than {} are not implemented in xtrain", op.describe(), name,
                    neutral);
      }
    }
    op.attrs.erase(name);
  }
  op.attrs.set("group", groups);
}

}  // namespace

XT_REGISTER_OP([] {
  OpDef d{.type = "MultiConv",
          .domain = kGraphcoreDomain,
          .minInputs = 2,
          .maxInputs = -1,
          .minOutputs = 1,
          .maxOutputs = -1};
  d.canonicalize = canonicalizeMultiConv;
  d.infer = [](const ShapeContext& ctx) {
    const size_t n = numConvsOf(ctx.op());
    const auto nd =
        spatialDims(n, [&](size_t k) { return static_cast<size_t>(ctx.input(k).rank()); });
    std::vector<TensorInfo> out;
    for (size_t i = 0; i < n; ++i) {
      ctx.requireFloatOrHalf(3 * i, "data");
      ctx.requireFloatOrHalf(3 * i + 1, "weights");
      const Shape& x = ctx.input(3 * i).shape();
      const Shape& w = ctx.input(3 * i + 1).shape();
      const Attributes c = convAttrs(ctx.attrs(), nd, i, w);
      const int64_t group = c.getInt("group");
      if (w[0] % group != 0) {
        ctx.fail("convolution {}: group {} (data {}, weights {}) does not divide the {} outputs", i,
                 group, shapeToString(x), shapeToString(w), w[0]);
      }
      Shape y{x[0], w[0]};
      for (size_t k = 0; k < nd[i]; ++k) {
        const int64_t s = c.getInts("strides")[k], dl = c.getInts("dilations")[k];
        const int64_t pb = c.getInts("pads")[k], pe = c.getInts("pads")[k + nd[i]];
        const int64_t span = x[k + 2] + pb + pe - (w[k + 2] - 1) * dl - 1;
        if (s < 1 || dl < 1 || pb < 0 || pe < 0 || span < 0) {
          ctx.fail(
              "convolution {}: data {}, weights {}, strides {}, dilations {}, pads {}: "
              "expected strides and dilations >= 1, pads >= 0 and a kernel that fits",
              i, shapeToString(x), shapeToString(w), shapeToString(c.getInts("strides")),
              shapeToString(c.getInts("dilations")), shapeToString(c.getInts("pads")));
        }
        y.push_back(span / s + 1);
      }
      if (ctx.hasInput(3 * i + 2) && ctx.input(3 * i + 2).shape() != Shape{w[0]}) {
        ctx.fail("convolution {}: bias {} must be [{}], one value per output channel", i,
                 ctx.input(3 * i + 2).toString(), w[0]);
      }
      out.emplace_back(ctx.input(3 * i).dataType(), y);
    }
    return out;
  };
  d.grad = [](GradContext& g) {
    const size_t n = numConvsOf(g.op());
    const auto nd = spatialDims(n, [&](size_t k) { return g.inputInfo(k).shape().size(); });
    for (size_t i = 0; i < n; ++i) {
      const bool bias = g.op().hasInput(3 * i + 2) && g.needsGrad(3 * i + 2);
      if (!g.needsGrad(3 * i) && !g.needsGrad(3 * i + 1) && !bias) continue;
      const Attributes c = convAttrs(g.attrs(), nd, i, g.inputInfo(3 * i + 1).shape());
      const TensorId gy = g.gradOutOrZeros(i);
      if (g.needsGrad(3 * i)) {
        Attributes a = c;
        a.set("shape", g.inputInfo(3 * i).shape());
        g.setGradIn(3 * i, g.emit("ConvGradInput", {gy, g.input(3 * i + 1)}, a));
      }
      if (g.needsGrad(3 * i + 1) || bias) {
        Attributes a = c;
        a.set("shape", g.inputInfo(3 * i + 1).shape());
        auto outs = g.emitMulti("ConvGradWeight", {gy, g.input(3 * i)}, bias ? 2 : 1, a);
        if (g.needsGrad(3 * i + 1)) g.setGradIn(3 * i + 1, outs[0]);
        if (bias) g.setGradIn(3 * i + 2, outs[1]);
      }
    }
  };
  return d;
}());

}  // namespace xtrain::ir
