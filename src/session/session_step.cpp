// What run() does: one step of micro-batches on every replica, the reduction across the replicas
// and the update.
#include <chrono>

#include "common/timeline.hpp"
#include "device/kernels/kernel_threads.hpp"
#include "session/session_impl.hpp"
#include "session/step_buffers.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The calling thread's kernel thread count set for a scope (0: left alone), then restored.
class KernelThreadsScope {
 public:
  explicit KernelThreadsScope(int threads)
      : previous_(threads > 0 ? device::kernelThreadsForThisThread() : 0) {
    if (threads > 0) device::setKernelThreadsForThisThread(threads);
  }
  ~KernelThreadsScope() {
    if (previous_ > 0) device::setKernelThreadsForThisThread(previous_);
  }
  KernelThreadsScope(const KernelThreadsScope&) = delete;
  KernelThreadsScope& operator=(const KernelThreadsScope&) = delete;

 private:
  const int previous_;
};

}  // namespace

void SessionImpl::run(IStepIO& stepio, const std::string& debugName) {
  ReplicaRuntime& runtime = requireAttached("run");
  loadEngine();
  const timeline::StepSpan traced;  // a step boundary in the timeline
  if (!config_.options.compileEngine) {
    throw error(
        "run: the session was prepared with SessionOptions.compileEngine = false, which builds it "
        "without an engine that can run; set compileEngine = true to run");
  }
  const KernelThreadsScope kernelThreads(runtime.kernelThreadsForNextRun());
  const auto runStart = std::chrono::steady_clock::now();
  const int64_t bps = config_.dataFlow.batchesPerStep();
  const int64_t af = accumulationFactor_;
  StepBuffers io(*graph_, config_.dataFlow, config_.options.syntheticDataMode, bps, af,
                 layout_.local, stepio, random_.seed() ^ static_cast<uint64_t>(stepCount_),
                 broadcastInputs_, unusedInputs_);
  logging::session::debug("run '{}': step {}, {} batches x {} micro-batches x {} replicas",
                          debugName, stepCount_, bps, af, layout_.local);
  // The buffer indices of the step's inputs, anchors and accumulation counter.
  StepIndices indices;
  const LoweredGraph& lowered = runtime.lowered();
  for (const auto& id : io.inputIds()) indices.inputs.push_back(lowered.bufferIndex(id));
  for (const auto& id : io.anchorIds()) {
    indices.anchors.push_back(lowered.bufferIndex(id));
    const ir::TensorKind kind = graph_->tensor(id).kind;
    using Point = StepIndices::AnchorPoint;
    Point point = Point::MicroBatch;
    if (config_.training &&
        (kind == ir::TensorKind::Variable || kind == ir::TensorKind::OptimizerState)) {
      if (config_.dataFlow.art(id).id() == AnchorReturnTypeId::Final) {
        point = Point::StepEnd;
      } else if (af == 1 && !pipeline_.enabled() &&
                 (kind == ir::TensorKind::Variable || !stateAnchorWeight(id).empty())) {
        // (Not automatic loss scaling's finalLossScale: its anchor is the batch's scale.)
        point = Point::AfterUpdate;
      }
    }
    indices.readAt.push_back(point);
  }
  if (!optimizerGraph_.accumulationIndex.empty()) {
    indices.accumulationIndex = lowered.bufferIndex(optimizerGraph_.accumulationIndex);
  }
  profiler_.startRun();
  if (pipeline_.enabled() && !config_.training) {
    runPipelined(io, indices, 0, bps * af);  // no update between batches: one pipeline
  } else {
    const bool updateInPipeline = pipeline_.enabled() && updatesInPipeline(io, indices);
    if (updateInPipeline) {
      logging::session::debug("run: each IPU updates its weights as soon as its slots are done");
    }
    for (int64_t b = 0; b < bps; ++b) {
      if (pipeline_.enabled()) {
        runPipelined(io, indices, b * af, af,
                     updateInPipeline ? std::optional(random_.updateSeed(b)) : std::nullopt);
      } else {
        profiler_.startBatch();
        for (int64_t a = 0; a < af; ++a) runMicroBatch(io, indices, b * af + a, a);
      }
      if (config_.training) {
        update(b, updateInPipeline);
        readAnchors(io, indices, b * af + af - 1, StepIndices::AnchorPoint::AfterUpdate);
      }
      if (!pipeline_.enabled()) profiler_.endBatch();
    }
  }
  readAnchors(io, indices, bps * af - 1, StepIndices::AnchorPoint::StepEnd);
  io.finish();
  random_.advance(static_cast<uint64_t>(bps * af));
  ++stepCount_;
  const double seconds = secondsSince(runStart);
  runtime.recordRunSeconds(seconds);
  profiler_.countRun(seconds, figures());
}

void SessionImpl::writeInputs(StepBuffers& io, const StepIndices& indices, int64_t iteration) {
  const auto transferStart = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < layout_.local; ++r) {
    auto& buffers = runtime_->buffers(r);
    for (size_t k = 0; k < indices.inputs.size(); ++k) {
      HostTensor& dst = buffers[static_cast<size_t>(indices.inputs[k])];
      io.readInput(k, iteration, r, dst);
      profiler_.countTransfer(SessionProfiler::Transfer::Inputs, r, dst.nbytes());
    }
  }
  profiler_.addTransferSeconds(SessionProfiler::Transfer::Inputs, secondsSince(transferStart));
}

void SessionImpl::writePipelineInputs(StepBuffers& io, const StepIndices& indices, int64_t first,
                                      int64_t count, int64_t cycle) {
  const auto transferStart = std::chrono::steady_clock::now();
  for (size_t k = 0; k < indices.inputs.size(); ++k) {
    const int64_t m = pipeline_.inputMicroBatch(io.inputIds()[k], cycle);
    if (m < 0 || m >= count) continue;
    for (int64_t r = 0; r < layout_.local; ++r) {
      HostTensor& dst = runtime_->buffers(r)[static_cast<size_t>(indices.inputs[k])];
      io.readInput(k, first + m, r, dst);
      profiler_.countTransfer(SessionProfiler::Transfer::Inputs, r, dst.nbytes());
    }
  }
  profiler_.addTransferSeconds(SessionProfiler::Transfer::Inputs, secondsSince(transferStart));
}

void SessionImpl::readAnchors(StepBuffers& io, const StepIndices& indices, int64_t iteration,
                              StepIndices::AnchorPoint point) {
  const auto transferStart = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < layout_.local; ++r) {
    const auto& buffers = runtime_->buffers(r);
    for (size_t k = 0; k < indices.anchors.size(); ++k) {
      if (indices.readAt[k] != point) continue;
      const HostTensor& src = buffers[static_cast<size_t>(indices.anchors[k])];
      io.writeAnchor(k, iteration, r, src);
      profiler_.countTransfer(SessionProfiler::Transfer::Anchors, r, src.nbytes());
    }
  }
  profiler_.addTransferSeconds(SessionProfiler::Transfer::Anchors, secondsSince(transferStart));
}

void SessionImpl::readPipelineAnchors(StepBuffers& io, const StepIndices& indices, int64_t first,
                                      int64_t count, int64_t cycle) {
  const auto transferStart = std::chrono::steady_clock::now();
  for (size_t k = 0; k < indices.anchors.size(); ++k) {
    if (indices.readAt[k] != StepIndices::AnchorPoint::MicroBatch) continue;
    const int64_t m = pipeline_.anchorMicroBatch(io.anchorIds()[k], cycle);
    if (m < 0 || m >= count) continue;
    for (int64_t r = 0; r < layout_.local; ++r) {
      const HostTensor& src = runtime_->buffers(r)[static_cast<size_t>(indices.anchors[k])];
      io.writeAnchor(k, first + m, r, src);
      profiler_.countTransfer(SessionProfiler::Transfer::Anchors, r, src.nbytes());
    }
  }
  profiler_.addTransferSeconds(SessionProfiler::Transfer::Anchors, secondsSince(transferStart));
}

bool SessionImpl::updatesInPipeline(const StepBuffers& io, const StepIndices& indices) const {
  if (!config_.training || layout_.global != 1 || updateControl_.actsAroundUpdate() ||
      !runtime_->canUpdateInPipeline()) {
    return false;
  }
  for (size_t k = 0; k < indices.anchors.size(); ++k) {
    if (indices.readAt[k] != StepIndices::AnchorPoint::MicroBatch) continue;
    const ir::TensorKind kind = graph_->tensor(io.anchorIds()[k]).kind;
    if (kind == ir::TensorKind::Variable || kind == ir::TensorKind::OptimizerState ||
        kind == ir::TensorKind::Accumulator) {
      return false;
    }
  }
  return true;
}

void SessionImpl::runPipelined(StepBuffers& io, const StepIndices& indices, int64_t first,
                               int64_t count, std::optional<uint64_t> updateSeed) {
  const bool training = config_.training;
  // Automatic loss scaling's histograms: each tracked gradient of micro-batch m is counted after
  // the cycle that writes it (whether m counts is decided in micro-batch order, as unpipelined).
  const std::vector<TensorId>& tracked = updateControl_.trackedGradients();
  std::vector<bool> histogramActive;
  if (training && !tracked.empty()) {
    for (int64_t m = 0; m < count; ++m) {
      histogramActive.push_back(updateControl_.nextHistogramActive());
    }
  }
  ReplicaRuntime::PipelineHost host;
  host.writeInputs = [&](int64_t cycle) { writePipelineInputs(io, indices, first, count, cycle); };
  host.readOutputs = [&](int64_t cycle) {
    for (size_t k = 0; k < tracked.size() && !histogramActive.empty(); ++k) {
      const int64_t m = pipeline_.anchorMicroBatch(tracked[k], cycle);
      if (m >= 0 && m < count) {
        updateControl_.countGradientsOf({tracked[k]}, histogramActive[static_cast<size_t>(m)]);
      }
    }
    readPipelineAnchors(io, indices, first, count, cycle);
  };
  for (const TensorId& id : io.inputIds()) host.inputSlots.insert(pipeline_.inputSlotOf(id));
  for (size_t k = 0; k < indices.anchors.size(); ++k) {
    if (indices.readAt[k] == StepIndices::AnchorPoint::MicroBatch) {
      host.outputSlots.insert(pipeline_.anchorSlotOf(io.anchorIds()[k]));
    }
  }
  for (const TensorId& id : tracked) host.outputSlots.insert(pipeline_.anchorSlotOf(id));
  runtime_->runPipeline(
      count, training,
      [&](int64_t globalReplica, int64_t microBatch) {
        return random_.microBatchSeed(globalReplica, first + microBatch);
      },
      host, updateSeed);
  profiler_.countPipeline(count);
}

void SessionImpl::runMicroBatch(StepBuffers& io, const StepIndices& indices, int64_t iteration,
                                int64_t microBatch) {
  writeInputs(io, indices, iteration);
  runtime_->runMicroBatch(
      config_.training, indices.accumulationIndex, microBatch,
      [&](int64_t globalReplica) { return random_.microBatchSeed(globalReplica, iteration); });
  if (config_.training) updateControl_.countGradients();  // before the anchors (its accumulator)
  for (ir::Phase phase : {ir::Phase::Forward, ir::Phase::Backward, ir::Phase::Accumulate}) {
    if (config_.training || phase == ir::Phase::Forward) profiler_.countPhase(phase);
  }
  readAnchors(io, indices, iteration);
}

void SessionImpl::update(int64_t batch, bool updatedInPipeline) {
  if (updatedInPipeline) {  // by the stage threads: one replica, nothing to reduce or check
    profiler_.countReduction(0, {});
    profiler_.countPhase(ir::Phase::Update);
    return;
  }
  const auto reduceStart = std::chrono::steady_clock::now();
  {
    const timeline::Span traced(timeline::Category::Host, "reduce gradients across replicas");
    runtime_->reduceGradients();
  }
  profiler_.countReduction(secondsSince(reduceStart), runtime_->exchange().lastReductionSeconds());
  // xtrain's GradScaler method skips a step with an inf or nan gradient.
  const bool lossScaling =
      config_.options.automaticLossScalingSettings.enabled && !updateControl_.histogramMethod();
  if (lossScaling && !updateControl_.gradientsAreFinite()) {
    updateControl_.skipUpdate(stepCount_);
    return;
  }
  updateControl_.clipGradients();
  // The seed of stochastic rounding: the same on every replica, new for every update.
  const uint64_t updateSeed = random_.updateSeed(batch);
  const timeline::Span traced(timeline::Category::Host, "update");
  runtime_->runPhase(ir::Phase::Update, updateSeed);
  profiler_.countPhase(ir::Phase::Update);
  if (updateControl_.hasApplyPhase()) {
    updateControl_.completeLambNorms();
    runtime_->runPhase(ir::Phase::Apply, updateSeed);
    profiler_.countPhase(ir::Phase::Apply);
  }
  runtime_->exchange().gatherShardedWeights();
  if (lossScaling) updateControl_.countFiniteStep();
  updateControl_.updateLossScale();  // PopART's histogram method, after the step's update
}

}  // namespace xtrain::session
