// SessionProfiler's part for pipelining (session_profiler.hpp, docs/pipelining.md): the simulated
// cycles of a pipelined step (its stages overlapping on their IPUs), the stash and restore traffic,
// and their lines in the reports.
#include <algorithm>
#include <numeric>

#include "common/json_writer.hpp"
#include "ir/placement/placement.hpp"
#include "session/session_profiler.hpp"
#include "xtrain/error.hpp"

namespace xtrain::session {

void SessionProfiler::startPipeline() {
  slotCycles_.clear();
  slotIpu_.clear();
  stashBytesPerMicroBatch_ = stashCyclesPerMicroBatch_ = 0;
  if (pipeline_ == nullptr || !pipeline_->enabled()) return;
  const PipelinePlan& plan = *pipeline_;
  slotCycles_.assign(static_cast<size_t>(plan.slots), 0);
  slotIpu_.assign(static_cast<size_t>(plan.slots), -1);
  for (ir::Phase phase : {ir::Phase::Forward, ir::Phase::Backward, ir::Phase::Accumulate}) {
    const auto& ops = program_->ops(phase);
    const auto& cycles = instructionCycles_[static_cast<size_t>(phase)];
    for (size_t k = 0; k < ops.size(); ++k) {
      const auto slot = static_cast<size_t>(plan.slotOf.at(ops[k]));
      slotCycles_[slot] += cycles[k];
      const ir::Op& op = graph_->op(ops[k]);
      if (slotIpu_[slot] < 0 && op.type != ir::kIpuCopyType) {
        slotIpu_[slot] = op.placement.virtualGraph;
      }
    }
  }
  // A stash is pushed once and restored once per reading slot, per micro-batch.
  auto charge = [&](size_t slot, const PipelineStash& s) {
    const auto bytes = static_cast<uint64_t>(s.bytes);
    const uint64_t c = cycleModel_->stashCycles(bytes);
    slotCycles_[slot] += c;
    stashBytesPerMicroBatch_ += bytes;
    stashCyclesPerMicroBatch_ += c;
  };
  for (size_t slot = 0; slot < slotCycles_.size(); ++slot) {
    for (size_t k : plan.pushAfter[slot]) charge(slot, plan.stashes[k]);
    for (size_t k : plan.restoreBefore[slot]) charge(slot, plan.stashes[k]);
  }
  for (size_t k : plan.pushInputs) charge(0, plan.stashes[k]);
  for (auto& ipu : slotIpu_) ipu = std::max<int64_t>(ipu, 0);
}

void SessionProfiler::countPipeline(int64_t microBatches) {
  if (slotCycles_.empty()) return;
  const uint64_t pipelined = CycleModel::pipelineCycles(slotCycles_, slotIpu_, microBatches);
  const uint64_t oneMicroBatch = std::accumulate(slotCycles_.begin(), slotCycles_.end(),
                                                 uint64_t{0});
  profile_.currentRunCycles += pipelined;
  pipelinedCycles_ += pipelined;
  sequentialCycles_ += oneMicroBatch * static_cast<uint64_t>(microBatches);
  pipelineMicroBatches_ += static_cast<uint64_t>(microBatches);
}

std::string SessionProfiler::pipelineReport(const SessionFigures& figures) const {
  if (pipeline_ == nullptr || !pipeline_->enabled()) return "";
  const PipelinePlan& plan = *pipeline_;
  std::string perIpu;
  for (int64_t vg = 0; vg < plan.virtualGraphs(); ++vg) {
    perIpu += format("{}IPU {} {:.1f} KiB", vg == 0 ? "" : ", ", vg,
                     static_cast<double>(plan.stashBytes(vg)) / 1024.0);
  }
  std::string s = format(
      "pipeline: {} stages in {} slots over {} micro-batches a step ({} cycles: fill, steady "
      "state, flush); {} stashed tensor(s), per replica {}\n",
      plan.stages, plan.slots, figures.training ? figures.accumulationFactor
                                                : figures.batchesPerStep *
                                                      figures.accumulationFactor,
      plan.cycles(figures.training ? figures.accumulationFactor
                                   : figures.batchesPerStep * figures.accumulationFactor),
      plan.stashes.size(), perIpu);
  if (pipelineMicroBatches_ > 0 && pipelinedCycles_ > 0) {
    s += format(
        "pipeline time: {} simulated cycles for {} micro-batch(es), against {} one stage after "
        "the other ({:.2f}x); stash and restore traffic {:.1f} KiB per micro-batch, {:.1f}% of "
        "the stages' cycles\n",
        pipelinedCycles_, pipelineMicroBatches_, sequentialCycles_,
        static_cast<double>(sequentialCycles_) / static_cast<double>(pipelinedCycles_),
        static_cast<double>(stashBytesPerMicroBatch_) / 1024.0,
        100.0 * static_cast<double>(stashCyclesPerMicroBatch_ * pipelineMicroBatches_) /
            static_cast<double>(std::max<uint64_t>(1, sequentialCycles_)));
  }
  return s;
}

void SessionProfiler::writePipelineJson(json::Writer& w) const {
  w.beginObject();
  if (pipeline_ != nullptr && pipeline_->enabled()) {
    const PipelinePlan& plan = *pipeline_;
    w.field("stages", plan.stages).field("slots", plan.slots);
    w.key("stashes").beginArray();
    for (const PipelineStash& s : plan.stashes) {
      w.beginObject()
          .field("tensor", s.tensor)
          .field("virtualGraph", s.virtualGraph)
          .field("writerSlot", s.writer)
          .field("depth", s.depth)
          .field("bytes", s.bytes)
          .endObject();
    }
    w.endArray();
    w.key("stashBytesPerIpu").beginArray();
    for (int64_t vg = 0; vg < plan.virtualGraphs(); ++vg) w.value(plan.stashBytes(vg));
    w.endArray();
    w.key("slotCycles").beginArray();
    for (uint64_t c : slotCycles_) w.value(c);
    w.endArray();
    w.field("stashBytesPerMicroBatch", stashBytesPerMicroBatch_)
        .field("pipelinedCycles", pipelinedCycles_)
        .field("sequentialCycles", sequentialCycles_)
        .field("microBatches", pipelineMicroBatches_);
  }
  w.endObject();
}

}  // namespace xtrain::session
