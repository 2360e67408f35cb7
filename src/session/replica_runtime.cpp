#include "session/replica_runtime.hpp"

#include <cstdlib>
#include <string>

#include "comm/communicator.hpp"
#include "comm/job.hpp"
#include "common/env_switch.hpp"
#include "common/timeline.hpp"
#include "device/kernels/kernel_threads.hpp"
#include "device/program.hpp"
#include "device/replica_context.hpp"
#include "replication/instances.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

namespace {

// The user chose the kernel thread count (OMP_NUM_THREADS, set and not empty): xtrain leaves it.
bool userSetKernelThreads() {
  const char* ompThreads = std::getenv("OMP_NUM_THREADS");
  return ompThreads != nullptr && *ompThreads != 0;
}

}  // namespace

ReplicaRuntime::~ReplicaRuntime() = default;

int ReplicaRuntime::kernelThreadsForNextRun() {
  if (adaptiveThreads_ == nullptr) return singleReplicaKernelThreads_;
  cpuContention_.start();  // the first window is the first run's
  const int before = adaptiveThreads_->current();
  const int threads = adaptiveThreads_->threadsForNextStep();
  if (adaptiveThreads_->current() != before) {  // a warm-up step whose threads queued
    logging::session::debug("kernel threads: {} -> {} (the threads queued for the CPUs)", before,
                            adaptiveThreads_->current());
  }
  return threads;
}

void ReplicaRuntime::recordRunSeconds(double seconds) {
  if (adaptiveThreads_ == nullptr) return;
  // Over the steps since the last reading (at least 100 ms): the run delay of this process's
  // threads and the spare time of its CPUs, which steer the probes (AdaptiveKernelThreads).
  if (const std::optional<CpuContention> c = cpuContention_.poll()) {
    adaptiveThreads_->recordContention(c->waitingThreads, c->spareCpus);
    logging::session::trace(
        "kernel threads: over {:.0f} ms, {:.2f} threads waited for a CPU, {:.2f} CPUs spare",
        c->seconds * 1e3, c->waitingThreads, c->spareCpus);
  }
  const int before = adaptiveThreads_->current();
  const AdaptiveKernelThreads::StepRecord step = adaptiveThreads_->recordStep(seconds);
  if (step.warmup) {
    logging::session::trace("kernel threads: first step with {} ran {:.3f} ms (its kernels made)",
                            step.threads, seconds * 1e3);
  } else if (step.probe) {
    logging::session::trace(
        "kernel threads: probe with {} ran {:.3f} ms against {:.3f} ms with {}: {}", step.threads,
        seconds * 1e3, step.mean * 1e3, before, step.won ? "won" : "lost");
  }
  if (adaptiveThreads_->current() != before) {
    logging::session::debug("kernel threads: {} -> {} (steps ran faster with {})", before,
                            adaptiveThreads_->current(), adaptiveThreads_->current());
  }
}

void ReplicaRuntime::lower(const ir::Graph& graph, const LoweringOptions& options) {
  graph_ = &graph;
  loweringOptions_ = options;
  lowered_ = std::make_unique<LoweredGraph>(graph, options);
}

bool ReplicaRuntime::joinInstances(bool distributed) {
  if (!distributed || layout_.global == layout_.local) return false;
  if (instances_) return false;
  instances_ = replication::joinInstances(layout_);
  // Instances started together on one host (xrun -n N) would each start a full team of kernel
  // threads on the same cores: a single replica gets its share unless OMP_NUM_THREADS says
  // otherwise (the replica pool shares the cores out anyway).
  instancesOnHost_ = comm::Job::current().instancesOnThisHost();
  if (layout_.local == 1 && instancesOnHost_ > 1 && !userSetKernelThreads()) {
    singleReplicaKernelThreads_ = kernelThreadsPerReplica(instancesOnHost_);
  }
  return true;
}

void ReplicaRuntime::build() {
  replicas_.clear();
  replicas_.resize(static_cast<size_t>(layout_.local));
  for (Replica& replica : replicas_) {
    replica.buffers = lowered_->makeBuffers();
    if (pipeline_ == nullptr) continue;
    for (const PipelineStash& s : pipeline_->stashes) {
      const TensorInfo& info = graph_->tensor(s.tensor).info;
      replica.stashes.emplace_back(static_cast<size_t>(stashEntries(s)), HostTensor(info));
    }
  }
  if (pipeline_ != nullptr) buildStageThreads();
  // OpenMP's default team counts the CPUs of the affinity mask but not a cgroup's CPU quota (a
  // container's --cpus): a single replica then runs more kernel threads than it has CPUs. Unless
  // OMP_NUM_THREADS says otherwise, it gets what usableCpus() allows.
  if (layout_.local == 1 && singleReplicaKernelThreads_ == 0 && !userSetKernelThreads()) {
    const int allowed = kernelThreadsPerReplica(instancesOnHost_);
    if (allowed < device::kernelThreadsForThisThread()) singleReplicaKernelThreads_ = allowed;
  }
  if (layout_.local == 1 && pipeline_ == nullptr && !userSetKernelThreads() &&
      readBoolSwitch("XTRAIN_ADAPTIVE_THREADS", true)) {
    const int most = singleReplicaKernelThreads_ > 0 ? singleReplicaKernelThreads_
                                                     : device::kernelThreadsForThisThread();
    if (most > 1) adaptiveThreads_ = std::make_unique<AdaptiveKernelThreads>(most);
  }
  replicas_[0].program = lowered_.get();
  if (layout_.local > 1) {
    // Kernels keep scratch state between calls, so each replica thread runs its own copy of the
    // programs (replica 0 runs lowered_).
    for (size_t r = 1; r < replicas_.size(); ++r) {
      replicas_[r].ownProgram = std::make_unique<LoweredGraph>(*graph_, loweringOptions_);
      replicas_[r].program = replicas_[r].ownProgram.get();
    }
    pool_ = std::make_unique<ReplicaPool>(layout_.local, instancesOnHost_);
  }
}

void ReplicaRuntime::connect(replication::GradientPlan plan,
                             std::vector<std::pair<TensorId, TensorId>> halfAccumulators,
                             int64_t accumulationFactor) {
  halfAccumulators_ = std::move(halfAccumulators);
  // With one local replica and no accumulation, a weight's gradient is final once the backward
  // pass wrote it for the last time: its bucket's all-reduce can start there, overlapping the rest
  // of the backward pass. (Local replicas must be summed first, and accumulators are final only
  // after the last micro-batch, so those reduce after the backward pass.)
  if (instances_ && layout_.local == 1 && accumulationFactor == 1) {
    readyAfter_.assign(lowered_->program(ir::Phase::Backward).size(), {});
    for (const TensorId& reduced : plan.plain) {
      const int64_t k = lowered_->lastWriter(ir::Phase::Backward, reduced);
      if (k >= 0) readyAfter_[static_cast<size_t>(k)].push_back(reduced);
    }
  }
  exchange_ = std::make_unique<replication::ReplicaExchange>(
      layout_, instances_, *this, std::move(plan),
      replication::GradientReducer::bucketBytesFromEnvironment());
  collectives_ = std::make_unique<replication::ReplicaCollectives>(instances_, layout_.local,
                                                                   layout_.offset, layout_.global);
}

HostTensor& ReplicaRuntime::buffer(int64_t localReplica, const TensorId& id) {
  return buffers(localReplica)[static_cast<size_t>(lowered_->bufferIndex(id))];
}

void ReplicaRuntime::forEach(const std::function<void(int64_t)>& fn) {
  if (pool_) {
    pool_->run(fn);
  } else {
    for (int64_t r = 0; r < layout_.local; ++r) fn(r);
  }
}

// Each replica on its own thread (or on this one: a single replica). Host I/O stays on the
// caller's thread, in replica order, so IStepIO callbacks see the calls in the same order whatever
// the threads do.
void ReplicaRuntime::forEachReplicaProgram(const std::function<void(int64_t)>& fn) {
  // In the timeline, a replica's work is on the replica's track whichever thread runs it.
  auto onTrack = [&](int64_t r) {
    const int64_t global = layout_.offset + r;
    const timeline::TrackScope track(
        timeline::replicaTrack(global),
        timeline::started() ? "replica " + std::to_string(global) : std::string());
    fn(r);
  };
  if (pool_) {
    pool_->run(onTrack);
  } else {
    for (int64_t r = 0; r < layout_.local; ++r) onTrack(r);
  }
}

void ReplicaRuntime::runMicroBatch(bool training, int accumulationIndex, int64_t microBatch,
                                   const std::function<uint64_t(int64_t)>& seedOf) {
  forEachReplicaProgram([&](int64_t r) {
    Replica& replica = replicas_[static_cast<size_t>(r)];
    auto& buffers = replica.buffers;
    const LoweredGraph& program = *replica.program;
    // The model's replicated collectives meet this replica's group through the scope; the
    // replicas run concurrently only on the pool's threads.
    const device::ReplicaScope collectiveScope(*collectives_, r, pool_ != nullptr);
    // Each replica's stream depends on its global index, so replicas of different instances
    // differ.
    const uint64_t seed = seedOf(layout_.offset + r);
    program.run(ir::Phase::Forward, buffers, seed);
    if (!training) {
      // Inference: the variables the model writes itself (addInferenceVariableCopies), if any.
      program.run(ir::Phase::Accumulate, buffers, seed);
      return;
    }
    if (!readyAfter_.empty()) {
      program.run(ir::Phase::Backward, buffers, seed, [&](size_t k) {
        for (const auto& id : readyAfter_[k]) exchange_->gradientReady(id);
      });
    } else {
      program.run(ir::Phase::Backward, buffers, seed);
    }
    if (accumulationIndex >= 0) {
      buffers[static_cast<size_t>(accumulationIndex)].data<float>()[0] =
          static_cast<float>(microBatch);
    }
    program.run(ir::Phase::Accumulate, buffers, seed);
  });
}

void ReplicaRuntime::takeHalfAccumulators() {
  for (const auto& [accumulator, reduced] : halfAccumulators_) {
    for (int64_t r = 0; r < layout_.local; ++r) {
      HostTensor& acc = buffer(r, accumulator);
      const auto* half = reinterpret_cast<const uint16_t*>(acc.raw());
      float* out = buffer(r, reduced).data<float>();
      for (int64_t i = 0; i < acc.nelms(); ++i) out[i] = halfToFloat(half[i]);
      acc.fillZero();
    }
  }
}

void ReplicaRuntime::reduceGradients() {
  takeHalfAccumulators();
  exchange_->reduceGradients();
}

void ReplicaRuntime::runPhase(ir::Phase phase, uint64_t seed) {
  forEachReplicaProgram([&](int64_t r) {
    Replica& replica = replicas_[static_cast<size_t>(r)];
    if (phase == ir::Phase::Update && splitUpdate_ && replica.stagePool) {
      // Each IPU updates its own weights on its stage thread (PipelinePlan::updateGroups).
      replica.stagePool->run([&](int64_t ipu) {
        replica.program->runSlot(ir::Phase::Update, ipu, replica.buffers, seed);
      });
      return;
    }
    replica.program->run(phase, replica.buffers, seed);
  });
}

}  // namespace xtrain::session
