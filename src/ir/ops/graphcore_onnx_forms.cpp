// PopART's ai.graphcore forms of ai.onnx ops, each the ONNX op with one difference:
//  - Reshape(data), attribute `shape`: ONNX's Reshape with the target shape an attribute rather
//    than an input (0 copies the input's dimension, one -1 is inferred, as in ONNX).
//  - BatchNormalization: ONNX's BatchNormalization-9 (inputs X, scale, B, mean, var; outputs Y and,
//    when training, running mean and variance, saved mean and variance) whose running variance is
//    the unbiased estimate (PyTorch's: the batch variance times M / (M - 1)) rather than ONNX's
//    population variance; Y is normalised with the population variance either way.
// canonicalize turns each into its ai.onnx op (same type; ONNX opset 9 for BatchNormalization),
// whose canonical form, shape rules, gradient and kernel it then has.
#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

const OpDef& onnxDef(const std::string& type) {
  const OpDef* def = OpRegistry::instance().find(kOnnxDomain, type);
  if (def == nullptr) throw internal_error("ai.onnx {} is not registered", type);
  return *def;
}

// The ai.graphcore op `type` as its ai.onnx namesake at `opset`, after `adapt` has set the
// attributes that make up the difference. (The ai.onnx definition is looked up when an op is
// added, not here: registration order across files is unspecified.)
OpDef onnxForm(OpDef d, int opset, void (*adapt)(Op&)) {
  const std::string type = d.type;
  d.domain = kGraphcoreDomain;
  d.rewrittenTo = std::string(kOnnxDomain) + "::" + type;  // another domain: "domain::type"
  d.canonicalize = [type, opset, adapt](Op& op, const Graph& graph) {
    adapt(op);
    op.domain = kOnnxDomain;
    op.opset = opset;
    op.attrs.setOwner(op.describe());
    const OpDef& def = onnxDef(type);
    if (def.canonicalize) def.canonicalize(op, graph);
  };
  d.infer = [type](const ShapeContext& ctx) { return onnxDef(type).infer(ctx); };
  // Never called (the canonical op is the ai.onnx one, whose gradient autodiff finds); set so that
  // the op lists show that the op has a gradient.
  d.grad = [type](GradContext& g) { onnxDef(type).grad(g); };
  return d;
}

XT_REGISTER_OP(onnxForm(OpDef{.type = "Reshape"}, 13, [](Op& op) {
  if (!op.attrs.has("shape")) throw error("{}: needs the attribute 'shape'", op.describe());
}));

XT_REGISTER_OP(onnxForm(
    OpDef{.type = "BatchNormalization",
          .minInputs = 5,
          .maxInputs = 5,
          .minOutputs = 1,
          .maxOutputs = 5},
    9, [](Op& op) {
      if (op.attrs.has("running_variance")) {
        throw error("{}: running_variance is not an attribute of ai.graphcore BatchNormalization",
                    op.describe());
      }
      op.attrs.set("running_variance", std::string("unbiased"));
    }));

}  // namespace
}  // namespace xtrain::ir
