// The ai.onnx opsets 6 to 10 of the Builder (PopART's AiOnnxOpset6..10; PopART's Builder uses
// opset 10 unless told otherwise). Included by xtrain/builder.hpp.
//
// Each is opset 11's op builder with the signatures ONNX had at that version where they differ:
// the methods are version-aware (the node written is the form of the object's version, with
// attributes where opset 11 has inputs: Clip's min/max, Pad's pads/value, TopK's k before 10,
// Slice's starts/ends/axes before 10, Upsample's scales before 9). A method of an op that ONNX did
// not have yet at the version (GatherElements at 10, Expand at 7, ...) throws xtrain::error naming
// the op and the opset that introduced it.
//
//   auto onnx = builder->aiOnnxOpset10();
//   TensorId y = onnx.clip({x}, /*max=*/6.0f, /*min=*/0.0f);
#pragma once

#include <cfloat>
#include <cstdint>
#include <string>
#include <vector>

#include "xtrain/builder.hpp"

namespace xtrain {

class XTRAIN_API AiOnnxOpset10 : public AiOnnxOpset11 {
 public:
  explicit AiOnnxOpset10(BuilderImpl* impl) : AiOnnxOpset10(impl, 10) {}

  // Clip-6: the bounds are attributes.
  TensorId clip(const std::vector<TensorId>& args, float max = FLT_MAX, float min = -FLT_MAX,
                const std::string& debugContext = {});
  // Pad-2: pads (begin values of every axis, then end values) and value are attributes.
  TensorId pad(const std::vector<TensorId>& args, const std::vector<int64_t>& pads,
               const std::string& mode = "constant", float value = 0.0f,
               const std::string& debugContext = {});
  // TopK-10: args = {X, K} (K an INT64 [1]); always the largest, sorted.
  std::vector<TensorId> topk(const std::vector<TensorId>& args, int64_t axis = -1,
                             const std::string& debugContext = {});
  // Resize-10: args = {X, scales}. PopART reads nearest_mode and coordinate_transformation_mode
  // from the node too (Builder::addNodeAttribute), defaulting to "pytorch" and half_pixel.
  TensorId resize(const std::vector<TensorId>& args, const std::string& mode = "nearest",
                  const std::string& debugContext = {});
  // Upsample is deprecated at 10: this writes the equivalent Resize-10 node.
  TensorId upsample(const std::vector<TensorId>& args, const std::string& mode = "nearest",
                    const std::string& debugContext = {});
  // Scatter-9 (ScatterElements' predecessor): args = {data, indices, updates}.
  TensorId scatter(const std::vector<TensorId>& args, int64_t axis = 0,
                   const std::string& debugContext = {});

 protected:
  AiOnnxOpset10(BuilderImpl* impl, int version) : AiOnnxOpset11(impl, version) {}
};

class XTRAIN_API AiOnnxOpset9 : public AiOnnxOpset10 {
 public:
  explicit AiOnnxOpset9(BuilderImpl* impl) : AiOnnxOpset9(impl, 9) {}

  // Slice-1: starts, ends and axes are attributes (PopART's argument order: ends, then starts).
  TensorId slice(const std::vector<TensorId>& args, const std::vector<int64_t>& ends,
                 const std::vector<int64_t>& starts, const std::vector<int64_t>& axes = {},
                 const std::string& debugContext = {});
  // TopK-1: k is an attribute.
  std::vector<TensorId> topk(const std::vector<TensorId>& args, int64_t k, int64_t axis = -1,
                             const std::string& debugContext = {});
  // Upsample-9: args = {X, scales}.
  TensorId upsample(const std::vector<TensorId>& args, const std::string& mode = "nearest",
                    const std::string& debugContext = {});
  // MaxPool-8: no ceil_mode or dilations; num_outputs 2 adds Indices.
  std::vector<TensorId> maxpool(const std::vector<TensorId>& args, unsigned num_outputs,
                                const std::vector<int64_t>& kernel_shape,
                                const std::vector<int64_t>& pads = {}, int64_t storage_order = 0,
                                const std::vector<int64_t>& strides = {},
                                const std::string& debugContext = {});
  // AveragePool-7: no ceil_mode.
  TensorId averagepool(const std::vector<TensorId>& args, const std::vector<int64_t>& kernel_shape,
                       int64_t count_include_pad = 0, const std::vector<int64_t>& pads = {},
                       const std::vector<int64_t>& strides = {},
                       const std::string& debugContext = {});

 protected:
  AiOnnxOpset9(BuilderImpl* impl, int version) : AiOnnxOpset10(impl, version) {}
};

class XTRAIN_API AiOnnxOpset8 : public AiOnnxOpset9 {
 public:
  explicit AiOnnxOpset8(BuilderImpl* impl) : AiOnnxOpset8(impl, 8) {}

  // BatchNormalization-7: spatial 1 normalises per channel, 0 per activation (every element of
  // C x D1 x ... has its own statistics; scale, B, mean and var are then C x D1 x ...).
  std::vector<TensorId> batchnormalization(const std::vector<TensorId>& args, unsigned num_outputs,
                                           float epsilon = 1e-5f, float momentum = 0.9f,
                                           int64_t spatial = 1,
                                           const std::string& debugContext = {});
  // Upsample-7: scales is an attribute (one value per axis of X).
  TensorId upsample(const std::vector<TensorId>& args, const std::vector<float>& scales,
                    const std::string& mode = "nearest", const std::string& debugContext = {});

 protected:
  AiOnnxOpset8(BuilderImpl* impl, int version) : AiOnnxOpset9(impl, version) {}
};

class XTRAIN_API AiOnnxOpset7 : public AiOnnxOpset8 {
 public:
  explicit AiOnnxOpset7(BuilderImpl* impl) : AiOnnxOpset7(impl, 7) {}

  // MaxPool-1: one output.
  TensorId maxpool(const std::vector<TensorId>& args, const std::vector<int64_t>& kernel_shape,
                   const std::vector<int64_t>& pads = {}, const std::vector<int64_t>& strides = {},
                   const std::string& debugContext = {});

 protected:
  AiOnnxOpset7(BuilderImpl* impl, int version) : AiOnnxOpset8(impl, version) {}
};

class XTRAIN_API AiOnnxOpset6 : public AiOnnxOpset7 {
 public:
  explicit AiOnnxOpset6(BuilderImpl* impl) : AiOnnxOpset6(impl, 6) {}

  // The binary ops of opset 6: broadcast 1 lets B broadcast to A (B's shape a contiguous run of
  // A's, starting at `axis`, or a suffix of it when axis is absent); broadcast 0 needs equal
  // shapes.
  TensorId add(const std::vector<TensorId>& args, std::optional<int64_t> axis = std::nullopt,
               int64_t broadcast = 0, const std::string& debugContext = {});
  TensorId sub(const std::vector<TensorId>& args, std::optional<int64_t> axis = std::nullopt,
               int64_t broadcast = 0, const std::string& debugContext = {});
  TensorId mul(const std::vector<TensorId>& args, std::optional<int64_t> axis = std::nullopt,
               int64_t broadcast = 0, const std::string& debugContext = {});
  TensorId div(const std::vector<TensorId>& args, std::optional<int64_t> axis = std::nullopt,
               int64_t broadcast = 0, const std::string& debugContext = {});
  TensorId pow(const std::vector<TensorId>& args, std::optional<int64_t> axis = std::nullopt,
               int64_t broadcast = 0, const std::string& debugContext = {});
  // BatchNormalization-6: is_test 1 is inference.
  std::vector<TensorId> batchnormalization(const std::vector<TensorId>& args, unsigned num_outputs,
                                           float epsilon = 1e-5f, int64_t is_test = 0,
                                           float momentum = 0.9f, int64_t spatial = 1,
                                           const std::string& debugContext = {});
  // Dropout-6: is_test 1 is the identity.
  std::vector<TensorId> dropout(const std::vector<TensorId>& args, unsigned num_outputs,
                                int64_t is_test = 0, float ratio = 0.5f,
                                const std::string& debugContext = {});
  // Gemm-6: broadcast 1 lets C broadcast.
  TensorId gemm(const std::vector<TensorId>& args, float alpha = 1.0f, float beta = 1.0f,
                int64_t broadcast = 0, int64_t transA = 0, int64_t transB = 0,
                const std::string& debugContext = {});
  // AveragePool-1: padding is never counted.
  TensorId averagepool(const std::vector<TensorId>& args, const std::vector<int64_t>& kernel_shape,
                       const std::vector<int64_t>& pads = {},
                       const std::vector<int64_t>& strides = {},
                       const std::string& debugContext = {});

 protected:
  AiOnnxOpset6(BuilderImpl* impl, int version) : AiOnnxOpset7(impl, version) {}
};

}  // namespace xtrain
