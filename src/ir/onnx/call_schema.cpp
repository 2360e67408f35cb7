// The ONNX schemas of PopART's ai.graphcore Call (a call of the subgraph in attribute `callee`) and
// PackedDataBlock (its `callback` called on unpacked sequences), so that the ONNX checker accepts
// models with these nodes and ONNX shape inference (the Builder's getTensorShape) infers their
// outputs from the subgraph's.
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

// PackedDataBlock's output: [resultSize] and the callback output's dimensions after its first two
// (a batch of sequences and their rows), of its type. The callback's input k is
// [callbackBatchSize, maxSequenceLengths[k]] and data input 3k's dimensions after its first.
void packedDataBlockInference(onnx::InferenceContext& ctx) {
  onnx::GraphInferencer* callback = ctx.getGraphAttributeInferencer("callback");
  const onnx::AttributeProto* maxLengths = ctx.getAttribute("maxSequenceLengths");
  const onnx::AttributeProto* resultSize = ctx.getAttribute("resultSize");
  const onnx::AttributeProto* batch = ctx.getAttribute("callbackBatchSize");
  if (callback == nullptr || maxLengths == nullptr || resultSize == nullptr || batch == nullptr) {
    return;
  }
  std::vector<onnx::TypeProto> types;
  for (int k = 0; k < maxLengths->ints_size(); ++k) {
    const size_t data = 3 * static_cast<size_t>(k);
    if (data >= ctx.getNumInputs() || ctx.getInputType(data) == nullptr ||
        !ctx.getInputType(data)->tensor_type().has_shape()) {
      return;
    }
    const auto& given = ctx.getInputType(data)->tensor_type();
    onnx::TypeProto t;
    t.mutable_tensor_type()->set_elem_type(given.elem_type());
    auto* shape = t.mutable_tensor_type()->mutable_shape();
    shape->add_dim()->set_dim_value(batch->i());
    shape->add_dim()->set_dim_value(maxLengths->ints(k));
    for (int d = 1; d < given.shape().dim_size(); ++d) *shape->add_dim() = given.shape().dim(d);
    types.push_back(std::move(t));
  }
  std::vector<const onnx::TypeProto*> typePtrs;
  for (const auto& t : types) typePtrs.push_back(&t);
  const std::vector<const onnx::TensorProto*> data(types.size(), nullptr);
  const std::vector<const onnx::TypeProto*> outs = callback->doInferencing(typePtrs, data);
  if (outs.empty() || outs[0] == nullptr || !outs[0]->tensor_type().has_shape()) return;
  const auto& out = outs[0]->tensor_type();
  auto* result = ctx.getOutputType(0)->mutable_tensor_type();
  result->set_elem_type(out.elem_type());
  auto* shape = result->mutable_shape();
  shape->add_dim()->set_dim_value(resultSize->i());
  for (int d = 2; d < out.shape().dim_size(); ++d) *shape->add_dim() = out.shape().dim(d);
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

  onnx::OpSchema p = graphcoreSchema(
      "PackedDataBlock",
      "Unpacks the packed sequences of its inputs, runs the graph `callback` on callbackBatchSize "
      "of them at a time and packs its results (docs/operators.md).");
  p.Attr("callback", "the graph run on each batch of sequences", onnx::AttributeProto::GRAPH, true)
      .Attr("maxSequenceLengths", "the longest sequence of each packed input",
            onnx::AttributeProto::INTS, true)
      .Attr("resultSize", "the rows of the output", onnx::AttributeProto::INT, true)
      .Attr("callbackBatchSize", "sequences a callback call takes", onnx::AttributeProto::INT, true)
      .Input(0, "inputs",
             "data, offsets and lengths of each packed input, then the result's offsets "
             "and lengths",
             "T", onnx::OpSchema::Variadic, false, 5)
      .Output(0, "result", "the packed results", "T1")
      .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
      .TypeConstraint("T1", onnx::OpSchema::all_tensor_types(), "any tensor type")
      .TypeAndShapeInferenceFunction(packedDataBlockInference);
  onnx::RegisterSchema(std::move(p));
}

}  // namespace xtrain::ir::onnxutil
