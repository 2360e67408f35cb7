// Builder: builds an ONNX model in memory with PopART's C++ Builder API.
//
//   auto builder = xtrain::Builder::create();
//   auto onnx = builder->aiOnnxOpset13();
//   TensorId x = builder->addInputTensor(TensorInfo("FLOAT", {4, 8}), "x");
//   TensorId w = builder->addInitializedInputTensor(
//       ConstVoidData::fromVector<float>({8, 2}, wValues), "w");
//   TensorId y = onnx.matmul({x, w}, "fc");
//   builder->addOutputTensor(y);
//   std::string proto = builder->getModelProto();
//
// Contract:
//  - Tensor ids come from the debug names, prefixed by the name scopes ("scope/"), and are made
//    unique by a "_N" suffix. An op's outputs are "<node name>:<i>"; its node name is the debug
//    context (or the op type), prefixed and made unique the same way.
//  - One model uses one version of each opset domain: asking for aiOnnxOpset11() after
//    aiOnnxOpset13() throws. The opset objects stay valid as long as their Builder lives.
//  - Every method checks that its inputs exist and throws xtrain::error naming the op and the
//    tensor otherwise. Shape errors surface from getTensorShape (ONNX shape inference) or when the
//    model is imported.
//  - Not thread-safe: one thread builds one model.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/builder_opsets.hpp"  // IWYU pragma: export
#include "xtrain/sessionoptions_settings.hpp"

namespace xtrain {

class Builder;
// ai.onnx opsets 6 to 10: xtrain/builder_opsets_legacy.hpp (included at the end of this file).
class AiOnnxOpset6;
class AiOnnxOpset7;
class AiOnnxOpset8;
class AiOnnxOpset9;
class AiOnnxOpset10;

// Pushes a name scope for its lifetime (Builder::nameScope).
class [[nodiscard]] XTRAIN_API NameScope {
 public:
  NameScope(Builder& builder, const std::string& name);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;

 private:
  Builder& builder_;
};

class XTRAIN_API Builder {
 public:
  static std::unique_ptr<Builder> create();
  // Continues an existing model: a file path if such a file exists, else serialized ModelProto
  // bytes.
  static std::unique_ptr<Builder> createFromOnnxModel(const std::string& modelProtoOrFilename);
  ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  // Opsets. Asking for one records it in the model's opset_import.
  AiOnnxOpset6 aiOnnxOpset6();
  AiOnnxOpset7 aiOnnxOpset7();
  AiOnnxOpset8 aiOnnxOpset8();
  AiOnnxOpset9 aiOnnxOpset9();
  AiOnnxOpset10 aiOnnxOpset10();
  AiOnnxOpset11 aiOnnxOpset11();
  AiOnnxOpset12 aiOnnxOpset12();
  AiOnnxOpset13 aiOnnxOpset13();
  AiOnnxOpset14 aiOnnxOpset14();
  AiOnnxOpset15 aiOnnxOpset15();
  AiOnnxOpset16 aiOnnxOpset16();
  AiOnnxOpset17 aiOnnxOpset17();
  AiGraphcoreOpset1 aiGraphcoreOpset1();

  // A graph input fed from the host (a stream). Returns its id.
  TensorId addInputTensor(const TensorInfo& info, const std::string& debugName = {});
  TensorId addInputTensor(const std::string& dataType, const Shape& shape,
                          const std::string& debugName = {});
  // Same, fed as `settings` say (ReplicatedStreamMode::Broadcast: one micro-batch for all
  // replicas). Recorded in the model metadata (__replicated_stream_mode/<id>).
  TensorId addInputTensor(const TensorInfo& info, const InputSettings& settings,
                          const std::string& debugName = {});
  // A graph initializer: a weight when its type is floating point, else a constant input.
  TensorId addInitializedInputTensor(const ConstVoidData& initData,
                                     const std::string& debugName = {});
  // Same, shared among replicas as settings say. Recorded in the model metadata
  // (__variable_settings/<id>, __comm_group_type/<id>, __comm_group_size/<id>); initData holds the
  // value of every group, with the group count as leading dimension when there is more than one
  // group. Call embedReplicationFactor(R) first when the groups depend on R (anything but
  // CommGroup All): the builder then checks that leading dimension and infers the shapes of the ops
  // using the weight from its per-replica shape; otherwise the session checks it.
  TensorId addInitializedInputTensor(const ConstVoidData& initData,
                                     const VariableSettings& settings,
                                     const std::string& debugName = {});
  void addOutputTensor(const TensorId& id);

  // A node of any domain (a custom op), in PopART's Python order: a node of type opName in domain
  // `domain`, whose model imports the domain at opset opVersion (the op must have been registered
  // with a version <= opVersion, xtrain/customop.hpp). Returns its numOutputs outputs, named after
  // `name` when given. Attributes as `any` says above.
  std::vector<TensorId> customOp(const std::string& opName, int opVersion,
                                 const std::string& domain, const std::vector<TensorId>& inputs,
                                 const std::map<std::string, any>& attributes,
                                 unsigned numOutputs = 1, const std::string& name = {});
  // PopART's C++ form: a node of opid's domain and type; the model imports the domain at
  // opsetVersion (opid.version is not written to the model, as in PopART).
  std::vector<TensorId> customOp(const OperatorIdentifier& opid, int opsetVersion,
                                 const std::vector<TensorId>& inputs, unsigned numOutputs,
                                 const std::map<std::string, any>& attributes = {},
                                 const std::string& debugContext = {});
  // PopART's C++ form with the output ids given: each must be a new, non-empty id.
  void customOp(const OperatorIdentifier& opid, int opsetVersion,
                const std::vector<TensorId>& inputs, const std::vector<TensorId>& outputs,
                const std::map<std::string, any>& attributes, const std::string& debugContext = {});

  // Name scopes: ids and node names created inside get "name/" prefixes (nested: "outer/inner/").
  void pushNameScope(const std::string& name);
  void popNameScope();
  NameScope nameScope(const std::string& name) { return NameScope(*this, name); }
  std::string getNameScope(const std::string& name = {}) const;

  // Subgraphs (for call, logical_if, loop and scan): a child Builder, owned by this one, whose
  // model is the subgraph. Its ids never clash with those of its family, and its ops may read the
  // tensors of its parents.
  Builder& createSubgraphBuilder();
  // An input of a subgraph whose type comes from what the op gives it; refused in a main graph.
  TensorId addUntypedInputTensor(const std::string& debugContext = {});
  // An input of a subgraph named as tensorId, a tensor of a parent Builder's graph.
  void addInputTensorFromParentGraph(const TensorId& tensorId);
  // The parent of a subgraph Builder, nullptr for a main graph's.
  Builder* getParent() const;

  // The replication factor the model is meant for (model metadata __replicationFactor).
  void embedReplicationFactor(int replicationFactor);
  void setGraphName(const std::string& name);
  // Sets (or replaces) a model metadata_props entry.
  void setMetadata(const std::string& key, const std::string& value);

  // Type and shape of any tensor: inputs and initializers as given, op outputs by ONNX shape
  // inference. Throws xtrain::error naming the tensor when it does not exist or its shape cannot be
  // inferred.
  Shape getTensorShape(const TensorId& id);
  DataType getTensorDataType(const TensorId& id);
  TensorInfo getTensorInfo(const TensorId& id);
  bool hasTensor(const TensorId& id) const;

  std::vector<TensorId> getInputTensorIds() const;
  std::vector<TensorId> getOutputTensorIds() const;
  // Initializers of floating-point type.
  std::vector<TensorId> getTrainableTensorIds() const;
  // Outputs of the model's nodes, in node order, graph outputs included (PopART's value tensors:
  // the tensors whose types shape inference records; addOutputTensor does not remove one).
  std::vector<TensorId> getValueTensorIds() const;
  // True when id is an initializer of the model (a weight or a constant input).
  bool isInitializer(const TensorId& id) const;

  // ---- Placement (docs/model-parallelism.md; src/ir/builder/builder_placement.cpp) ----
  // Stored as PopART stores it, as attributes of the ONNX node whose outputs are named (one of
  // them, or a set of them): __ipu_number (the virtual graph: an IPU of the replica),
  // __pipeline_stage and __execution_phase. A session reads them with
  // SessionOptions::virtualGraphMode Manual. The getters throw xtrain::error when the node has no
  // such attribute; every method throws naming the tensors when no node outputs them.
  void virtualGraph(const TensorId& nodeOutputName, int64_t value = 0);
  void virtualGraph(const std::set<TensorId>& nodeOutputNames, int64_t value = 0);
  int64_t getVirtualGraph(const TensorId& nodeOutputName);
  int64_t getVirtualGraph(const std::set<TensorId>& nodeOutputNames);
  void pipelineStage(const TensorId& nodeOutputName, int64_t value);
  void pipelineStage(const std::set<TensorId>& nodeOutputNames, int64_t value);
  int64_t getPipelineStage(const TensorId& nodeOutputName);
  int64_t getPipelineStage(const std::set<TensorId>& nodeOutputNames);
  void executionPhase(const TensorId& nodeOutputName, int64_t value = 0);
  void executionPhase(const std::set<TensorId>& nodeOutputNames, int64_t value = 0);
  int64_t getExecutionPhase(const TensorId& nodeOutputName);
  int64_t getExecutionPhase(const std::set<TensorId>& nodeOutputNames);
  // ---- Recomputation (src/ir/builder/builder_recompute.cpp; docs/model-parallelism.md) ----
  // The op's RecomputeType, stored as PopART stores it: the node attribute
  // __recompute_output_in_backward_pass. Recompute: recomputed in the backward pass (manual
  // recomputation, with SessionOptions::autoRecomputation None); Checkpoint: kept from the
  // forward pass whatever the automatic mode chooses (with RecomputationType::Pipeline: stashed).
  // getRecomputeOutputInBackwardPass is whether the node is marked Recompute.
  void recomputeOutputInBackwardPass(const TensorId& nodeOutputName,
                                     RecomputeType value = RecomputeType::Recompute);
  void recomputeOutputInBackwardPass(const std::set<TensorId>& nodeOutputNames,
                                     RecomputeType value = RecomputeType::Recompute);
  bool getRecomputeOutputInBackwardPass(const TensorId& nodeOutputName);
  bool getRecomputeOutputInBackwardPass(const std::set<TensorId>& nodeOutputNames);
  void recomputeOutput(const TensorId& nodeOutputName, RecomputeType value);
  // An Identity of each tensor, marked Checkpoint; returns the Identities' outputs, which later
  // ops should read (PopART's checkpointOutput).
  std::vector<TensorId> checkpointOutput(const std::vector<TensorId>& nodeOutputNames);

  // Attribute scopes (PopART's setAttribute): an attribute set here is written on every node
  // created until it is cleared, e.g. setAttribute("__ipu_number", int64_t{1}). Values: the
  // integer types, bool, float, std::string, const char* and vectors of int64_t, float and
  // std::string (as customOp's). Setting one that is set, or getting or clearing one that is
  // not, throws xtrain::error.
  void setAttribute(const std::string& attribute, any value);
  any getAttribute(const std::string& attribute) const;
  bool hasAttribute(const std::string& attribute) const;
  void clearAttribute(const std::string& attribute);
  // The scopes' values: getVirtualGraph() is getAttribute("__ipu_number") as an int64_t (throws
  // when it is not set); hasVirtualGraph() whether it is set. The same for the other two.
  int64_t getVirtualGraph() const;
  int64_t getPipelineStage() const;
  int64_t getExecutionPhase() const;
  bool hasVirtualGraph() const;
  bool hasPipelineStage() const;
  bool hasExecutionPhase() const;

  // The serialized ModelProto (graph outputs carry their inferred types).
  std::string getModelProto();
  // Writes getModelProto() to path; throws xtrain::error when the file cannot be written.
  void saveModelProto(const std::string& path);

  // PopART's node attribute API: the attributes of the node whose outputs are exactly
  // nodeOutputNames (all of them, in any order; else xtrain::error "Could not find a node with
  // outputs ..."). addNodeAttribute throws if the node has the attribute already; the getters
  // throw if it has not, or has another type; removeNodeAttribute throws if it has not.
  // The node's own attributes (Conv's strides, ...) are among them: removing or adding one
  // changes the op.
  void addNodeAttribute(const std::string& attributeName, int64_t attributeValue,
                        const std::set<TensorId>& nodeOutputNames);
  void addNodeAttribute(const std::string& attributeName, int attributeValue,
                        const std::set<TensorId>& nodeOutputNames);
  void addNodeAttribute(const std::string& attributeName, bool attributeValue,
                        const std::set<TensorId>& nodeOutputNames);
  void addNodeAttribute(const std::string& attributeName, float attributeValue,
                        const std::set<TensorId>& nodeOutputNames);
  void addNodeAttribute(const std::string& attributeName, const std::string& attributeValue,
                        const std::set<TensorId>& nodeOutputNames);
  void addNodeAttribute(const std::string& attributeName, const char* attributeValue,
                        const std::set<TensorId>& nodeOutputNames);
  void addNodeAttribute(const std::string& attributeName,
                        const std::vector<int64_t>& attributeValue,
                        const std::set<TensorId>& nodeOutputNames);
  void addNodeAttribute(const std::string& attributeName, const std::vector<float>& attributeValue,
                        const std::set<TensorId>& nodeOutputNames);
  void addNodeAttribute(const std::string& attributeName,
                        const std::vector<std::string>& attributeValue,
                        const std::set<TensorId>& nodeOutputNames);
  bool nodeHasAttribute(const std::string& attributeName,
                        const std::set<TensorId>& nodeOutputNames);
  int64_t getInt64NodeAttribute(const std::string& attributeName,
                                const std::set<TensorId>& nodeOutputNames);
  std::vector<int64_t> getInt64VectorNodeAttribute(const std::string& attributeName,
                                                   const std::set<TensorId>& nodeOutputNames);
  float getFloatNodeAttribute(const std::string& attributeName,
                              const std::set<TensorId>& nodeOutputNames);
  std::vector<float> getFloatVectorNodeAttribute(const std::string& attributeName,
                                                 const std::set<TensorId>& nodeOutputNames);
  std::string getStringNodeAttribute(const std::string& attributeName,
                                     const std::set<TensorId>& nodeOutputNames);
  std::vector<std::string> getStringVectorNodeAttribute(const std::string& attributeName,
                                                        const std::set<TensorId>& nodeOutputNames);
  bool getBoolNodeAttribute(const std::string& attributeName,
                            const std::set<TensorId>& nodeOutputNames);
  void removeNodeAttribute(const std::string& attributeName,
                           const std::set<TensorId>& nodeOutputNames);
  std::vector<std::string> getAllNodeAttributeNames(const std::set<TensorId>& nodeOutputNames);
  // PopART's: sets attribute enableConvDithering (0 or 1) of the Conv node that outputs
  // nodeOutputName; throws for another value or another op. xtrain's convolutions do not dither
  // (the attribute changes no result).
  void setEnableConvDithering(const TensorId& nodeOutputName, int64_t value);

  // Moves the data of the initializers `ids` (in that order) to `filename` (ONNX's external data;
  // the model refers to it by that name, which an import resolves against the working directory,
  // as PopART does). Throws if one is not an initializer or is already external, or if the file's
  // directory does not exist.
  void saveInitializersExternally(const std::vector<TensorId>& ids, const std::string& filename);

 private:
  friend class BuilderImpl;  // reaches a subgraph Builder's model (builder_subgraphs.cpp)
  Builder();
  std::unique_ptr<BuilderImpl> impl_;
};

}  // namespace xtrain

#include "xtrain/builder_opsets_legacy.hpp"  // IWYU pragma: export
