// The op registry: for every op type the IR knows, how to canonicalise it, infer its outputs' types
// and shapes, and build its gradient. One file per op family under src/ir/ops/ registers its ops
// with XT_REGISTER_OP.
//
// Contract for an OpDef:
//  - canonicalize (optional): rewrites the op in place right after it is added (e.g. moves a
//  constant "axes"
//    input into an attribute, fills defaults that depend on the opset). Throws xtrain::error (via
//    ctx.fail) when a required input is not constant.
//  - infer: returns one TensorInfo per output (absent optional outputs get any value, they are
//  ignored).
//    Throws via ctx.fail with the op, the offending input and what was expected.
//  - grad (optional): called once by autodiff when at least one input needs a gradient and at least
//  one output
//    has one. It emits ops through GradContext and sets the gradient of every input that needs one
//    (an input left unset has no gradient: fine for integer inputs, an error for a trainable path).
//    Ops without grad are not differentiable: autodiff raises an error if a gradient must flow
//    through them.
#pragma once
#pragma GCC visibility push(default)

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace xtrain::ir {

class ShapeContext {
 public:
  ShapeContext(const Graph& graph, const Op& op) : graph_(graph), op_(op) {}
  const Op& op() const { return op_; }
  const Attributes& attrs() const { return op_.attrs; }
  size_t numInputs() const { return op_.inputs.size(); }
  bool hasInput(size_t i) const { return op_.hasInput(i); }
  // Throws (via fail) when input i is absent.
  const TensorInfo& input(size_t i) const;
  // The value of input i when it is a constant (Const tensor with a value), else nullptr.
  const HostTensor* constValue(size_t i) const;
  // Fails unless input i is FLOAT or FLOAT16, the types the kernels compute in (FLOAT16 runs
  // promoted); `name` (e.g. "X") joins the input's number in the message.
  void requireFloatOrHalf(size_t i, const char* name = nullptr) const;
  // The same for every present input.
  void requireFloatOrHalfInputs() const;
  // Throws xtrain::error "<op description>: <message>".
  template <typename... Args>
  [[noreturn]] void fail(std::string_view f, const Args&... args) const {
    throw error(op_.describe() + ": " + xtrain::format(f, args...));
  }

 private:
  const Graph& graph_;
  const Op& op_;
};

class GradContext {
 public:
  GradContext(Graph& graph, const Op& op, std::vector<TensorId> gradOuts,
              std::vector<bool> needsGrad);

  const Op& op() const { return op_; }
  const Attributes& attrs() const { return op_.attrs; }
  TensorId input(size_t i) const { return op_.inputs.at(i); }
  TensorId output(size_t i) const { return op_.outputs.at(i); }
  const TensorInfo& inputInfo(size_t i) const;
  const TensorInfo& outputInfo(size_t i) const;
  bool needsGrad(size_t i) const { return i < needsGrad_.size() && needsGrad_[i]; }

  // Gradient of output i, or "" when nothing downstream depends on it.
  const TensorId& gradOut(size_t i) const { return gradOuts_.at(i); }
  // Gradient of output i, or a zero tensor of the output's info when it has none.
  TensorId gradOutOrZeros(size_t i);
  // Declares g as the gradient of input i (its info must equal the input's; autodiff checks it).
  void setGradIn(size_t i, const TensorId& g);

  // Emits an op in the Backward phase; returns its single output.
  TensorId emit(const std::string& type, std::vector<TensorId> inputs, Attributes attrs = {},
                const std::string& domain = kXtrainDomain);
  std::vector<TensorId> emitMulti(const std::string& type, std::vector<TensorId> inputs,
                                  int numOutputs, Attributes attrs = {},
                                  const std::string& domain = kXtrainDomain);
  // A constant tensor in the graph.
  TensorId constant(HostTensor value, const std::string& nameHint = "const");
  TensorId scalar(float v, DataType type = DataType::FLOAT);
  // Sums `grad` over the broadcast dimensions so that it has `target`'s shape (numpy broadcasting).
  // Returns grad itself when the shapes are already equal.
  TensorId reduceToShape(const TensorId& grad, const Shape& target);
  // Reshapes x to `shape` with a Reshape that copies every dimension literally (allowzero=1), so
  // that shapes with 0-sized dimensions round-trip. Returns x itself when it already has that
  // shape.
  TensorId reshapeTo(const TensorId& x, const Shape& shape);

  Graph& graph() { return graph_; }
  const std::vector<TensorId>& gradIns() const { return gradIns_; }

 private:
  Graph& graph_;
  const Op& op_;
  std::vector<TensorId> gradOuts_;
  std::vector<bool> needsGrad_;
  std::vector<TensorId> gradIns_;
};

// An op's definition. Written with designated initializers for its identity and arity, e.g.
//   OpDef d{.type = "Gather", .minInputs = 2, .maxInputs = 2};
// then the functions. Every member has a default, so any of them may be left out.
struct OpDef {
  std::string type{};
  std::string domain = kOnnxDomain;
  int minInputs = 1;
  int maxInputs = 1;  // -1: variadic
  int minOutputs = 1;
  int maxOutputs = 1;
  std::function<void(Op&, const Graph&)> canonicalize{};
  std::function<std::vector<TensorInfo>(const ShapeContext&)> infer{};
  std::function<void(GradContext&)> grad{};
  // Inputs the op writes in place (optimizer updates, accumulators). Such ops need no outputs.
  std::vector<int> modifiesInputs{};
  // The op type canonicalize always turns this op into (Upsample -> Resize), or empty. Such an op
  // never reaches the kernels, so it needs no kernel of its own.
  std::string rewrittenTo{};
};

class OpRegistry {
 public:
  static OpRegistry& instance();
  void add(OpDef def);
  // nullptr when unknown.
  const OpDef* find(const std::string& domain, const std::string& type) const;
  // Throws xtrain::error naming the op type, domain, opset and node name when unknown.
  const OpDef& get(const Op& op) const;
  std::vector<std::string> knownOps() const;

 private:
  std::vector<OpDef> defs_;
};

struct OpRegistrar {
  explicit OpRegistrar(OpDef def) { OpRegistry::instance().add(std::move(def)); }
};

#define XT_OP_CONCAT_(a, b) a##b
#define XT_OP_CONCAT(a, b) XT_OP_CONCAT_(a, b)
// XT_REGISTER_OP(OpDef{...}); at namespace scope in a src/ir/ops/ file.
#define XT_REGISTER_OP(...) \
  static ::xtrain::ir::OpRegistrar XT_OP_CONCAT(xt_op_registrar_, __COUNTER__)(__VA_ARGS__)

// Helpers for op definitions.
// Numpy-style broadcast of two shapes; throws via ctx.fail when incompatible.
Shape broadcastShapes(const ShapeContext& ctx, const Shape& a, const Shape& b);
// Normalises a possibly negative axis against rank; throws via ctx.fail when out of range.
int64_t normalizeAxis(const ShapeContext& ctx, int64_t axis, int64_t rank);
// Moves constant input `index` (an integer tensor) into attribute `attrName` (a list of ints) and
// marks the input absent (""), so other inputs keep their positions; addOp trims trailing absent
// inputs. No-op when the input is absent. Throws xtrain::error naming the op when the input is not
// a constant.
void moveConstInputToAttr(Op& op, const Graph& graph, size_t index, const std::string& attrName);
// Input `index` of op when it is a constant with a value, nullptr when it is absent. Throws
// xtrain::error naming the op, the input and `usedAs` when it is present but not a constant.
const Tensor* constInputTensor(const Op& op, const Graph& graph, size_t index,
                               const std::string& usedAs);

}  // namespace xtrain::ir

#pragma GCC visibility pop
