#include "session/session_impl.hpp"

#include <algorithm>
#include <set>

#include "comm/communicator.hpp"
#include "common/check.hpp"
#include "common/env_switch.hpp"
#include "device/ipu/device_infos.hpp"
#include "device/ipu/ipu_wait.hpp"
#include "device/program.hpp"
#include "ir/fusion/fusion.hpp"
#include "ir/onnx/onnx_metadata.hpp"
#include "session/dot_writer.hpp"
#include "session/engine_options.hpp"
#include "session/layout_plan.hpp"
#include "session/memory_plan.hpp"
#include "session/model_io.hpp"
#include "session/offchip_plan.hpp"
#include "session/option_checks.hpp"
#include "session/option_ranges.hpp"
#include "session/pattern_checks.hpp"
#include "session/phase_times.hpp"
#include "session/step_buffers.hpp"
#include "session/training_graph.hpp"
#include "session/virtual_graphs.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/popart_error.hpp"
#include "xtrain/tensornames.hpp"

namespace xtrain::session {

namespace {

const char* kindOfFault(const ir::Tensor& t) {
  return ir::toString(t.kind);
}

// Why a device could not be attached: who holds its IPUs.
std::string busyDevice(const DeviceInfo& d) {
  const std::string holders = device::whoHolds(d);
  return holders.empty() ? std::string("its IPUs are in use by another process") : holders;
}

// How SessionOptions fit together, the session's kind and the device (the members' own ranges are
// checkOptionRanges').
void checkOptionsFit(const SessionConfig& config, int64_t localReplicas) {
  const SessionOptions& o = config.options;
  auto notYet = [](const std::string& what) {
    throw error("SessionOptions: {} is not supported yet", what);
  };
  // The members' own ranges were checked (checkOptionRanges); here, how they fit together.
  if (o.enableDistributedReplicatedGraphs) {
    const int64_t g = o.globalReplicationFactor;
    const int64_t l = o.getLocalReplicationFactor();
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
  if (!o.enableGradientAccumulation && o.accumulationFactor > 1) {
    // Each message starts with PopART's sentence, which PopART programs compare.
    throw error(
        "enableGradientAccumulation is false, but accumulationFactor > 1. SessionOptions: "
        "accumulationFactor is {}; enable gradient accumulation or set the factor to 1",
        o.accumulationFactor);
  }
  if (o.getAccumulationFactor() > 1 && !config.training) {
    throw error(
        "Gradient Accumulation only available when training. SessionOptions: "
        "enableGradientAccumulation with accumulationFactor {} needs a TrainingSession",
        o.getAccumulationFactor());
  }
  // Weights, optimizer state and accumulators may go off chip (offchip_plan.hpp), activations not.
  checkOffChipOptions(o);
  if (o.activationTensorLocationSettings.location.replicatedTensorSharding ==
      ReplicatedTensorSharding::On) {
    throw error(
        "SessionOptions: activations cannot be sharded across replicas (each replica computes "
        "its own); replicated tensor sharding applies to weights, optimizer state and "
        "accumulators");
  }
  if (!config.training) {
    for (const auto* s : {&o.weightTensorLocationSettings, &o.optimizerStateTensorLocationSettings,
                          &o.accumulatorTensorLocationSettings}) {
      if (s->location.replicatedTensorSharding == ReplicatedTensorSharding::On) {
        notYet("replicated tensor sharding in an inference session (it shards training updates)");
      }
    }
  }

  const DeviceInfo& d = *config.device;
  if (d.getType() == DeviceType::Cpu && localReplicas > 1) {
    throw error("a CPU device cannot run {} replicas; use an IPU model or pool device with {} IPUs",
                localReplicas, localReplicas);
  }
  if (d.getType() != DeviceType::Cpu && d.getNumIpus() % localReplicas != 0) {
    throw error("the device has {} IPUs, which cannot be split among {} local replicas",
                d.getNumIpus(), localReplicas);
  }
}

// An inference session whose ops all compute nothing it returns: PopART prunes every op and
// refuses the graph (its message, which its programs compare, is args[0]). A model without ops
// is left to the anchor checks.
void checkSomethingToCompute(const ir::Graph& graph, const DataFlow& dataFlow) {
  if (graph.ops().empty()) return;
  // Some op is needed exactly when some anchor is an op's output.
  for (const auto& a : dataFlow.anchors()) {
    if (graph.hasTensor(a) && graph.tensor(a).producer >= 0) return;
  }
  std::string anchors;
  for (const auto& a : dataFlow.anchors()) anchors += (anchors.empty() ? "'" : ", '") + a + "'";
  const std::string popart = "All operations in the main graph were pruned, nothing to compute";
  throw popart_worded_error(
      popart, xtrain::format("the model's {} op(s) compute none of the anchored tensors ({}), so "
                             "the session has nothing to compute; anchor an op's output. {}",
                             graph.ops().size(), anchors.empty() ? "none" : anchors, popart));
}

}  // namespace

SessionImpl::SessionImpl(SessionConfig config) : config_(std::move(config)) {
  PhaseTimes times;
  if (!config_.device) throw error("no device given: acquire one with DeviceManager first");
  layout_.local = config_.options.getLocalReplicationFactor();
  layout_.global = config_.options.getGlobalReplicationFactor();
  layout_.offset =
      config_.options.enableDistributedReplicatedGraphs ? config_.options.globalReplicaOffset : 0;
  accumulationFactor_ = config_.options.getAccumulationFactor();
  checkOptionRanges(config_.options, *config_.device);
  checkOptionsFit(config_, layout_.local);
  checkSessionOptions(config_.options);
  engineSettings_ = parseEngineOptions(config_.options.engineOptions);
  profiler_ = SessionProfiler(config_.options, engineSettings_);
  prepareAutoReportDirectory(engineSettings_);
  if (!engineSettings_.traceFile.empty()) {
    trace_ = std::make_unique<timeline::JobTrace>(
        timeline::JobTraceRequest{engineSettings_.traceFile, engineSettings_.traceSteps,
                                  "SessionOptions::engineOptions[\"trace.file\"]", false});
  }

  times.lap("options");
  ImportedModel imported = importModel(config_.model, config_.inputShapes, layout_.global,
                                       config_.options.batchNormRunningVariance);
  graph_ = std::move(imported.graph);
  if (config_.options.groupNormStridedChannelGrouping) useStridedGroupNorm(*graph_);
  useMatMulPartialsType(*graph_, config_.options.partialsTypeMatMuls);
  modelBytes_ = std::move(imported.bytes);
  modelMetadata_ = std::move(imported.metadata);
  hostState_ = HostState(std::move(imported.groupedValues));
  times.lap("import");
  writeDotCheck(*graph_, config_.options, "Fwd0");
  if (auto embedded = ir::readReplicationFactor(modelMetadata_);
      embedded && *embedded != layout_.global) {
    logging::session::warn(
        "the model was built for {} replicas (__replicationFactor) but the session has {}; grouped "
        "weights take their group count from the session's replicas",
        *embedded, layout_.global);
  }
  hostState_.collectVariableSettings(*graph_, modelMetadata_, layout_);
  for (const auto& id : graph_->inputs()) {
    if (ir::readReplicatedStreamMode(modelMetadata_, id) == ReplicatedStreamMode::Broadcast) {
      broadcastInputs_.insert(id);
    }
  }

  checkForwardOpsAgainstPatterns(*graph_, config_.patterns);
  if (config_.training) checkLoss(*graph_, config_.loss);
  if (!config_.training) checkLossScalingInInference(config_.options);
  const std::vector<TensorId> gradientTargets = checkAnchorsExist();
  if (!config_.training) checkSomethingToCompute(*graph_, config_.dataFlow);
  for (const auto& [opId, op] : graph_->ops()) {
    // Dropout and ShapedDropout drop only when training, as PopART's do.
    if (op->type == "Dropout" || op->type == "ShapedDropout") {
      op->attrs.set("training_mode", int64_t{config_.training ? 1 : 0});
    }
  }
  // The fingerprint is of the model itself: after optimizer state carried as initializers has left
  // the graph, before the training graph is added.
  if (config_.training) hostState_.takeOptimizerStateInitializers(*graph_);
  graphFingerprint_ = graphFingerprint(*graph_);
  // After the fingerprint: a model is the same model whichever of its inputs a session reads.
  removeUnusedInputs(gradientTargets);
  // virtualGraphMode: Off drops placement annotations, Manual checks them, Auto makes them.
  pipelineStages_ = placeForwardGraph(*graph_, config_, layout_.local);
  checkBatchSerialization(*graph_, config_.options, config_.training);
  times.lap("checks");
  // After the fingerprint (checkpoints of fused and unfused runs stay interchangeable), before
  // autodiff (a fused op has one gradient op). XTRAIN_FUSION=0 (or off, false) turns it off to
  // compare.
  if (readBoolSwitch("XTRAIN_FUSION", true)) {
    std::set<TensorId> keep(config_.dataFlow.anchors().begin(), config_.dataFlow.anchors().end());
    keep.insert(gradientTargets.begin(), gradientTargets.end());  // their gradients are anchored
    if (!config_.loss.empty()) keep.insert(config_.loss);
    const ir::FusionReport fused = ir::fuseGraph(*graph_, keep);
    if (fused.total() > 0) {
      logging::session::info("fusion: {} GELU subgraphs -> Gelu, {} SiLU subgraphs -> Swish",
                             fused.gelu, fused.silu);
    }
  }
  times.lap("fusion");
  writeDotCheck(*graph_, config_.options, "Fwd1");
  if (config_.training) {
    TrainingGraph training = buildTrainingGraph(*graph_, config_, layout_, accumulationFactor_,
                                                hostState_, updateControl_);
    optimizerGraph_ = std::move(training.updates);
    optimizerOptions_ = std::move(training.options);
    updateControl_.setUpdates(*graph_, optimizerGraph_, optimizerOptions_, hostState_.grouped(),
                              hostState_.shards());
    applyRecomputation(*graph_, config_);
    writeDotCheck(*graph_, config_.options, "Bwd0");
  } else {
    const size_t variableCopies = addInferenceVariableCopies(*graph_);
    if (variableCopies > 0 && pipelineStages_ > 0) {
      throw error(
          "the model's CopyVarUpdate ops write variables, which a pipelined InferenceSession does "
          "not do (not implemented): run it on one IPU per replica");
    }
    if (config_.options.autoRecomputation != RecomputationType::None) {
      logging::session::debug(
          "SessionOptions.autoRecomputation has no effect in an inference session: there is no "
          "backward pass to recompute for");
    }
  }
  // The ops the training graph added go where their forward op or weight is; IpuCopy ops carry
  // tensors between the IPUs of a replica.
  placeTrainingGraph(*graph_, config_, optimizerGraph_);
  // Once every weight, optimizer state and accumulator exists: which of them live off chip.
  offChip_ = planOffChip(*graph_, config_.options, hostState_.shards());
  checkStateAnchors();
  if (pipelineStages_ > 0) planPipelineSchedule();
  times.lap("training graph");
  writeDotCheck(*graph_, config_.options, "PreAlias");
  writeDotCheck(*graph_, config_.options, "Final");
  logging::session::info("session built: {} ops, {} tensors, {} local replicas, af {}",
                         graph_->ops().size(), graph_->tensors().size(), layout_.local,
                         accumulationFactor_);
  logging::session::debug("session created in {}", times.summary());
}

SessionImpl::~SessionImpl() = default;

// Every anchor names a tensor of the model, or the gradient of one in a training session (those
// and the loss-scaling tensors come with the training graph). Returns the anchored gradients'
// forward tensors.
TensorId SessionImpl::stateAnchorWeight(const TensorId& id) {
  for (const char* prefix : kStateInitializerPrefixes) {
    const std::string p(prefix);
    if (id.size() > p.size() && id.compare(0, p.size(), p) == 0) return id.substr(p.size());
  }
  return {};
}

void SessionImpl::checkStateAnchors() const {
  for (const auto& id : config_.dataFlow.anchors()) {
    const TensorId weight = stateAnchorWeight(id);
    if (weight.empty()) continue;
    if (!graph_->hasTensor(id)) {
      throw error(
          "anchor '{}' is not a tensor of the model, nor optimizer state or an accumulator the {} "
          "keeps (check the DataFlow's anchor names, the optimizer and gradient accumulation)",
          id, config_.training ? "session's optimizer" : "session (an InferenceSession)");
    }
    if (offChip_.offChip(id) || hostState_.shards().count(weight) != 0) {
      throw error(
          "anchor '{}': the optimizer state is {}, which xtrain does not anchor (its whole value "
          "is not in the replica's memory)",
          id, offChip_.offChip(id) ? "stored off chip" : "sharded over replicas");
    }
  }
}

std::vector<TensorId> SessionImpl::checkAnchorsExist() const {
  // An inference session without anchors would compute nothing the host sees. PopART's sentence,
  // verbatim (programs compare the whole message).
  if (!config_.training && config_.dataFlow.anchors().empty()) {
    throw error("User must specify an anchor tensor when doing inference.");
  }
  std::vector<TensorId> gradientTargets = gradientAnchorTargets(config_.dataFlow);
  for (const auto& id : config_.dataFlow.anchors()) {
    if (id.rfind(reservedGradientPrefix(), 0) == 0) continue;  // checked below
    if (isLossScalingTensor(config_.options, id)) continue;    // added with the training graph
    if (!stateAnchorWeight(id).empty()) continue;  // checkStateAnchors, once the state exists
    if (!graph_->hasTensor(id)) {
      // (lossScaling_<type>: PopART's loss scaling tensor, a tensor of xtrain's only with
      // automatic loss scaling, checked above.)
      std::string hyper = id.rfind(reservedLossScalingPrefix(), 0) == 0
                              ? std::string(reservedLossScalingPrefix())
                              : std::string();
      for (auto prefix : kReservedOptimizerHyperparameterPrefixes) {
        if (id.rfind(prefix(), 0) == 0) hyper = prefix();
      }
      if (!hyper.empty()) {
        throw error(
            "anchor '{}' names one of PopART's optimizer hyperparameter tensors (prefix '{}'): "
            "xtrain keeps the optimizer's values on the host, not in tensors of the model, so "
            "they cannot be anchored (the Optimizer given to the session holds them)",
            id, hyper);
      }
      throw error("anchor '{}' is not a tensor of the model (check the DataFlow's anchor names)",
                  id);
    }
  }
  for (const auto& t : gradientTargets) {
    if (!config_.training) {
      throw error(
          "anchor '{}{}' is a gradient, which only a TrainingSession computes (this is an "
          "InferenceSession)",
          reservedGradientPrefix(), t);
    }
    if (!graph_->hasTensor(t)) {
      throw error("anchor '{}{}' is the gradient of '{}', which is not a tensor of the model",
                  reservedGradientPrefix(), t, t);
    }
  }
  return gradientTargets;
}

void SessionImpl::planPipelineSchedule() {
  // The host reads the anchors and the gradients automatic loss scaling tracks, each after the
  // cycle whose slot writes it.
  std::vector<TensorId> hostRead = config_.dataFlow.anchors();
  for (const auto& id : updateControl_.trackedGradients()) hostRead.push_back(id);
  pipeline_ = planPipeline(*graph_, pipelineStages_, config_.training,
                           graph_->tensorsOfKind(ir::TensorKind::Stream), hostRead,
                           optimizerGraph_.accumulationIndex);
}

void SessionImpl::removeUnusedInputs(const std::vector<TensorId>& gradientTargets) {
  std::set<TensorId> keep(config_.dataFlow.anchors().begin(), config_.dataFlow.anchors().end());
  keep.insert(gradientTargets.begin(), gradientTargets.end());
  keep.insert(graph_->outputs().begin(), graph_->outputs().end());
  const std::vector<TensorId> inputs = graph_->inputs();
  for (const auto& id : inputs) {
    const ir::Tensor& t = graph_->tensor(id);
    if (t.kind != ir::TensorKind::Stream || !t.consumers.empty() || keep.count(id) != 0) continue;
    logging::session::info("model input '{}' is not used by any op: removed (no buffer needed)",
                           id);
    graph_->removeTensor(id);
    broadcastInputs_.erase(id);
    unusedInputs_.insert(id);
  }
}

void SessionImpl::prepareDevice() {
  if (prepared_) return;
  PhaseTimes times;
  const SessionOptions& options = config_.options;
  if (options.compilationProgressLogger) {
    options.compilationProgressLogger(0, options.compilationProgressTotal);
  }
  DeviceInfo& d = *config_.device;
  // Always: attached from the start (re-attached here if the caller detached it). OnDemand:
  // attached once the program is compiled and fits, below, so a failed compile never held the IPUs.
  if (d.getType() != DeviceType::OfflineIpu &&
      d.getConnectionType() == DeviceConnectionType::Always && !d.isAttached() && !d.attach()) {
    throw runtime_error("cannot attach to device {}: {}", d.getId(), busyDevice(d));
  }
  // The memory check comes before the kernels are made: a tensor too large for an IPU is reported
  // as such, never handed to oneDNN (whose primitive creation can fault on absurd dimensions).
  times.lap("attach");
  // Every op on an IPU of its replica (PopART checks it when it lowers the graph).
  checkVirtualGraphs(*graph_, config_, layout_.local);
  // batchSerializationSettings: the activations that live one slice at a time are charged as one
  // slice (batch_serial.hpp); the host computes the whole batch either way. chargeMemory throws
  // OutOfMemoryException when an IPU overflows.
  const CycleModel cycles(d.getType() == DeviceType::Cpu ? 0 : d.getTilesPerIPU());
  batchSerial_ = planBatchSerialization(*graph_, options.batchSerializationSettings,
                                        config_.dataFlow.anchors(), cycles);
  device::MemoryModel memory = [&] {
    const SliceShapes slices(*graph_, batchSerial_);
    return chargeMemory(*graph_, d, layout_.local, hostState_.shards(), config_.dataFlow.anchors(),
                        offChip_);
  }();
  chargePipelineStashes(memory, pipeline_, layout_.local);
  profiler_.recordMemory(std::move(memory), figures());
  times.lap("memory check");
  // Activations share the buffer plan's block and may be channels-last between convolutions; what
  // the host reads keeps its own, plain buffer.
  LoweringOptions lowering;
  lowering.bufferReuse = bufferReuseFromEnvironment();
  lowering.channelsLast = channelsLastFromEnvironment();
  for (const auto& id : config_.dataFlow.anchors()) lowering.hostRead.insert(id);
  for (const auto& id : updateControl_.trackedGradients()) lowering.hostRead.insert(id);
  lowering.floatingPointChecks = options.enableFloatingPointChecks;
  lowering.offChip = &offChip_;
  if (pipeline_.enabled()) {
    // The buffer plan shares bytes between activations by their liveness in one micro-batch's
    // schedule; pipelined micro-batches overlap, so every tensor keeps its own buffer.
    lowering.bufferReuse = BufferReuse::Off;
    lowering.pipelineSlots = pipeline_.slotOf;
    lowering.slots = pipeline_.slots;
    lowering.slotCopies = pipeline_.slotCopies;
    lowering.updateGroups = pipeline_.updateGroups;
  }
  if (!runtime_) runtime_ = std::make_unique<ReplicaRuntime>(layout_);
  ReplicaRuntime& runtime = *runtime_;
  runtime.setPipeline(pipeline_.enabled() ? &pipeline_ : nullptr);
  profiler_.setPipeline(pipeline_.enabled() ? &pipeline_ : nullptr);
  profiler_.setSerializedCycles(batchSerial_.serializedCycles);
  runtime.lower(*graph_, lowering);
  times.lap("lowering (kernels, buffer plan)");
  if (d.getType() == DeviceType::OfflineIpu ||
      d.getConnectionType() == DeviceConnectionType::Never) {
    throw error(
        "device {} is offline: the model compiled and fits in memory (see getSummaryReport()), but "
        "it "
        "cannot run",
        d.getId());
  }
  if (d.getConnectionType() == DeviceConnectionType::OnDemand && !d.isAttached()) {
    logging::devicex::debug("attaching to device {} on demand, after compilation", d.getId());
    if (!d.tryAttachUntilTimeout()) {
      throw runtime_error(
          "failed to attach to device {} (DeviceConnectionType::OnDemand) after compiling: {} "
          "(waited {} s: DeviceManager::setOnDemandAttachTimeout / XTRAIN_WAIT_FOR_IPU)",
          d.getId(), busyDevice(d),
          std::max(static_cast<double>(d.getOnDemandAttachTimeout()), device::waitForIpuSeconds()));
    }
  }
  if (runtime.joinInstances(options.enableDistributedReplicatedGraphs)) {
    const int numInstances = runtime.instances()->size();
    std::vector<int> everyone(static_cast<size_t>(numInstances));
    for (int i = 0; i < numInstances; ++i) everyone[static_cast<size_t>(i)] = i;
    checkpoints_.setCommunicator(runtime.instances()->split(everyone, "checkpoint"));
  }
  times.lap("on-demand attach and join");
  runtime.build();
  hostState_.createViews(*graph_);
  times.lap("buffers and weights");
  const replication::GradientPlan gradients = hostState_.gradientPlan(optimizerGraph_);
  std::vector<std::pair<TensorId, TensorId>> halfAccumulators;
  for (const auto& u : optimizerGraph_.updates) {
    if (!u.accumulator.empty() && u.accumulator != u.reduced) {
      halfAccumulators.emplace_back(u.accumulator, u.reduced);
    }
  }
  runtime.connect(gradients, std::move(halfAccumulators), accumulationFactor_);
  hostState_.applyOptimizerStateInitializers(optimizerGraph_, modelMetadata_,
                                             config_.optimizer.get());
  updateControl_.attach(runtime, runtime.exchange(), hostState_.views());
  times.lap("exchange");
  logging::session::debug("prepareDevice in {}", times.summary());
  logging::session::info("Graph compiled: {} ops on {} local replicas", graph_->ops().size(),
                         layout_.local);
  prepared_ = true;
  if (options.compilationProgressLogger) {
    options.compilationProgressLogger(options.compilationProgressTotal,
                                      options.compilationProgressTotal);
  }
  runtime.collectives().setRecorder([this](const replication::CollectiveRecord& c) {
    profiler_.profile().addCollective({c.communicator, c.groupSize, c.operation, c.what}, c.bytes,
                                      c.seconds);
  });
  profiler_.setIpusPerReplica(ipusPerReplica(d, layout_.local));
  // One set of report files per instance when several share the directory.
  profiler_.start(*graph_, runtime.lowered(), d, runtime.exchange(), gradients,
                  runtime.instances()
                      ? format(".{}", layout_.offset / std::max<int64_t>(1, layout_.local))
                      : "");
}

SessionFigures SessionImpl::figures() const {
  SessionFigures f;
  f.training = config_.training;
  f.ops = graph_->ops().size();
  f.tensors = graph_->tensors().size();
  f.localReplicas = layout_.local;
  f.globalReplicas = layout_.global;
  f.accumulationFactor = accumulationFactor_;
  f.batchesPerStep = config_.dataFlow.batchesPerStep();
  f.stepsRun = stepCount_;
  if (batchSerial_.enabled()) {
    f.batchSerialization = format(
        "batch serialization: factor {}, {} ops run on slices of the batch, {} activations "
        "charged one slice at a time (docs/batch-serialization.md)\n",
        batchSerial_.factor, batchSerial_.serializedCycles.size(),
        batchSerial_.sliceResident.size());
  }
  return f;
}

void SessionImpl::loadEngine() {
  if (!prepared_) {
    throw error(
        "loadEngineAndConnectStreams: there is no compiled engine to load; call prepareDevice() "
        "first");
  }
  if (engineLoaded_) return;
  engineLoaded_ = true;
  logging::session::info("Engine loaded");
}

namespace {

// PopART's Ir::getRequiresRandomSeed: an op that draws random numbers (Dropout only when training:
// an inference Dropout passes its input through) or stochastic rounding.
bool drawsRandomNumbers(const ir::Graph& graph, const SessionConfig& config) {
  if (config.options.enableStochasticRounding) return true;
  static const std::set<std::string> kRandom = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                "RandomUniformLike"};
  for (const auto& [opId, op] : graph.ops()) {
    if (kRandom.count(op->type)) return true;
    if (config.training && (op->type == "Dropout" || op->type == "ShapedDropout")) return true;
  }
  return false;
}

}  // namespace

void SessionImpl::setRandomSeed(uint64_t seed) {
  if (!prepared_ && drawsRandomNumbers(*graph_, config_)) {
    throw popart_worded_error(
        "Devicex::prepare() must be called before Devicex::setRandomSeedFromHost(uint64_t) is "
        "called.",
        "Devicex::prepare() must be called before Devicex::setRandomSeedFromHost(uint64_t) is "
        "called: setRandomSeed sends the seed of the model's random ops (dropout, random "
        "numbers, stochastic rounding) to the device program; call prepareDevice() first");
  }
  random_.setSeed(seed);
}

void SessionImpl::requirePrepared(const char* what) const {
  if (prepared_) return;
  // PopART's wording names the device step (modelToHost reads the weights with weightsToHost);
  // programs match on its start.
  const std::string step = std::string(what) == "modelToHost" ? "weightsToHost" : what;
  throw error(
      "Devicex::prepare() must be called before Devicex::{} is called: {} needs the "
      "session's device program, call prepareDevice() first",
      step, what);
}

Shape SessionImpl::inputBufferShape(const TensorId& id) const {
  const ir::Tensor& t = graph_->tensor(id);
  if (t.kind != ir::TensorKind::Stream) {
    throw error("'{}' is a {} tensor, not an input fed by the host", id, kindOfFault(t));
  }
  if (broadcastInputs_.count(id)) {
    return withPrefix({config_.dataFlow.batchesPerStep(), accumulationFactor_}, t.info.shape());
  }
  return withPrefix({config_.dataFlow.batchesPerStep(), accumulationFactor_, layout_.local},
                    t.info.shape());
}

Shape SessionImpl::anchorBufferShape(const TensorId& id) const {
  const AnchorReturnType& art = config_.dataFlow.art(id);
  const Shape& shape = graph_->tensor(id).info.shape();
  const int64_t bps = config_.dataFlow.batchesPerStep();
  switch (art.id()) {
    case AnchorReturnTypeId::All:
      return withPrefix({bps, accumulationFactor_, layout_.local}, shape);
    case AnchorReturnTypeId::EveryN:
      return withPrefix({bps / art.rp(), accumulationFactor_, layout_.local}, shape);
    case AnchorReturnTypeId::Final:
    case AnchorReturnTypeId::Sum: return withPrefix({layout_.local}, shape);
  }
  return shape;
}

}  // namespace xtrain::session
