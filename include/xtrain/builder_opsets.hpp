// The op builders of the Builder (xtrain/builder.hpp, which includes this file): PopART's
// AiOnnxOpset11 to 17 and AiGraphcoreOpset1, each method one ONNX node with PopART's name,
// argument order and defaults. builder.hpp's contract holds for every method here. Opsets 6 to
// 10 are in xtrain/builder_opsets_legacy.hpp.
#pragma once

#include <any>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/collectives.hpp"
#include "xtrain/inputsettings.hpp"
#include "xtrain/names.hpp"
#include "xtrain/ndarraywrapper.hpp"
#include "xtrain/operatoridentifier.hpp"
#include "xtrain/reductiontype.hpp"
#include "xtrain/replicagrouping.hpp"
#include "xtrain/tensorinfo.hpp"
#include "xtrain/variablesettings.hpp"
#include "xtrain/voiddata.hpp"

namespace xtrain {

class BuilderImpl;
class Builder;

// How AiGraphcoreOpset1::init initialises its tensor (PopART's InitType); pass its int value.
enum class InitType { NoInit = 0, Zero = 1 };

// ConstVoidData (a tensor value given to the Builder) is defined in xtrain/voiddata.hpp.

// An attribute value of a custom op node as the node holds it (xtrain/customop.hpp passes these
// to the op's functions).
using CustomOpAttribute = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                                       std::vector<float>, std::vector<std::string>>;

// PopART's popart::any: what Builder::customOp takes as an attribute value. Accepted contents, as
// PopART's Builder accepts them: int32_t, uint32_t, int64_t, uint64_t and bool (an int attribute),
// float, std::string, char* and const char* (a string), std::vector<int64_t>, std::vector<float>
// and std::vector<std::string>. Anything else (a double among them: write 0.5f) is refused with an
// xtrain::error naming the attribute.
using any = std::any;

// Common base of the opset objects: they emit nodes into their Builder's model.
class XTRAIN_API DomainOpSet {
 public:
  int getOpsetVersion() const { return version_; }

 protected:
  DomainOpSet(BuilderImpl* impl, int version) : impl_(impl), version_(version) {}
  BuilderImpl* impl_;
  int version_;
};

// ai.onnx opsets 11 to 17. Methods are version-aware: where ONNX moved a static attribute to an
// input (Squeeze/Unsqueeze axes, ReduceSum axes and Split's split at 13, Dropout's ratio at 12),
// the same method emits the form of the object's version. Where an attribute is optional, its
// default is ONNX's.
class XTRAIN_API AiOnnxOpset11 : public DomainOpSet {
 public:
  explicit AiOnnxOpset11(BuilderImpl* impl) : AiOnnxOpset11(impl, 11) {}

  // Elementwise (numpy broadcasting).
  TensorId add(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId sub(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId mul(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId div(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId pow(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId sum(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // The elementwise mean of one or more tensors (broadcasting from opset 8; before, one shape).
  TensorId mean(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId neg(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId exp(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId log(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId sqrt(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId abs(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId relu(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId sigmoid(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId tanh(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId identity(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // to: a type name as in TensorInfo ("FLOAT", "INT32", "FLOAT16", ...).
  TensorId cast(const std::vector<TensorId>& args, const std::string& to,
                const std::string& debugContext = {});

  // axis absent: ONNX's default for the version (1 before opset 13, -1 from 13).
  TensorId softmax(const std::vector<TensorId>& args, std::optional<int64_t> axis = std::nullopt,
                   const std::string& debugContext = {});
  TensorId logsoftmax(const std::vector<TensorId>& args, std::optional<int64_t> axis = std::nullopt,
                      const std::string& debugContext = {});

  TensorId matmul(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId gemm(const std::vector<TensorId>& args, float alpha = 1.0f, float beta = 1.0f,
                int64_t transA = 0, int64_t transB = 0, const std::string& debugContext = {});

  // Shape manipulation. reshape: args = {data, shape} (shape an INT64 tensor, e.g. from
  // constant()).
  TensorId reshape(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId flatten(const std::vector<TensorId>& args, int64_t axis = 1,
                   const std::string& debugContext = {});
  TensorId transpose(const std::vector<TensorId>& args, const std::vector<int64_t>& perm = {},
                     const std::string& debugContext = {});
  TensorId concat(const std::vector<TensorId>& args, int64_t axis,
                  const std::string& debugContext = {});
  // split empty: num_outputs equal parts.
  std::vector<TensorId> split(const std::vector<TensorId>& args, unsigned num_outputs,
                              int64_t axis = 0, const std::vector<int64_t>& split = {},
                              const std::string& debugContext = {});
  // args = {data, starts, ends[, axes[, steps]]}, all but data INT64 tensors (ONNX Slice-10+ form).
  TensorId slice(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // Convenience: emits starts/ends/axes/steps as constants.
  TensorId slice(const std::vector<TensorId>& args, const std::vector<int64_t>& starts,
                 const std::vector<int64_t>& ends, const std::vector<int64_t>& axes = {},
                 const std::vector<int64_t>& steps = {}, const std::string& debugContext = {});
  // Opset <= 12: axes is an attribute. Opset >= 13: axes is an input, emitted as a constant, or
  // given as args[1] when axes is empty.
  TensorId squeeze(const std::vector<TensorId>& args, const std::vector<int64_t>& axes = {},
                   const std::string& debugContext = {});
  TensorId unsqueeze(const std::vector<TensorId>& args, const std::vector<int64_t>& axes = {},
                     const std::string& debugContext = {});
  TensorId gather(const std::vector<TensorId>& args, int64_t axis = 0,
                  const std::string& debugContext = {});

  // axes empty: all axes. ReduceSum's axes become an input from opset 13 (args[1] may give it
  // instead).
  TensorId reducesum(const std::vector<TensorId>& args, const std::vector<int64_t>& axes = {},
                     int64_t keepdims = 1, const std::string& debugContext = {});
  TensorId reducemean(const std::vector<TensorId>& args, const std::vector<int64_t>& axes = {},
                      int64_t keepdims = 1, const std::string& debugContext = {});

  // Normalisation and convolution. BatchNormalization: num_outputs 1 (inference) or, for training,
  // 5 before opset 14 and 3 from 14 (which also sets training_mode = 1).
  //
  // Conv, MaxPool and AveragePool take ONNX's auto_pad (NOTSET, SAME_UPPER, SAME_LOWER, VALID)
  // last, after debugContext: PopART's Builder leaves the deprecated attribute out, so PopART's
  // positional calls keep their meaning; with any value but NOTSET the pads are worked out at
  // import.
  std::vector<TensorId> batchnormalization(const std::vector<TensorId>& args,
                                           unsigned num_outputs = 1, float epsilon = 1e-5f,
                                           float momentum = 0.9f,
                                           const std::string& debugContext = {});
  TensorId conv(const std::vector<TensorId>& args, const std::vector<int64_t>& dilations = {},
                int64_t group = 1, const std::vector<int64_t>& kernel_shape = {},
                const std::vector<int64_t>& pads = {}, const std::vector<int64_t>& strides = {},
                const std::string& debugContext = {}, const std::string& auto_pad = "NOTSET");
  std::vector<TensorId> maxpool(const std::vector<TensorId>& args, unsigned num_outputs,
                                const std::vector<int64_t>& kernel_shape, int64_t ceil_mode = 0,
                                const std::vector<int64_t>& dilations = {},
                                const std::vector<int64_t>& pads = {}, int64_t storage_order = 0,
                                const std::vector<int64_t>& strides = {},
                                const std::string& debugContext = {},
                                const std::string& auto_pad = "NOTSET");
  TensorId averagepool(const std::vector<TensorId>& args, const std::vector<int64_t>& kernel_shape,
                       int64_t ceil_mode = 0, int64_t count_include_pad = 0,
                       const std::vector<int64_t>& pads = {},
                       const std::vector<int64_t>& strides = {},
                       const std::string& debugContext = {},
                       const std::string& auto_pad = "NOTSET");
  TensorId globalaveragepool(const std::vector<TensorId>& args,
                             const std::string& debugContext = {});
  TensorId globalmaxpool(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // Opset 11: ratio is an attribute; from 12 a constant input.
  std::vector<TensorId> dropout(const std::vector<TensorId>& args, unsigned num_outputs = 1,
                                float ratio = 0.5f, const std::string& debugContext = {});

  // A Constant node holding a copy of value.
  TensorId constant(const ConstVoidData& value, const std::string& debugContext = {});

  // ---- More ai.onnx ops, as PopART's AiOnnxOpset11 has them (PopART's names, argument order and
  // defaults; ONNX's attribute names). Where ONNX has an input (Clip's min/max, Pad's pads and
  // constant_value, TopK's K, OneHot's depth and values, Resize's roi/scales/sizes, CumSum's axis,
  // Tile's repeats, Expand's shape), it is one of args. C++ reserves and/or/not/xor: the logical
  // ops are logical_and, logical_or, logical_not and logical_xor, as in PopART.
  //
  // Elementwise unary.
  TensorId ceil(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId floor(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId cos(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId sin(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId erf(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId reciprocal(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId sign(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId softplus(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId softsign(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId logical_not(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId elu(const std::vector<TensorId>& args, float alpha = 1.0f,
               const std::string& debugContext = {});
  TensorId leakyrelu(const std::vector<TensorId>& args, float alpha = 0.01f,
                     const std::string& debugContext = {});
  TensorId thresholdedrelu(const std::vector<TensorId>& args, float alpha = 1.0f,
                           const std::string& debugContext = {});
  TensorId selu(const std::vector<TensorId>& args, float alpha = 1.67326f, float gamma = 1.0507f,
                const std::string& debugContext = {});
  TensorId hardsigmoid(const std::vector<TensorId>& args, float alpha = 0.2f, float beta = 0.5f,
                       const std::string& debugContext = {});
  // The inverse and hyperbolic trigonometric functions, Tan and Round (halves to even; zero
  // gradient). Shrink: x + bias below -lambd, x - bias above lambd, else 0.
  TensorId asin(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId acos(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId atan(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId sinh(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId cosh(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId tan(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId asinh(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId acosh(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId atanh(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId round(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId shrink(const std::vector<TensorId>& args, float bias = 0.0f, float lambd = 0.5f,
                  const std::string& debugContext = {});
  // Local response normalization across the channels of [N, C, D1, ...].
  TensorId lrn(const std::vector<TensorId>& args, int64_t size, float alpha = 0.0001f,
               float beta = 0.75f, float bias = 1.0f, const std::string& debugContext = {});
  // Blocks between channels and space of [N, C, H, W]; mode "DCR" or "CRD" (PixelShuffle's).
  TensorId depthtospace(const std::vector<TensorId>& args, int64_t blocksize,
                        const std::string& mode = "DCR", const std::string& debugContext = {});
  TensorId spacetodepth(const std::vector<TensorId>& args, int64_t blocksize,
                        const std::string& debugContext = {});
  // BOOL outputs: where x is NaN (ai.onnx opset 9+); where x is -inf / +inf (opset 10+; each sign
  // detected when its flag is 1).
  TensorId isnan(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId isinf(const std::vector<TensorId>& args, int64_t detect_negative = 1,
                 int64_t detect_positive = 1, const std::string& debugContext = {});
  // args = {input[, min[, max]]} (scalar tensors; absent or "": no bound).
  TensorId clip(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // Elementwise binary (numpy broadcasting); max and min take one or more inputs.
  TensorId logical_and(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId logical_or(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId logical_xor(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId equal(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId greater(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId less(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId max(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId min(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId prelu(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // fmod 0: the sign of the divisor (integers only); 1: C's fmod.
  TensorId mod(const std::vector<TensorId>& args, int64_t fmod = 0,
               const std::string& debugContext = {});
  // args = {condition, X, Y}.
  TensorId where(const std::vector<TensorId>& args, const std::string& debugContext = {});

  // Indices and reductions. argmax/argmin output INT32, as PopART's (ONNX: INT64).
  TensorId argmax(const std::vector<TensorId>& args, int64_t axis = 0, int64_t keepdims = 1,
                  const std::string& debugContext = {});
  TensorId argmin(const std::vector<TensorId>& args, int64_t axis = 0, int64_t keepdims = 1,
                  const std::string& debugContext = {});
  // As PopART's: axes absent (nullopt): all axes; axes given but empty: none (the result is the
  // elementwise op a reduction of one element is: Abs, Identity or Mul, as ONNX's attribute form
  // has no way to say "no axes"). axes are an attribute up to opset 17 (an input from 18). Write
  // std::vector<int64_t>{1, 2}: a braced list does not convert to the optional (as in PopART).
  TensorId reducel1(const std::vector<TensorId>& args,
                    std::optional<std::vector<int64_t>> axes = std::nullopt, int64_t keepdims = 1,
                    const std::string& debugContext = {});
  TensorId reducel2(const std::vector<TensorId>& args,
                    std::optional<std::vector<int64_t>> axes = std::nullopt, int64_t keepdims = 1,
                    const std::string& debugContext = {});
  TensorId reducelogsum(const std::vector<TensorId>& args,
                        std::optional<std::vector<int64_t>> axes = std::nullopt,
                        int64_t keepdims = 1, const std::string& debugContext = {});
  TensorId reducelogsumexp(const std::vector<TensorId>& args,
                           std::optional<std::vector<int64_t>> axes = std::nullopt,
                           int64_t keepdims = 1, const std::string& debugContext = {});
  TensorId reducemax(const std::vector<TensorId>& args,
                     std::optional<std::vector<int64_t>> axes = std::nullopt, int64_t keepdims = 1,
                     const std::string& debugContext = {});
  TensorId reducemin(const std::vector<TensorId>& args,
                     std::optional<std::vector<int64_t>> axes = std::nullopt, int64_t keepdims = 1,
                     const std::string& debugContext = {});
  TensorId reduceprod(const std::vector<TensorId>& args,
                      std::optional<std::vector<int64_t>> axes = std::nullopt, int64_t keepdims = 1,
                      const std::string& debugContext = {});
  TensorId reducesumsquare(const std::vector<TensorId>& args,
                           std::optional<std::vector<int64_t>> axes = std::nullopt,
                           int64_t keepdims = 1, const std::string& debugContext = {});
  // args = {x, axis} (axis a scalar INT32/INT64 tensor).
  TensorId cumsum(const std::vector<TensorId>& args, int64_t exclusive = 0, int64_t reverse = 0,
                  const std::string& debugContext = {});
  // args = {X, K} (K an INT64 [1]); returns {Values, Indices}.
  std::vector<TensorId> topk(const std::vector<TensorId>& args, int64_t axis = -1,
                             int64_t largest = 1, int64_t sorted = 1,
                             const std::string& debugContext = {});
  // args = {indices, depth, values}.
  TensorId onehot(const std::vector<TensorId>& args, int64_t axis = -1,
                  const std::string& debugContext = {});

  // Gather and scatter. args: {data, indices} for the gathers, {data, indices, updates} for the
  // scatters. scatter is ONNX's Scatter-11, deprecated: this writes the same ScatterElements node.
  TensorId gatherelements(const std::vector<TensorId>& args, int64_t axis = 0,
                          const std::string& debugContext = {});
  TensorId gathernd(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId scatter(const std::vector<TensorId>& args, int64_t axis = 0,
                   const std::string& debugContext = {});
  TensorId scatterelements(const std::vector<TensorId>& args, int64_t axis = 0,
                           const std::string& debugContext = {});
  TensorId scatternd(const std::vector<TensorId>& args, const std::string& debugContext = {});

  // Shapes. shape and size output INT64; expand: args = {input, shape}; tile: args = {input,
  // repeats}; range: args = {start, limit, delta} (scalars).
  TensorId shape(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId size(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId expand(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId tile(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId range(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // args = {shape} (INT64 [rank]); value: a one-element tensor giving the fill value and type.
  TensorId constantofshape(const std::vector<TensorId>& args, const ConstVoidData& value,
                           const std::string& debugContext = {});
  // args = {data, pads[, constant_value]}; mode "constant", "reflect" or "edge".
  TensorId pad(const std::vector<TensorId>& args, const std::string& mode = "constant",
               const std::string& debugContext = {});
  // args = {X, roi, scales[, sizes]} (an absent input: "").
  TensorId resize(const std::vector<TensorId>& args,
                  const std::string& coordinate_transformation_mode = "half_pixel",
                  float cubic_coeff_a = -0.75f, int64_t exclude_outside = 0,
                  float extrapolation_value = 0.0f, const std::string& mode = "nearest",
                  const std::string& nearest_mode = "round_prefer_floor",
                  const std::string& debugContext = {});
  // args = {X, scales}. ONNX deprecated Upsample at opset 10: this writes the equivalent Resize
  // node (asymmetric coordinates, nearest: floor).
  TensorId upsample(const std::vector<TensorId>& args, const std::string& mode = "nearest",
                    const std::string& debugContext = {});

  // Convolution, normalisation. instancenormalization: args = {input, scale, B}.
  TensorId convtranspose(const std::vector<TensorId>& args,
                         const std::vector<int64_t>& dilations = {}, int64_t group = 1,
                         const std::vector<int64_t>& kernel_shape = {},
                         const std::vector<int64_t>& output_padding = {},
                         const std::vector<int64_t>& output_shape = {},
                         const std::vector<int64_t>& pads = {},
                         const std::vector<int64_t>& strides = {},
                         const std::string& debugContext = {});
  TensorId instancenormalization(const std::vector<TensorId>& args, float epsilon = 1e-05f,
                                 const std::string& debugContext = {});

  // Recurrent: args = {X, W, R[, B[, sequence_lens[, initial_h[, initial_c[, P]]]]]} (LSTM has
  // initial_c and P); num_outputs: how many of {Y, Y_h[, Y_c]} to return. hidden_size absent:
  // R's last dimension when its shape is known (so that getTensorShape works on the outputs).
  std::vector<TensorId> gru(const std::vector<TensorId>& args, unsigned num_outputs,
                            const std::vector<float>& activation_alpha = {},
                            const std::vector<float>& activation_beta = {},
                            const std::vector<std::string>& activations = {},
                            std::optional<float> clip = std::nullopt,
                            const std::string& direction = "forward",
                            std::optional<int64_t> hidden_size = std::nullopt,
                            int64_t linear_before_reset = 0, const std::string& debugContext = {});
  std::vector<TensorId> lstm(const std::vector<TensorId>& args, unsigned num_outputs,
                             const std::vector<float>& activation_alpha = {},
                             const std::vector<float>& activation_beta = {},
                             const std::vector<std::string>& activations = {},
                             std::optional<float> clip = std::nullopt,
                             const std::string& direction = "forward",
                             std::optional<int64_t> hidden_size = std::nullopt,
                             int64_t input_forget = 0, const std::string& debugContext = {});
  std::vector<TensorId> rnn(const std::vector<TensorId>& args, unsigned num_outputs,
                            const std::vector<float>& activation_alpha = {},
                            const std::vector<float>& activation_beta = {},
                            const std::vector<std::string>& activations = {},
                            std::optional<float> clip = std::nullopt,
                            const std::string& direction = "forward",
                            std::optional<int64_t> hidden_size = std::nullopt,
                            const std::string& debugContext = {});

  // Random numbers (opsets_reduce_random.cpp): dtype an ONNX element type number, FLOAT (1) or
  // FLOAT16 (10); the Like forms take the shape, and the dtype when absent, from args[0]. Each
  // draw comes from the session's seed (Session::setRandomSeed); a seed attribute is refused when
  // the model is loaded, as PopART refuses it.
  TensorId randomnormal(const std::vector<int64_t>& shape, int64_t dtype = 1, float mean = 0.0f,
                        float scale = 1.0f, std::optional<float> seed = std::nullopt,
                        const std::string& debugContext = {});
  TensorId randomuniform(const std::vector<int64_t>& shape, int64_t dtype = 1, float high = 1.0f,
                         float low = 0.0f, std::optional<float> seed = std::nullopt,
                         const std::string& debugContext = {});
  TensorId randomnormallike(const std::vector<TensorId>& args,
                            std::optional<int64_t> dtype = std::nullopt, float mean = 0.0f,
                            float scale = 1.0f, std::optional<float> seed = std::nullopt,
                            const std::string& debugContext = {});
  TensorId randomuniformlike(const std::vector<TensorId>& args,
                             std::optional<int64_t> dtype = std::nullopt, float high = 1.0f,
                             float low = 0.0f, std::optional<float> seed = std::nullopt,
                             const std::string& debugContext = {});
  // Control flow (docs/onnx-import.md, "Control flow"): the subgraphs are Builders made by
  // createSubgraphBuilder, embedded as the node's graph attributes as they are at the call.
  // If: args = {condition}; both branches have num_outputs outputs.
  std::vector<TensorId> logical_if(const std::vector<TensorId>& args, unsigned num_outputs,
                                   Builder& else_branch, Builder& then_branch,
                                   const std::string& debugContext = {});
  // Loop: args = {M, cond, loop-carried values...}; the body's inputs are {iteration number,
  // condition, loop-carried values...}, its outputs {condition, loop-carried values..., scan
  // outputs...}.
  std::vector<TensorId> loop(const std::vector<TensorId>& args, unsigned num_outputs, Builder& body,
                             const std::string& debugContext = {});
  // Scan (opset 9 form): args = {state values..., scan inputs...} (the last num_scan_inputs).
  std::vector<TensorId> scan(const std::vector<TensorId>& args, unsigned num_outputs, Builder& body,
                             int64_t num_scan_inputs,
                             const std::vector<int64_t>& scan_input_axes = {},
                             const std::vector<int64_t>& scan_input_directions = {},
                             const std::vector<int64_t>& scan_output_axes = {},
                             const std::vector<int64_t>& scan_output_directions = {},
                             const std::string& debugContext = {});

 protected:
  AiOnnxOpset11(BuilderImpl* impl, int version) : DomainOpSet(impl, version) {}
};

class XTRAIN_API AiOnnxOpset12 : public AiOnnxOpset11 {
 public:
  explicit AiOnnxOpset12(BuilderImpl* impl) : AiOnnxOpset12(impl, 12) {}
  // args = {scores, labels[, weights]}; num_outputs 2 adds log_prob. reduction: "none", "sum" or
  // "mean".
  std::vector<TensorId> softmaxcrossentropyloss(const std::vector<TensorId>& args,
                                                unsigned num_outputs = 1,
                                                std::optional<int64_t> ignore_index = std::nullopt,
                                                const std::string& reduction = "mean",
                                                const std::string& debugContext = {});

  // Ops new in ai.onnx opset 12.
  TensorId celu(const std::vector<TensorId>& args, float alpha = 1.0f,
                const std::string& debugContext = {});
  // args: the operands; equation as numpy.einsum's.
  TensorId einsum(const std::vector<TensorId>& args, const std::string& equation,
                  const std::string& debugContext = {});
  TensorId greaterorequal(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId lessorequal(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // args = {input, target[, weight]}; reduction "none", "sum" or "mean".
  TensorId negativeloglikelihoodloss(const std::vector<TensorId>& args,
                                     std::optional<int64_t> ignore_index = std::nullopt,
                                     const std::string& reduction = "mean",
                                     const std::string& debugContext = {});

 protected:
  AiOnnxOpset12(BuilderImpl* impl, int version) : AiOnnxOpset11(impl, version) {}
};

class XTRAIN_API AiOnnxOpset13 : public AiOnnxOpset12 {
 public:
  explicit AiOnnxOpset13(BuilderImpl* impl) : AiOnnxOpset13(impl, 13) {}

 protected:
  AiOnnxOpset13(BuilderImpl* impl, int version) : AiOnnxOpset12(impl, version) {}
};

class XTRAIN_API AiOnnxOpset14 : public AiOnnxOpset13 {
 public:
  explicit AiOnnxOpset14(BuilderImpl* impl) : AiOnnxOpset14(impl, 14) {}
  // Ops new in ai.onnx opset 14. trilu: args = {input[, k]}.
  TensorId hardswish(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId trilu(const std::vector<TensorId>& args, int64_t upper = 1,
                 const std::string& debugContext = {});

 protected:
  AiOnnxOpset14(BuilderImpl* impl, int version) : AiOnnxOpset13(impl, version) {}
};

class XTRAIN_API AiOnnxOpset15 : public AiOnnxOpset14 {
 public:
  explicit AiOnnxOpset15(BuilderImpl* impl) : AiOnnxOpset15(impl, 15) {}
  // args = {input, target_type}: input cast to target_type's element type.
  TensorId castlike(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // Shape 15 takes the dimensions [start, end) (negative: from the back); shape(args) keeps all.
  using AiOnnxOpset11::shape;
  TensorId shape(const std::vector<TensorId>& args, int64_t start,
                 std::optional<int64_t> end = std::nullopt, const std::string& debugContext = {});

 protected:
  AiOnnxOpset15(BuilderImpl* impl, int version) : AiOnnxOpset14(impl, version) {}
};

class XTRAIN_API AiOnnxOpset16 : public AiOnnxOpset15 {
 public:
  explicit AiOnnxOpset16(BuilderImpl* impl) : AiOnnxOpset16(impl, 16) {}

 protected:
  AiOnnxOpset16(BuilderImpl* impl, int version) : AiOnnxOpset15(impl, version) {}
};

class XTRAIN_API AiOnnxOpset17 : public AiOnnxOpset16 {
 public:
  explicit AiOnnxOpset17(BuilderImpl* impl) : AiOnnxOpset17(impl, 17) {}
  // args = {X, Scale[, B]}; num_outputs up to 3 (Y, Mean, InvStdDev).
  std::vector<TensorId> layernormalization(const std::vector<TensorId>& args,
                                           unsigned num_outputs = 1, int64_t axis = -1,
                                           float epsilon = 1e-5f, int64_t stash_type = 1,
                                           const std::string& debugContext = {});

 protected:
  AiOnnxOpset17(BuilderImpl* impl, int version) : AiOnnxOpset16(impl, version) {}
};

// PopART's ai.graphcore opset 1. Op types and attributes in the model (what the IR's ops register):
//   IdentityLoss {reduction}; Nll {reduction, ignoreIndex (optional), inputIsLogProbability};
//   L1 {lambda, reduction}; Gelu. reduction is the int value of ReductionType.
//   Detach; Nop; Scale {scale}; ScaledAdd {scale0, scale1}; DynamicSlice, DynamicUpdate {axes,
//   sizes, noOverlap}; DynamicZero, DynamicAdd {axes, sizes}; Init {shape, data_type, init_type,
//   batch_axis}; PrintTensor {print_gradient, title, summariseThreshold, edgeItems, maxLineWidth,
//   digits, floatFormat, separator, openBracket, closeBracket}; Remainder; Fmod;
//   Reverse {dimensions}; Round; Abort; GroupNormalization {num_groups, epsilon}.
//   ReplicatedAllReduce, ReplicatedReduceScatter {op, group}; ReplicatedAllGather {group}. op is
//   the int value of CollectiveOperator; group is {commGroupType, commGroupSize} (a CommGroup) or
//   {replicaGroupingStride, replicaGroupingSize} (a ReplicaGrouping). See docs/replicated-ops.md.
class XTRAIN_API AiGraphcoreOpset1 : public DomainOpSet {
 public:
  explicit AiGraphcoreOpset1(BuilderImpl* impl) : DomainOpSet(impl, 1) {}

  TensorId identityloss(const std::vector<TensorId>& args,
                        ReductionType reduction = ReductionType::Mean,
                        const std::string& debugContext = {});
  // args = {probs [N, C] (or [..., C]), labels [N] (or [...])}.
  TensorId nllloss(const std::vector<TensorId>& args, ReductionType reduction = ReductionType::Mean,
                   std::optional<int> ignoreIndex = std::nullopt,
                   bool inputIsLogProbability = false, const std::string& debugContext = {});
  TensorId l1loss(const std::vector<TensorId>& args, float lambda,
                  ReductionType reduction = ReductionType::Mean,
                  const std::string& debugContext = {});
  TensorId gelu(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // Calls the subgraph `callee` (a Builder from createSubgraphBuilder) on args; its num_outputs
  // outputs are the callee's.
  std::vector<TensorId> call(const std::vector<TensorId>& args, unsigned num_outputs,
                             Builder& callee, const std::string& debugContext = {});

  // Pass-throughs: detach stops the gradient, nop passes it on.
  TensorId detach(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId nop(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // scale * X.
  TensorId scale(const std::vector<TensorId>& args, float scale,
                 const std::string& debugContext = {});
  // args = {T0, T1[, scale0[, scale1]]}: scale0 * T0 + scale1 * T1 (numpy broadcasting); a scale
  // tensor (a scalar) replaces the float argument of the same name.
  TensorId scaledadd(const std::vector<TensorId>& args, float scale0 = 1.0f, float scale1 = 1.0f,
                     const std::string& debugContext = {});
  // The dynamic slice family: offset is an integer tensor (UINT32, INT32 or INT64) of one offset
  // per axis, read when the op runs and clamped into [0, dim - size]. args: {tensor, offset} for
  // dynamicslice and dynamiczero, {tensor, offset, slice} for dynamicupdate and dynamicadd.
  // dynamicslice also takes {tensor, offset, slice}: the slice's values are overwritten and the
  // output has its shape. A slice may drop the window's leading dimensions of size 1.
  // noOverlap is recorded (it is a hint for the IPU's tile mapping and changes nothing here).
  TensorId dynamicslice(const std::vector<TensorId>& args, const std::vector<int64_t>& axes,
                        const std::vector<int64_t>& sizes, int64_t noOverlap = 0,
                        const std::string& debugContext = {});
  TensorId dynamicupdate(const std::vector<TensorId>& args, const std::vector<int64_t>& axes,
                         const std::vector<int64_t>& sizes, int64_t noOverlap = 0,
                         const std::string& debugContext = {});
  TensorId dynamiczero(const std::vector<TensorId>& args, const std::vector<int64_t>& axes,
                       const std::vector<int64_t>& sizes, const std::string& debugContext = {});
  TensorId dynamicadd(const std::vector<TensorId>& args, const std::vector<int64_t>& axes,
                      const std::vector<int64_t>& sizes, const std::string& debugContext = {});
  // A tensor of `shape` and data_type (the int value of xtrain::DataType, which has PopART's
  // DataType order) filled with zeros. init_type: the int value of InitType, 0 NoInit or 1 Zero
  // (on an IPU NoInit leaves the memory as it is; here it is zeroed as well). batch_axis is
  // recorded.
  TensorId init(const std::vector<int64_t>& shape, int64_t data_type, int64_t init_type,
                int64_t batch_axis, const std::string& debugContext = {});
  TensorId init(const std::vector<int64_t>& shape, int64_t data_type, int64_t init_type,
                const std::string& debugContext = {});
  // Passes args[0] through and logs it (module `op`, level Info) each time it runs, titled `title`
  // (default: the tensor's id); print_gradient = 1 logs its gradient as well. Summarising keeps
  // edgeItems values at each end of every dimension of a tensor of more than summariseThreshold
  // elements (0: never). digits and floatFormat (0 auto, 1 fixed, 2 scientific, 3 none) set the
  // precision; lines break at maxLineWidth characters (0: never).
  TensorId printtensor(const std::vector<TensorId>& args, int64_t print_gradient = 1,
                       const std::string& debugContext = {}, const std::string& title = {},
                       int summariseThreshold = 1000, int edgeItems = 3, int maxLineWidth = 75,
                       int digits = 8, int floatFormat = 0, char separator = ' ',
                       char openBracket = '[', char closeBracket = ']');
  // Python's % (the sign of the divisor) and C's fmod (the sign of the dividend), broadcasting.
  // Floating point (x % 0 is NaN) or INT32/INT64 (x % 0 is 0).
  TensorId remainder(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId fmod(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // Reverses along `dimensions` (empty: the identity).
  TensorId reverse(const std::vector<TensorId>& args, const std::vector<int64_t>& dimensions,
                   const std::string& debugContext = {});
  // Round half to even (ONNX Round-11); its gradient is zero.
  TensorId round(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // exp(x) - 1 and log(1 + x), accurate near 0.
  TensorId expm1(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId log1p(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // Bitwise ops on integer tensors (INT32 and UINT32 as in PopART; any integer type here), the
  // binary ones with numpy broadcasting. No gradient.
  TensorId bitwisenot(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId bitwiseand(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId bitwiseor(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId bitwisexor(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId bitwisexnor(const std::vector<TensorId>& args, const std::string& debugContext = {});
  // As ai.onnx DepthToSpace-11 (mode "DCR" or "CRD").
  TensorId depthtospace(const std::vector<TensorId>& args, int64_t blocksize,
                        const std::string& mode, const std::string& debugContext = {});
  // args = {} or {condition}: when the op runs (and the scalar condition is nonzero), the run fails
  // with an error naming the op.
  void abort(const std::vector<TensorId>& args = {}, const std::string& debugContext = {});
  // args = {X, scale, bias}: outputs {Y, mean, invStdDev} (op GroupNormalization, attributes
  // num_groups, epsilon).
  std::vector<TensorId> groupnormalization(const std::vector<TensorId>& args, int64_t num_groups,
                                           float epsilon = 1e-5f,
                                           const std::string& debugContext = {});

  // Reductions, sorting, buckets, shaped dropout (opsets_reduce_random.cpp; semantics in
  // docs/operators.md). reducemedian returns {values, indices (INT32)}; axes absent: all axes,
  // empty: none. sort returns {values, indices (INT32)}. bucketize: args = {input, boundaries}.
  std::vector<TensorId> reducemedian(const std::vector<TensorId>& args,
                                     const std::optional<std::vector<int64_t>>& axes = std::nullopt,
                                     int64_t keepdims = 1, const std::string& debugContext = {});
  std::vector<TensorId> sort(const std::vector<TensorId>& args, int64_t axis = -1,
                             int64_t descending = 0, int64_t stable = 0,
                             const std::string& debugContext = {});
  TensorId bucketize(const std::vector<TensorId>& args, int64_t right = 0,
                     const std::string& debugContext = {});
  TensorId shapeddropout(const std::vector<TensorId>& args, const std::vector<int64_t>& shape,
                         float ratio = 0.5f, const std::string& debugContext = {});

  // Elementwise, indexing and image ops of PopART's (opsets_misc.cpp; semantics in the op files
  // of src/ir/ops/ named there).
  //   atan2         args = {y, x}, numpy broadcasting; theta in (-pi, pi].
  //   swish         x sigmoid(x).          geluerf   the exact (erf) GELU.
  //   nearbyint     halves to even; zero gradient.
  //   incrementmod  fmod(x + increment, modulus) in x's type; no gradient.
  TensorId atan2(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId swish(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId geluerf(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId nearbyint(const std::vector<TensorId>& args, const std::string& debugContext = {});
  TensorId incrementmod(const std::vector<TensorId>& args, float increment, float modulus,
                        const std::string& debugContext = {});
  // Slice-1 with attributes (PopART's order: ends, then starts); axes empty: 0..n-1.
  TensorId slice(const std::vector<TensorId>& args, const std::vector<int64_t>& ends,
                 const std::vector<int64_t>& starts, const std::vector<int64_t>& axes = {},
                 const std::string& debugContext = {});
  // ONNX's BatchNormalization-9 (args = {X, scale, B, mean, var}; num_outputs 1 for inference, up
  // to 5 in training) whose running variance is the unbiased (N - 1, PyTorch's) estimate.
  std::vector<TensorId> batchnormalization(const std::vector<TensorId>& args, unsigned num_outputs,
                                           float epsilon = 1e-5f, float momentum = 0.9f,
                                           const std::string& debugContext = {});
  // PopART's LSTM: args = {X [S, B, I], Weights [4, I + H, H], Bias [4, H]?, InitialState
  // [2, B, H]?, SeqLengths [B]?} (gates forget, input, cell, output; see
  // src/ir/onnx/import_expansions.cpp); returns {Output ([S, B, H], or [B, H] when
  // outputFullSequence is 0), CellState [B, H]}.
  std::vector<TensorId> lstm(const std::vector<TensorId>& args, int64_t outputFullSequence = 1,
                             const std::string& debugContext = {});
  // arg reshaped to `shape` (an attribute, unlike ai.onnx Reshape's input; 0 copies arg's
  // dimension, one -1 is inferred).
  TensorId reshape(const TensorId& arg, const std::vector<int64_t>& shape,
                   const std::string& debugContext = {});
  // Every strides[i]-th element along axis i (one positive stride per axis).
  TensorId subsample(const std::vector<TensorId>& args, const std::vector<int64_t>& strides,
                     const std::string& debugContext = {});
  // args = {data [G, ...], indices [G, ...]}: one Gather per group along `axis` (>= 1 when
  // group_size > 1); group_size 1 is ONNX Gather.
  TensorId groupedgather(const std::vector<TensorId>& args, int64_t axis = 0,
                         int64_t group_size = 1, const std::string& debugContext = {});
  // args = {source, destination, N, sourceOffset, destinationOffset}: destination with rows
  // [dOff[i], dOff[i] + N[i]) replaced by source's [sOff[i], sOff[i] + N[i]); zeroUnused zeroes
  // the rows no entry writes.
  TensorId sequenceslice(const std::vector<TensorId>& args, int64_t zeroUnused,
                         const std::string& debugContext = {});
  // args = {image [..., 3], offsets [3], scales [3]}: (image scale - offsets) scales, padded
  // with a zero channel to [..., 4]; a UINT8 image gives FLOAT16.
  TensorId normalize_image(const std::vector<TensorId>& args, float scale,
                           const std::string& debugContext = {});

  // CTC and multi-convolution (opsets_ctc_multiconv.cpp; semantics in src/ir/ops/ctc_ops.cpp and
  // multiconv_ops.cpp). ctcloss: args = {logProbs [T, N, C], targets [N, S], inputLengths [N],
  // targetLengths [N]}; outDataType "UNDEFINED" (logProbs' type), "FLOAT" or "FLOAT16".
  // _ctcloss also returns the op's second output (each element's gradient, [T, N, C]).
  // ctcbeamsearchdecoder: args = {logProbs, dataLengths}; returns {labelProbs, labelLengths,
  // decodedLabels}. multiconv: one {data, weights[, bias]} per convolution; each other argument is
  // empty or has one entry per convolution.
  TensorId ctcloss(const std::vector<TensorId>& args, ReductionType reduction = ReductionType::Mean,
                   unsigned blank = 0, const std::string& outDataType = "UNDEFINED",
                   bool zeroInfinity = false, const std::string& debugContext = {});
  std::vector<TensorId> _ctcloss(const std::vector<TensorId>& args,
                                 ReductionType reduction = ReductionType::Mean, unsigned blank = 0,
                                 const std::string& outDataType = "UNDEFINED",
                                 bool zeroInfinity = false, const std::string& debugContext = {});
  std::vector<TensorId> ctcbeamsearchdecoder(const std::vector<TensorId>& args, unsigned blank = 0,
                                             unsigned beamWidth = 100, unsigned topPaths = 1,
                                             const std::string& debugContext = {});
  std::vector<TensorId> multiconv(const std::vector<std::vector<TensorId>>& tensors,
                                  const std::vector<std::vector<int64_t>>& dilations = {},
                                  const std::vector<std::vector<int64_t>>& inDilations = {},
                                  const std::vector<std::vector<int64_t>>& pads = {},
                                  const std::vector<std::vector<int64_t>>& outPads = {},
                                  const std::vector<std::vector<int64_t>>& strides = {},
                                  const std::vector<float>& availableMemoryProportions = {},
                                  const std::vector<std::string>& partialsTypes = {},
                                  const std::optional<std::string>& planType = std::nullopt,
                                  std::optional<int> perConvReservedTiles = std::nullopt,
                                  std::optional<float> cycleBackOff = std::nullopt,
                                  const std::vector<int64_t>& enableConvDithering = {},
                                  const std::string& debugContext = {});

  // Replicated collectives: each replica's op meets those of the other replicas of its group
  // (k replicas: group sizes over the session's replicas as in replicagrouping.hpp; CommGroup All
  // is every replica). FLOAT or FLOAT16. op: any CollectiveOperator but Local (which reduces
  // nothing); only Add and Mean have gradients. A ReplicaGrouping's stride and group size are
  // recorded, not its replica count: they apply to the session's replicas, which they must divide.
  //
  // All-reduce: every member gets the reduction of the members' inputs (same shape).
  TensorId replicatedallreduce(const std::vector<TensorId>& args,
                               CollectiveOperator op = CollectiveOperator::Add,
                               const CommGroup& group = CommGroup(),
                               const std::string& debugContext = {});
  TensorId replicatedallreduce(const std::vector<TensorId>& args, CollectiveOperator op,
                               const ReplicaGrouping& grouping,
                               const std::string& debugContext = {});
  // Reduce-scatter: the input's n elements, flattened and zero-padded to k*s (s = ceil(n/k)), are
  // reduced; the member with index i in its group gets elements [i*s, (i+1)*s), as a 1-D [s].
  TensorId replicatedreducescatter(const std::vector<TensorId>& args,
                                   CollectiveOperator op = CollectiveOperator::Add,
                                   const CommGroup& group = CommGroup(),
                                   const std::string& debugContext = {});
  TensorId replicatedreducescatter(const std::vector<TensorId>& args, CollectiveOperator op,
                                   const ReplicaGrouping& grouping,
                                   const std::string& debugContext = {});
  // All-gather: the input's s elements (flattened) of every member, concatenated in group order:
  // a 1-D [k*s] (reshape it to recover a shape).
  TensorId replicatedallgather(const std::vector<TensorId>& args,
                               const CommGroup& group = CommGroup(),
                               const std::string& debugContext = {});
  TensorId replicatedallgather(const std::vector<TensorId>& args, const ReplicaGrouping& grouping,
                               const std::string& debugContext = {});
};

}  // namespace xtrain
