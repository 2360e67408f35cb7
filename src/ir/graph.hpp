// The IR: a graph of tensors and ops. Knows nothing of devices, comms or ONNX protobufs.
//
// Contract:
//  - Tensor ids are unique strings. An op's absent optional input or output is the empty id "".
//  - Ops are canonical: where ONNX passes static configuration as inputs (Reshape's shape,
//  Reduce*'s axes,
//    Split's split, Squeeze/Unsqueeze's axes, Slice's starts/ends/axes/steps), the op's
//    OpDef::canonicalize moves a constant input into an attribute of the same name and marks the
//    input absent (""), so kernels only read attributes.
//  - addOp runs the op's shape inference at once; a failure throws xtrain::error naming the op.
//  - Ops carry a Phase; schedule() orders by phase first, then topologically, then by insertion
//    (a recomputation clone or an IpuCopy takes the place of its first reader: see
//    Op::recomputes).
//  - Not thread-safe: one thread builds and transforms a graph.
#pragma once
#pragma GCC visibility push(default)

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/attributes.hpp"
#include "common/host_tensor.hpp"
#include "xtrain/names.hpp"
#include "xtrain/sessionoptions_settings.hpp"
#include "xtrain/tensorinfo.hpp"

namespace xtrain::ir {

inline constexpr const char* kOnnxDomain = "ai.onnx";
inline constexpr const char* kGraphcoreDomain = "ai.graphcore";
inline constexpr const char* kXtrainDomain =
    "ai.xtrain";  // internal ops: gradients, optimizer updates

enum class TensorKind {
  Stream,          // fed from the host every micro-batch (a graph input without initializer)
  Variable,        // a weight: trainable, persists across steps
  Const,           // a constant value (initializer of a non-trainable input, Constant op)
  Activation,      // produced by an op
  OptimizerState,  // persists across steps, created by an optimizer (velocity, moments, ...)
  Accumulator,     // gradient accumulator, persists across micro-batches of one step
};
const char* toString(TensorKind kind);

// When an op runs within a step: Forward and Backward once per micro-batch, Accumulate after each
// micro-batch's backward, Update once per step after the last micro-batch.
// Apply: the second half of an update that needs a reduction across replicas between its halves
// (Lamb's norms over a sharded weight).
enum class Phase { Forward = 0, Backward = 1, Accumulate = 2, Update = 3, Apply = 4 };
inline constexpr int kPhaseCount = 5;
const char* toString(Phase phase);

struct Tensor {
  TensorId id;
  TensorInfo info;
  TensorKind kind = TensorKind::Activation;
  OpId producer = -1;
  std::vector<OpId> consumers;
  // Initial value of a Variable, Const or OptimizerState. Shared so that graph copies stay cheap.
  std::shared_ptr<HostTensor> value;
};

// Where an op runs (docs/model-parallelism.md): the virtual graph (an IPU of its replica), the
// pipeline stage and the execution phase, as the ONNX node attributes __ipu_number,
// __pipeline_stage and __execution_phase give them (PopART's names); kNone when not given.
struct Placement {
  static constexpr int64_t kNone = -1;
  int64_t virtualGraph = kNone;
  int64_t pipelineStage = kNone;
  int64_t executionPhase = kNone;

  bool hasVirtualGraph() const { return virtualGraph != kNone; }
  bool operator==(const Placement&) const = default;
};

struct Op {
  OpId id = -1;
  std::string type;    // "MatMul"
  std::string domain;  // kOnnxDomain, kGraphcoreDomain or kXtrainDomain
  std::string name;    // ONNX node name, possibly empty
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  Attributes attrs;
  Phase phase = Phase::Forward;
  int opset = 0;  // ONNX opset version the op was imported with (0 for internal ops)
  // A recomputation clone (ir/recompute): the id of the Forward op it recomputes in the Backward
  // phase, else -1. The clone draws the original's random numbers (the lowering seeds it as the
  // original), its outputs get the original's layouts, and schedule() runs it as late as it can:
  // where its first reader would run, so that what it recomputes is live only from there on.
  OpId recomputes = -1;
  Placement placement;
  // The model's own choice for this op (__recompute_output_in_backward_pass; ir/recompute).
  RecomputeType recomputeType = RecomputeType::Undefined;

  bool hasInput(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  bool hasOutput(size_t i) const { return i < outputs.size() && !outputs[i].empty(); }
  // "MatMul 'fc1' (ai.onnx opset 13)" — used in every error message about the op.
  std::string describe() const;
};

// What addOp needs. Outputs left empty are named "<type>_<n>:<i>" automatically, numOutputs of
// them.
struct OpSpec {
  std::string type;
  std::string domain = kOnnxDomain;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  int numOutputs = 1;
  Attributes attrs;
  std::string name;
  Phase phase = Phase::Forward;
  int opset = 0;
  Placement placement;
  RecomputeType recomputeType = RecomputeType::Undefined;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Adds a tensor; throws xtrain::error if the id exists.
  Tensor& addTensor(const TensorId& id, const TensorInfo& info, TensorKind kind,
                    std::shared_ptr<HostTensor> value = nullptr);
  bool hasTensor(const TensorId& id) const { return tensors_.count(id) != 0; }
  // Throws xtrain::error naming the id when it does not exist.
  Tensor& tensor(const TensorId& id);
  const Tensor& tensor(const TensorId& id) const;
  const std::map<TensorId, std::unique_ptr<Tensor>>& tensors() const { return tensors_; }
  std::vector<TensorId> tensorsOfKind(TensorKind kind) const;

  // Adds an op, canonicalises it, creates its output tensors and infers their type and shape.
  Op& addOp(OpSpec spec);
  Op& op(OpId id);
  const Op& op(OpId id) const;
  const std::map<OpId, std::unique_ptr<Op>>& ops() const { return ops_; }
  // Removes an op whose outputs have no consumers; its outputs are removed too.
  void removeOp(OpId id);
  // Removes a tensor no op reads or writes (an unused initializer); it leaves the graph's outputs
  // too.
  void removeTensor(const TensorId& id);
  // Re-runs shape inference of one op (after an input's info changed).
  void setupOp(Op& op);

  // Phase first, then producers before consumers, then insertion order, except that a
  // recomputation clone is ordered as its earliest-ordered reader. Throws on a cycle.
  std::vector<OpId> schedule() const;

  // Graph inputs fed by the host (in ONNX order) and outputs (in ONNX order).
  std::vector<TensorId>& inputs() { return inputs_; }
  const std::vector<TensorId>& inputs() const { return inputs_; }
  std::vector<TensorId>& outputs() { return outputs_; }
  const std::vector<TensorId>& outputs() const { return outputs_; }

  // An id not used yet: base itself if free, else base__1, base__2, ...
  TensorId uniqueId(const std::string& base);

  // ai.onnx opset the model was imported with (11..17).
  int onnxOpset() const { return onnxOpset_; }
  void setOnnxOpset(int v) { onnxOpset_ = v; }

  // The number of replicas of the job the graph runs on (the global replication factor), or 0 when
  // unknown. Set before adding ops whose shapes depend on it: a replicated reduce-scatter or
  // all-gather over CommGroup All has a group of all the replicas (docs/replicated-ops.md).
  int64_t replicationFactor() const { return replicationFactor_; }
  void setReplicationFactor(int64_t n) { replicationFactor_ = n; }

 private:
  std::map<TensorId, std::unique_ptr<Tensor>> tensors_;
  std::map<OpId, std::unique_ptr<Op>> ops_;
  std::vector<TensorId> inputs_;
  std::vector<TensorId> outputs_;
  OpId nextOpId_ = 0;
  int onnxOpset_ = 13;
  int64_t replicationFactor_ = 0;
};

}  // namespace xtrain::ir

#pragma GCC visibility pop
