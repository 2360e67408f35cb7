// ONNX schemas of PopART's ai.graphcore ReduceMedian, Sort, Bucketize and ShapedDropout, so that
// the ONNX checker accepts Builder models that use them and ONNX shape inference
// (Builder::getTensorShape) sees through them. Semantics: src/ir/ops/median_sort_ops.cpp and
// src/ir/ops/random_ops.cpp. Registered by registerGraphcoreSchemas (graphcore_schemas.cpp).
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include "ir/graph.hpp"
#include "ir/onnx/graphcore_schema_parts.hpp"

namespace xtrain::ir::onnxutil {

namespace {

const std::vector<std::string> kSortTypes = {"tensor(float)", "tensor(float16)", "tensor(int32)",
                                             "tensor(int64)", "tensor(uint32)"};

void setInt32Output(onnx::InferenceContext& ctx, size_t i) {
  ctx.getOutputType(i)->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT32);
}

// ReduceMedian's outputs: the reduced shape (axes absent: every axis; PopART's ReduceOp rule).
void medianInference(onnx::InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (ctx.getNumOutputs() > 1) setInt32Output(ctx, 1);
  if (!onnx::hasInputShape(ctx, 0)) return;
  const auto& in = onnx::getInputShape(ctx, 0);
  const int64_t rank = in.dim_size();
  std::vector<bool> reduced(static_cast<size_t>(rank), true);
  if (ctx.getAttribute("axes") != nullptr) {
    std::vector<int64_t> axes;
    onnx::getRepeatedAttribute(ctx, "axes", axes);
    reduced.assign(static_cast<size_t>(rank), false);
    for (int64_t a : axes) {
      const int64_t n = a < 0 ? a + rank : a;
      if (n < 0 || n >= rank) fail_shape_inference("ReduceMedian: axis ", a, " out of range");
      reduced[static_cast<size_t>(n)] = true;
    }
  }
  const bool keep = onnx::getAttribute(ctx, "keepdims", int64_t{1}) != 0;
  onnx::TensorShapeProto out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[static_cast<size_t>(i)]) {
      *out.add_dim() = in.dim(static_cast<int>(i));
    } else if (keep) {
      out.add_dim()->set_dim_value(1);
    }
  }
  for (size_t i = 0; i < ctx.getNumOutputs(); ++i) *onnx::getOutputShape(ctx, i) = out;
}

void registerMedianAndSort() {
  {
    onnx::OpSchema s = graphcoreSchema(
        "ReduceMedian", "The lower median over `axes` and its index in the reduced set.");
    // `axes` (INTS; absent: all axes) is left undeclared: the checker refuses an empty list for a
    // declared INTS attribute, and PopART's empty list (no axes) differs from an absent one.
    s.AllowUncheckedAttributes()
        .Attr("keepdims", "1: keep reduced axes as size 1", onnx::AttributeProto::INT,
              static_cast<int64_t>(1))
        .Input(0, "data", "input", "T")
        .Output(0, "reduced", "the medians", "T")
        .Output(1, "indices", "the medians' positions in their sets", "tensor(int32)",
                onnx::OpSchema::Optional)
        .TypeConstraint("T", kSortTypes, "sortable types")
        .TypeAndShapeInferenceFunction(medianInference);
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = graphcoreSchema("Sort", "X sorted along `axis`, with the values' indices.");
    s.Attr("axis", "the sorted axis", onnx::AttributeProto::INT, static_cast<int64_t>(-1))
        .Attr("descending", "1: largest first", onnx::AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("stable", "1: equal values keep their order", onnx::AttributeProto::INT,
              static_cast<int64_t>(0))
        .Input(0, "X", "input", "T")
        .Output(0, "Values", "the sorted values", "T")
        .Output(1, "Indices", "where each value came from", "tensor(int32)")
        .TypeConstraint("T", kSortTypes, "sortable types")
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
          onnx::propagateShapeAndTypeFromFirstInput(ctx);
          setInt32Output(ctx, 1);
          if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, 1);
        });
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s =
        graphcoreSchema("Bucketize", "The bucket of each element among 1-D boundaries.");
    s.Attr("right", "1: buckets closed on the left", onnx::AttributeProto::INT,
           static_cast<int64_t>(0))
        .Input(0, "input", "values", "T")
        .Input(1, "boundaries", "1-D boundaries", "T")
        .Output(0, "output", "bucket indices", "tensor(int32)")
        .TypeConstraint("T",
                        {"tensor(float)", "tensor(float16)", "tensor(int32)", "tensor(uint32)"},
                        "comparable types")
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
          setInt32Output(ctx, 0);
          if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
        });
    onnx::RegisterSchema(std::move(s));
  }
}

void registerShapedDropout() {
  onnx::OpSchema s = graphcoreSchema(
      "ShapedDropout", "Dropout with a mask of `shape` broadcast over the data, when training.");
  s.Attr("shape", "the mask's shape", onnx::AttributeProto::INTS, true)
      .Attr("ratio", "probability of dropping", onnx::AttributeProto::FLOAT, 0.5f)
      .Input(0, "data", "input", "T")
      .Output(0, "output", "output", "T")
      .Output(1, "mask", "the mask drawn (true: kept)", "tensor(bool)", onnx::OpSchema::Optional)
      .TypeConstraint("T", {"tensor(float)", "tensor(float16)"}, "floating point")
      .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
  onnx::RegisterSchema(std::move(s));
}

}  // namespace

void registerSortAndRandomSchemas() {
  registerMedianAndSort();
  registerShapedDropout();
}

}  // namespace xtrain::ir::onnxutil
