// Ops that draw random numbers: ai.onnx RandomNormal, RandomUniform, RandomNormalLike and
// RandomUniformLike, and ai.graphcore ShapedDropout. Their kernels (random_kernels.cpp) draw from
// KernelIO::seed, which the session derives from its random seed (Session::setRandomSeed), the op,
// the replica and the execution: a seed gives the same numbers again, and two ops, two replicas or
// two runs draw differently.
#include "ir/op_registry.hpp"
#include "ir/ops/popart_wording.hpp"

namespace xtrain::ir {
namespace {

// PopART's attribute check of the random ops: a per-op seed would tie the op to one stream.
void refuseSeedAttribute(const Op& op) {
  if (op.attrs.has("seed")) {
    throw error("{}: Optional seed attribute is not supported. Use session::setRandomSeed instead.",
                op.describe());
  }
}

// The element type the dtype attribute (an ONNX TensorProto type number) names.
DataType dtypeAttr(const Op& op) {
  const int64_t dtype = op.attrs.getInt("dtype");
  try {
    return dataTypeFromOnnx(static_cast<int>(dtype));
  } catch (const error&) {
    throw error("{}: dtype {} is not an ONNX element type", op.describe(), dtype);
  }
}

// Canonical form of the four random ops: RandomNormal {shape, dtype, mean, scale} and RandomUniform
// {shape, dtype, high, low}, no inputs. dtype is an ONNX element type number, FLOAT (1) or FLOAT16
// (10); the defaults are ONNX's: dtype FLOAT, mean 0, scale 1 (the standard deviation), low 0,
// high 1. The Like forms take their shape, and their dtype when it is not given, from their input,
// and become the plain op (PopART's RandomNormalLikeOpPattern and RandomUniformLikeOpPattern), so
// the input is no longer read. The seed attribute is refused, as in PopART.
void canonicalizeRandom(Op& op, const Graph& graph, bool normal) {
  refuseSeedAttribute(op);
  const bool like = op.type == "RandomNormalLike" || op.type == "RandomUniformLike";
  if (like) {
    if (!op.hasInput(0)) throw error("{}: input 0 (input) is required", op.describe());
    const TensorInfo& in = graph.tensor(op.inputs[0]).info;
    if (!op.attrs.has("dtype")) {
      const DataType t = in.dataType();
      if (t != DataType::FLOAT && t != DataType::FLOAT16) {
        throw error(
            "{}: Unsupported data type requested: {} (the input's; expected FLOAT or "
            "FLOAT16, or a dtype attribute)",
            op.describe(), dataTypeName(t));
      }
      op.attrs.set("dtype", static_cast<int64_t>(dataTypeToOnnx(t)));
    }
    op.attrs.set("shape", in.shape());
    op.inputs[0].clear();
    op.type = normal ? "RandomNormal" : "RandomUniform";
    op.attrs.setOwner(op.describe());
  }
  if (!op.attrs.has("shape")) throw error("{}: attribute 'shape' is required", op.describe());
  op.attrs.set("dtype", op.attrs.getInt("dtype", 1));
  if (normal) {
    op.attrs.set("mean", op.attrs.getFloat("mean", 0.0f));
    op.attrs.set("scale", op.attrs.getFloat("scale", 1.0f));
  } else {
    op.attrs.set("low", op.attrs.getFloat("low", 0.0f));
    op.attrs.set("high", op.attrs.getFloat("high", 1.0f));
  }
}

std::vector<TensorInfo> inferRandom(const ShapeContext& ctx) {
  if (ctx.numInputs() != 0) ctx.fail("takes no inputs once canonical");
  const DataType t = dtypeAttr(ctx.op());
  if (t != DataType::FLOAT && t != DataType::FLOAT16) {
    // PopART's lowering refuses other types with this message.
    ctx.fail("The data type {} is not supported in Poplar (expected dtype FLOAT or FLOAT16)",
             dataTypeName(t));
  }
  const Shape& shape = ctx.attrs().getInts("shape");
  for (int64_t d : shape) {
    if (d < 0) ctx.fail("shape {} has a negative dimension", shapeToString(shape));
  }
  return {TensorInfo(t, shape)};
}

OpDef randomOp(const std::string& type, bool normal, bool like) {
  // A Like op loses its input in canonicalize, which runs before the arity check.
  OpDef d{.type = type, .minInputs = 0, .maxInputs = like ? 1 : 0};
  if (like) d.rewrittenTo = normal ? "RandomNormal" : "RandomUniform";
  d.canonicalize = [normal](Op& op, const Graph& graph) { canonicalizeRandom(op, graph, normal); };
  d.infer = inferRandom;
  return d;
}

XT_REGISTER_OP(randomOp("RandomNormal", true, false));
XT_REGISTER_OP(randomOp("RandomUniform", false, false));
XT_REGISTER_OP(randomOp("RandomNormalLike", true, true));
XT_REGISTER_OP(randomOp("RandomUniformLike", false, true));

// ShapedDropout (ai.graphcore opset 1): data with attributes shape (required) and ratio (default
// 0.5, in [0, 1)). When training, a mask of `shape` keeps each element with probability 1 - ratio;
// broadcast to the data's shape (numpy rules: `shape` must broadcast to it), it drops whole slices
// (e.g. rows with shape [N, 1]), and the kept elements are scaled by 1 / (1 - ratio). Otherwise it
// is the identity: the session sets training_mode to 1 in a TrainingSession and to 0 in an
// InferenceSession, as PopART's op is active exactly when the IR can train. Optional output 1: the
// mask (BOOL, of `shape`). Gradient: gy times the same mask, scaled (Cast, Mul), with the mask the
// forward pass drew (the grad function gives the op its mask output when it has none).
XT_REGISTER_OP([] {
  OpDef d{.type = "ShapedDropout", .domain = kGraphcoreDomain, .maxOutputs = 2};
  d.canonicalize = [](Op& op, const Graph&) {
    const float ratio = op.attrs.getFloat("ratio", 0.5f);
    if (!(ratio >= 0.0f && ratio < 1.0f)) {
      throw error("{}: ratio value {} is not valid. Please use a value in the interval [0,1)",
                  op.describe(), ratio);
    }
    op.attrs.set("ratio", ratio);
    op.attrs.set("training_mode", op.attrs.getInt("training_mode", 1) != 0 ? int64_t{1} : 0);
    if (!op.attrs.has("shape")) throw error("{}: attribute 'shape' is required", op.describe());
  };
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    ctx.requireFloatOrHalf(0, "data");
    const Shape& shape = ctx.attrs().getInts("shape");
    bool fits = shape.size() <= x.shape().size();
    for (size_t i = 0; fits && i < shape.size(); ++i) {
      const int64_t d = shape[shape.size() - 1 - i];
      fits = d == 1 || d == x.shape()[x.shape().size() - 1 - i];
    }
    if (!fits) {
      // PopART's tests match the start of its message: args[0] is it, str() xtrain's (which
      // the import prefixes with the model).
      const Op& op = ctx.op();
      const std::string popart = xtrain::format(
          "ShapedDropout: incompatible input tensor and dropout shape. {}.{}:{} is configured with "
          "shape {} which is not broadcastable to the input tensor with shape {}.",
          op.domain, op.type, op.opset, popartSequence(shape), popartSequence(x.shape()));
      throw popart_worded_error(
          popart,
          xtrain::format("ShapedDropout: incompatible input tensor and dropout shape. {} is "
                         "configured with shape {} which is not broadcastable to the input tensor "
                         "with shape {}.",
                         op.describe(), shapeToString(shape), shapeToString(x.shape())));
    }
    return std::vector<TensorInfo>{x, TensorInfo(DataType::BOOL, shape)};
  };
  d.grad = [](GradContext& g) {
    if (!g.needsGrad(0)) return;
    const TensorId gy = g.gradOutOrZeros(0);
    const float ratio = g.attrs().getFloat("ratio");
    if (g.attrs().getInt("training_mode") == 0 || ratio == 0.0f) {
      g.setGradIn(0, gy);
      return;
    }
    Graph& graph = g.graph();
    Op& fwd = graph.op(g.op().id);
    if (!fwd.hasOutput(1)) {
      const TensorId id = graph.uniqueId(fwd.outputs[0] + "_mask");
      Tensor& t = graph.addTensor(id, TensorInfo(DataType::BOOL, g.attrs().getInts("shape")),
                                  TensorKind::Activation);
      t.producer = fwd.id;
      fwd.outputs.resize(2);
      fwd.outputs[1] = id;
    }
    const DataType t = g.inputInfo(0).dataType();
    Attributes cast;
    cast.set("to", static_cast<int64_t>(dataTypeToOnnx(t)));
    const TensorId mask = g.emit("Cast", {fwd.outputs[1]}, cast, kOnnxDomain);
    const TensorId scaled =
        g.emit("Mul", {mask, g.scalar(1.0f / (1.0f - ratio), t)}, {}, kOnnxDomain);
    g.setGradIn(0, g.emit("Mul", {gy, scaled}, {}, kOnnxDomain));
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
