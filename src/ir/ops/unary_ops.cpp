// Elementwise unary ops (Neg, Exp, Log, Sqrt, Relu, Sigmoid, Tanh, Identity, Cast, ai.graphcore
// Gelu), Pow (binary, but a math function like the others), Dropout, and the ai.xtrain grad ops
// they need.
//
// Gradients: Neg, Identity, Exp (gy*y) and Log (gy/x) compose existing ops; Relu, Sqrt, Sigmoid,
// Tanh and Gelu use one-pass ai.xtrain grad ops (composing would take 2-4 kernels and temporaries
// each); Pow uses PowGradBase / PowGradExponent, which also handle a zero base exactly.
#include <optional>
#include <string>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

void requireFloat(const ShapeContext& ctx, size_t i) {
  const TensorInfo& in = ctx.input(i);
  if (!isFloatingPoint(in.dataType())) {
    ctx.fail("input {} is {}, expected a floating-point tensor", i, in.toString());
  }
}

// y has the type and shape of x (input 0); x must be floating point.
std::vector<TensorInfo> inferSameFloat(const ShapeContext& ctx) {
  requireFloat(ctx, 0);
  return {ctx.input(0)};
}

OpDef unary(const std::string& type, std::function<void(GradContext&)> grad,
            const std::string& domain = kOnnxDomain) {
  OpDef d{.type = type, .domain = domain};
  d.infer = inferSameFloat;
  d.grad = std::move(grad);
  return d;
}

// A grad op (gy, z...) -> gx: gx has gy's info; every other input must have gy's shape.
OpDef elementwiseGrad(const std::string& type, int numInputs = 2) {
  OpDef d{.type = type, .domain = kXtrainDomain, .minInputs = numInputs, .maxInputs = numInputs};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    for (size_t i = 1; i < ctx.numInputs(); ++i) {
      if (ctx.input(i).shape() != gy.shape()) {
        ctx.fail("input {} is {} but the incoming gradient is {}; expected equal shapes", i,
                 ctx.input(i).toString(), gy.toString());
      }
    }
    return std::vector<TensorInfo>{gy};
  };
  return d;
}

XT_REGISTER_OP([] {
  OpDef d{.type = "Neg"};
  d.infer = [](const ShapeContext& ctx) { return std::vector<TensorInfo>{ctx.input(0)}; };
  d.grad = [](GradContext& g) { g.setGradIn(0, g.emit("Neg", {g.gradOut(0)}, {}, kOnnxDomain)); };
  return d;
}());

XT_REGISTER_OP([] {
  OpDef d{.type = "Identity"};
  d.infer = [](const ShapeContext& ctx) { return std::vector<TensorInfo>{ctx.input(0)}; };
  d.grad = [](GradContext& g) { g.setGradIn(0, g.gradOut(0)); };
  return d;
}());

// dy/dx = y.
XT_REGISTER_OP(unary("Exp", [](GradContext& g) {
  g.setGradIn(0, g.emit("Mul", {g.gradOut(0), g.output(0)}, {}, kOnnxDomain));
}));

// dy/dx = 1/x.
XT_REGISTER_OP(unary("Log", [](GradContext& g) {
  g.setGradIn(0, g.emit("Div", {g.gradOut(0), g.input(0)}, {}, kOnnxDomain));
}));

// The one-pass grad ops take (gy, y) except GeluGrad, which needs x.
XT_REGISTER_OP(unary("Sqrt", [](GradContext& g) {
  g.setGradIn(0, g.emit("SqrtGrad", {g.gradOut(0), g.output(0)}));
}));
XT_REGISTER_OP(unary("Relu", [](GradContext& g) {
  g.setGradIn(0, g.emit("ReluGrad", {g.gradOut(0), g.output(0)}));
}));
XT_REGISTER_OP(unary("Sigmoid", [](GradContext& g) {
  g.setGradIn(0, g.emit("SigmoidGrad", {g.gradOut(0), g.output(0)}));
}));
XT_REGISTER_OP(unary("Tanh", [](GradContext& g) {
  g.setGradIn(0, g.emit("TanhGrad", {g.gradOut(0), g.output(0)}));
}));
// PopART's Gelu: the tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
XT_REGISTER_OP(unary(
    "Gelu",
    [](GradContext& g) {
      g.setGradIn(0, g.emit("GeluGrad", {g.gradOut(0), g.input(0)}));
    },
    kGraphcoreDomain));

// ONNX opset 20's Gelu in xtrain's domain (models here are opset <= 17, where ai.onnx has no Gelu):
// attribute approximate "none" (default, 0.5x(1 + erf(x/sqrt(2)))) or "tanh" (as ai.graphcore
// Gelu). The fusion pass (src/ir/fusion) writes it for the GELU subgraphs exporters emit; its
// gradient is one GeluGrad with the same attribute.
XT_REGISTER_OP([] {
  OpDef d{.type = "Gelu", .domain = kXtrainDomain};
  d.infer = [](const ShapeContext& ctx) {
    const std::string approximate = ctx.attrs().getString("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      ctx.fail("attribute 'approximate' is \"{}\", expected \"none\" or \"tanh\"", approximate);
    }
    return inferSameFloat(ctx);
  };
  d.grad = [](GradContext& g) {
    Attributes a;
    a.set("approximate", g.attrs().getString("approximate", "none"));
    g.setGradIn(0, g.emit("GeluGrad", {g.gradOut(0), g.input(0)}, a));
  };
  return d;
}());

// gx = gy / (2y); gx = gy * (y > 0); gx = gy * y(1-y); gx = gy * (1-y^2); gx = gy * gelu'(x)
// (GeluGrad's attribute approximate, "tanh" when absent as for ai.graphcore Gelu, or "none").
XT_REGISTER_OP(elementwiseGrad("SqrtGrad"));
XT_REGISTER_OP(elementwiseGrad("ReluGrad"));
XT_REGISTER_OP(elementwiseGrad("SigmoidGrad"));
XT_REGISTER_OP(elementwiseGrad("TanhGrad"));
XT_REGISTER_OP(elementwiseGrad("GeluGrad"));

// Cast(x) with attribute `to` (an ONNX TensorProto.DataType number). The gradient of a float->float
// cast casts back; casts from or to integer types carry no gradient.
XT_REGISTER_OP([] {
  OpDef d{.type = "Cast"};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& in = ctx.input(0);
    const int64_t to = ctx.attrs().getInt("to");
    DataType t = DataType::UNDEFINED;
    try {
      t = dataTypeFromOnnx(static_cast<int>(to));
    } catch (const error&) {
      ctx.fail("attribute 'to' is {}, which is not an ONNX tensor element type", to);
    }
    return std::vector<TensorInfo>{TensorInfo(t, in.shape())};
  };
  d.grad = [](GradContext& g) {
    const DataType from = g.inputInfo(0).dataType();
    if (!isFloatingPoint(from) || !isFloatingPoint(g.outputInfo(0).dataType())) return;
    Attributes a;
    a.set("to", static_cast<int64_t>(dataTypeToOnnx(from)));
    g.setGradIn(0, g.emit("Cast", {g.gradOut(0)}, a, kOnnxDomain));
  };
  return d;
}());

// Pow(a, b) = a^b with numpy broadcasting. Since opset 12 the exponent may have another (e.g.
// integer) type than the base; the output has the base's type. Gradients are computed at the
// broadcast shape and summed down to each input's shape.
XT_REGISTER_OP([] {
  OpDef d{.type = "Pow", .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    requireFloat(ctx, 0);
    const TensorInfo& a = ctx.input(0);
    const TensorInfo& b = ctx.input(1);
    return std::vector<TensorInfo>{
        TensorInfo(a.dataType(), broadcastShapes(ctx, a.shape(), b.shape()))};
  };
  d.grad = [](GradContext& g) {
    const TensorId& gy = g.gradOut(0);
    if (g.needsGrad(0)) {
      TensorId ga = g.emit("PowGradBase", {gy, g.input(0), g.input(1), g.output(0)});
      g.setGradIn(0, g.reduceToShape(ga, g.inputInfo(0).shape()));
    }
    if (g.needsGrad(1)) {
      TensorId gb = g.emit("PowGradExponent", {gy, g.input(0), g.output(0)});
      g.setGradIn(1, g.reduceToShape(gb, g.inputInfo(1).shape()));
    }
  };
  return d;
}());

// The broadcast inputs a (and b) of a Pow grad op must broadcast to gy's shape.
void checkBroadcastsTo(const ShapeContext& ctx, size_t i, const Shape& target) {
  if (broadcastShapes(ctx, ctx.input(i).shape(), target) != target) {
    ctx.fail("input {} is {}, which does not broadcast to the gradient's shape {}", i,
             ctx.input(i).toString(), shapeToString(target));
  }
}

// PowGradBase(gy, a, b, y) = gy * b * a^(b-1), at gy's (the broadcast) shape.
XT_REGISTER_OP([] {
  OpDef d = elementwiseGrad("PowGradBase", 4);
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    checkBroadcastsTo(ctx, 1, gy.shape());
    checkBroadcastsTo(ctx, 2, gy.shape());
    if (ctx.input(3).shape() != gy.shape()) ctx.fail("y and gy have different shapes");
    return std::vector<TensorInfo>{gy};
  };
  return d;
}());

// PowGradExponent(gy, a, y) = gy * y * log(a), at gy's shape; 0 where a == 0.
XT_REGISTER_OP([] {
  OpDef d = elementwiseGrad("PowGradExponent", 3);
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    checkBroadcastsTo(ctx, 1, gy.shape());
    if (ctx.input(2).shape() != gy.shape()) ctx.fail("y and gy have different shapes");
    return std::vector<TensorInfo>{gy};
  };
  return d;
}());

// Removes constant scalar input `index` (Dropout's ratio or training_mode) and returns its value,
// or nothing when the input is absent. moveConstInputToAttr is for integer lists; these are
// scalars.
std::optional<double> takeConstScalarInput(Op& op, const Graph& graph, size_t index,
                                           const char* what) {
  const Tensor* input = constInputTensor(op, graph, index, what);
  if (input == nullptr) return std::nullopt;
  const Tensor& t = *input;
  if (t.value->nelms() != 1) {
    throw error("{}: input {} ('{}', used as '{}') is {}, expected a scalar", op.describe(), index,
                t.id, what, t.info.toString());
  }
  const double v = t.value->getAsDouble(0);
  op.inputs[index].clear();
  return v;
}

// The mask type of a Dropout: the data's type at opsets 7-9, BOOL from opset 10 (and for internal
// ops, opset 0).
DataType dropoutMaskType(const Op& op, DataType dataType) {
  return op.opset > 0 && op.opset < 10 ? dataType : DataType::BOOL;
}

// Dropout. Canonical form: one input (data), attributes
//   ratio          float, default 0.5: the probability of dropping an element;
//   training_mode  int 0/1: 0 makes the op the identity (mask all true);
//   seed           int, only when given (opset 12+): mixed into the op's execution seed, so two
//                  seeds give two masks; the masks stay reproducible from the session's seed.
// The opset forms: 7-9 ratio attribute and an optional mask output of the data's type (1.0 kept,
// 0.0 dropped); 10-11 the same with a BOOL mask; 12+ ratio and training_mode as optional inputs
// (constant ones are moved into the attributes; ONNX's default training_mode is 0) and the seed
// attribute. Opsets 7-11 have no notion of inference mode (opset 6's is_test, if present, is
// honoured and dropped): a Dropout there is meant to drop when training (as in PopART, where
// Dropout is active in a training session), so canonicalize sets training_mode = 1 for opset < 12.
// Outputs: output, and the optional mask (true = kept). When training, survivors are scaled by
// 1/(1-ratio). The kernel draws its bits from KernelIO::seed with a counter-based hash, so a given
// seed gives the same mask whatever the threading.
//
// Gradient: gx = gy * mask / (1-ratio) (ai.xtrain DropoutGrad), which needs the mask the forward
// pass drew. A backward op cannot redraw it (each op gets its own seed, and nothing guarantees that
// the forward and backward phases run with the same execution seed), and canonicalize cannot add
// outputs (addOp assigns them afterwards), so when the forward op has no mask output the grad
// function gives it one: an Activation tensor (of the mask type of the op's opset) produced by the
// forward op. It costs one byte (opset 10+) per element, only for ops that are differentiated while
// training.
TensorId ensureDropoutMask(GradContext& g) {
  Graph& graph = g.graph();
  Op& fwd = graph.op(g.op().id);
  if (fwd.hasOutput(1)) return fwd.outputs[1];
  const TensorId id = graph.uniqueId(fwd.outputs[0] + "_mask");
  const TensorInfo& y = g.outputInfo(0);
  Tensor& t = graph.addTensor(id, TensorInfo(dropoutMaskType(fwd, y.dataType()), y.shape()),
                              TensorKind::Activation);
  t.producer = fwd.id;
  fwd.outputs.resize(2);
  fwd.outputs[1] = id;
  return id;
}

XT_REGISTER_OP([] {
  OpDef d{.type = "Dropout", .maxInputs = 3, .maxOutputs = 2};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (auto r = takeConstScalarInput(op, graph, 1, "ratio")) {
      op.attrs.set("ratio", static_cast<float>(*r));
    } else if (!op.attrs.has("ratio")) {
      op.attrs.set("ratio", 0.5f);
    } else {
      op.attrs.set("ratio", op.attrs.getFloat("ratio"));  // an int-typed attribute becomes a float
    }
    const bool isTest = op.attrs.getInt("is_test", 0) != 0;  // opset 6 and earlier
    op.attrs.erase("is_test");
    if (auto m = takeConstScalarInput(op, graph, 2, "training_mode")) {
      op.attrs.set("training_mode", static_cast<int64_t>(*m != 0.0));
    } else if (!op.attrs.has("training_mode")) {
      const bool legacy = op.opset > 0 && op.opset < 12;
      op.attrs.set("training_mode", static_cast<int64_t>(legacy && !isTest));
    }
    if (op.attrs.has("seed")) op.attrs.set("seed", op.attrs.getInt("seed"));
  };
  d.infer = [](const ShapeContext& ctx) {
    requireFloat(ctx, 0);
    const float ratio = ctx.attrs().getFloat("ratio");
    if (!(ratio >= 0.0f && ratio < 1.0f)) {
      ctx.fail("ratio is {}, expected a value in [0, 1)", ratio);
    }
    const int64_t mode = ctx.attrs().getInt("training_mode");
    if (mode != 0 && mode != 1) ctx.fail("training_mode is {}, expected 0 or 1", mode);
    const TensorInfo& x = ctx.input(0);
    return std::vector<TensorInfo>{x,
                                   TensorInfo(dropoutMaskType(ctx.op(), x.dataType()), x.shape())};
  };
  d.grad = [](GradContext& g) {
    const TensorId gy = g.gradOutOrZeros(0);
    const float ratio = g.attrs().getFloat("ratio");
    if (g.attrs().getInt("training_mode") == 0 || ratio == 0.0f) {
      g.setGradIn(0, gy);
      return;
    }
    Attributes a;
    a.set("ratio", ratio);
    g.setGradIn(0, g.emit("DropoutGrad", {gy, ensureDropoutMask(g)}, a));
  };
  return d;
}());

// DropoutGrad(gy, mask) with attribute ratio: gx = mask ? gy / (1-ratio) : 0. The mask is BOOL or
// (opsets 7-9) of gy's type, nonzero where kept.
XT_REGISTER_OP([] {
  OpDef d = elementwiseGrad("DropoutGrad");
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& gy = ctx.input(0);
    const TensorInfo& mask = ctx.input(1);
    if ((mask.dataType() != DataType::BOOL && mask.dataType() != gy.dataType()) ||
        mask.shape() != gy.shape()) {
      ctx.fail("mask is {}, expected BOOL{} or {}{}", mask.toString(), shapeToString(gy.shape()),
               dataTypeName(gy.dataType()), shapeToString(gy.shape()));
    }
    return std::vector<TensorInfo>{gy};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
