// The Builder methods of PopART's ai.graphcore Atan2, Swish, GeluErf, NearbyInt, IncrementMod,
// Slice, Reshape, BatchNormalization, LSTM, Subsample, GroupedGather, SequenceSlice and
// NormalizeImage, and of ai.onnx Mean, with PopART's names, argument order and defaults. Each is
// one BuilderImpl::node call; the op registry gives the semantics, so only what the ONNX checker
// cannot name well (a stride, a modulus, list lengths) is checked here, naming the method.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "ir/builder/builder_impl.hpp"

namespace xtrain {

#define XT_GC_UNARY(method, type)                                                                \
  TensorId AiGraphcoreOpset1::method(const std::vector<TensorId>& args, const std::string& dc) { \
    return impl_->node(#method, type, args, 1, 1, 1, {}, dc, ir::kGraphcoreDomain)[0];           \
  }
XT_GC_UNARY(swish, "Swish")
XT_GC_UNARY(geluerf, "GeluErf")
XT_GC_UNARY(nearbyint, "NearbyInt")
#undef XT_GC_UNARY

TensorId AiGraphcoreOpset1::atan2(const std::vector<TensorId>& args, const std::string& dc) {
  return impl_->node("atan2", "Atan2", args, 2, 2, 1, {}, dc, ir::kGraphcoreDomain)[0];
}

TensorId AiGraphcoreOpset1::incrementmod(const std::vector<TensorId>& args, float increment,
                                         float modulus, const std::string& dc) {
  if (!std::isfinite(increment) || !std::isfinite(modulus) || modulus == 0.0f) {
    throw error(
        "Builder: incrementmod: increment ({}) and modulus ({}) must be finite and the "
        "modulus nonzero",
        increment, modulus);
  }
  return impl_->node("incrementmod", "IncrementMod", args, 1, 1, 1,
                     {{"increment", increment}, {"modulus", modulus}}, dc, ir::kGraphcoreDomain)[0];
}

TensorId AiGraphcoreOpset1::slice(const std::vector<TensorId>& args,
                                  const std::vector<int64_t>& ends,
                                  const std::vector<int64_t>& starts,
                                  const std::vector<int64_t>& axes, const std::string& dc) {
  if (ends.size() != starts.size() || (!axes.empty() && axes.size() != starts.size())) {
    throw error(
        "Builder: slice: starts {}, ends {} and axes {} must have the same length (axes "
        "may be empty)",
        starts, ends, axes);
  }
  return impl_->node("slice", "Slice", args, 1, 1, 1,
                     {{"starts", starts}, {"ends", ends}, {"axes", BuilderImpl::nonEmpty(axes)}},
                     dc, ir::kGraphcoreDomain)[0];
}

std::vector<TensorId> AiGraphcoreOpset1::batchnormalization(const std::vector<TensorId>& args,
                                                            unsigned num_outputs, float epsilon,
                                                            float momentum, const std::string& dc) {
  if (num_outputs < 1 || num_outputs > 5) {
    throw error("Builder: batchnormalization has 1 output, or up to 5 in training; asked for {}",
                num_outputs);
  }
  return impl_->node("batchnormalization", "BatchNormalization", args, 5, 5, num_outputs,
                     {{"epsilon", epsilon}, {"momentum", momentum}}, dc, ir::kGraphcoreDomain);
}

std::vector<TensorId> AiGraphcoreOpset1::lstm(const std::vector<TensorId>& args,
                                              int64_t outputFullSequence, const std::string& dc) {
  return impl_->node("lstm", "LSTM", args, 2, 5, 2, {{"output_full_sequence", outputFullSequence}},
                     dc, ir::kGraphcoreDomain);
}

TensorId AiGraphcoreOpset1::reshape(const TensorId& arg, const std::vector<int64_t>& shape,
                                    const std::string& dc) {
  return impl_->node("reshape", "Reshape", {arg}, 1, 1, 1, {{"shape", shape}}, dc,
                     ir::kGraphcoreDomain)[0];
}

TensorId AiGraphcoreOpset1::subsample(const std::vector<TensorId>& args,
                                      const std::vector<int64_t>& strides, const std::string& dc) {
  for (size_t i = 0; i < strides.size(); ++i) {
    if (strides[i] < 1) {
      // PopART's first sentence (its tests compare it), then which op and what was expected.
      throw error(
          "Strides invalid. {} stride at index {}: Builder subsample's strides {} must be "
          "positive",
          strides[i], i, strides);
    }
  }
  return impl_->node("subsample", "Subsample", args, 1, 1, 1, {{"strides", strides}}, dc,
                     ir::kGraphcoreDomain)[0];
}

TensorId AiGraphcoreOpset1::groupedgather(const std::vector<TensorId>& args, int64_t axis,
                                          int64_t group_size, const std::string& dc) {
  if (group_size < 1) {
    throw error("Builder: groupedgather: group_size must be a positive integer, got {}",
                group_size);
  }
  return impl_->node("groupedgather", "GroupedGather", args, 2, 2, 1,
                     {{"axis", axis}, {"group_size", group_size}}, dc, ir::kGraphcoreDomain)[0];
}

TensorId AiGraphcoreOpset1::sequenceslice(const std::vector<TensorId>& args, int64_t zeroUnused,
                                          const std::string& dc) {
  return impl_->node("sequenceslice", "SequenceSlice", args, 5, 5, 1,
                     {{"zeroUnused", zeroUnused != 0 ? int64_t{1} : int64_t{0}}}, dc,
                     ir::kGraphcoreDomain)[0];
}

TensorId AiGraphcoreOpset1::normalize_image(const std::vector<TensorId>& args, float scale,
                                            const std::string& dc) {
  // PopART's creator refuses |scale| < FLT_EPSILON with these words.
  if (!(std::fabs(scale) >= std::numeric_limits<float>::epsilon()) || !std::isfinite(scale)) {
    throw error("Builder: normalize_image: scale should be greater than 0 (got {})", scale);
  }
  return impl_->node("normalize_image", "NormalizeImage", args, 3, 3, 1, {{"scale", scale}}, dc,
                     ir::kGraphcoreDomain)[0];
}

TensorId AiOnnxOpset11::mean(const std::vector<TensorId>& args, const std::string& dc) {
  return impl_->node("mean", "Mean", args, 1, SIZE_MAX, 1, {}, dc)[0];
}

}  // namespace xtrain
