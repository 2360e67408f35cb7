#include "session/session_impl.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "comm/communicator.hpp"
#include "common/check.hpp"
#include "device/program.hpp"
#include "ir/autodiff/autodiff.hpp"
#include "ir/onnx/onnx_metadata.hpp"
#include "ir/optimizers/update_rules.hpp"
#include "replication/instances.hpp"
#include "session/model_io.hpp"
#include "session/step_buffers.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

using replication::copyShardOut;
using replication::groupBytes;
using replication::ShardPlan;
using replication::tileGroups;

namespace {

// A tensor of `info` whose every element is `value` (in its type: the loss scaling seed is FLOAT16
// for a FLOAT16 loss).
HostTensor filledWith(const TensorInfo& info, double value) {
  HostTensor t(info);
  for (int64_t i = 0; i < t.nelms(); ++i) t.setFromDouble(i, value);
  return t;
}

}  // namespace

namespace {

const char* kindOfFault(const ir::Tensor& t) {
  return ir::toString(t.kind);
}

}  // namespace

SessionImpl::SessionImpl(SessionConfig config) : config_(std::move(config)) {
  if (!config_.device) throw error("no device given: acquire one with DeviceManager first");
  localReplicas_ = config_.options.getLocalReplicationFactor();
  globalReplicas_ = config_.options.getGlobalReplicationFactor();
  replicaOffset_ =
      config_.options.enableDistributedReplicatedGraphs ? config_.options.globalReplicaOffset : 0;
  accumulationFactor_ = config_.options.getAccumulationFactor();
  validateOptions();

  ImportedModel imported = importModel(config_.model, config_.inputShapes, globalReplicas_);
  graph_ = std::move(imported.graph);
  modelBytes_ = std::move(imported.bytes);
  modelMetadata_ = std::move(imported.metadata);
  groupedValues_ = std::move(imported.groupedValues);
  if (auto embedded = ir::readReplicationFactor(modelMetadata_);
      embedded && *embedded != globalReplicas_) {
    logging::session::warn(
        "the model was built for {} replicas (__replicationFactor) but the session has {}; grouped "
        "weights take their group count from the session's replicas",
        *embedded, globalReplicas_);
  }
  collectVariableSettings();
  for (const auto& id : graph_->inputs()) {
    if (ir::readReplicatedStreamMode(modelMetadata_, id) == ReplicatedStreamMode::Broadcast) {
      broadcastInputs_.insert(id);
    }
  }

  if (config_.training) checkLoss();
  for (const auto& id : config_.dataFlow.anchors()) {
    if (!graph_->hasTensor(id)) {
      throw error("anchor '{}' is not a tensor of the model (check the DataFlow's anchor names)",
                  id);
    }
  }
  for (const auto& [opId, op] : graph_->ops()) {
    if (op->type == "Dropout") op->attrs.set("training_mode", int64_t{config_.training ? 1 : 0});
  }
  // The fingerprint is of the model itself: after optimizer state carried as initializers has left
  // the graph, before the training graph is added.
  if (config_.training) takeOptimizerStateInitializers();
  graphFingerprint_ = computeGraphFingerprint();
  if (config_.training) buildTrainingGraph();
  logging::session::info("session built: {} ops, {} tensors, {} local replicas, af {}",
                         graph_->ops().size(), graph_->tensors().size(), localReplicas_,
                         accumulationFactor_);
}

SessionImpl::~SessionImpl() {
  if (asyncSave_.joinable()) asyncSave_.join();
  if (asyncError_) {
    try {
      std::rethrow_exception(asyncError_);
    } catch (const std::exception& e) {
      logging::session::err("an asynchronous checkpoint save failed: {}", e.what());
    }
  }
}

void SessionImpl::validateOptions() const {
  const SessionOptions& o = config_.options;
  auto notYet = [](const std::string& what) {
    throw error("SessionOptions: {} is not supported yet", what);
  };
  if (o.enableReplicatedGraphs && o.replicatedGraphCount < 1) {
    throw error(
        "SessionOptions: replicatedGraphCount must be >= 1 when replication is enabled, got {}",
        o.replicatedGraphCount);
  }
  if (o.enableDistributedReplicatedGraphs) {
    const int64_t g = o.globalReplicationFactor;
    const int64_t l = o.getLocalReplicationFactor();
    if (g < 1) {
      throw error("SessionOptions: globalReplicationFactor must be >= 1, got {}", g);
    }
    if (o.globalReplicaOffset < 0 || o.globalReplicaOffset >= g) {
      throw error(
          "SessionOptions: globalReplicaOffset {} is out of range [0, {}) (globalReplicationFactor "
          "{})",
          o.globalReplicaOffset, g, g);
    }
    if (l > g) {
      throw error("SessionOptions: {} local replicas exceed globalReplicationFactor {}", l, g);
    }
    if (g % l != 0 || o.globalReplicaOffset % l != 0) {
      throw error(
          "SessionOptions: every instance must have the same number of replicas: "
          "globalReplicationFactor "
          "{} and globalReplicaOffset {} must be multiples of the {} local replicas",
          g, o.globalReplicaOffset, l);
    }
  }
  if (o.enableGradientAccumulation && o.accumulationFactor < 1) {
    throw error("SessionOptions: accumulationFactor must be >= 1, got {}", o.accumulationFactor);
  }
  if (!o.enableGradientAccumulation && o.accumulationFactor > 1) {
    throw error(
        "SessionOptions: accumulationFactor is {} but enableGradientAccumulation is false; enable "
        "it or "
        "set the factor to 1",
        o.accumulationFactor);
  }
  if (o.getAccumulationFactor() > 1 && !config_.training) {
    throw error("SessionOptions: gradient accumulation needs a TrainingSession");
  }
  for (const auto* s :
       {&o.weightTensorLocationSettings, &o.optimizerStateTensorLocationSettings,
        &o.accumulatorTensorLocationSettings, &o.activationTensorLocationSettings}) {
    if (s->location.storage == TensorStorage::OffChip) notYet("OffChip tensor storage");
  }
  if (o.activationTensorLocationSettings.location.replicatedTensorSharding ==
      ReplicatedTensorSharding::On) {
    throw error(
        "SessionOptions: activations cannot be sharded across replicas (each replica computes "
        "its own); replicated tensor sharding applies to weights, optimizer state and "
        "accumulators");
  }
  if (!config_.training) {
    for (const auto* s : {&o.weightTensorLocationSettings, &o.optimizerStateTensorLocationSettings,
                          &o.accumulatorTensorLocationSettings}) {
      if (s->location.replicatedTensorSharding == ReplicatedTensorSharding::On) {
        notYet("replicated tensor sharding in an inference session (it shards training updates)");
      }
    }
  }
  if (o.enablePipelining) notYet("enablePipelining");
  if (o.virtualGraphMode != VirtualGraphMode::Off) notYet("virtualGraphMode other than Off");

  const DeviceInfo& d = *config_.device;
  if (d.getType() == DeviceType::Cpu && localReplicas_ > 1) {
    throw error("a CPU device cannot run {} replicas; use an IPU model or pool device with {} IPUs",
                localReplicas_, localReplicas_);
  }
  if (d.getType() != DeviceType::Cpu && d.getNumIpus() % localReplicas_ != 0) {
    throw error("the device has {} IPUs, which cannot be split among {} local replicas",
                d.getNumIpus(), localReplicas_);
  }
}

void SessionImpl::collectVariableSettings() {
  for (const auto& id : ir::tensorsWithVariableSettings(modelMetadata_)) {
    const auto settings = ir::readVariableSettings(modelMetadata_, id);
    if (!settings) continue;
    if (!graph_->hasTensor(id)) {
      throw error(
          "the model metadata gives VariableSettings for '{}', which is not a tensor of the model",
          id);
    }
    // Validates the groups against the replicas (a clear error when they do not divide them) and
    // refuses the unsupported retrieval mode AllReduceReplicas.
    settings->verify(globalReplicas_);
    variableSettings_.emplace(id, *settings);
    if (settings->getGroupCount(globalReplicas_) == 1) continue;
    const ir::Tensor& t = graph_->tensor(id);
    if (t.kind != ir::TensorKind::Variable || !groupedValues_.count(id)) {
      throw error(
          "'{}' has VariableSettings {} but is a {} tensor, not a weight: only weights can be "
          "grouped",
          id, settings->str(), ir::toString(t.kind));
    }
    grouped_.emplace(id, replication::GroupedVariable(*settings, globalReplicas_, localReplicas_,
                                                      t.info.shape()));
  }
}

void SessionImpl::groupOptimizerState() {
  for (const auto& u : optimizerGraph_.updates) {
    auto it = grouped_.find(u.weight);
    if (it == grouped_.end()) continue;
    for (const auto& state : ir::stateWithAccumulator(u)) {
      // Adam's step count is a scalar, the same on every replica: it is not grouped.
      if (state.perElement) grouped_.emplace(state.id, it->second);
    }
  }
}

// The loss is checked before anything else names it (the DataFlow anchors it too), so a misspelt
// loss is reported as the loss. Training minimises one number: a loss of several elements (logits,
// a per-sample loss without reduction) would be trained on the sum of its elements, silently.
void SessionImpl::checkLoss() const {
  if (!graph_->hasTensor(config_.loss)) {
    throw error("the loss '{}' is not a tensor of the model", config_.loss);
  }
  const TensorInfo& info = graph_->tensor(config_.loss).info;
  if (info.nelms() != 1) {
    throw error(
        "the loss '{}' is {}, but a loss must be a scalar (one element): reduce it, e.g. with "
        "ReduceMean or a loss op's reduction \"mean\"",
        config_.loss, info.toString());
  }
  if (!isFloatingPoint(info.dataType())) {
    throw error("the loss '{}' is {}, but a loss must be FLOAT or FLOAT16", config_.loss,
                info.toString());
  }
}

void SessionImpl::buildTrainingGraph() {
  ir::Graph& g = *graph_;
  const Optimizer& opt = *config_.optimizer;

  // Batch-norm running statistics are updated from the op's outputs, not by the optimizer.
  std::vector<std::pair<TensorId, TensorId>> statUpdates;
  for (const auto& [opId, op] : g.ops()) {
    if (op->type != "BatchNormalization" || op->outputs.size() < 3) continue;
    for (size_t k : {size_t{1}, size_t{2}}) {
      const TensorId& var = op->inputs.at(k + 2);
      if (op->hasOutput(k) && g.tensor(var).kind == ir::TensorKind::Variable) {
        statUpdates.emplace_back(var, op->outputs[k]);
      }
    }
  }
  std::vector<TensorId> weights;
  for (const auto& id : g.tensorsOfKind(ir::TensorKind::Variable)) {
    bool isStat = false;
    for (const auto& [var, src] : statUpdates) isStat = isStat || var == id;
    if (!isStat) weights.push_back(id);
  }

  ir::AutodiffOptions ad;
  const auto& als = config_.options.automaticLossScalingSettings;
  lossScaling_ = opt.getLossScalingVal();
  if (als.enabled) {
    if (opt.lossScaling().isConst()) {
      throw error(
          "automatic loss scaling changes the loss scaling factor, but the optimizer's lossScaling "
          "({}) is constant: create it with lossScaling {{{}, false}}",
          opt.getLossScalingVal(), opt.getLossScalingVal());
    }
    if (!(als.growthFactor >= 1.0f) || !(als.backoffFactor > 0.0f && als.backoffFactor < 1.0f) ||
        als.growthInterval < 1) {
      throw error(
          "automaticLossScalingSettings: growthFactor {} must be >= 1, backoffFactor {} in (0, 1) "
          "and growthInterval {} >= 1",
          als.growthFactor, als.backoffFactor, als.growthInterval);
    }
    if (!als.toTrackTensors.empty() || als.updatePeriod != 1 || als.binEdgeLocation != 0.0625f ||
        als.thresholdUpperCountProportion != 1e-7f) {
      logging::session::warn(
          "automaticLossScalingSettings: PopART's histogram settings (toTrackTensors, "
          "binEdgeLocation, thresholdUpperCountProportion, updatePeriod) have no effect; xtrain "
          "scales dynamically (growthInterval, growthFactor, backoffFactor)");
    }
  }
  if (g.tensor(config_.loss).info.dataType() == DataType::FLOAT16 && lossScaling_ > 65504.0f) {
    throw error(
        "the loss '{}' is FLOAT16, whose largest value is 65504, but the loss scaling is {}: the "
        "scaled loss gradient would be inf (use at most 32768)",
        config_.loss, lossScaling_);
  }
  if (als.enabled || !opt.lossScaling().isConst() || opt.getLossScalingVal() != 1.0f) {
    // The seed of the backward pass, in the loss's type (FLOAT16 for a FLOAT16 loss).
    HostTensor ls = filledWith(g.tensor(config_.loss).info, lossScaling_);
    lossScalingSeed_ = g.uniqueId("lossScaling");
    g.addTensor(lossScalingSeed_, ls.info(), ir::TensorKind::OptimizerState,
                std::make_shared<HostTensor>(std::move(ls)));
    ad.seed = lossScalingSeed_;
  }
  maxLossScaling_ = g.tensor(config_.loss).info.dataType() == DataType::FLOAT16
                        ? 32768.0f
                        : std::numeric_limits<float>::max();
  gradOfWeight_ = ir::autodiff(g, config_.loss, weights, ad);
  if (gradOfWeight_.empty()) {
    throw error(
        "no trainable weight reaches the loss '{}': it does not depend on any of the model's {} "
        "weights, so training would change nothing (is it the right tensor?)",
        config_.loss, weights.size());
  }
  for (const auto& w : weights) {
    if (!gradOfWeight_.count(w)) {
      logging::session::warn("weight '{}' does not affect the loss '{}' and will not be trained", w,
                             config_.loss);
    }
  }

  optimizerOptions_.accumulationFactor = accumulationFactor_;
  optimizerOptions_.globalReplicationFactor = config_.options.getGlobalReplicationFactor();
  optimizerOptions_.reduction = config_.options.accumulationAndReplicationReductionType;
  optimizerOptions_.strategy = config_.options.meanAccumulationAndReplicationReductionStrategy;
  optimizerOptions_.stochasticRounding = config_.options.enableStochasticRounding;
  for (const auto& [id, v] : grouped_) {
    optimizerOptions_.replicasOfWeight[id] = v.grouping.getGroupSize();
  }
  std::vector<std::pair<TensorId, int64_t>> trained;
  for (const auto& [w, grad] : gradOfWeight_) trained.emplace_back(w, g.tensor(w).info.nelms());
  shards_ = replication::planSharding(config_.options, trained, variableSettings_, globalReplicas_);
  for (const auto& [id, plan] : shards_) optimizerOptions_.shardElements[id] = plan.shard;
  optimizerGraph_ = ir::applyOptimizer(g, opt, gradOfWeight_, optimizerOptions_);
  groupOptimizerState();
  for (const auto& u : optimizerGraph_.updates) {
    for (const auto& state : u.state) {
      if (u.shardElements > 0 && state.perElement) shardedState_[state.id] = u.weight;
    }
    // Grouped weights reduce over their groups, sharded ones by a reduce-scatter; the rest here.
    if (!grouped_.count(u.weight) && !shards_.count(u.weight)) plainUpdates_.push_back(&u);
    hasApplyPhase_ = hasApplyPhase_ || !u.lambNorms.empty();
  }
  for (const auto& clip : opt.getClipNormSettings()) {
    ClipGroup group{clip.getMaxNorm(), {}};
    for (const auto& u : optimizerGraph_.updates) {
      const auto& ids = clip.getWeightIds();
      if (clip.getMode() == ClipNormSettings::Mode::ClipAllWeights ||
          std::find(ids.begin(), ids.end(), u.weight) != ids.end()) {
        group.updates.push_back(&u);
      }
    }
    clipGroups_.push_back(std::move(group));
  }

  for (const auto& u : optimizerGraph_.updates) {
    if (g.tensor(u.weight).info.dataType() == DataType::FLOAT16) maxLossScaling_ = 32768.0f;
  }
  for (const auto& [var, src] : statUpdates) {
    ir::OpSpec copy;
    copy.type = "CopyVarUpdate";
    copy.domain = ir::kXtrainDomain;
    copy.inputs = {var, src};
    copy.numOutputs = 0;
    copy.phase = ir::Phase::Accumulate;
    copy.name = "running-stat/" + var;
    g.addOp(std::move(copy));
  }
}

bool SessionImpl::isHostVisible(const ir::Tensor& t) const {
  return t.kind == ir::TensorKind::Variable || t.kind == ir::TensorKind::OptimizerState ||
         t.kind == ir::TensorKind::Accumulator;
}

void SessionImpl::prepareDevice() {
  if (prepared_) return;
  DeviceInfo& d = *config_.device;
  if (d.getType() != DeviceType::OfflineIpu &&
      d.getConnectionType() != DeviceConnectionType::Never && !d.isAttached() && !d.attach()) {
    throw error("cannot attach to device {}: its IPUs are in use by another process", d.getId());
  }
  // The memory check comes before the kernels are made: a tensor too large for an IPU is reported
  // as such, never handed to oneDNN (whose primitive creation can fault on absurd dimensions).
  computeMemory();  // throws OutOfMemoryException when an IPU overflows
  lowered_ = std::make_unique<LoweredGraph>(*graph_);
  if (d.getType() == DeviceType::OfflineIpu ||
      d.getConnectionType() == DeviceConnectionType::Never) {
    throw error(
        "device {} is offline: the model compiled and fits in memory (see getSummaryReport()), but "
        "it "
        "cannot run",
        d.getId());
  }
  joinInstances();
  replicas_.clear();
  for (int64_t r = 0; r < localReplicas_; ++r) replicas_.push_back(lowered_->makeBuffers());
  if (localReplicas_ > 1) {
    // Kernels keep scratch state between calls, so each replica thread runs its own copy of the
    // programs (replica 0 runs lowered_).
    for (int64_t r = 1; r < localReplicas_; ++r) {
      replicaPrograms_.push_back(std::make_unique<LoweredGraph>(*graph_));
    }
    pool_ = std::make_unique<ReplicaPool>(localReplicas_);
  }
  for (const auto& [id, t] : graph_->tensors()) {
    if (!isHostVisible(*t) || !t->value) continue;
    auto grouped = grouped_.find(id);
    if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
      // The host view of sharded state is whole: the weight's shape in the state's type (initially
      // zeros).
      HostTensor whole(
          TensorInfo(t->info.dataType(), graph_->tensor(sharded->second).info.shape()));
      whole.fillZero();
      hostWeights_[id] = std::move(whole);
    } else if (grouped == grouped_.end()) {
      hostWeights_[id] = *t->value;
    } else if (auto initial = groupedValues_.find(id); initial != groupedValues_.end()) {
      hostWeights_[id] = initial->second;
    } else {
      hostWeights_[id] = tileGroups(*t->value, grouped->second.groups());
    }
  }
  exchange_ = std::make_unique<replication::ReplicaExchange>(
      replication::ReplicaLayout{localReplicas_, globalReplicas_, replicaOffset_}, instances_,
      static_cast<replication::LocalReplicas&>(*this), gradientPlan(),
      replication::GradientReducer::bucketBytesFromEnvironment());
  collectives_ = std::make_unique<ReplicaCollectives>(instances_, localReplicas_, replicaOffset_,
                                                      globalReplicas_);
  applyOptimizerStateInitializers();
  prepared_ = true;
}

void SessionImpl::requirePrepared(const char* what) const {
  if (!prepared_) throw error("{}: call prepareDevice() first", what);
}

HostTensor& SessionImpl::replicaBuffer(int64_t replica, const TensorId& id) {
  return replicas_[static_cast<size_t>(replica)][static_cast<size_t>(lowered_->bufferIndex(id))];
}

void SessionImpl::weightsFromHost() {
  requirePrepared("weightsFromHost");
  for (int64_t r = 0; r < localReplicas_; ++r) {
    for (const auto& [id, value] : hostWeights_) {
      HostTensor& b = replicaBuffer(r, id);
      auto grouped = grouped_.find(id);
      if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
        const ShardPlan& plan = shards_.at(sharded->second);
        copyShardOut(value.raw(), plan.elements, plan.shard, plan.shardOf(replicaOffset_ + r),
                     b.raw(), dataTypeSize(b.dataType()));
      } else if (grouped == grouped_.end()) {
        std::memcpy(b.raw(), value.raw(), value.nbytes());
      } else {
        const int64_t group = grouped->second.grouping.getGroupAt(replicaOffset_ + r);
        std::memcpy(b.raw(), groupBytes(value, group), b.nbytes());
      }
    }
  }
}

void SessionImpl::weightsToHost() {
  requirePrepared("weightsToHost");
  for (auto& [id, value] : hostWeights_) {
    const HostTensor& whole = wholeHostValue(id);
    if (&whole != &value) std::memcpy(value.raw(), whole.raw(), value.nbytes());
  }
}

HostTensor& SessionImpl::wholeHostValue(const TensorId& id) {
  HostTensor& host = hostWeights_.at(id);
  if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
    exchange_->gatherShards(shards_.at(sharded->second), id, host.raw());
  } else if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
    exchange_->groupedToHost(id, grouped->second, host);
  } else {
    return replicaBuffer(0, id);
  }
  return host;
}

void SessionImpl::broadcastWeights(int rootRank) {
  requirePrepared("broadcastWeights");
  const int instances = exchange_->instanceCount();
  if (rootRank < 0 || rootRank >= instances) {
    throw error(
        "broadcastWeights: rootRank {} is out of range: the job has {} instance{} (ranks 0..{})",
        rootRank, instances, instances == 1 ? "" : "s", instances - 1);
  }
  for (const auto& [id, host] : hostWeights_) {
    if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
      exchange_->broadcastGrouped(id, grouped->second, rootRank);
    } else if (auto sharded = shardedState_.find(id); sharded != shardedState_.end()) {
      exchange_->broadcastSharded(id, shards_.at(sharded->second), rootRank);
    } else {
      exchange_->broadcastPlain(id, rootRank);
    }
  }
}

void SessionImpl::readWeights(const WeightsIO& weights) {
  requirePrepared("readWeights");
  for (const auto& [id, buf] : weights.all()) {
    auto it = hostWeights_.find(id);
    if (it == hostWeights_.end()) {
      throw error("readWeights: '{}' is not a weight or optimizer state of the session", id);
    }
    if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
      const HostTensor out = toRetrieval(grouped->second, it->second);
      checkHostBuffer("readWeights", id, out.info(), buf.info);
      std::memcpy(buf.data, out.raw(), out.nbytes());
      continue;
    }
    checkHostBuffer("readWeights", id, it->second.info(), buf.info);
    std::memcpy(buf.data, it->second.raw(), it->second.nbytes());
  }
}

void SessionImpl::writeWeights(const WeightsIO& weights) {
  requirePrepared("writeWeights");
  for (const auto& [id, buf] : weights.all()) {
    auto it = hostWeights_.find(id);
    if (it == hostWeights_.end()) {
      throw error("writeWeights: '{}' is not a weight or optimizer state of the session", id);
    }
    if (auto grouped = grouped_.find(id); grouped != grouped_.end()) {
      HostTensor given(TensorInfo(it->second.dataType(), grouped->second.retrievalShape()));
      checkHostBuffer("writeWeights", id, given.info(), buf.info);
      std::memcpy(given.raw(), buf.data, given.nbytes());
      it->second = fromRetrieval(grouped->second, given);
      continue;
    }
    checkHostBuffer("writeWeights", id, it->second.info(), buf.info);
    std::memcpy(it->second.raw(), buf.data, it->second.nbytes());
  }
}

void SessionImpl::modelToHost(const std::string& path, bool withOptimizerState) {
  requirePrepared("modelToHost");
  if (withOptimizerState && !config_.training) {
    throw error("modelToHost: an inference session has no optimizer state to write");
  }
  weightsToHost();
  std::map<TensorId, HostTensor> values, extra;
  for (const auto& id : graph_->tensorsOfKind(ir::TensorKind::Variable)) {
    values.emplace(id, hostWeights_.at(id));
  }
  // State initializers the model came with are always brought up to date; others are added when
  // asked for.
  for (const auto& u : optimizerGraph_.updates) {
    for (const auto& state : ir::stateWithAccumulator(u)) {
      const std::string& name = state.initializerName;
      if (stateInitializers_.count(name)) {
        values.emplace(name, hostWeights_.at(state.id));
      } else if (withOptimizerState) {
        extra.emplace(name, hostWeights_.at(state.id));
      }
    }
  }
  // The optimizer whose state the initializers hold, so a session of another mode refuses them.
  std::map<std::string, std::string> metadata;
  if (!extra.empty() || !stateInitializers_.empty()) {
    metadata[ir::kOptimizerStateOfKey] = ir::describeOptimizer(*config_.optimizer);
  }
  // Every instance holds the complete values; one file is written.
  if (instances_ && instances_->rank() != 0) return;
  writeModelWithWeights(modelBytes_, values, path, extra, metadata);
}

void SessionImpl::takeOptimizerStateInitializers() {
  const auto variables = graph_->tensorsOfKind(ir::TensorKind::Variable);
  const std::set<TensorId> names(variables.begin(), variables.end());
  for (const auto& id : variables) {
    for (const char* prefix : kStateInitializerPrefixes) {
      const std::string p(prefix);
      if (id.rfind(p, 0) != 0 || !names.count(id.substr(p.size()))) continue;
      const ir::Tensor& t = graph_->tensor(id);
      if (!t.consumers.empty() || !t.value) continue;  // the model uses it: an ordinary weight
      stateInitializers_.emplace(id, *t.value);
      graph_->removeTensor(id);
      break;
    }
  }
}

void SessionImpl::applyOptimizerStateInitializers() {
  // The same names mean other things under another mode (Adam's Accl2 is AdaMax's infinity norm).
  if (auto it = modelMetadata_.find(ir::kOptimizerStateOfKey);
      !stateInitializers_.empty() && it != modelMetadata_.end()) {
    const std::string mine = ir::describeOptimizer(*config_.optimizer);
    if (it->second != mine) {
      throw error(
          "the model's optimizer state initializers were written by optimizer {}, but this "
          "session's is {}: the state would mean something else (remove them to start afresh)",
          it->second, mine);
    }
  }
  std::set<TensorId> used;
  for (const auto& u : optimizerGraph_.updates) {
    for (const auto& state : ir::stateWithAccumulator(u)) {
      const std::string& name = state.initializerName;
      auto it = stateInitializers_.find(name);
      if (it == stateInitializers_.end()) continue;
      HostTensor& host = hostWeights_.at(state.id);
      if (it->second.info() != host.info()) {
        throw error(
            "the model's initializer '{}' is {} but the optimizer state it initialises is {}", name,
            it->second.info().toString(), host.info().toString());
      }
      host = it->second;
      used.insert(name);
    }
  }
  for (const auto& [name, value] : stateInitializers_) {
    if (!used.count(name)) {
      logging::session::warn(
          "the model's optimizer state initializer '{}' is ignored: the session's optimizer keeps "
          "no "
          "such state",
          name);
    }
  }
}

void SessionImpl::resetHostWeights(const std::string& model, bool ignoreMissing) {
  requirePrepared("resetHostWeights");
  std::map<TensorId, HostTensor> values = readInitializers(model);
  for (const auto& id : graph_->tensorsOfKind(ir::TensorKind::Variable)) {
    auto it = values.find(id);
    if (it == values.end()) {
      if (ignoreMissing) continue;
      throw error("resetHostWeights: the model has no initializer for weight '{}'", id);
    }
    HostTensor& host = hostWeights_.at(id);
    if (it->second.info() != host.info()) {
      throw error("resetHostWeights: weight '{}' is {} in the model but {} in the session", id,
                  it->second.info().toString(), host.info().toString());
    }
    host = it->second;
  }
}

void SessionImpl::updateOptimizerFromHost(const Optimizer& next) {
  XT_CHECK(config_.training, "updateOptimizerFromHost on an inference session");
  std::vector<TensorId> weights;
  for (const auto& u : optimizerGraph_.updates) weights.push_back(u.weight);
  ir::checkOptimizerUpdate(*config_.optimizer, next, weights);
  // With automatic loss scaling the scale is the session's: a new optimizer (a learning-rate
  // schedule, say) keeps it and its run of finite steps, unless it gives another lossScaling value.
  const bool restart = !config_.options.automaticLossScalingSettings.enabled ||
                       next.getLossScalingVal() != config_.optimizer->getLossScalingVal();
  config_.optimizer = next.clone();
  if (restart) {
    lossScaling_ = next.getLossScalingVal();
    goodSteps_ = 0;
  }
  writeHyperValues();
}

void SessionImpl::writeHyperValues() {
  const Optimizer& opt = *config_.optimizer;
  for (const auto& u : optimizerGraph_.updates) {
    const auto hv = ir::hyperValues(opt, u.weight, optimizerOptions_, lossScaling_);
    HostTensor value = HostTensor::fromVector<float>({static_cast<int64_t>(hv.size())}, hv);
    if (prepared_) {
      hostWeights_.at(u.hyper) = value;
      for (int64_t r = 0; r < localReplicas_; ++r) replicaBuffer(r, u.hyper) = value;
    }
    graph_->tensor(u.hyper).value = std::make_shared<HostTensor>(value);
  }
  if (!lossScalingSeed_.empty()) {
    HostTensor ls = filledWith(graph_->tensor(lossScalingSeed_).info, lossScaling_);
    if (prepared_) {
      hostWeights_.at(lossScalingSeed_) = ls;
      for (int64_t r = 0; r < localReplicas_; ++r) replicaBuffer(r, lossScalingSeed_) = ls;
    }
    graph_->tensor(lossScalingSeed_).value = std::make_shared<HostTensor>(ls);
  }
}

Shape SessionImpl::inputBufferShape(const TensorId& id) const {
  const ir::Tensor& t = graph_->tensor(id);
  if (t.kind != ir::TensorKind::Stream) {
    throw error("'{}' is a {} tensor, not an input fed by the host", id, kindOfFault(t));
  }
  if (broadcastInputs_.count(id)) {
    return withPrefix({config_.dataFlow.batchesPerStep(), accumulationFactor_}, t.info.shape());
  }
  return withPrefix({config_.dataFlow.batchesPerStep(), accumulationFactor_, localReplicas_},
                    t.info.shape());
}

Shape SessionImpl::anchorBufferShape(const TensorId& id) const {
  const AnchorReturnType& art = config_.dataFlow.art(id);
  const Shape& shape = graph_->tensor(id).info.shape();
  const int64_t bps = config_.dataFlow.batchesPerStep();
  switch (art.id()) {
    case AnchorReturnTypeId::All:
      return withPrefix({bps, accumulationFactor_, localReplicas_}, shape);
    case AnchorReturnTypeId::EveryN:
      return withPrefix({bps / art.rp(), accumulationFactor_, localReplicas_}, shape);
    case AnchorReturnTypeId::Final:
    case AnchorReturnTypeId::Sum: return withPrefix({localReplicas_}, shape);
  }
  return shape;
}

void SessionImpl::joinInstances() {
  if (!config_.options.enableDistributedReplicatedGraphs || globalReplicas_ == localReplicas_)
    return;
  if (instances_) return;
  instances_ = replication::joinInstances({localReplicas_, globalReplicas_, replicaOffset_});
  const int numInstances = instances_->size();
  std::vector<int> everyone(static_cast<size_t>(numInstances));
  for (int i = 0; i < numInstances; ++i) everyone[static_cast<size_t>(i)] = i;
  checkpointComm_ = instances_->split(everyone, "checkpoint");
  // With one local replica and no accumulation, a weight's gradient is final once the backward
  // pass wrote it for the last time: its bucket's all-reduce can start there, overlapping the rest
  // of the backward pass. (Local replicas must be summed first, and accumulators are final only
  // after the last micro-batch, so those reduce after the backward pass.)
  if (localReplicas_ == 1 && accumulationFactor_ == 1) {
    readyAfter_.assign(lowered_->program(ir::Phase::Backward).size(), {});
    for (const ir::WeightUpdate* plain : plainUpdates_) {
      const ir::WeightUpdate& u = *plain;
      const int64_t k = lowered_->lastWriter(ir::Phase::Backward, u.reduced);
      if (k >= 0) readyAfter_[static_cast<size_t>(k)].push_back(u.reduced);
    }
  }
}

replication::GradientPlan SessionImpl::gradientPlan() const {
  replication::GradientPlan plan;
  plan.mean = optimizerGraph_.replicaReductionIsMean;
  for (const ir::WeightUpdate* u : plainUpdates_) plan.plain.push_back(u->reduced);
  for (const auto& u : optimizerGraph_.updates) {
    if (auto it = grouped_.find(u.weight); it != grouped_.end()) {
      plan.grouped.push_back({u.weight, u.reduced, it->second});
    } else if (auto s = shards_.find(u.weight); s != shards_.end()) {
      plan.sharded.push_back(
          {u.weight, u.reduced, u.gradShard, u.weightShard, u.accumulator, s->second});
    }
  }
  return plan;
}

void SessionImpl::forEach(const std::function<void(int64_t)>& fn) {
  if (pool_) {
    pool_->run(fn);
  } else {
    for (int64_t r = 0; r < localReplicas_; ++r) fn(r);
  }
}

void SessionImpl::takeHalfAccumulators() {
  for (const auto& u : optimizerGraph_.updates) {
    if (u.accumulator.empty() || u.accumulator == u.reduced) continue;
    for (int64_t r = 0; r < localReplicas_; ++r) {
      HostTensor& acc = replicaBuffer(r, u.accumulator);
      const auto* half = reinterpret_cast<const uint16_t*>(acc.raw());
      float* out = replicaBuffer(r, u.reduced).data<float>();
      for (int64_t i = 0; i < acc.nelms(); ++i) out[i] = halfToFloat(half[i]);
      acc.fillZero();
    }
  }
}

void SessionImpl::reduceAcrossReplicas() {
  takeHalfAccumulators();
  exchange_->reduceGradients();
}

void SessionImpl::run(IStepIO& stepio, const std::string& debugName) {
  requirePrepared("run");
  const auto runStart = std::chrono::steady_clock::now();
  const int64_t bps = config_.dataFlow.batchesPerStep();
  const int64_t af = accumulationFactor_;
  const int64_t L = localReplicas_;
  StepBuffers io(*graph_, config_.dataFlow, config_.options.syntheticDataMode, bps, af, L, stepio,
                 seed_ ^ static_cast<uint64_t>(stepCount_), broadcastInputs_);
  logging::session::debug("run '{}': step {}, {} batches x {} micro-batches x {} replicas",
                          debugName, stepCount_, bps, af, L);

  std::vector<int> inputIndex;
  for (const auto& id : io.inputIds()) inputIndex.push_back(lowered_->bufferIndex(id));
  std::vector<int> anchorIndex;
  for (const auto& id : io.anchorIds()) anchorIndex.push_back(lowered_->bufferIndex(id));
  const int accIndex = optimizerGraph_.accumulationIndex.empty()
                           ? -1
                           : lowered_->bufferIndex(optimizerGraph_.accumulationIndex);

  auto programOf = [&](int64_t r) -> const LoweredGraph& {
    return r == 0 || !pool_ || lowered_->profiling()
               ? *lowered_
               : *replicaPrograms_[static_cast<size_t>(r - 1)];
  };
  // Each replica on its own thread (or in order on this one: a single replica, or per-op profiling,
  // whose counters the threads would share). Host I/O stays on this thread, in replica order, so
  // IStepIO callbacks see the calls in the same order whatever the threads do.
  auto forEachReplica = [&](const std::function<void(int64_t)>& fn) {
    if (pool_ && !lowered_->profiling()) {
      pool_->run(fn);
    } else {
      for (int64_t r = 0; r < L; ++r) fn(r);
    }
  };
  for (int64_t b = 0; b < bps; ++b) {
    for (int64_t a = 0; a < af; ++a) {
      const int64_t iteration = b * af + a;
      for (int64_t r = 0; r < L; ++r) {
        auto& buffers = replicas_[static_cast<size_t>(r)];
        for (size_t k = 0; k < inputIndex.size(); ++k) {
          io.readInput(k, iteration, r, buffers[static_cast<size_t>(inputIndex[k])]);
        }
      }
      forEachReplica([&](int64_t r) {
        auto& buffers = replicas_[static_cast<size_t>(r)];
        const LoweredGraph& program = programOf(r);
        // The model's replicated collectives meet this replica's group through the scope; the
        // replicas run concurrently only on the pool's threads.
        const device::ReplicaScope collectiveScope(*collectives_, r,
                                                   pool_ && !lowered_->profiling());
        // Each replica's stream depends on its global index, so replicas of different instances
        // differ.
        const uint64_t replica = static_cast<uint64_t>(replicaOffset_ + r);
        const uint64_t seed = device::mixSeed(seed_ + 0x9e3779b97f4a7c15ull * replica) ^
                              device::mixSeed(executionCounter_ + static_cast<uint64_t>(iteration));
        program.run(ir::Phase::Forward, buffers, seed);
        if (config_.training) {
          if (!readyAfter_.empty() && !lowered_->profiling()) {
            program.run(ir::Phase::Backward, buffers, seed, [&](size_t k) {
              for (const auto& id : readyAfter_[k]) {
                exchange_->gradientReady(id);
              }
            });
          } else {
            program.run(ir::Phase::Backward, buffers, seed);
          }
          if (accIndex >= 0) {
            buffers[static_cast<size_t>(accIndex)].data<float>()[0] = static_cast<float>(a);
          }
          program.run(ir::Phase::Accumulate, buffers, seed);
        }
      });
      for (int64_t r = 0; r < L; ++r) {
        auto& buffers = replicas_[static_cast<size_t>(r)];
        for (size_t k = 0; k < anchorIndex.size(); ++k) {
          io.writeAnchor(k, iteration, r, buffers[static_cast<size_t>(anchorIndex[k])]);
        }
      }
    }
    if (config_.training) {
      const auto reduceStart = std::chrono::steady_clock::now();
      reduceAcrossReplicas();
      reductionSeconds_ +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - reduceStart).count();
      if (config_.options.automaticLossScalingSettings.enabled && !gradientsAreFinite()) {
        skipUpdate();
        continue;
      }
      clipGradients();
      // The seed of stochastic rounding: the same on every replica, new for every update.
      const uint64_t updateSeed =
          device::mixSeed(seed_ ^ device::mixSeed(executionCounter_ + static_cast<uint64_t>(b)));
      forEachReplica([&](int64_t r) {
        programOf(r).run(ir::Phase::Update, replicas_[static_cast<size_t>(r)], updateSeed);
      });
      if (hasApplyPhase_) {
        completeLambNorms();
        forEachReplica([&](int64_t r) {
          programOf(r).run(ir::Phase::Apply, replicas_[static_cast<size_t>(r)], updateSeed);
        });
      }
      exchange_->gatherShardedWeights();
      if (config_.options.automaticLossScalingSettings.enabled) countFiniteStep();
    }
  }
  io.finish();
  executionCounter_ += static_cast<uint64_t>(bps * af);
  ++stepCount_;
  runSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - runStart).count();
}

std::string SessionImpl::stepTimeReport() const {
  if (stepCount_ == 0) return "";
  const double steps = static_cast<double>(stepCount_);
  char line[256];
  std::snprintf(line, sizeof line,
                "run: %lld steps, %.3f ms per step; gradient reduction across %lld replicas (%lld "
                "local): %.3f ms per step (%.1f%%)\n",
                static_cast<long long>(stepCount_), runSeconds_ / steps * 1e3,
                static_cast<long long>(globalReplicas_), static_cast<long long>(localReplicas_),
                reductionSeconds_ / steps * 1e3,
                runSeconds_ > 0 ? 100.0 * reductionSeconds_ / runSeconds_ : 0.0);
  return line;
}

void SessionImpl::setRandomSeed(uint64_t seed) {
  seed_ = seed;
  executionCounter_ = 0;
}

std::vector<uint32_t> SessionImpl::rngState() const {
  return {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32),
          static_cast<uint32_t>(executionCounter_), static_cast<uint32_t>(executionCounter_ >> 32)};
}

void SessionImpl::setRngState(const std::vector<uint32_t>& state) {
  if (state.size() != 4) {
    throw error("setRNGState: expected a state of 4 words (as getRNGState returns), got {}",
                state.size());
  }
  seed_ = static_cast<uint64_t>(state[0]) | (static_cast<uint64_t>(state[1]) << 32);
  executionCounter_ = static_cast<uint64_t>(state[2]) | (static_cast<uint64_t>(state[3]) << 32);
}

}  // namespace xtrain::session
