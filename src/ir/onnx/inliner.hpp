// Inliner: one control-flow node (ai.graphcore Call and PackedDataBlock, ai.onnx If, Loop, Scan)
// being inlined into the graph at import (control_flow_import.cpp, packed_data_import.cpp): it
// instantiates subgraphs with their inputs bound and adds the helper ops of the inlined form,
// folding each one whose value is known at import.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>
#include <vector>

#include "ir/onnx/node_import.hpp"
#include "ir/op_registry.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::ir::onnximport {

// The opset of the ops the inlining adds (Gather, Concat, Reshape, Where, And, Identity).
constexpr int kHelperOpset = 13;
// A limit of unrolling: ops added by inlining in one model.
constexpr size_t kMaxInlinedOps = size_t{1} << 21;

inline const onnx::AttributeProto* findAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

inline int64_t intAttr(const onnx::NodeProto& node, const std::string& name, int64_t def) {
  const onnx::AttributeProto* a = findAttr(node, name);
  return a == nullptr ? def : a->i();
}

inline std::vector<int64_t> intsAttr(const onnx::NodeProto& node, const std::string& name) {
  const onnx::AttributeProto* a = findAttr(node, name);
  if (a == nullptr) return {};
  return {a->ints().begin(), a->ints().end()};
}

// One control-flow node being inlined.
class Inliner {
 public:
  Inliner(NodeImporter& imp, const onnx::NodeProto& node, const std::string& label,
          const Scope& scope)
      : imp_(imp), node_(node), label_(label), scope_(scope) {
    base_ = !node.name().empty()                                ? node.name()
            : node.output_size() > 0 && !node.output(0).empty() ? node.output(0)
                                                                : node.op_type();
  }

  NodeImporter& imp() { return imp_; }
  const std::string& label() const { return label_; }
  const onnx::NodeProto& node() const { return node_; }

  template <typename... Args>
  [[noreturn]] void fail(std::string_view f, const Args&... args) const {
    throw error(label_ + ": " + xtrain::format(f, args...));
  }

  const onnx::GraphProto& graphAttr(const std::string& name) const {
    const onnx::AttributeProto* a = findAttr(node_, name);
    if (a == nullptr || !a->has_g()) fail("attribute '{}' (a graph) is missing", name);
    return a->g();
  }

  // An id for a tensor of the inlined graph: base/tag/name, made unique.
  TensorId freshId(const std::string& name) {
    const std::string base = base_ + "/" + name;
    for (int k = 0;; ++k) {
      TensorId id = k == 0 ? base : base + "__" + std::to_string(k);
      if (!imp_.graph.hasTensor(id) && !imp_.reserved.count(id)) return id;
    }
  }

  TensorId constant(HostTensor value, const std::string& name) {
    const TensorId id = freshId(name);
    const TensorInfo info = value.info();
    imp_.graph.addTensor(id, info, TensorKind::Const,
                         std::make_shared<HostTensor>(std::move(value)));
    return id;
  }

  TensorId int64Constant(const std::vector<int64_t>& v, const Shape& shape,
                         const std::string& name) {
    return constant(HostTensor::fromVector<int64_t>(shape, v), name);
  }

  TensorId boolConstant(bool v) {
    HostTensor t(TensorInfo(DataType::BOOL, {}));
    t.setFromDouble(0, v ? 1.0 : 0.0);
    return constant(std::move(t), "cond");
  }

  // Adds an ai.onnx op of the inlining (not of the model) and folds it when it can.
  TensorId op(const std::string& type, std::vector<TensorId> inputs, Attributes attrs = {},
              TensorId output = {}) {
    OpSpec spec;
    spec.type = type;
    spec.inputs = std::move(inputs);
    if (output.empty()) output = freshId(type);
    spec.outputs = {output};
    spec.attrs = std::move(attrs);
    spec.name = base_ + "/" + type;
    spec.opset = kHelperOpset;
    const OpId added = imp_.graph.addOp(std::move(spec)).id;
    foldIfConstant(imp_.graph, added, imp_.options.evaluateConstants, imp_.keep);
    return output;
  }

  TensorId reshape(const TensorId& x, const Shape& shape) {
    if (info(x).shape() == shape) return x;
    const TensorId s = int64Constant(std::vector<int64_t>(shape.begin(), shape.end()),
                                     {static_cast<int64_t>(shape.size())}, "shape");
    return op("Reshape", {x, s});
  }

  const TensorInfo& info(const TensorId& id) const { return imp_.graph.tensor(id).info; }

  // The value of a tensor known at import (a Const with a value), else nullptr.
  const HostTensor* known(const TensorId& id) const {
    const Tensor& t = imp_.graph.tensor(id);
    return t.kind == TensorKind::Const && t.value ? t.value.get() : nullptr;
  }

  // A one-element BOOL condition as a scalar.
  TensorId scalarCondition(const TensorId& id, const std::string& what) {
    const TensorInfo& i = info(id);
    if (i.dataType() != DataType::BOOL || i.nelms() != 1) {
      fail("{} '{}' is {}, expected a BOOL tensor of one element", what, id, i.toString());
    }
    return reshape(id, {});
  }

  // Adds the ops of `body` with its inputs bound to `inputs`; returns the ids of its outputs. `tag`
  // tells this instance's tensors apart ("it3" for a Loop's fourth iteration).
  std::vector<TensorId> instantiate(const onnx::GraphProto& body,
                                    const std::vector<TensorId>& inputs, const std::string& tag);

  // The tensors an If branch declares as inputs (PopART's Builder declares the enclosing graph's
  // tensors a branch uses, addInputTensorFromParentGraph): each is the enclosing scope's tensor of
  // the input's name.
  std::vector<TensorId> enclosingInputs(const onnx::GraphProto& branch, const char* which) const {
    std::vector<TensorId> ids;
    for (const auto& vi : branch.input()) {
      TensorId id = scope_.find(vi.name(), imp_.graph);
      if (id.empty()) {
        fail(
            "{} input '{}' is not a tensor of an enclosing graph (an If gives its branches no "
            "inputs, so a branch's inputs must name tensors of the graphs around it)",
            which, vi.name());
      }
      ids.push_back(std::move(id));
    }
    return ids;
  }

  // Writes `results` into the node's outputs.
  void writeOutputs(const std::vector<TensorId>& results, const std::vector<TensorId>& outputs) {
    XT_CHECK_EQ(results.size(), outputs.size(), "{}: results", label_);
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].empty()) op("Identity", {results[i]}, {}, outputs[i]);
    }
  }

  // A Call's callee input declared with another shape than the call gives it: PopART builds such
  // models (a subgraph's addInputTensor with a guessed shape) and does not check them. The callee
  // is inlined with the shape given, and a warning names the input and both shapes.
  void allowCalleeShapes() { calleeShapesAreHints_ = true; }

 private:
  void bindInput(const onnx::ValueInfoProto& vi, size_t i, const TensorId& id, Scope& local);
  bool calleeShapesAreHints_ = false;

  NodeImporter& imp_;
  const onnx::NodeProto& node_;
  std::string label_;
  const Scope& scope_;
  std::string base_;
};

// ai.graphcore PackedDataBlock (packed_data_import.cpp): its one output from the callback graph run
// on the unpacked sequences of its inputs.
void inlinePackedDataBlock(Inliner& in, const std::vector<TensorId>& inputs,
                           const std::vector<TensorId>& outputs);

}  // namespace xtrain::ir::onnximport

#pragma GCC visibility pop
