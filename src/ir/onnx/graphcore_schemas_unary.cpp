// ONNX schemas of the ai.graphcore elementwise and layout ops of src/ir/ops/math_unary_ops.cpp,
// bitwise_ops.cpp and depth_space_ops.cpp (Expm1, Log1p, Bitwise*, DepthToSpace), so that the
// Builder's ONNX checker and shape inference see through them. Called by graphcore_schemas.cpp.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include "ir/graph.hpp"
#include "ir/onnx/graphcore_schema_parts.hpp"

namespace xtrain::ir::onnxutil {

namespace {

const std::vector<std::string> kIntegerTypes = {"tensor(int8)",   "tensor(uint8)", "tensor(int16)",
                                                "tensor(uint16)", "tensor(int32)", "tensor(uint32)",
                                                "tensor(int64)",  "tensor(uint64)"};

void registerBitwise() {
  {
    onnx::OpSchema s = graphcoreSchema("BitwiseNot", "Y = ~X.");
    s.Input(0, "X", "input", "T")
        .Output(0, "Y", "output", "T")
        .TypeConstraint("T", kIntegerTypes, "integer")
        .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
  for (const char* name : {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseXnor"}) {
    onnx::OpSchema s = graphcoreSchema(name, "Z = X op Y, bitwise, with numpy broadcasting.");
    s.Input(0, "X", "first operand", "T")
        .Input(1, "Y", "second operand", "T")
        .Output(0, "Z", "result", "T")
        .TypeConstraint("T", kIntegerTypes, "integer")
        .TypeAndShapeInferenceFunction(broadcastInference);
    onnx::RegisterSchema(std::move(s));
  }
}

// [N, C, H, W] -> [N, C/b^2, H b, W b] where the input's dimensions are known.
void depthToSpaceInference(onnx::InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!onnx::hasInputShape(ctx, 0)) return;
  const auto& in = onnx::getInputShape(ctx, 0);
  if (in.dim_size() != 4) fail_shape_inference("DepthToSpace: the input must have rank 4");
  const int64_t b = onnx::getAttribute(ctx, "blocksize", 0);
  if (b < 1) fail_shape_inference("DepthToSpace: blocksize must be positive");
  auto* out = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();
  const int64_t factor[4] = {1, 1, b, b};
  for (int i = 0; i < 4; ++i) {
    auto* d = out->add_dim();
    const auto& src = in.dim(i);
    if (!src.has_dim_value()) continue;
    d->set_dim_value(i == 1 ? src.dim_value() / (b * b) : src.dim_value() * factor[i]);
  }
}

}  // namespace

void registerGraphcoreUnarySchemas() {
  registerFloatUnarySchema("Expm1", "Y = exp(X) - 1.");
  registerFloatUnarySchema("Log1p", "Y = log(1 + X).");
  registerBitwise();
  onnx::OpSchema s = graphcoreSchema("DepthToSpace", "ONNX's DepthToSpace-11 in PopART's domain.");
  s.Attr("blocksize", "block size", onnx::AttributeProto::INT, true)
      .Attr("mode", "\"DCR\" or \"CRD\"", onnx::AttributeProto::STRING, std::string("DCR"))
      .Input(0, "input", "[N, C, H, W]", "T")
      .Output(0, "output", "[N, C/b^2, H b, W b]", "T")
      .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
      .TypeAndShapeInferenceFunction(depthToSpaceInference);
  onnx::RegisterSchema(std::move(s));
}

}  // namespace xtrain::ir::onnxutil
