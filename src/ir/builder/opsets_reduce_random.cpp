// The opset objects' emitters for the random ops (ai.onnx RandomNormal, RandomUniform and their
// Like forms) and PopART's ai.graphcore ReduceMedian, Sort, Bucketize and ShapedDropout. The ops'
// semantics: src/ir/ops/random_ops.cpp and src/ir/ops/median_sort_ops.cpp.
#include <cstdint>
#include <optional>

#include "ir/builder/builder_impl.hpp"

namespace xtrain {

namespace {
using Attr = BuilderImpl::NodeAttr;
}  // namespace

TensorId AiOnnxOpset11::randomnormal(const std::vector<int64_t>& shape, int64_t dtype, float mean,
                                     float scale, std::optional<float> seed,
                                     const std::string& dc) {
  return impl_->node("randomnormal", "RandomNormal", {}, 0, 0, 1,
                     {Attr{"shape", shape}, Attr{"dtype", dtype}, Attr{"mean", mean},
                      Attr{"scale", scale}, Attr{"seed", BuilderImpl::ifSet(seed)}},
                     dc)[0];
}

TensorId AiOnnxOpset11::randomuniform(const std::vector<int64_t>& shape, int64_t dtype, float high,
                                      float low, std::optional<float> seed, const std::string& dc) {
  return impl_->node("randomuniform", "RandomUniform", {}, 0, 0, 1,
                     {Attr{"shape", shape}, Attr{"dtype", dtype}, Attr{"high", high},
                      Attr{"low", low}, Attr{"seed", BuilderImpl::ifSet(seed)}},
                     dc)[0];
}

TensorId AiOnnxOpset11::randomnormallike(const std::vector<TensorId>& args,
                                         std::optional<int64_t> dtype, float mean, float scale,
                                         std::optional<float> seed, const std::string& dc) {
  return impl_->node("randomnormallike", "RandomNormalLike", args, 1, 1, 1,
                     {Attr{"dtype", BuilderImpl::ifSet(dtype)}, Attr{"mean", mean},
                      Attr{"scale", scale}, Attr{"seed", BuilderImpl::ifSet(seed)}},
                     dc)[0];
}

TensorId AiOnnxOpset11::randomuniformlike(const std::vector<TensorId>& args,
                                          std::optional<int64_t> dtype, float high, float low,
                                          std::optional<float> seed, const std::string& dc) {
  return impl_->node("randomuniformlike", "RandomUniformLike", args, 1, 1, 1,
                     {Attr{"dtype", BuilderImpl::ifSet(dtype)}, Attr{"high", high},
                      Attr{"low", low}, Attr{"seed", BuilderImpl::ifSet(seed)}},
                     dc)[0];
}

std::vector<TensorId> AiGraphcoreOpset1::reducemedian(
    const std::vector<TensorId>& args, const std::optional<std::vector<int64_t>>& axes,
    int64_t keepdims, const std::string& dc) {
  // An empty list is written too: it means "no axes", where an absent attribute means all.
  return impl_->node("reducemedian", "ReduceMedian", args, 1, 1, 2,
                     {Attr{"axes", BuilderImpl::ifSet(axes)}, Attr{"keepdims", keepdims}}, dc,
                     ir::kGraphcoreDomain);
}

std::vector<TensorId> AiGraphcoreOpset1::sort(const std::vector<TensorId>& args, int64_t axis,
                                              int64_t descending, int64_t stable,
                                              const std::string& dc) {
  return impl_->node("sort", "Sort", args, 1, 1, 2,
                     {Attr{"axis", axis}, Attr{"descending", descending}, Attr{"stable", stable}},
                     dc, ir::kGraphcoreDomain);
}

TensorId AiGraphcoreOpset1::bucketize(const std::vector<TensorId>& args, int64_t right,
                                      const std::string& dc) {
  return impl_->node("bucketize", "Bucketize", args, 2, 2, 1, {Attr{"right", right}}, dc,
                     ir::kGraphcoreDomain)[0];
}

TensorId AiGraphcoreOpset1::shapeddropout(const std::vector<TensorId>& args,
                                          const std::vector<int64_t>& shape, float ratio,
                                          const std::string& dc) {
  return impl_->node("shapeddropout", "ShapedDropout", args, 1, 1, 1,
                     {Attr{"shape", shape}, Attr{"ratio", ratio}}, dc, ir::kGraphcoreDomain)[0];
}

}  // namespace xtrain
