// Tensor construction and rearrangement ops: Shape, Size, ConstantOfShape, Range, Tile, Pad (and
// its gradient PadGrad), OneHot, CumSum, Trilu and CastLike.
#include <algorithm>
#include <cmath>

#include "common/checked_math.hpp"
#include "ir/op_registry.hpp"
#include "ir/ops/const_input.hpp"

namespace xtrain::ir {
namespace {

void checkCopyable(const ShapeContext& ctx, const TensorInfo& info) {
  if (dataTypeSize(info.dataType()) == 0) {
    ctx.fail("input {} has an element type that cannot be copied", info.toString());
  }
}

// The element count of an output shape, checked against int64 overflow (names the op).
void checkElementCount(const ShapeContext& ctx, const Shape& shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    n = checkedMul(ctx.op().describe() + ": the output's element count", n, shape[i]);
  }
}

// Reads a constant scalar (or one-element) input of any numeric type as a double.
double constScalar(const Op& op, const Graph& graph, size_t index, const char* what) {
  const HostTensor* v = requireConstInput(op, graph, index, what);
  if (v->nelms() != 1) {
    throw error("{}: input {} ({}) must hold one value, it is {}", op.describe(), index, what,
                v->info().toString());
  }
  return v->getAsDouble(0);
}

// Shape(data) with attributes start and end (opset 15; default the whole shape): the dimensions
// [start, end) of data's shape as a 1-D INT64 tensor. Negative start/end count from the end; both
// are clamped to [0, rank].
XT_REGISTER_OP([] {
  OpDef d{.type = "Shape"};
  d.infer = [](const ShapeContext& ctx) {
    const int64_t rank = ctx.input(0).rank();
    int64_t start = ctx.attrs().getInt("start", 0);
    int64_t end = ctx.attrs().getInt("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    return std::vector<TensorInfo>{
        TensorInfo(DataType::INT64, {std::max<int64_t>(end - start, 0)})};
  };
  return d;
}());

// Size(data): the number of elements of data as an INT64 scalar.
XT_REGISTER_OP([] {
  OpDef d{.type = "Size"};
  d.infer = [](const ShapeContext& ctx) {
    ctx.input(0);
    return std::vector<TensorInfo>{TensorInfo(DataType::INT64, Shape{})};
  };
  return d;
}());

// ConstantOfShape(shape), shape INT64 or INT32. Canonical form: attribute `shape` (the constant input's values), `value`
// (a float or int, default 0.0; ONNX's one-element tensor attribute) and `dtype` (ONNX type number
// of the output, default FLOAT).
XT_REGISTER_OP([] {
  OpDef d{.type = "ConstantOfShape", .minInputs = 0, .maxInputs = 1};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (op.hasInput(0)) {
      const TensorInfo& in = graph.tensor(op.inputs[0]).info;
      // INT32 is accepted too, as PopART accepts it.
      const bool integer = in.dataType() == DataType::INT64 || in.dataType() == DataType::INT32;
      if (!integer || in.rank() != 1) {
        throw error("{}: input 0 (shape) is {}; expected a 1-D INT64 or INT32 tensor", op.describe(),
                    in.toString());
      }
    }
    requiredConstInputToAttr(op, graph, 0, "shape", "the output shape");
  };
  d.infer = [](const ShapeContext& ctx) {
    const std::vector<int64_t>& shape = ctx.attrs().getInts("shape");
    for (int64_t v : shape) {
      if (v < 0) ctx.fail("shape {} has the negative dimension {}", shape, v);
    }
    checkElementCount(ctx, shape);
    const int64_t onnxType = ctx.attrs().getInt("dtype", dataTypeToOnnx(DataType::FLOAT));
    DataType t = DataType::UNDEFINED;
    try {
      t = dataTypeFromOnnx(static_cast<int>(onnxType));
    } catch (const error&) {
      ctx.fail("attribute 'dtype' is {}, which is not an ONNX tensor element type", onnxType);
    }
    if (dataTypeSize(t) == 0 || t == DataType::COMPLEX64 || t == DataType::COMPLEX128) {
      ctx.fail("output element type {} is not supported", dataTypeName(t));
    }
    return std::vector<TensorInfo>{TensorInfo(t, shape)};
  };
  return d;
}());

// Range(start, limit, delta): start + i*delta for i < max(ceil((limit-start)/delta), 0). The three
// scalar inputs must be constants (the output's length depends on them). Canonical form: no inputs,
// attributes `start`, `limit`, `delta` (floats) and `dtype` (ONNX type number of the output).
XT_REGISTER_OP([] {
  OpDef d{.type = "Range", .minInputs = 0, .maxInputs = 3};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (op.inputs.empty()) return;  // already canonical
    if (op.inputs.size() != 3) {
      throw error("{}: needs 3 inputs (start, limit, delta), has {}", op.describe(),
                  op.inputs.size());
    }
    const char* names[] = {"start", "limit", "delta"};
    DataType type = DataType::UNDEFINED;
    for (size_t i = 0; i < 3; ++i) {
      if (!op.hasInput(i)) throw error("{}: input {} ({}) is required", op.describe(), i, names[i]);
      const TensorInfo& info = graph.tensor(op.inputs[i]).info;
      if (i == 0) type = info.dataType();
      if (info.dataType() != type) {
        throw error("{}: input {} ({}) is {} but start is {}; all three need one type",
                    op.describe(), i, names[i], info.toString(), dataTypeName(type));
      }
      if (info.rank() != 0 && info.nelms() != 1) {
        throw error("{}: input {} ({}) is {}; expected a scalar", op.describe(), i, names[i],
                    info.toString());
      }
    }
    if (type != DataType::FLOAT && type != DataType::DOUBLE && type != DataType::INT16 &&
        type != DataType::INT32 && type != DataType::INT64) {
      throw error("{}: inputs are {}; expected FLOAT, DOUBLE, INT16, INT32 or INT64", op.describe(),
                  dataTypeName(type));
    }
    for (size_t i = 0; i < 3; ++i) {
      const double v = constScalar(op, graph, i, names[i]);
      if (isFloatingPoint(type)) {
        op.attrs.set(names[i], static_cast<float>(v));
      } else {
        op.attrs.set(names[i], static_cast<int64_t>(v));
      }
    }
    op.attrs.set("dtype", static_cast<int64_t>(dataTypeToOnnx(type)));
    op.inputs.clear();
  };
  d.infer = [](const ShapeContext& ctx) {
    const DataType t = dataTypeFromOnnx(static_cast<int>(ctx.attrs().getInt("dtype")));
    double start = 0, limit = 0, delta = 0;
    if (isFloatingPoint(t)) {
      start = ctx.attrs().getFloat("start");
      limit = ctx.attrs().getFloat("limit");
      delta = ctx.attrs().getFloat("delta");
    } else {
      start = static_cast<double>(ctx.attrs().getInt("start"));
      limit = static_cast<double>(ctx.attrs().getInt("limit"));
      delta = static_cast<double>(ctx.attrs().getInt("delta"));
    }
    if (delta == 0) ctx.fail("delta is 0; the range would be infinite");
    const double n = std::ceil((limit - start) / delta);
    if (!std::isfinite(n) || n > 1e12) {
      ctx.fail("start {}, limit {}, delta {} give a range of {} elements", start, limit, delta, n);
    }
    return std::vector<TensorInfo>{TensorInfo(t, {std::max<int64_t>(static_cast<int64_t>(n), 0)})};
  };
  return d;
}());

// Tile(input, repeats). Canonical form: attribute `repeats` (one non-negative count per dimension).
// Gradient: the output viewed as [r0, d0, r1, d1, ...] summed over the r's.
XT_REGISTER_OP([] {
  OpDef d{.type = "Tile", .minInputs = 1, .maxInputs = 2};
  d.canonicalize = [](Op& op, const Graph& graph) {
    requiredConstInputToAttr(op, graph, 1, "repeats", "the repeats");
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    checkCopyable(ctx, in);
    const std::vector<int64_t>& repeats = ctx.attrs().getInts("repeats");
    if (static_cast<int64_t>(repeats.size()) != in.rank()) {
      ctx.fail(
          "repeats {} has {} entries but the input {} has rank {}: the repeats should have one "
          "element for each dimension of the data tensor",
          repeats, repeats.size(), in.toString(), in.rank());
    }
    Shape out = in.shape();
    for (size_t i = 0; i < out.size(); ++i) {
      if (repeats[i] < 0) {
        ctx.fail(
            "repeats {} has the negative count {} (output dimensions: Values must be "
            "non-negative in each shape dimension)",
            repeats, repeats[i]);
      }
      out[i] = checkedMul(ctx.op().describe() + ": output dimension " + std::to_string(i), out[i],
                          repeats[i]);
    }
    checkElementCount(ctx, out);
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), out)};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    const Shape& in = g.inputInfo(0).shape();
    const std::vector<int64_t>& repeats = g.attrs().getInts("repeats");
    Shape split, kept;
    for (size_t i = 0; i < in.size(); ++i) {
      split.push_back(repeats[i]);
      split.push_back(in[i]);
      kept.push_back(1);
      kept.push_back(in[i]);
    }
    TensorId x = g.reshapeTo(g.gradOut(0), split);
    Attributes a;
    a.set("shape", kept);
    x = g.emit("ReduceSumToShape", {x}, std::move(a));
    g.setGradIn(0, g.reshapeTo(x, in));
  };
  return d;
}());

// Pad. Opset 2-10: attributes pads, value (float) and mode; opset 11+: inputs pads (INT64) and
// constant_value (optional scalar). Canonical form: attributes `pads` ([begin_0.., end_0..], may be
// negative to crop), `value` (float) and `mode` ("constant", "reflect" or "edge").
void validatePads(const ShapeContext& ctx, const Shape& shape, const std::vector<int64_t>& pads,
                  const std::string& mode, Shape& out) {
  const size_t rank = shape.size();
  if (pads.size() != 2 * rank) {
    ctx.fail("pads {} has {} entries; expected 2 * rank = {} for the input of shape {}", pads,
             pads.size(), 2 * rank, shapeToString(shape));
  }
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    ctx.fail("mode '{}' is not supported; expected constant, reflect or edge", mode);
  }
  out = shape;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t b = pads[i], e = pads[i + rank];
    const int64_t limit = int64_t{1} << 62;
    if (b > limit || e > limit || b < -limit || e < -limit) {
      ctx.fail("pads {} are out of range", pads);
    }
    out[i] = shape[i] + b + e;
    if (out[i] < 0) {
      ctx.fail("pads {} crop dimension {} of size {} below 0", pads, i, shape[i]);
    }
    if (mode != "constant" && (b > 0 || e > 0) && out[i] > 0) {
      // Padding reads from the (cropped) input, which must not be empty.
      const int64_t kept = shape[i] + std::min<int64_t>(b, 0) + std::min<int64_t>(e, 0);
      if (kept <= 0) {
        ctx.fail("mode '{}' pads dimension {} but the input has no elements there to copy", mode,
                 i);
      }
      if (mode == "reflect" && (b >= kept || e >= kept)) {
        ctx.fail(
            "mode 'reflect' pads dimension {} by {} and {} but its size is {}; reflect pads "
            "must be smaller than the dimension",
            i, b, e, kept);
      }
    }
  }
  checkElementCount(ctx, out);
}

XT_REGISTER_OP([] {
  OpDef d{.type = "Pad", .minInputs = 1, .maxInputs = 3};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (op.inputs.size() > 3) {
      throw error("{}: has {} inputs; the axes input (opset 18) is not supported", op.describe(),
                  op.inputs.size());
    }
    constInputToAttr(op, graph, 1, "pads");
    if (op.hasInput(2)) {
      if (op.attrs.has("value")) {
        throw error("{}: the pad value is given both as attribute 'value' and as input 2",
                    op.describe());
      }
      op.attrs.set("value", static_cast<float>(constScalar(op, graph, 2, "constant_value")));
      op.inputs[2].clear();
    }
    if (!op.attrs.has("pads")) {
      throw error("{}: needs the pads (input 1 or attribute 'pads')", op.describe());
    }
    if (!op.attrs.has("mode")) op.attrs.set("mode", std::string("constant"));
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    checkCopyable(ctx, in);
    Shape out;
    validatePads(ctx, in.shape(), ctx.attrs().getInts("pads"), ctx.attrs().getString("mode"), out);
    return std::vector<TensorInfo>{TensorInfo(in.dataType(), out)};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    Attributes a;
    a.set("pads", g.attrs().getInts("pads"));
    a.set("mode", g.attrs().getString("mode"));
    a.set("shape", g.inputInfo(0).shape());
    g.setGradIn(0, g.emit("PadGrad", {g.gradOut(0)}, std::move(a)));
  };
  return d;
}());

// PadGrad(dy) with Pad's attributes pads and mode and `shape` (Pad's input shape): the adjoint of
// Pad, every element of dy added to the input element Pad copied it from.
XT_REGISTER_OP([] {
  OpDef d{.type = "PadGrad", .domain = kXtrainDomain};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& dy = ctx.input(0);
    ctx.requireFloatOrHalf(0, "dy");
    const Shape shape = ctx.attrs().getInts("shape");
    Shape padded;
    validatePads(ctx, shape, ctx.attrs().getInts("pads"), ctx.attrs().getString("mode"), padded);
    if (padded != dy.shape()) {
      ctx.fail("the gradient {} does not match Pad's output shape {}", dy.toString(),
               shapeToString(padded));
    }
    return std::vector<TensorInfo>{TensorInfo(dy.dataType(), shape)};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    Attributes a;
    a.set("pads", g.attrs().getInts("pads"));
    a.set("mode", g.attrs().getString("mode"));
    a.set("value", 0.0f);
    g.setGradIn(0, g.emit("Pad", {g.gradOut(0)}, std::move(a), kOnnxDomain));
  };
  return d;
}());

// OneHot(indices, depth, values) with attribute axis (default -1). depth must be a constant.
// Canonical form: inputs (indices, values), attributes `depth`, `axis` and `negative_indices` (1
// from opset 11: indices in [-depth, 0) count from the end; before, they are out of range). Indices
// out of range give a row of off values.
XT_REGISTER_OP([] {
  OpDef d{.type = "OneHot", .minInputs = 2, .maxInputs = 3};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (op.inputs.size() == 3) {
      if (!op.hasInput(1)) throw error("{}: input 1 (depth) is required", op.describe());
      const double depth = constScalar(op, graph, 1, "depth");
      if (!(depth >= 1) || depth > 1e12) {
        throw error("{}: depth is {}; it must be a positive count", op.describe(), depth);
      }
      op.attrs.set("depth", static_cast<int64_t>(depth));
      op.inputs = {op.inputs[0], op.inputs[2]};
    }
    if (!op.attrs.has("depth")) throw error("{}: needs depth (input 1)", op.describe());
    if (!op.attrs.has("negative_indices")) {
      op.attrs.set("negative_indices", int64_t{op.opset == 0 || op.opset >= 11 ? 1 : 0});
    }
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& indices = ctx.input(0);
    const TensorInfo& values = ctx.input(1);
    const DataType it = indices.dataType();
    if (it != DataType::INT64 && it != DataType::INT32 && it != DataType::FLOAT &&
        it != DataType::FLOAT16 && it != DataType::DOUBLE && it != DataType::UINT8 &&
        it != DataType::INT8 && it != DataType::INT16) {
      ctx.fail("indices {} must be of a numeric type", indices.toString());
    }
    if (values.nelms() != 2 || values.rank() != 1) {
      ctx.fail("values {} must be a 1-D tensor of two elements [off, on]", values.toString());
    }
    checkCopyable(ctx, values);
    const int64_t axis = normalizeAxis(ctx, ctx.attrs().getInt("axis", -1), indices.rank() + 1);
    Shape out = indices.shape();
    out.insert(out.begin() + axis, ctx.attrs().getInt("depth"));
    checkElementCount(ctx, out);
    return std::vector<TensorInfo>{TensorInfo(values.dataType(), out)};
  };
  // d on = sum(dy * mask), d off = sum(dy) - d on, with mask the one-hot of [0, 1].
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(1)) return;
    const DataType t = g.inputInfo(1).dataType();
    TensorId zeroOne =
        g.constant(HostTensor::fromVector<float>({2}, {0.0f, 1.0f}).castTo(t), "onehot_mask");
    TensorId mask = g.emit("OneHot", {g.input(0), zeroOne}, g.attrs(), kOnnxDomain);
    TensorId dy = g.gradOut(0);
    Attributes toScalar;
    toScalar.set("shape", std::vector<int64_t>{1});
    TensorId on =
        g.emit("ReduceSumToShape", {g.emit("Mul", {dy, mask}, {}, kOnnxDomain)}, toScalar);
    TensorId all = g.emit("ReduceSumToShape", {dy}, toScalar);
    TensorId off = g.emit("Sub", {all, on}, {}, kOnnxDomain);
    Attributes axis0;
    axis0.set("axis", int64_t{0});
    g.setGradIn(1, g.emit("Concat", {off, on}, std::move(axis0), kOnnxDomain));
  };
  return d;
}());

// CumSum(x, axis) with attributes exclusive and reverse (default 0). Canonical form: attribute
// `axis` (the constant input's value). Gradient: the cumulative sum of dy in the other direction.
XT_REGISTER_OP([] {
  OpDef d{.type = "CumSum", .minInputs = 1, .maxInputs = 2};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (op.hasInput(1)) {
      if (op.attrs.has("axis")) {
        throw error("{}: axis is given both as an attribute and as input 1", op.describe());
      }
      const HostTensor* v = requireConstInput(op, graph, 1, "axis");
      if (v->nelms() != 1 || !isInteger(v->dataType())) {
        throw error("{}: input 1 (axis) is {}; expected an INT32 or INT64 scalar", op.describe(),
                    v->info().toString());
      }
      op.attrs.set("axis", static_cast<int64_t>(v->getAsDouble(0)));
      op.inputs[1].clear();
    }
    if (!op.attrs.has("axis")) throw error("{}: needs the axis (input 1)", op.describe());
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    const DataType t = in.dataType();
    if (t != DataType::FLOAT && t != DataType::FLOAT16 && t != DataType::INT32 &&
        t != DataType::INT64) {
      ctx.fail("input {} must be FLOAT, FLOAT16, INT32 or INT64", in.toString());
    }
    if (in.rank() == 0) ctx.fail("input {} is a scalar; it needs rank >= 1", in.toString());
    normalizeAxis(ctx, ctx.attrs().getInt("axis"), in.rank());
    return std::vector<TensorInfo>{in};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    Attributes a;
    a.set("axis", g.attrs().getInt("axis"));
    a.set("exclusive", g.attrs().getInt("exclusive", 0));
    a.set("reverse", int64_t{g.attrs().getInt("reverse", 0) != 0 ? 0 : 1});
    g.setGradIn(0, g.emit("CumSum", {g.gradOut(0)}, std::move(a), kOnnxDomain));
  };
  return d;
}());

// Trilu(input, k) with attribute upper (default 1): keeps the elements on and above (upper) or on
// and below (lower) the k-th diagonal of the last two dimensions, zeroes the rest. Canonical form:
// attribute `k` (default 0).
XT_REGISTER_OP([] {
  OpDef d{.type = "Trilu", .minInputs = 1, .maxInputs = 2};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (op.hasInput(1)) {
      const HostTensor* v = requireConstInput(op, graph, 1, "k");
      if (v->nelms() != 1 || v->dataType() != DataType::INT64) {
        throw error("{}: input 1 (k) is {}; expected an INT64 scalar", op.describe(),
                    v->info().toString());
      }
      op.attrs.set("k", v->toVector<int64_t>()[0]);
      op.inputs[1].clear();
    }
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    checkCopyable(ctx, in);
    if (in.rank() < 2) ctx.fail("input {} needs rank >= 2", in.toString());
    return std::vector<TensorInfo>{in};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    Attributes a;
    a.set("k", g.attrs().getInt("k", 0));
    a.set("upper", g.attrs().getInt("upper", 1));
    g.setGradIn(0, g.emit("Trilu", {g.gradOut(0)}, std::move(a), kOnnxDomain));
  };
  return d;
}());

// CastLike(input, target_type) (opset 15): Cast to target_type's element type. canonicalize turns
// it into Cast with attribute `to`, so it shares Cast's kernel and gradient.
XT_REGISTER_OP([] {
  OpDef d{.type = "CastLike", .minInputs = 1, .maxInputs = 2, .rewrittenTo = "Cast"};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (!op.hasInput(1)) {
      throw error("{}: input 1 (target_type) is required", op.describe());
    }
    const DataType t = graph.tensor(op.inputs[1]).info.dataType();
    op.attrs.set("to", static_cast<int64_t>(dataTypeToOnnx(t)));
    op.inputs[1].clear();
    op.type = "Cast";
    op.attrs.setOwner(op.describe());
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    const DataType t = dataTypeFromOnnx(static_cast<int>(ctx.attrs().getInt("to")));
    return std::vector<TensorInfo>{TensorInfo(t, in.shape())};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
