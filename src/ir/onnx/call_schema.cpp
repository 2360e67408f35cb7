// The ONNX schema of PopART's ai.graphcore Call (a call of the subgraph in attribute `callee`), so
// that the ONNX checker accepts models with Call nodes and ONNX shape inference (the Builder's
// getTensorShape) infers their outputs from the callee's.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include "ir/graph.hpp"
#include "ir/onnx/graphcore_schema_parts.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"

namespace xtrain::ir::onnxutil {

namespace {

// The callee's outputs, inferred from the types of the Call's inputs.
void callInference(onnx::InferenceContext& ctx) {
  onnx::GraphInferencer* callee = ctx.getGraphAttributeInferencer("callee");
  if (callee == nullptr) return;
  std::vector<const onnx::TypeProto*> types;
  std::vector<const onnx::TensorProto*> data;
  for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
    types.push_back(ctx.getInputType(i));
    data.push_back(ctx.getInputData(i));
  }
  const std::vector<const onnx::TypeProto*> outs = callee->doInferencing(types, data);
  for (size_t i = 0; i < outs.size() && i < ctx.getNumOutputs(); ++i) {
    if (outs[i] != nullptr) *ctx.getOutputType(i) = *outs[i];
  }
}

}  // namespace

void registerCallSchema() {
  onnx::OpSchema s =
      graphcoreSchema("Call", "Runs the graph `callee` on the inputs; its outputs are the op's.");
  s.Attr("callee", "the called graph", onnx::AttributeProto::GRAPH, true)
      .Input(0, "inputs", "the callee's inputs, in order", "T", onnx::OpSchema::Variadic, false, 0)
      .Output(0, "outputs", "the callee's outputs, in order", "T", onnx::OpSchema::Variadic, false,
              0)
      .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
      .TypeAndShapeInferenceFunction(callInference);
  onnx::RegisterSchema(std::move(s));
}

}  // namespace xtrain::ir::onnxutil
