// ONNX schemas of PopART's ai.graphcore Atan2, Swish, GeluErf, NearbyInt, IncrementMod, Slice,
// Subsample, GroupedGather, SequenceSlice and NormalizeImage, so that the Builder's ONNX checker
// accepts them and ONNX shape inference (Builder::getTensorShape) sees through them. Semantics:
// src/ir/ops/atan2_ops.cpp, activation_rounding_ops.cpp, shape_ops.cpp (Slice),
// subsample_ops.cpp, grouped_gather_ops.cpp, sequence_slice_ops.cpp and normalize_image_ops.cpp.
// Registered by registerGraphcoreSchemas (graphcore_schemas.cpp).
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <algorithm>
#include <limits>

#include "ir/graph.hpp"
#include "ir/onnx/graphcore_schema_parts.hpp"

namespace xtrain::ir::onnxutil {

namespace {

const std::vector<std::string> kFloatTypes = {"tensor(float)", "tensor(float16)"};
const std::vector<std::string> kIndexTypes = {"tensor(int32)", "tensor(uint32)", "tensor(int64)"};

void registerAtan2AndIncrementMod() {
  {
    onnx::OpSchema s = graphcoreSchema("Atan2", "theta = atan2(Y, X), with numpy broadcasting.");
    s.Input(0, "Y", "the ordinate", "T")
        .Input(1, "X", "the abscissa", "T")
        .Output(0, "theta", "the angle in (-pi, pi]", "T")
        .TypeConstraint("T", kFloatTypes, "floating point")
        .TypeAndShapeInferenceFunction(broadcastInference);
    onnx::RegisterSchema(std::move(s));
  }
  onnx::OpSchema s = graphcoreSchema("IncrementMod", "Y = fmod(X + increment, modulus).");
  s.Attr("increment", "added to X", onnx::AttributeProto::FLOAT, true)
      .Attr("modulus", "the divisor", onnx::AttributeProto::FLOAT, true)
      .Input(0, "X", "input", "T")
      .Output(0, "Y", "output", "T")
      .TypeConstraint("T", {"tensor(float)", "tensor(float16)", "tensor(int32)", "tensor(uint32)"},
                      "PopART's types")
      .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
  onnx::RegisterSchema(std::move(s));
}

// Slice-1's rule: negative starts/ends count from the end, then both clamp to [0, dim].
void sliceInference(onnx::InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!onnx::hasInputShape(ctx, 0)) return;
  const auto& in = onnx::getInputShape(ctx, 0);
  std::vector<int64_t> starts, ends, axes;
  onnx::getRepeatedAttribute(ctx, "starts", starts);
  onnx::getRepeatedAttribute(ctx, "ends", ends);
  onnx::getRepeatedAttribute(ctx, "axes", axes);
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (ends.size() != starts.size() || axes.size() != starts.size()) {
    fail_shape_inference("Slice: starts, ends and axes must have the same length");
  }
  onnx::TensorShapeProto out = in;
  const int64_t rank = in.dim_size();
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank) fail_shape_inference("Slice: axis ", axes[i], " out of range");
    auto* d = out.mutable_dim(static_cast<int>(a));
    if (!d->has_dim_value()) continue;
    const int64_t dim = d->dim_value();
    const int64_t s = std::clamp<int64_t>(starts[i] < 0 ? starts[i] + dim : starts[i], 0, dim);
    const int64_t e = std::clamp<int64_t>(ends[i] < 0 ? ends[i] + dim : ends[i], 0, dim);
    d->set_dim_value(std::max<int64_t>(0, e - s));
  }
  *onnx::getOutputShape(ctx, 0) = out;
}

// ceil(dim / stride) per axis.
void subsampleInference(onnx::InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!onnx::hasInputShape(ctx, 0)) return;
  const auto& in = onnx::getInputShape(ctx, 0);
  std::vector<int64_t> strides;
  onnx::getRepeatedAttribute(ctx, "strides", strides);
  if (static_cast<int>(strides.size()) != in.dim_size()) {
    fail_shape_inference("Subsample: strides needs one value per axis of the input");
  }
  onnx::TensorShapeProto out;
  for (int i = 0; i < in.dim_size(); ++i) {
    const int64_t st = strides[static_cast<size_t>(i)];
    if (st < 1) fail_shape_inference("Subsample: strides must be positive");
    auto* d = out.add_dim();
    if (in.dim(i).has_dim_value()) d->set_dim_value((in.dim(i).dim_value() + st - 1) / st);
  }
  *onnx::getOutputShape(ctx, 0) = out;
}

void registerSliceAndSubsample() {
  {
    onnx::OpSchema s = graphcoreSchema("Slice", "ONNX's Slice-1 (attributes) in PopART's domain.");
    s.Attr("starts", "first index per axis", onnx::AttributeProto::INTS, true)
        .Attr("ends", "end index per axis (exclusive)", onnx::AttributeProto::INTS, true)
        .Attr("axes", "the sliced axes (default 0..n-1)", onnx::AttributeProto::INTS, false)
        .Input(0, "data", "input", "T")
        .Output(0, "output", "the slice", "T")
        .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
        .TypeAndShapeInferenceFunction(sliceInference);
    onnx::RegisterSchema(std::move(s));
  }
  onnx::OpSchema s = graphcoreSchema("Subsample", "Every strides[i]-th element along axis i.");
  s.Attr("strides", "one positive step per axis", onnx::AttributeProto::INTS, true)
      .Input(0, "X", "input", "T")
      .Output(0, "Y", "the subsampled tensor", "T")
      .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
      .TypeAndShapeInferenceFunction(subsampleInference);
  onnx::RegisterSchema(std::move(s));
}

// data.shape[:axis] + indices.shape[g:] + data.shape[axis+1:], g = 1 with groups, else 0.
void groupedGatherInference(onnx::InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!onnx::hasNInputShapes(ctx, 2)) return;
  const auto& data = onnx::getInputShape(ctx, 0);
  const auto& indices = onnx::getInputShape(ctx, 1);
  const int64_t rank = data.dim_size();
  int64_t axis = onnx::getAttribute(ctx, "axis", int64_t{0});
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) fail_shape_inference("GroupedGather: axis out of range");
  const int first = onnx::getAttribute(ctx, "group_size", int64_t{1}) > 1 ? 1 : 0;
  onnx::TensorShapeProto out;
  for (int64_t i = 0; i < axis; ++i) *out.add_dim() = data.dim(static_cast<int>(i));
  for (int i = first; i < indices.dim_size(); ++i) *out.add_dim() = indices.dim(i);
  for (int64_t i = axis + 1; i < rank; ++i) *out.add_dim() = data.dim(static_cast<int>(i));
  *onnx::getOutputShape(ctx, 0) = out;
}

void registerIndexingOps() {
  {
    onnx::OpSchema s = graphcoreSchema("GroupedGather", "One Gather per group of dimension 0.");
    s.Attr("axis", "the gathered axis of data", onnx::AttributeProto::INT, int64_t{0})
        .Attr("group_size", "the number of groups", onnx::AttributeProto::INT, int64_t{1})
        .Input(0, "data", "[G, ...]", "T")
        .Input(1, "indices", "[G, ...]", "Tind")
        .Output(0, "output", "the gathered slices", "T")
        .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
        .TypeConstraint("Tind", kIndexTypes, "index types")
        .TypeAndShapeInferenceFunction(groupedGatherInference);
    onnx::RegisterSchema(std::move(s));
  }
  onnx::OpSchema s =
      graphcoreSchema("SequenceSlice", "Rows of source copied into a copy of destination.");
  s.Attr("zeroUnused", "1: zero the rows no entry writes", onnx::AttributeProto::INT, int64_t{0})
      .Input(0, "source", "rank >= 2", "T")
      .Input(1, "destination", "rank >= 2", "T")
      .Input(2, "N", "rows per entry", "Tind")
      .Input(3, "sourceOffset", "first source row per entry", "Tind")
      .Input(4, "destinationOffset", "first destination row per entry", "Tind")
      .Output(0, "output", "destination with the rows written", "T")
      .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
      .TypeConstraint("Tind", kIndexTypes, "index types")
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
        onnx::propagateElemTypeFromInputToOutput(ctx, 1, 0);
        if (onnx::hasInputShape(ctx, 1)) {
          *onnx::getOutputShape(ctx, 0) = onnx::getInputShape(ctx, 1);
        }
      });
  onnx::RegisterSchema(std::move(s));
}

void registerNormalizeImage() {
  onnx::OpSchema s = graphcoreSchema(
      "NormalizeImage", "(image * scale - offsets) * scales over 3 channels, padded to 4.");
  s.Attr("scale", "applied to the image first", onnx::AttributeProto::FLOAT, 1.0f)
      .Input(0, "image", "[..., 3]", "Timg")
      .Input(1, "offsets", "[3]", "T")
      .Input(2, "scales", "[3]", "T")
      .Output(0, "output", "[..., 4]", "T")
      .TypeConstraint("Timg", {"tensor(float)", "tensor(float16)", "tensor(uint8)"}, "image types")
      .TypeConstraint("T", kFloatTypes, "floating point")
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
        onnx::propagateElemTypeFromInputToOutput(ctx, 1, 0);
        if (!onnx::hasInputShape(ctx, 0)) return;
        onnx::TensorShapeProto out = onnx::getInputShape(ctx, 0);
        if (out.dim_size() < 2) fail_shape_inference("NormalizeImage: the image needs rank >= 2");
        out.mutable_dim(out.dim_size() - 1)->set_dim_value(4);
        *onnx::getOutputShape(ctx, 0) = out;
      });
  onnx::RegisterSchema(std::move(s));
}

}  // namespace

void registerGraphcoreMiscSchemas() {
  registerFloatUnarySchema("Swish", "Y = X sigmoid(X).");
  registerFloatUnarySchema("GeluErf", "Y = X (1 + erf(X / sqrt 2)) / 2.");
  registerFloatUnarySchema("NearbyInt", "Y = X rounded to the nearest integer, halves to even.");
  registerAtan2AndIncrementMod();
  registerSliceAndSubsample();
  registerIndexingOps();
  registerNormalizeImage();
}

}  // namespace xtrain::ir::onnxutil
