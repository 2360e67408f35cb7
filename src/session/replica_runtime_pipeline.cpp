// ReplicaRuntime's pipelined runs (replica_runtime.hpp, runPipeline; docs/pipelining.md,
// "Schedule"): the stage threads, the host's part and the slots they run.
#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "common/check.hpp"
#include "common/env_switch.hpp"
#include "common/timeline.hpp"
#include "device/program.hpp"
#include "device/replica_context.hpp"
#include "session/replica_runtime.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

void ReplicaRuntime::buildStageThreads() {
  // The slots of each IPU of a replica, the last first (as the cycle runs them).
  stageSlots_.clear();
  for (int64_t slot = pipeline_->slots - 1; slot >= 0; --slot) {
    const auto ipu = static_cast<size_t>(pipeline_->slotVirtualGraph[static_cast<size_t>(slot)]);
    if (stageSlots_.size() <= ipu) stageSlots_.resize(ipu + 1);
    stageSlots_[ipu].push_back(slot);
  }
  inputPushes_.assign(static_cast<size_t>(pipeline_->slots), {});
  for (size_t k : pipeline_->pushInputs) {
    inputPushes_[static_cast<size_t>(pipeline_->stashes[k].writer)].push_back(k);
  }
  // XTRAIN_PIPELINE_THREADS=0 runs the IPUs of a replica one after the other, on its thread.
  if (stageSlots_.size() < 2 || !readBoolSwitch("XTRAIN_PIPELINE_THREADS", true)) return;
  std::set<int64_t> collectiveIpus;
  for (const auto& [opId, op] : graph_->ops()) {
    if (op->domain != ir::kGraphcoreDomain || !op->type.starts_with("Replicated")) continue;
    if (const auto slot = pipeline_->slotOf.find(opId); slot != pipeline_->slotOf.end())
      collectiveIpus.insert(pipeline_->slotVirtualGraph[static_cast<size_t>(slot->second)]);
  }
  if (collectiveIpus.size() > 1) {
    logging::session::debug(
        "pipelining: replicated collectives on {} IPUs of a replica: its stages run in turn",
        collectiveIpus.size());
    return;
  }
  collectiveIpu_ = collectiveIpus.empty() ? -1 : *collectiveIpus.begin();
  splitUpdate_ = !pipeline_->updateGroups.empty();
  for (const auto& [op, ipu] : pipeline_->updateGroups) {
    if (ipu >= static_cast<int64_t>(stageSlots_.size())) splitUpdate_ = false;
  }
  if (splitUpdate_) {
    logging::session::debug("pipelining: each of {} IPUs updates its weights on its stage thread",
                            stageSlots_.size());
  } else if (pipeline_->slots > pipeline_->stages) {  // training
    logging::session::debug(
        "pipelining: the update runs on one thread (an update that spans IPUs or meets other "
        "replicas in it)");
  }
  for (Replica& replica : replicas_) {
    replica.stagePool = std::make_unique<ReplicaPool>(static_cast<int64_t>(stageSlots_.size()),
                                                      layout_.local * instancesOnHost_);
  }
}

namespace {

void copyBytes(const HostTensor& from, HostTensor& to) {
  std::memcpy(to.raw(), from.raw(), from.nbytes());
}

}  // namespace

void ReplicaRuntime::runPipelineSlot(Replica& replica, int64_t slot, int64_t microBatch,
                                     bool training, uint64_t seed) {
  const PipelinePlan& plan = *pipeline_;
  auto& buffers = replica.buffers;
  const LoweredGraph& program = *replica.program;
  const auto at = [&](size_t k) -> HostTensor& {
    std::vector<HostTensor>& ring = replica.stashes[k];
    return ring[static_cast<size_t>(microBatch % static_cast<int64_t>(ring.size()))];
  };
  // The inputs this slot reads in place go into their rings for the later slots that read them.
  for (size_t k : inputPushes_[static_cast<size_t>(slot)]) {
    copyBytes(buffers[static_cast<size_t>(program.bufferIndex(plan.stashes[k].tensor))], at(k));
  }
  if (const auto& restores = plan.restoreBefore[static_cast<size_t>(slot)]; !restores.empty()) {
    const timeline::Span traced(timeline::Category::Host, "pipeline restore");
    for (size_t k : restores) {
      copyBytes(at(k),
                buffers[static_cast<size_t>(program.slotCopyIndex(plan.stashes[k].tensor, slot))]);
    }
  }
  program.runSlot(ir::Phase::Forward, slot, buffers, seed);
  if (training) {
    program.runSlot(ir::Phase::Backward, slot, buffers, seed);
    if (!plan.accumulationIndex.empty()) {
      buffers[static_cast<size_t>(program.slotCopyIndex(plan.accumulationIndex, slot))]
          .data<float>()[0] = static_cast<float>(microBatch);
    }
    program.runSlot(ir::Phase::Accumulate, slot, buffers, seed);
  }
  if (const auto& pushes = plan.pushAfter[static_cast<size_t>(slot)]; !pushes.empty()) {
    const timeline::Span traced(timeline::Category::Host, "pipeline stash");
    for (size_t k : pushes) {
      copyBytes(buffers[static_cast<size_t>(program.bufferIndex(plan.stashes[k].tensor))], at(k));
    }
  }
}

void ReplicaRuntime::runPipelineCycle(int64_t cycle, int64_t microBatches, bool training,
                                      const PipelineSeeds& seedOf) {
  forEachReplicaProgram([&](int64_t r) {
    Replica& replica = replicas_[static_cast<size_t>(r)];
    const device::ReplicaScope collectiveScope(*collectives_, r, pool_ != nullptr);
    for (const auto& slots : stageSlots_) {
      for (int64_t slot : slots) {
        const int64_t m = cycle - slot;
        if (m < 0 || m >= microBatches) continue;
        runPipelineSlot(replica, slot, m, training, seedOf(layout_.offset + r, m));
      }
    }
  });
}

// Slot k's micro-batch m runs in cycle c = m + k of the lockstep schedule, where no two slots of
// one cycle touch a buffer one of them writes (pipeline_plan.hpp). Each need is work of an earlier
// cycle, so the threads cannot wait on each other in a circle, whichever of its ready slots each
// runs first: the pending work of the earliest cycle always has what it needs.
PipelineNeeds ReplicaRuntime::slotNeeds(int64_t r, int64_t slot, int64_t m,
                                        const PipelineHost& host) const {
  const PipelinePlan& plan = *pipeline_;
  const int64_t cycle = m + slot;
  PipelineNeeds needs;
  // The previous slot's micro-batch: the activations or gradients it hands on.
  if (slot > 0) needs.push_back({PipelineNeed::Kind::Slot, r, slot - 1, m + 1});
  if (host.inputSlots.count(slot) != 0)
    needs.push_back({PipelineNeed::Kind::Inputs, 0, 0, cycle + 1});
  // The host has read what this slot wrote of the micro-batch before.
  if (m > 0 && host.outputSlots.count(slot) != 0) {
    needs.push_back({PipelineNeed::Kind::Outputs, 0, 0, cycle});
  }
  // Before the slot overwrites ring entry m % entries, the stash's last reader is done with the
  // micro-batch there before (the readers in between, which it waited for, are too).
  auto ring = [&](size_t k) {
    const PipelineStash& stash = plan.stashes[k];
    const int64_t entries = stashEntries(stash);
    if (m >= entries) {
      needs.push_back(
          {PipelineNeed::Kind::Slot, r, stash.writer + stash.depth - 1, m - entries + 1});
    }
  };
  for (size_t k : inputPushes_[static_cast<size_t>(slot)]) ring(k);
  for (size_t k : plan.pushAfter[static_cast<size_t>(slot)]) ring(k);
  return needs;
}

// Replica r's IPU `ipu` runs each of its slots' micro-batches in order. Of the slots' next
// micro-batches it runs the first that is ready, the earliest cycle first and, within a cycle, the
// earlier slot first (a forward before a backward: the next stage waits for the forward), so a
// stage whose backward waits for the next stage runs its forward ahead instead, as far as the
// rings' spare entry allows. The IPU whose slots meet the other replicas in collectives runs the
// lockstep order of the stages-in-turn schedule (in each cycle the later slot first) and waits
// for each slot in turn: every replica's thread must reach the collectives in the same order.
void ReplicaRuntime::runPipelineStage(int64_t r, int64_t ipu, int64_t microBatches, bool training,
                                      const PipelineSeeds& seedOf, const PipelineHost& host,
                                      PipelineProgress& progress,
                                      std::optional<uint64_t> updateSeed) {
  Replica& replica = replicas_[static_cast<size_t>(r)];
  const std::vector<int64_t>& slots = stageSlots_[static_cast<size_t>(ipu)];
  const bool anyReady = ipu != collectiveIpu_;
  std::vector<int64_t> next(slots.size(), 0);  // each slot's next micro-batch
  std::vector<size_t> order;
  std::vector<PipelineNeeds> candidates;
  for (;;) {
    order.clear();
    for (size_t i = 0; i < slots.size(); ++i) {
      if (next[i] < microBatches) order.push_back(i);
    }
    if (order.empty()) break;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const int64_t cycleA = next[a] + slots[a];
      const int64_t cycleB = next[b] + slots[b];
      if (cycleA != cycleB) return cycleA < cycleB;
      return anyReady ? slots[a] < slots[b] : slots[a] > slots[b];
    });
    candidates.clear();
    for (size_t i : order) {
      candidates.push_back(slotNeeds(r, slots[i], next[i], host));
      if (!anyReady) break;  // the lockstep order: the first only
    }
    const size_t i = order[progress.waitForAny(candidates)];
    const int64_t slot = slots[i];
    const int64_t m = next[i]++;
    runPipelineSlot(replica, slot, m, training, seedOf(layout_.offset + r, m));
    progress.finishSlot(r, slot);
  }
  if (updateSeed) replica.program->runSlot(ir::Phase::Update, ipu, replica.buffers, *updateSeed);
}

bool ReplicaRuntime::canUpdateInPipeline() const {
  return splitUpdate_ && pipeline_->updateAfterOwnSlots && halfAccumulators_.empty();
}

// The host's I/O, cycle by cycle: it writes a cycle's inputs once the slots that read them in
// place are done with the micro-batch before, and reads a cycle's outputs once their slots wrote
// them.
void ReplicaRuntime::runPipelineHost(int64_t microBatches, const PipelineHost& host,
                                     PipelineProgress& progress) {
  for (int64_t cycle = 0; cycle < pipeline_->cycles(microBatches); ++cycle) {
    for (int64_t slot : host.inputSlots) {
      const int64_t m = cycle - slot;
      if (m >= 1 && m < microBatches) progress.waitSlotOnEveryReplica(slot, m);
    }
    host.writeInputs(cycle);
    progress.finishInputs(cycle + 1);
    for (int64_t slot : host.outputSlots) {
      const int64_t m = cycle - slot;
      if (m >= 0 && m < microBatches) progress.waitSlotOnEveryReplica(slot, m + 1);
    }
    host.readOutputs(cycle);
    progress.finishOutputs(cycle + 1);
  }
}

void ReplicaRuntime::runPipeline(int64_t microBatches, bool training, const PipelineSeeds& seedOf,
                                 const PipelineHost& host, std::optional<uint64_t> updateSeed) {
  XT_CHECK(!updateSeed || canUpdateInPipeline(), "an update in a pipeline that cannot split it");
  if (!replicas_.front().stagePool) {
    for (int64_t cycle = 0; cycle < pipeline_->cycles(microBatches); ++cycle) {
      host.writeInputs(cycle);
      runPipelineCycle(cycle, microBatches, training, seedOf);
      host.readOutputs(cycle);
    }
    return;
  }
  PipelineProgress progress(layout_.local, pipeline_->slots);
  // Replica r's stages, each on its thread. A failing stage stops the others (their waits throw
  // PipelineAborted, which is not the error to report) and the host.
  auto stageJob = [&](int64_t r, const device::ReplicaContext* context) {
    return [&, r, context](int64_t ipu) {
      const device::ReplicaHelperScope helper(ipu == collectiveIpu_ ? context : nullptr);
      const int64_t global = layout_.offset + r;
      // A stage's ops go on its replica's track of the timeline, whichever thread runs them.
      const timeline::TrackScope track(
          timeline::replicaTrack(global),
          timeline::started() ? "replica " + std::to_string(global) : std::string());
      try {
        runPipelineStage(r, ipu, microBatches, training, seedOf, host, progress, updateSeed);
      } catch (const PipelineAborted&) {
        return;
      } catch (...) {
        progress.abort();
        throw;
      }
    };
  };
  std::exception_ptr hostError;
  auto runHost = [&] {
    try {
      runPipelineHost(microBatches, host, progress);
    } catch (const PipelineAborted&) {  // a stage failed: its error is rethrown below
    } catch (...) {
      hostError = std::current_exception();
      progress.abort();
    }
  };
  if (pool_) {
    const std::function<void(int64_t)> replicaJob = [&](int64_t r) {
      const device::ReplicaScope collectiveScope(*collectives_, r, true);
      const std::function<void(int64_t)> stages = stageJob(r, device::currentReplica());
      replicas_[static_cast<size_t>(r)].stagePool->run(stages);
    };
    pool_->start(replicaJob);
    runHost();
    pool_->wait();
  } else {
    const device::ReplicaScope collectiveScope(*collectives_, 0, false);
    const std::function<void(int64_t)> stages = stageJob(0, device::currentReplica());
    ReplicaPool& pool = *replicas_.front().stagePool;
    pool.start(stages);
    runHost();
    pool.wait();
  }
  if (hostError) std::rethrow_exception(hostError);
}

}  // namespace xtrain::session
