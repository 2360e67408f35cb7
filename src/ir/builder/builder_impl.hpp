// BuilderImpl: the state behind xtrain::Builder — an onnx::ModelProto under construction, the ids
// in use, the name scopes, and a cache of ONNX shape inference results.
//
// Includes protobuf (via onnx_proto_utils.hpp): include only from src/ir/builder/ and src/ir/onnx/.
// Not thread-safe, like the Builder.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "ir/graph.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"
#include "xtrain/builder.hpp"

namespace xtrain {

class BuilderImpl {
 public:
  BuilderImpl();
  explicit BuilderImpl(onnx::ModelProto model);

  // Records `version` of `domain` ("" for ai.onnx) in opset_import; throws when the model already
  // uses another version of that domain.
  void requireOpset(const std::string& domain, int version);

  // Name scopes.
  void pushNameScope(const std::string& name);
  void popNameScope();
  std::string scopePrefix() const;

  // Graph inputs, initializers, outputs.
  TensorId addInputTensor(const TensorInfo& info, const std::string& debugName);
  TensorId addInitializer(const ConstVoidData& value, const std::string& debugName);
  void addOutputTensor(const TensorId& id);
  void setMetadata(const std::string& key, const std::string& value);
  std::map<std::string, std::string> metadata() const;
  void setGraphName(const std::string& name);
  // A grouped weight's per-replica shape: shape inference sees the weight with this shape rather
  // than its initializer's [groups] + shape.
  void setReplicaShape(const TensorId& id, const Shape& shape);

  // A node just emitted: attributes may be added to `node` before the next emit.
  struct Emitted {
    onnx::NodeProto* node;
    std::vector<TensorId> outputs;
  };
  // Appends a node of `domain` ("" for ai.onnx) named after debugContext (or opType) in the current
  // scope. Inputs may be "" (an absent optional input); all others must exist.
  Emitted emit(const std::string& opType, const std::string& domain,
               const std::vector<TensorId>& inputs, unsigned numOutputs,
               const std::string& debugContext);
  // Same, with outputs named by the caller (PopART's customOp with output ids): each must be a new
  // tensor id, non-empty, and appear once.
  Emitted emit(const std::string& opType, const std::string& domain,
               const std::vector<TensorId>& inputs, const std::vector<TensorId>& outputs,
               const std::string& debugContext);
  // Emits a single-output node and returns its output.
  TensorId emit1(const std::string& opType, const std::vector<TensorId>& inputs,
                 const std::string& debugContext, const std::string& domain = "");
  // The generic op emitter behind most opset methods: checks that args.size() is in [minArgs,
  // maxArgs] (as checkArity), emits a node of `type` with numOutputs outputs and writes the
  // attributes whose value is present, in the order given.
  using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                                 std::vector<float>, std::vector<std::string>>;
  struct NodeAttr {
    std::string name;
    std::optional<AttrValue> value;  // nullopt: leave the attribute out (ONNX's default)
  };
  std::vector<TensorId> node(const char* method, const std::string& type,
                             const std::vector<TensorId>& args, size_t minArgs, size_t maxArgs,
                             unsigned numOutputs, const std::vector<NodeAttr>& attrs,
                             const std::string& debugContext, const std::string& domain = "");
  // An optional attribute value: absent when v is empty (or nullopt).
  template <typename T>
  static std::optional<AttrValue> nonEmpty(const std::vector<T>& v) {
    return v.empty() ? std::nullopt : std::optional<AttrValue>(v);
  }
  template <typename T>
  static std::optional<AttrValue> ifSet(const std::optional<T>& v) {
    return v ? std::optional<AttrValue>(*v) : std::nullopt;
  }
  // A Constant node holding a copy of data (laid out as info says).
  TensorId constant(const void* data, const TensorInfo& info, const std::string& debugContext);
  TensorId constantInt64(const std::vector<int64_t>& values, const std::string& debugContext);
  // Throws "<Type> has invalid number of inputs M (PopART's wording): Builder: <method> takes N
  // input tensors, ..." when args.size() is outside [min, max]; `type` is the op's type.
  static void checkArity(const char* method, const std::string& type,
                         const std::vector<TensorId>& args, size_t min, size_t max);

  bool hasTensor(const TensorId& id) const { return tensorIds_.count(id) != 0; }
  TensorInfo tensorInfo(const TensorId& id);
  std::vector<TensorId> inputIds() const;
  std::vector<TensorId> outputIds() const;
  std::vector<TensorId> trainableIds() const;
  std::vector<TensorId> valueIds() const;
  bool isInitializer(const TensorId& id) const;

  std::string modelProto();

  // Subgraphs (builder_subgraphs.cpp). The children are owned here; parent_ is set on a child.
  static BuilderImpl& of(Builder& b) { return *b.impl_; }
  BuilderImpl* parent() const { return parent_; }
  Builder* parentBuilder() const { return parentBuilder_; }
  Builder& addChild(std::unique_ptr<Builder> child, BuilderImpl* childImpl, Builder* self);
  // True when id is a tensor of this graph or of a parent's.
  bool visible(const TensorId& id) const;
  TensorId addUntypedInput(const std::string& debugName);
  void addInputFromParent(const TensorId& id);
  // The graph to embed as a node's attribute (outputs typed where inference knows them); its
  // model's opsets are recorded in this Builder's model.
  onnx::GraphProto subgraphOf(BuilderImpl& child, const char* method);

  // The node whose outputs are exactly `outputs` (Builder's node attribute API); throws when there
  // is none. nodeChanged() after changing it.
  onnx::NodeProto& nodeByOutputs(const std::set<TensorId>& outputs);
  // The first node that has every tensor of `outputs` among its outputs (exactly: and no other),
  // else null. nodeByOutputs and placementNode add their own messages.
  onnx::NodeProto* findNodeWithOutputs(const std::set<TensorId>& outputs, bool exactly);
  void nodeChanged() { ++generation_; }
  // The value of `id` when it is an initializer or the output of a Constant node, else null.
  const onnx::TensorProto* constantValue(const TensorId& id) const;
  // Resize's inputs (scales at `scalesIndex`, sizes after it) as PopART's Builder takes them:
  // FLOAT16 constant scales become FLOAT ones (ONNX's type), and constant scales and sizes both
  // with values are refused with PopART's message.
  std::vector<TensorId> resizeInputs(const std::vector<TensorId>& args, size_t scalesIndex,
                                     const std::string& debugContext);
  // Builder::saveInitializersExternally; checkExternalData: a loaded model's external data files
  // exist (external_data.cpp).
  void saveInitializersExternally(const std::vector<TensorId>& ids, const std::string& filename);
  void checkExternalData() const;

  // ---- Placement and attribute scopes (builder_placement.cpp) ----
  // Attributes written on every node emitted while they are set (Builder::setAttribute: the
  // virtual graph, pipeline stage and execution phase scopes).
  std::map<std::string, AttrValue>& scopeAttributes() { return scopeAttributes_; }
  // The node that has every tensor of `outputs` among its outputs; throws naming `method` and the
  // tensors when there is none (or they are graph inputs or initializers).
  onnx::NodeProto& placementNode(const std::set<TensorId>& outputs, const std::string& method);

 private:
  void applyScopeAttributes(onnx::NodeProto& node) const;
  std::map<std::string, AttrValue> scopeAttributes_;

  // True when id is taken anywhere in the family of Builders (this one, its parents, their
  // children).
  bool idTaken(const std::string& id) const;
  bool takenBelow(const std::string& id) const;
  // For a child: the types of the parents' tensors its nodes read, as graph inputs, so that shape
  // inference of the subgraph alone knows them.
  void addOuterTypes(onnx::GraphProto& g) const;

  // The type and shape the IR gives a tensor of a main graph where ONNX shape inference does not
  // know it (the outputs of Call, Scan and Loop, whose subgraphs ONNX infers partly or, for Scan,
  // with ONNX's shapes rather than PopART's); nullopt when the model does not import yet.
  std::optional<TensorInfo> irInfo(const TensorId& id);
  uint64_t irGeneration_ = 0;
  std::map<TensorId, TensorInfo> irInfos_;

  BuilderImpl* parent_ = nullptr;
  Builder* parentBuilder_ = nullptr;
  std::vector<std::unique_ptr<Builder>> children_;
  std::vector<BuilderImpl*> childImpls_;

  void init();
  TensorId uniqueTensorId(const std::string& base);
  std::string uniqueNodeBase(const std::string& base);
  // Appends the node named `base` once its output ids are chosen (both emit forms).
  Emitted emitNode(const std::string& opType, const std::string& domain,
                   const std::vector<TensorId>& inputs, const std::string& base,
                   const std::vector<TensorId>& outputs);
  void checkOpExists(const std::string& opType, const std::string& domain) const;
  void runInference();
  std::string strictInferenceError();
  onnx::ModelProto modelForExport() const;
  onnx::ModelProto modelForInference() const;
  void addRecurrentHiddenSizes(onnx::GraphProto& g) const;

  onnx::ModelProto model_;
  std::set<std::string> tensorIds_;
  std::set<std::string> nodeNames_;
  std::vector<std::string> scopes_;
  std::map<std::string, Shape> replicaShapes_;

  // Shape inference cache, valid while inferredGeneration_ == generation_.
  uint64_t generation_ = 1;
  uint64_t inferredGeneration_ = 0;
  std::map<std::string, onnx::TypeProto> inferred_;
};

// Attribute setters (distinct names: an int literal would be ambiguous between int64_t and float).
void setIntAttr(onnx::NodeProto& node, const std::string& name, int64_t v);
void setFloatAttr(onnx::NodeProto& node, const std::string& name, float v);
void setStringAttr(onnx::NodeProto& node, const std::string& name, const std::string& v);
void setIntsAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v);
void setFloatsAttr(onnx::NodeProto& node, const std::string& name, const std::vector<float>& v);
void setStringsAttr(onnx::NodeProto& node, const std::string& name,
                    const std::vector<std::string>& v);
// A GRAPH attribute (a subgraph: Call's callee, If's branches, Loop's and Scan's bodies, ...).
void setGraphAttr(onnx::NodeProto& node, const std::string& name, onnx::GraphProto graph);
// A TENSOR attribute holding a copy of data (laid out as info says).
void setTensorAttr(onnx::NodeProto& node, const std::string& name, const void* data,
                   const TensorInfo& info);

}  // namespace xtrain

#pragma GCC visibility pop
