// Resizing: ONNX Resize (opsets 10-17) and Upsample (opsets 7-9, canonicalised to Resize), and the
// internal ResizeGrad, with PopART's semantics.
//
// Canonical form of Resize (one input, X; every ONNX form is rewritten to it by canonicalize):
//   mode                            "nearest", "linear" (N-linear) or "cubic" (N-cubic, Keys'
//                                   kernel), over every resized axis;
//   coordinate_transformation_mode  "half_pixel", "pytorch_half_pixel", "align_corners",
//                                   "asymmetric" or "tf_half_pixel_for_nn";
//   nearest_mode                    "round_prefer_floor", "round_prefer_ceil", "floor", "ceil", or
//                                   "pytorch" (PopART's own mode, PyTorch's nearest: the input
//                                   index is floor(o / scale) whatever the transformation, and an
//                                   axis whose size is unchanged is left alone);
//   sizes                           ints, the output shape (one value per axis of X);
//   scales                          floats, one per axis, only when the model gave scales: the
//                                   coordinate transformation then divides by them (as ONNX says);
//                                   without it, it uses sizes / input shape;
//   cubic_coeff_a, exclude_outside  only for cubic (defaults -0.75 and 0).
// roi (used only by tf_crop_and_resize, which is refused) and extrapolation_value (only for
// tf_crop_and_resize) are dropped. As in PopART, the output size from scales is floor(in * scale)
// computed in FLOAT, and an axis whose scale is 1 is left unchanged.
//
// Opset differences: Upsample 7/8 take scales as an attribute, Upsample 9 and Resize 10 as input 1.
// Resize 10 reads the opset-11 attributes too, as PopART does (its Builder adds nearest_mode with
// addNodeAttribute), with PopART's defaults: nearest_mode "pytorch" and half_pixel. Upsample is
// PopART's UpsampleToResize: nearest is "pytorch"; linear (which PopART refuses) is ONNX's,
// asymmetric. Resize 11 adds roi, scales and sizes inputs (scales required, given empty when
// sizes is used) and the transformation attributes; Resize 13 makes roi and scales optional.
// Opset 18's antialias, axes and keep_aspect_ratio_policy are refused when they would change the
// result.
//
// Gradient: ResizeGrad(gY) scatters every output's gradient back onto the input elements it was
// interpolated from, with the same weights: the exact adjoint of the forward, for every mode
// (PopART refuses linear when training, and its nearest gradient is the adjoint of "pytorch" for
// every nearest mode; both agree with this one wherever PopART's is the adjoint).
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

// The values of constant input `index` as doubles, or nothing when the input is absent or empty
// (ONNX's way of leaving an input of Resize 11 out).
std::optional<std::vector<double>> constInputValues(const Op& op, const Graph& graph, size_t index,
                                                    const char* what) {
  const Tensor* input = constInputTensor(op, graph, index, what);
  if (input == nullptr || input->value->nelms() == 0) return std::nullopt;
  const Tensor& t = *input;
  const DataType type = t.info.dataType();
  const bool integer = std::string_view(what) == "sizes";
  if (integer ? (type != DataType::INT64 && type != DataType::INT32) : !isFloatingPoint(type)) {
    throw error("{}: input {} ('{}', used as '{}') is {}, expected {}", op.describe(), index, t.id,
                what, t.info.toString(), integer ? "INT64" : "FLOAT");
  }
  if (t.info.shape().size() != 1) {
    throw error("{}: input {} ('{}', used as '{}') is {}, expected a 1-D tensor", op.describe(),
                index, t.id, what, t.info.toString());
  }
  std::vector<double> values;
  for (int64_t i = 0; i < t.value->nelms(); ++i) values.push_back(t.value->getAsDouble(i));
  return values;
}

bool isOneOf(const std::string& v, std::initializer_list<const char*> options) {
  for (const char* o : options) {
    if (v == o) return true;
  }
  return false;
}

// Checks the canonical string attributes; `fail` throws with the op named.
template <typename Fail>
void checkModes(const Attributes& a, Fail&& fail) {
  const std::string mode = a.getString("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") {
    fail("mode '" + mode + "' is not one of nearest, linear, cubic");
  }
  const int64_t excludeOutside = a.getInt("exclude_outside", 0);
  if (excludeOutside != 0 && excludeOutside != 1) {
    fail(xtrain::format("exclude_outside is {}; expected 0 or 1", excludeOutside));
  }
  const std::string ctm = a.getString("coordinate_transformation_mode", "half_pixel");
  if (ctm == "tf_crop_and_resize") {
    fail(
        "coordinate_transformation_mode 'tf_crop_and_resize' is not implemented (xtrain "
        "implements half_pixel, pytorch_half_pixel, align_corners, asymmetric and "
        "tf_half_pixel_for_nn)");
  }
  if (!isOneOf(ctm, {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                     "tf_half_pixel_for_nn"})) {
    fail("coordinate_transformation_mode '" + ctm +
         "' is not one of half_pixel, pytorch_half_pixel, align_corners, asymmetric, "
         "tf_half_pixel_for_nn, tf_crop_and_resize");
  }
  const std::string nearest = a.getString("nearest_mode", "round_prefer_floor");
  if (!isOneOf(nearest, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "pytorch"})) {
    fail("nearest_mode '" + nearest + "' is not one of round_prefer_floor, round_prefer_ceil, " +
         "floor, ceil, pytorch");
  }
}

// Rewrites Resize (opsets 10-17) and Upsample (7-9) into the canonical Resize described above.
using Fail = std::function<void(const std::string&)>;

// The scales or the sizes of a Resize or Upsample of any opset, from its inputs or attributes
// (exactly one of them is set).
std::pair<std::optional<std::vector<double>>, std::optional<std::vector<double>>> scalesOrSizes(
    const Op& op, const Graph& graph, bool upsample, bool legacy, const Fail& fail) {
  const Attributes& a = op.attrs;
  std::optional<std::vector<double>> scales, sizes;
  if (upsample && op.opset != 0 && op.opset < 9) {
    if (op.inputs.size() > 1)
      fail("Upsample before opset 9 takes one input (scales is an attribute)");
    if (!a.has("scales")) fail("attribute 'scales' is required");
    const auto& s = a.getFloats("scales");
    scales = std::vector<double>(s.begin(), s.end());
  } else if (legacy) {
    if (op.inputs.size() > 2) {
      fail(xtrain::format("takes inputs X and scales at opset {}, got {} inputs", op.opset,
                          op.inputs.size()));
    }
    if (a.has("scales") && !op.hasInput(1)) {
      // Already canonical, or an opset-7 Upsample written with a later opset.
      const auto& s = a.getFloats("scales");
      scales = std::vector<double>(s.begin(), s.end());
    } else {
      scales = constInputValues(op, graph, 1, "scales");
      if (!scales) fail("input 1 (scales) is required");
    }
  } else {
    scales = constInputValues(op, graph, 2, "scales");
    sizes = constInputValues(op, graph, 3, "sizes");
    if (scales && sizes) {
      // PopART's message, word for word (its tests compare it).
      throw error(
          "Resize op has inputs for `sizes` and `scales`. Only one of these tensors should be "
          "present. If `sizes` is needed, please pass an empty string as the name of `scales` in "
          "the input list ( resize([X, roi, '', sizes]) ). If the proto is not generated from the "
          "PopART Builder, please confirm that only one of the two tensors shall have data.");
    }
    if (!scales && !sizes) {
      if (a.has("sizes")) {
        // Canonical already (an internal op or a copy): keep it.
        const auto& s = a.getInts("sizes");
        sizes = std::vector<double>(s.begin(), s.end());
        if (a.has("scales")) {
          const auto& f = a.getFloats("scales");
          scales = std::vector<double>(f.begin(), f.end());
          sizes.reset();
        }
      } else {
        fail("one of the inputs scales (2) and sizes (3) must be given and non-empty");
      }
    }
  }
  return {scales, sizes};
}

// The interpolation modes of the opset-11+ form (the legacy forms' defaults made explicit).
void canonicalModes(Attributes& a, bool upsample, bool legacy, const Fail& fail) {
  if (upsample) {
    std::string mode = a.getString("mode", "nearest");
    if (mode == "bilinear") mode = "linear";  // Upsample-1's name, still written by some tools
    if (mode != "nearest" && mode != "linear") {
      fail("mode '" + mode + "' is not one of nearest, linear");
    }
    a.set("mode", mode);
    a.set("coordinate_transformation_mode", std::string("asymmetric"));
    a.set("nearest_mode", std::string("pytorch"));
  } else if (legacy) {
    // Resize 10, as PopART reads it: the opset-11 attributes when the node has them.
    a.set("mode", a.getString("mode", "nearest"));
    a.set("coordinate_transformation_mode",
          a.getString("coordinate_transformation_mode", "half_pixel"));
    a.set("nearest_mode", a.getString("nearest_mode", "pytorch"));
  } else {
    a.set("mode", a.getString("mode", "nearest"));
    a.set("coordinate_transformation_mode",
          a.getString("coordinate_transformation_mode", "half_pixel"));
    a.set("nearest_mode", a.getString("nearest_mode", "round_prefer_floor"));
  }
}

// The output shape from the scales (ONNX: floor(input dimension x scale)) or the sizes, checked.
Shape outputShape(const Shape& x, const std::optional<std::vector<double>>& scales,
                  const std::optional<std::vector<double>>& sizes, bool upsample, Attributes& a,
                  const Fail& fail) {
  const size_t rank = x.size();
  Shape out(rank);
  if (scales) {
    if (scales->size() != rank) {
      fail(xtrain::format("scales has {} values; X {} has rank {}", scales->size(),
                          shapeToString(x), rank));
    }
    std::vector<float> f;
    for (size_t i = 0; i < rank; ++i) {
      const double s = (*scales)[i];
      if (!(s > 0) || !std::isfinite(s)) {
        fail(xtrain::format("scales must be positive and finite, got {}", *scales));
      }
      if (upsample && s < 1) {
        fail(xtrain::format("Upsample scales must be >= 1, got {}", *scales));
      }
      // ONNX: output_dimension = floor(input_dimension * scale), in FLOAT as PopART computes it
      // (10 * 0.7f is 7 in FLOAT, 6.99999988 in DOUBLE).
      const double dim =
          static_cast<double>(std::floor(static_cast<float>(x[i]) * static_cast<float>(s)));
      if (dim >= 0x1p53) {
        fail(xtrain::format("scales {} give an output dimension of {} for X {}", *scales, dim,
                            shapeToString(x)));
      }
      out[i] = static_cast<int64_t>(dim);
      f.push_back(static_cast<float>(s));
    }
    a.set("scales", f);
  } else {
    if (sizes->size() != rank) {
      fail(xtrain::format("sizes has {} values; X {} has rank {}", sizes->size(), shapeToString(x),
                          rank));
    }
    for (size_t i = 0; i < rank; ++i) out[i] = static_cast<int64_t>((*sizes)[i]);
    for (size_t i = 0; i < rank; ++i) {
      // An empty axis can only stay empty; any other must give at least one element.
      if (x[i] == 0 ? out[i] != 0 : out[i] < 1) {
        fail(
            xtrain::format("sizes {} must be >= 1 on every non-empty axis of X {} (and 0 on "
                           "its empty ones)",
                           shapeToString(out), shapeToString(x)));
      }
    }
    a.erase("scales");
  }
  return out;
}

void canonicalizeResize(Op& op, const Graph& graph) {
  if (!op.hasInput(0)) return;  // the input count check reports it
  const Fail fail = [&op](const std::string& message) {
    throw error("{}: {}", op.describe(), message);
  };
  const Shape& x = graph.tensor(op.inputs[0]).info.shape();
  Attributes& a = op.attrs;
  const bool upsample = op.type == "Upsample";
  // Opset 0 is an internal op: the opset-11+ form.
  const bool legacy = upsample || (op.opset != 0 && op.opset < 11);
  const auto [scales, sizes] = scalesOrSizes(op, graph, upsample, legacy, fail);
  canonicalModes(a, upsample, legacy, fail);
  checkModes(a, fail);
  if (a.has("axes")) fail("attribute 'axes' (opset 18) is not implemented");
  if (a.getString("keep_aspect_ratio_policy", "stretch") != "stretch") {
    fail("keep_aspect_ratio_policy '" + a.getString("keep_aspect_ratio_policy") +
         "' (opset 18) is not implemented");
  }

  const Shape out = outputShape(x, scales, sizes, upsample, a, fail);
  const size_t rank = x.size();
  a.set("sizes", out);
  if (a.getInt("antialias", 0) != 0) {
    bool down = false;
    for (size_t i = 0; i < rank; ++i) down = down || out[i] < x[i];
    if (a.getString("mode") == "linear" && down) {
      fail("antialias=1 when downsampling (opset 18) is not implemented");
    }
  }
  for (const char* unused : {"extrapolation_value", "antialias", "keep_aspect_ratio_policy"}) {
    a.erase(unused);
  }
  if (a.getString("mode") == "cubic") {
    a.set("cubic_coeff_a", a.getFloat("cubic_coeff_a", -0.75f));
    a.set("exclude_outside", a.getInt("exclude_outside", 0));
  } else {
    a.erase("cubic_coeff_a");
    a.erase("exclude_outside");
  }
  op.inputs.resize(1);
  op.type = "Resize";
}

// The attributes ResizeGrad shares with Resize.
void checkCanonical(const ShapeContext& ctx, const Shape& x) {
  const Attributes& a = ctx.attrs();
  checkModes(a, [&ctx](const std::string& m) { ctx.fail("{}", m); });
  if (x.empty()) ctx.fail("X must have rank >= 1 (a scalar cannot be resized)");
  const Shape& sizes = a.getInts("sizes");
  if (sizes.size() != x.size()) {
    ctx.fail("sizes {} must have one value per axis of X {}", shapeToString(sizes),
             shapeToString(x));
  }
  if (a.has("scales") && a.getFloats("scales").size() != x.size()) {
    ctx.fail("scales must have one value per axis of X {}", shapeToString(x));
  }
}

std::vector<TensorInfo> inferResize(const ShapeContext& ctx) {
  ctx.requireFloatOrHalf(0, "X");
  const TensorInfo& x = ctx.input(0);
  checkCanonical(ctx, x.shape());
  return {TensorInfo(x.dataType(), ctx.attrs().getInts("sizes"))};
}

void gradResize(GradContext& g) {
  if (!g.needsGrad(0)) return;
  Attributes a = g.attrs();
  a.set("shape", g.inputInfo(0).shape());
  g.setGradIn(0, g.emit("ResizeGrad", {g.gradOut(0)}, a));
}

// Resize(X, roi?, scales?, sizes?) (see the header comment) and Upsample(X, scales?) (opsets 7-9;
// deprecated at 10), which canonicalize turns into a Resize.
OpDef resizeDef(const char* type, int maxInputs, const char* rewrittenTo) {
  return OpDef{.type = type,
               .minInputs = 1,
               .maxInputs = maxInputs,
               .canonicalize = canonicalizeResize,
               .infer = inferResize,
               .grad = gradResize,
               .rewrittenTo = rewrittenTo};
}
XT_REGISTER_OP(resizeDef("Resize", 4, ""));
XT_REGISTER_OP(resizeDef("Upsample", 2, "Resize"));

// ResizeGrad(gY), internal: dX of Resize for X of shape `shape`, with Resize's canonical
// attributes.
XT_REGISTER_OP([] {
  OpDef d{.type = "ResizeGrad", .domain = kXtrainDomain};
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalf(0, "gY");
    const Shape& x = ctx.attrs().getInts("shape");
    checkCanonical(ctx, x);
    if (ctx.input(0).shape() != ctx.attrs().getInts("sizes")) {
      ctx.fail("gradient {} does not match the resized shape {}", ctx.input(0).toString(),
               shapeToString(ctx.attrs().getInts("sizes")));
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), x)};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
