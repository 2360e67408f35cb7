// Batch serialization's checks and plan (batch_serial.hpp).
#include "session/batch_serial.hpp"

#include <algorithm>
#include <bit>
#include <string>
#include <exception>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

namespace {

bool isRecurrent(const ir::Op& op) {
  return op.type == "LSTM" || op.type == "GRU" || op.type == "RNN";
}

// The batch axis of a streamed input: 0, except for what a recurrent op reads in its
// [seq, batch, ...] layout (ONNX layout 0, PopART's LSTM): axis 1 of its data and states, axis 0
// of a rank-1 input (sequence lengths). -1 for a scalar: it has no batch to cut.
int64_t streamBatchAxis(const ir::Graph& graph, const TensorId& id) {
  const ir::Tensor& t = graph.tensor(id);
  const int64_t rank = t.info.rank();
  if (rank == 0) return -1;
  for (OpId c : t.consumers) {
    const ir::Op& op = graph.op(c);
    if (isRecurrent(op) && op.attrs.getInt("layout", 0) == 0 && rank >= 2) return 1;
  }
  return 0;
}

bool inContext(const ir::Op& op, BatchSerializationTransformContext context) {
  return op.phase == ir::Phase::Forward ||
         (context == BatchSerializationTransformContext::Bwd && op.phase == ir::Phase::Backward);
}

// An Init op given a batch_axis (Builder.aiGraphcore.init) makes a batch of its own: cut it too
// (returns whether it did). The Init ops autodiff makes have none: they are not cut.
bool sliceInit(ir::Graph& graph, const ir::Op& op, int64_t factor) {
  if (op.type != "Init" || op.domain != ir::kGraphcoreDomain || !op.hasOutput(0) ||
      !op.attrs.has("batch_axis")) {
    return false;
  }
  const int64_t axis = op.attrs.getInt("batch_axis");
  TensorInfo& info = graph.tensor(op.outputs[0]).info;
  Shape shape = info.shape();
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) return false;
  auto& dim = shape[static_cast<size_t>(axis)];
  if (dim % factor != 0) return false;
  dim /= factor;
  info = TensorInfo(info.dataType(), shape);
  return true;
}

// Restores the shapes of every tensor of a graph, and the attributes of the ops it was told of,
// when it goes out of scope.
class ShapeRestore {
 public:
  explicit ShapeRestore(ir::Graph& graph) : graph_(graph) {
    for (const auto& [id, t] : graph.tensors()) saved_.emplace(id, t->info);
  }
  ~ShapeRestore() {
    for (const auto& [id, info] : saved_) graph_.tensor(id).info = info;
    for (const auto& [id, attrs] : attrs_) graph_.op(id).attrs = attrs;
  }
  ShapeRestore(const ShapeRestore&) = delete;
  ShapeRestore& operator=(const ShapeRestore&) = delete;
  const TensorInfo& original(const TensorId& id) const { return saved_.at(id); }
  void keepAttributes(const ir::Op& op) { attrs_.emplace(op.id, op.attrs); }

 private:
  ir::Graph& graph_;
  std::map<TensorId, TensorInfo> saved_;
  std::map<OpId, Attributes> attrs_;
};

// The attributes that give a shape with the batch in it: a Reshape's (and ReduceSumToShape's)
// target, the operand views and result shape of the backward pass's MatMulT.
constexpr const char* kShapeAttributes[] = {"shape", "viewA", "viewB", "outShape"};

// Shape inference of `op` on sliced inputs. When it refuses, the shape attributes (above) may
// still hold the whole batch: each set of them is tried with its first dimension that the factor
// divides cut by the factor, fewest first (element counts must agree, so at most one set fits).
// Returns false, with the attributes as they were, when none does.
bool setupSliced(ir::Graph& graph, ir::Op& op, int64_t factor, ShapeRestore& restore) {
  try {
    graph.setupOp(op);
    return true;
  } catch (const std::exception& e) {
    logging::session::trace("batch serialization: {} on slices: {}", op.describe(), e.what());
  }
  std::vector<std::string> present;
  for (const char* name : kShapeAttributes) {
    if (op.attrs.has(name)) present.emplace_back(name);
  }
  const Attributes original = op.attrs;
  std::vector<unsigned> subsets;
  for (unsigned m = 1; m < (1u << present.size()); ++m) subsets.push_back(m);
  std::stable_sort(subsets.begin(), subsets.end(),
                   [](unsigned a, unsigned b) { return std::popcount(a) < std::popcount(b); });
  for (const unsigned m : subsets) {
    op.attrs = original;
    bool cut = true;
    for (size_t i = 0; i < present.size() && cut; ++i) {
      if ((m & (1u << i)) == 0) continue;
      Shape shape = original.getInts(present[i]);
      auto dim = std::find_if(shape.begin(), shape.end(),
                              [&](int64_t d) { return d > 0 && d % factor == 0; });
      cut = dim != shape.end();
      if (cut) *dim /= factor;
      op.attrs.set(present[i], std::vector<int64_t>(shape.begin(), shape.end()));
    }
    if (!cut) continue;
    try {
      graph.setupOp(op);
      const Attributes sliced = op.attrs;
      op.attrs = original;
      restore.keepAttributes(op);
      op.attrs = sliced;
      return true;
    } catch (const std::exception&) {
    }
  }
  op.attrs = original;
  return false;
}

}  // namespace

void checkBatchSerialization(const ir::Graph& graph, const SessionOptions& options,
                             bool training) {
  const BatchSerializationSettings& s = options.batchSerializationSettings;
  if (s.factor <= 1) return;
  if (training && s.method == BatchSerializationMethod::Loop &&
      s.transformContext == BatchSerializationTransformContext::Fwd) {
    // PopART's sentence first: programs compare it.
    throw error(
        "Loop batch serialization is only supported in BatchSerializationTransformContext::Bwd "
        "due to LoopGradOp missing. SessionOptions.batchSerializationSettings: method Loop with "
        "transformContext Fwd in a training session; use transformContext Bwd or method "
        "UnrollDynamic / UnrollStatic");
  }
  if (options.enablePipelining) {
    throw error(
        "SessionOptions.batchSerializationSettings.factor = {} with enablePipelining = true is "
        "not supported yet (not implemented in xtrain): the pipeline's stashes and slots are "
        "planned per micro-batch, not per batch slice",
        s.factor);
  }
  for (const auto& [opId, op] : graph.ops()) {
    if (training && op->type == "BatchNormalization" && op->phase == ir::Phase::Forward) {
      throw error(
          "SessionOptions.batchSerializationSettings.factor = {} in a training session with {} "
          "is not supported yet (not implemented in xtrain): a serialized batch normalization "
          "would take the statistics of each slice, not of the micro-batch",
          s.factor, op->describe());
    }
  }
  for (const TensorId& id : graph.inputs()) {  // in the model's order
    if (graph.tensor(id).kind != ir::TensorKind::Stream) continue;
    const int64_t axis = streamBatchAxis(graph, id);
    if (axis < 0) continue;
    const Shape& shape = graph.tensor(id).info.shape();
    const int64_t batch = shape[static_cast<size_t>(axis)];
    if (batch < s.factor) {
      // PopART's sentence first: programs compare it.
      throw error(
          "Batch axis: {} is smaller than the batch serialization factor: {} for tensor {} "
          "(streamed input of shape {} per micro-batch, batch axis {}; "
          "SessionOptions.batchSerializationSettings.factor must divide it)",
          batch, s.factor, id, shape, axis);
    }
    if (batch % s.factor != 0) {
      throw error(
          "SessionOptions.batchSerializationSettings.factor = {} does not divide the batch axis "
          "of streamed input '{}': its shape per micro-batch is {} and its batch axis {} has {} "
          "samples; every slice must hold the same number of samples",
          s.factor, id, shape, axis, batch);
    }
  }
}

BatchSerialPlan planBatchSerialization(ir::Graph& graph, const BatchSerializationSettings& s,
                                       const std::vector<TensorId>& anchors,
                                       const CycleModel& cycles) {
  BatchSerialPlan plan;
  if (s.factor <= 1) return plan;
  plan.factor = s.factor;
  ShapeRestore restore(graph);
  for (const TensorId& id : graph.inputs()) {
    if (graph.tensor(id).kind != ir::TensorKind::Stream) continue;
    const int64_t axis = streamBatchAxis(graph, id);
    if (axis < 0) continue;
    TensorInfo& info = graph.tensor(id).info;
    Shape shape = info.shape();
    shape[static_cast<size_t>(axis)] /= plan.factor;  // checkBatchSerialization: it divides
    info = TensorInfo(info.dataType(), shape);
  }
  auto sliced = [&](const TensorId& id) {
    return !id.empty() && graph.tensor(id).info.nbytes() < restore.original(id).nbytes();
  };
  // Each serialized op's stretch: it starts again after a value all the slices make together.
  std::map<OpId, int64_t> stretch;
  for (const OpId opId : graph.schedule()) {
    ir::Op& op = graph.op(opId);
    if (!inContext(op, s.transformContext)) continue;
    if (!sliceInit(graph, op, plan.factor)) {
      if (std::none_of(op.inputs.begin(), op.inputs.end(), sliced)) continue;
      if (!setupSliced(graph, op, plan.factor, restore)) {
        // Its inputs are concatenated and it runs once, on the whole batch.
        logging::session::debug("batch serialization: {} runs on the whole batch", op.describe());
        continue;
      }
    }
    int64_t k = 0;
    for (const TensorId& in : op.inputs) {
      if (in.empty()) continue;
      const OpId p = graph.tensor(in).producer;
      if (auto it = stretch.find(p); it != stretch.end()) {
        k = std::max(k, sliced(in) ? it->second : it->second + 1);
      }
    }
    stretch[opId] = k;
    plan.serializedCycles[opId] = static_cast<uint64_t>(plan.factor) * cycles.opCycles(graph, op);
  }
  const std::set<TensorId> host(anchors.begin(), anchors.end());
  const std::set<TensorId> outputs(graph.outputs().begin(), graph.outputs().end());
  for (const auto& [id, t] : graph.tensors()) {
    if (t->kind != ir::TensorKind::Activation || !sliced(id) || host.count(id) ||
        outputs.count(id) || !stretch.count(t->producer)) {
      continue;
    }
    const ir::Op& producer = graph.op(t->producer);
    const bool resident = std::all_of(t->consumers.begin(), t->consumers.end(), [&](OpId c) {
      const ir::Op& reader = graph.op(c);
      auto it = stretch.find(c);
      return it != stretch.end() && it->second == stretch.at(t->producer) &&
             (!s.concatOnVirtualGraphChange ||
              reader.placement.virtualGraph == producer.placement.virtualGraph) &&
             (!s.concatOnPipelineStageChange ||
              reader.placement.pipelineStage == producer.placement.pipelineStage);
    });
    if (resident) plan.sliceResident.emplace(id, t->info);
  }
  logging::session::info(
      "batch serialization: factor {}, {} ops serialized, {} activations live one slice at a "
      "time",
      plan.factor, plan.serializedCycles.size(), plan.sliceResident.size());
  return plan;
}

SliceShapes::SliceShapes(ir::Graph& graph, const BatchSerialPlan& plan) : graph_(graph) {
  for (const auto& [id, info] : plan.sliceResident) {
    TensorInfo& current = graph.tensor(id).info;
    saved_.emplace(id, current);
    current = info;
  }
}

SliceShapes::~SliceShapes() {
  for (const auto& [id, info] : saved_) graph_.tensor(id).info = info;
}

}  // namespace xtrain::session
