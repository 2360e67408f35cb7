// What run() does: one step of micro-batches on every replica, the reduction across the replicas
// and the update.
#include <chrono>

#include "common/timeline.hpp"
#include "device/kernels/kernel_threads.hpp"
#include "device/program.hpp"
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

const LoweredGraph& SessionImpl::programOf(int64_t replica) const {
  return replica == 0 || !pool_ ? *lowered_ : *replicaPrograms_[static_cast<size_t>(replica - 1)];
}

// Each replica on its own thread (or on this one: a single replica). Host I/O stays on the
// caller's thread, in replica order, so IStepIO callbacks see the calls in the same order whatever
// the threads do.
void SessionImpl::forEachReplicaProgram(const std::function<void(int64_t)>& fn) {
  // In the timeline, a replica's work is on the replica's track whichever thread runs it.
  auto onTrack = [&](int64_t r) {
    const int64_t global = replicaOffset_ + r;
    const timeline::TrackScope track(
        timeline::replicaTrack(global),
        timeline::started() ? "replica " + std::to_string(global) : std::string());
    fn(r);
  };
  if (pool_) {
    pool_->run(onTrack);
  } else {
    for (int64_t r = 0; r < localReplicas_; ++r) onTrack(r);
  }
}

void SessionImpl::run(IStepIO& stepio, const std::string& debugName) {
  requireAttached("run");
  const timeline::StepSpan traced;  // a step boundary in the timeline
  if (!config_.options.compileEngine) {
    throw error(
        "run: the session was prepared with SessionOptions.compileEngine = false, which builds it "
        "without an engine that can run; set compileEngine = true to run");
  }
  const KernelThreadsScope kernelThreads(singleReplicaKernelThreads_);
  const auto runStart = std::chrono::steady_clock::now();
  const int64_t bps = config_.dataFlow.batchesPerStep();
  const int64_t af = accumulationFactor_;
  StepBuffers io(*graph_, config_.dataFlow, config_.options.syntheticDataMode, bps, af,
                 localReplicas_, stepio, seed_ ^ static_cast<uint64_t>(stepCount_),
                 broadcastInputs_);
  logging::session::debug("run '{}': step {}, {} batches x {} micro-batches x {} replicas",
                          debugName, stepCount_, bps, af, localReplicas_);
  const StepIndices indices = stepIndices(io);
  profiler_.startRun();
  for (int64_t b = 0; b < bps; ++b) {
    for (int64_t a = 0; a < af; ++a) runMicroBatch(io, indices, b * af + a, a);
    if (config_.training) update(b);
  }
  io.finish();
  executionCounter_ += static_cast<uint64_t>(bps * af);
  ++stepCount_;
  profiler_.countRun(secondsSince(runStart), figures());
}

SessionImpl::StepIndices SessionImpl::stepIndices(const StepBuffers& io) const {
  StepIndices s;
  for (const auto& id : io.inputIds()) s.inputs.push_back(lowered_->bufferIndex(id));
  for (const auto& id : io.anchorIds()) s.anchors.push_back(lowered_->bufferIndex(id));
  if (!optimizerGraph_.accumulationIndex.empty()) {
    s.accumulationIndex = lowered_->bufferIndex(optimizerGraph_.accumulationIndex);
  }
  return s;
}

void SessionImpl::runMicroBatch(StepBuffers& io, const StepIndices& indices, int64_t iteration,
                                int64_t microBatch) {
  const int64_t L = localReplicas_;
  auto transferStart = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < L; ++r) {
    auto& buffers = replicas_[static_cast<size_t>(r)];
    for (size_t k = 0; k < indices.inputs.size(); ++k) {
      HostTensor& dst = buffers[static_cast<size_t>(indices.inputs[k])];
      io.readInput(k, iteration, r, dst);
      profiler_.countTransfer(SessionProfiler::Transfer::Inputs, r, dst.nbytes());
    }
  }
  profiler_.addTransferSeconds(SessionProfiler::Transfer::Inputs, secondsSince(transferStart));
  forEachReplicaProgram([&](int64_t r) {
    auto& buffers = replicas_[static_cast<size_t>(r)];
    const LoweredGraph& program = programOf(r);
    // The model's replicated collectives meet this replica's group through the scope; the
    // replicas run concurrently only on the pool's threads.
    const device::ReplicaScope collectiveScope(*collectives_, r, pool_ != nullptr);
    // Each replica's stream depends on its global index, so replicas of different instances
    // differ.
    const uint64_t replica = static_cast<uint64_t>(replicaOffset_ + r);
    const uint64_t seed = device::mixSeed(seed_ + 0x9e3779b97f4a7c15ull * replica) ^
                          device::mixSeed(executionCounter_ + static_cast<uint64_t>(iteration));
    program.run(ir::Phase::Forward, buffers, seed);
    if (!config_.training) return;
    if (!readyAfter_.empty()) {
      program.run(ir::Phase::Backward, buffers, seed, [&](size_t k) {
        for (const auto& id : readyAfter_[k]) exchange_->gradientReady(id);
      });
    } else {
      program.run(ir::Phase::Backward, buffers, seed);
    }
    if (indices.accumulationIndex >= 0) {
      buffers[static_cast<size_t>(indices.accumulationIndex)].data<float>()[0] =
          static_cast<float>(microBatch);
    }
    program.run(ir::Phase::Accumulate, buffers, seed);
  });
  for (ir::Phase phase : {ir::Phase::Forward, ir::Phase::Backward, ir::Phase::Accumulate}) {
    if (config_.training || phase == ir::Phase::Forward) profiler_.countPhase(phase);
  }
  transferStart = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < L; ++r) {
    auto& buffers = replicas_[static_cast<size_t>(r)];
    for (size_t k = 0; k < indices.anchors.size(); ++k) {
      const HostTensor& src = buffers[static_cast<size_t>(indices.anchors[k])];
      io.writeAnchor(k, iteration, r, src);
      profiler_.countTransfer(SessionProfiler::Transfer::Anchors, r, src.nbytes());
    }
  }
  profiler_.addTransferSeconds(SessionProfiler::Transfer::Anchors, secondsSince(transferStart));
}

void SessionImpl::update(int64_t batch) {
  const auto reduceStart = std::chrono::steady_clock::now();
  {
    const timeline::Span traced(timeline::Category::Host, "reduce gradients across replicas");
    reduceAcrossReplicas();
  }
  profiler_.countReduction(secondsSince(reduceStart), exchange_->lastReductionSeconds());
  const bool lossScaling = config_.options.automaticLossScalingSettings.enabled;
  if (lossScaling && !updateControl_.gradientsAreFinite()) {
    updateControl_.skipUpdate(stepCount_);
    return;
  }
  updateControl_.clipGradients();
  // The seed of stochastic rounding: the same on every replica, new for every update.
  const uint64_t updateSeed =
      device::mixSeed(seed_ ^ device::mixSeed(executionCounter_ + static_cast<uint64_t>(batch)));
  const timeline::Span traced(timeline::Category::Host, "update");
  forEachReplicaProgram([&](int64_t r) {
    programOf(r).run(ir::Phase::Update, replicas_[static_cast<size_t>(r)], updateSeed);
  });
  profiler_.countPhase(ir::Phase::Update);
  if (updateControl_.hasApplyPhase()) {
    updateControl_.completeLambNorms();
    forEachReplicaProgram([&](int64_t r) {
      programOf(r).run(ir::Phase::Apply, replicas_[static_cast<size_t>(r)], updateSeed);
    });
    profiler_.countPhase(ir::Phase::Apply);
  }
  exchange_->gatherShardedWeights();
  if (lossScaling) updateControl_.countFiniteStep();
}

}  // namespace xtrain::session
