// Custom operators: ops a user's own library or program adds to xtrain, as PopART users add custom
// ops. A custom op is identified by an OperatorIdentifier (domain, type, version) and defined by
// three functions: its shape (and type) inference, its gradient (optional) and its CPU kernel.
// docs/custom-ops.md explains how to write one, with a complete example.
//
// Registration:
//  - registerCustomOp(definition) at any time before the session (or Builder::getTensorShape)
//    that uses the op is created; or XTRAIN_REGISTER_CUSTOM_OP(definition) at namespace scope in
//    the user's shared library or program, which registers when the library is loaded.
//  - Registration is not thread-safe: register from one thread, before sessions are created
//    (static registrars run while the library loads, which is that case).
//  - A custom op lives in a domain of its own ("com.acme"): the domains of xtrain and ONNX ("",
//    ai.onnx, ai.onnx.ml, ai.graphcore, ai.xtrain) are refused. Registering a (domain, type) that
//    is already registered throws xtrain::error naming it; so does a definition without its shape
//    inference or its kernel.
//  - A model (built with Builder::customOp or read from a file) uses the op by importing its domain
//    at an opset >= the op's version. Its nodes pass the ONNX checker through an ONNX schema that
//    registration adds from the definition (docs/custom-ops.md, "The ONNX checker").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/error.hpp"
#include "xtrain/names.hpp"
#include "xtrain/operatoridentifier.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain {

// The attributes of one node of a custom op, by name (the values Builder::customOp was given).
using CustomOpAttributes = std::map<std::string, CustomOpAttribute>;

// The attribute `name` as a T (int64_t, float, std::string or a vector of them), or `fallback`
// when the node has none. Throws xtrain::error naming the attribute when it has another type.
template <typename T>
T customOpAttribute(const CustomOpAttributes& attributes, const std::string& name, T fallback) {
  auto it = attributes.find(name);
  if (it == attributes.end()) return fallback;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  throw error("attribute '{}' of the custom op has another type than the op expects", name);
}

// Shape and type inference: given the infos of the node's inputs (an absent optional input has an
// unset info, TensorInfo::isSet() false; there are always maxInputs of them, or for a variadic op
// as many as the node has) and its attributes, returns one info per output.
// Called when a node of the op is added to a graph (session creation, model import) and by the
// Builder's ONNX shape inference (getTensorShape), on the thread doing that. Throws xtrain::error
// for bad inputs or attributes: xtrain prefixes the message with the node's description
// ("LeakyCube 'n1' (com.acme opset 1): ...").
using CustomOpShapeFunction = std::function<std::vector<TensorInfo>(
    const std::vector<TensorInfo>& inputs, const CustomOpAttributes& attributes)>;

// What a gradient function sees and how it builds the gradient: it emits ordinary ops (standard
// ONNX ops, or custom ops such as the op's own grad op) into the backward pass and declares the
// gradient of every input that needs one. Valid only during the call of the gradient function.
class XTRAIN_API CustomOpGradBuilder {
 public:
  virtual ~CustomOpGradBuilder() = default;

  virtual size_t numInputs() const = 0;
  virtual size_t numOutputs() const = 0;
  // The forward node's inputs and outputs (usable as inputs of the ops emitted here).
  virtual TensorId input(size_t i) const = 0;
  virtual TensorId output(size_t i) const = 0;
  virtual TensorInfo inputInfo(size_t i) const = 0;
  virtual TensorInfo outputInfo(size_t i) const = 0;
  virtual const CustomOpAttributes& attributes() const = 0;
  // Whether input i needs a gradient (setGradIn for the others is allowed and ignored).
  virtual bool needsGrad(size_t i) const = 0;
  // The gradient of output i; a zero tensor when nothing downstream depends on output i.
  virtual TensorId gradOut(size_t i) = 0;

  // Emits a node and returns its outputs. `domain` "" or "ai.onnx" is a standard ONNX op in
  // xtrain's canonical form: static configuration that later opsets pass as inputs (Reshape's
  // shape, Reduce*'s axes, ...) is given as an attribute of the same name. Any other domain is a
  // registered custom op (or an ai.graphcore op). Throws xtrain::error when the op is unknown or
  // its inputs do not fit it.
  virtual std::vector<TensorId> op(const std::string& domain, const std::string& type,
                                   const std::vector<TensorId>& inputs, unsigned numOutputs = 1,
                                   const CustomOpAttributes& attributes = {}) = 0;
  // A constant FLOAT tensor of `shape` with `values` (shapeNelms(shape) of them).
  virtual TensorId constant(const std::vector<float>& values, const Shape& shape) = 0;
  // Declares g as the gradient of input i: g must have input i's type and shape.
  virtual void setGradIn(size_t i, const TensorId& g) = 0;
};

// The gradient function: called once per node by autodiff (on the thread creating the training
// session) when an input of the node needs a gradient and an output has one. May throw
// xtrain::error. A custom op without a gradient function is not differentiable: a gradient that
// must flow through it is autodiff's usual error naming the node.
using CustomOpGradFunction = std::function<void(CustomOpGradBuilder& grad)>;

// What one execution of a kernel gets: raw buffers, their infos and the node's attributes. Buffers
// are dense, row-major, of the infos' types; an absent optional input or output is nullptr (with an
// unset info). There are maxInputs inputs (a variadic op: the node's count) and numOutputs outputs.
struct XTRAIN_API CustomOpKernelArgs {
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  std::vector<TensorInfo> inputInfos;
  std::vector<TensorInfo> outputInfos;
  CustomOpAttributes attributes;
  // A seed for ops that draw random numbers: distinct per node, replica and execution.
  uint64_t seed = 0;

  template <typename T>
  const T* input(size_t i) const {
    return static_cast<const T*>(inputs.at(i));
  }
  template <typename T>
  T* output(size_t i) const {
    return static_cast<T*>(outputs.at(i));
  }
};

// Runs the op once. Called for every execution of the node, by one thread at a time per kernel
// (the kernels of different replicas may run concurrently on different threads: share no mutable
// state between them without a lock). Outputs must be written in full. May throw xtrain::error.
using CustomOpKernel = std::function<void(const CustomOpKernelArgs& args)>;

// Makes the kernel of one node: called once per node when the session prepares its program (on the
// thread calling prepareDevice), with the node's input and output infos and attributes. It
// validates them (throwing xtrain::error to refuse) and returns the kernel, which may capture what
// it precomputed.
// FLOAT16: unless the definition says supportsFloat16, the factory is only ever called with FLOAT
// infos where the node has FLOAT16 ones; xtrain converts the FLOAT16 inputs to FLOAT and rounds the
// FLOAT outputs back, as it does for its own kernels.
using CustomOpKernelFactory = std::function<CustomOpKernel(const std::vector<TensorInfo>& inputs,
                                                           const std::vector<TensorInfo>& outputs,
                                                           const CustomOpAttributes& attributes)>;

struct XTRAIN_API CustomOpDefinition {
  explicit CustomOpDefinition(OperatorIdentifier id_) : id(std::move(id_)) {}

  OperatorIdentifier id;
  int minInputs = 1;
  int maxInputs = 1;  // -1: variadic
  int numOutputs = 1;
  // The attributes the op reads: the Builder's ONNX shape inference passes only these to
  // inferShapes (xtrain's own import passes every attribute of the node).
  std::vector<std::string> attributeNames;
  CustomOpShapeFunction inferShapes;  // required
  CustomOpGradFunction grad;          // optional: without it the op is not differentiable
  CustomOpKernelFactory kernel;       // required
  bool supportsFloat16 = false;       // the kernel takes FLOAT16 buffers itself
};

// Registers a custom op (see the contract at the top of this file). Throws xtrain::error naming
// the op when the definition is incomplete or the (domain, type) is already registered.
XTRAIN_API void registerCustomOp(CustomOpDefinition definition);

// Whether a custom op of this domain and type has been registered.
XTRAIN_API bool isCustomOpRegistered(const std::string& domain, const std::string& type);

// Registers at load time; a refused registration prints the error and aborts the program (no
// exception can leave a static initializer).
struct XTRAIN_API CustomOpRegistrar {
  explicit CustomOpRegistrar(CustomOpDefinition definition);
};

#define XTRAIN_CUSTOM_OP_CONCAT_(a, b) a##b
#define XTRAIN_CUSTOM_OP_CONCAT(a, b) XTRAIN_CUSTOM_OP_CONCAT_(a, b)
// XTRAIN_REGISTER_CUSTOM_OP(makeLeakyCubeDefinition()); at namespace scope.
#define XTRAIN_REGISTER_CUSTOM_OP(...)                                                          \
  static const ::xtrain::CustomOpRegistrar XTRAIN_CUSTOM_OP_CONCAT(xtrain_custom_op_registrar_, \
                                                                   __COUNTER__)(__VA_ARGS__)

}  // namespace xtrain
