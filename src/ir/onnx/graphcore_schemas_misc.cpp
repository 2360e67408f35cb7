// ONNX schemas of PopART's ai.graphcore Atan2, Swish, GeluErf, NearbyInt, IncrementMod, Slice,
// Reshape, BatchNormalization, LSTM, Subsample, GroupedGather, SequenceSlice and NormalizeImage, so
// that the Builder's ONNX checker accepts them and ONNX shape inference (Builder::getTensorShape)
// sees through them. Semantics: src/ir/ops/atan2_ops.cpp, activation_rounding_ops.cpp,
// shape_ops.cpp (Slice), subsample_ops.cpp, grouped_gather_ops.cpp, sequence_slice_ops.cpp and
// normalize_image_ops.cpp. Registered by registerGraphcoreSchemas (graphcore_schemas.cpp).
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

// Reshape's `shape` resolved against the input: 0 copies the input's dimension, one -1 takes the
// rest of the elements (when every other dimension is known).
void reshapeInference(onnx::InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  std::vector<int64_t> shape;
  onnx::getRepeatedAttribute(ctx, "shape", shape);
  const bool known = onnx::hasInputShape(ctx, 0);
  onnx::TensorShapeProto out;
  int64_t total = -1, product = 1;
  int minusOne = -1;
  if (known) {
    const auto& in = onnx::getInputShape(ctx, 0);
    total = 1;
    for (int i = 0; i < in.dim_size(); ++i) {
      total = in.dim(i).has_dim_value() && total >= 0 ? total * in.dim(i).dim_value() : -1;
    }
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    auto* d = out.add_dim();
    int64_t v = shape[i];
    if (v == 0 && known) {
      const auto& in = onnx::getInputShape(ctx, 0);
      if (static_cast<int>(i) >= in.dim_size()) fail_shape_inference("Reshape: 0 beyond the rank");
      v = in.dim(static_cast<int>(i)).has_dim_value() ? in.dim(static_cast<int>(i)).dim_value()
                                                      : -2;
    }
    if (v == -1) {
      minusOne = static_cast<int>(i);
    } else if (v >= 0) {
      d->set_dim_value(v);
      product *= v;
    } else {
      product = -1;  // unknown
    }
  }
  if (minusOne >= 0 && total >= 0 && product > 0) {
    out.mutable_dim(minusOne)->set_dim_value(total / product);
  }
  *onnx::getOutputShape(ctx, 0) = out;
}

// BatchNormalization: Y as X; the statistics as the scale input ([C]).
void batchNormInference(onnx::InferenceContext& ctx) {
  onnx::propagateShapeAndTypeFromFirstInput(ctx);
  for (size_t i = 1; i < ctx.getNumOutputs(); ++i) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 1, i);
    if (onnx::hasInputShape(ctx, 1)) onnx::propagateShapeFromInputToOutput(ctx, 1, i);
  }
}

// PopART's LSTM: Output [S, B, H] (or [B, H] without the full sequence), CellState [B, H], from
// X [S, B, I] and Weights [4, I + H, H].
void popartLstmInference(onnx::InferenceContext& ctx) {
  for (size_t i = 0; i < ctx.getNumOutputs(); ++i)
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, i);
  if (!onnx::hasNInputShapes(ctx, 2)) return;
  const auto& x = onnx::getInputShape(ctx, 0);
  const auto& w = onnx::getInputShape(ctx, 1);
  if (x.dim_size() != 3 || w.dim_size() != 3)
    fail_shape_inference("LSTM: X and Weights need rank 3");
  const bool full = onnx::getAttribute(ctx, "output_full_sequence", int64_t{1}) != 0;
  onnx::TensorShapeProto out, cell;
  if (full) *out.add_dim() = x.dim(0);
  for (auto* s : {&out, &cell}) {
    *s->add_dim() = x.dim(1);
    *s->add_dim() = w.dim(2);
  }
  *onnx::getOutputShape(ctx, 0) = out;
  if (ctx.getNumOutputs() > 1) *onnx::getOutputShape(ctx, 1) = cell;
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
  {
    onnx::OpSchema s = graphcoreSchema("Reshape", "ONNX's Reshape with the shape an attribute.");
    s.Attr("shape", "the target shape (0: copy, -1: inferred)", onnx::AttributeProto::INTS, true)
        .Input(0, "data", "input", "T")
        .Output(0, "reshaped", "data with the new shape", "T")
        .TypeConstraint("T", onnx::OpSchema::all_tensor_types(), "any tensor type")
        .TypeAndShapeInferenceFunction(reshapeInference);
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s = graphcoreSchema(
        "BatchNormalization", "ONNX's BatchNormalization-9 with an unbiased running variance.");
    s.Attr("epsilon", "added to the variance", onnx::AttributeProto::FLOAT, 1e-5f)
        .Attr("momentum", "of the running statistics", onnx::AttributeProto::FLOAT, 0.9f)
        .Input(0, "X", "[N, C, D1, ...]", "T")
        .Input(1, "scale", "[C]", "T")
        .Input(2, "B", "[C]", "T")
        .Input(3, "mean", "[C]", "T")
        .Input(4, "var", "[C]", "T")
        .Output(0, "Y", "X normalised", "T")
        .Output(1, "mean", "running mean", "T", onnx::OpSchema::Optional)
        .Output(2, "var", "running variance", "T", onnx::OpSchema::Optional)
        .Output(3, "saved_mean", "batch mean", "T", onnx::OpSchema::Optional)
        .Output(4, "saved_var", "batch variance", "T", onnx::OpSchema::Optional)
        .TypeConstraint("T", kFloatTypes, "FLOAT or FLOAT16")
        .TypeAndShapeInferenceFunction(batchNormInference);
    onnx::RegisterSchema(std::move(s));
  }
  {
    onnx::OpSchema s =
        graphcoreSchema("LSTM", "PopART's LSTM (gates forget, input, cell, output).");
    s.Attr("output_full_sequence", "1: every step's output; 0: the last", onnx::AttributeProto::INT,
           int64_t{1})
        .Input(0, "X", "[S, B, I]", "T")
        .Input(1, "Weights", "[4, I + H, H]", "T")
        .Input(2, "Bias", "[4, H]", "T", onnx::OpSchema::Optional)
        .Input(3, "InitialState", "[2, B, H]", "T", onnx::OpSchema::Optional)
        .Input(4, "SeqLengths", "[B]", "T1", onnx::OpSchema::Optional)
        .Output(0, "Output", "[S, B, H] or [B, H]", "T")
        .Output(1, "CellState", "[B, H]", "T", onnx::OpSchema::Optional)
        .TypeConstraint("T", kFloatTypes, "FLOAT or FLOAT16")
        .TypeConstraint("T1", {"tensor(int32)"}, "sequence lengths")
        .TypeAndShapeInferenceFunction(popartLstmInference);
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
