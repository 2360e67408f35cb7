#include "session/pipeline_progress.hpp"

#include <algorithm>
#include <optional>

#include "common/timeline.hpp"

namespace xtrain::session {

PipelineProgress::PipelineProgress(int64_t replicas, int64_t slots)
    : replicas_(replicas), slots_(slots), slotDone_(static_cast<size_t>(replicas * slots), 0) {}

void PipelineProgress::finishSlot(int64_t replica, int64_t slot) {
  {
    const std::lock_guard lock(mu_);
    ++slotDone_[static_cast<size_t>(replica * slots_ + slot)];
  }
  changed_.notify_all();
}

void PipelineProgress::finishInputs(int64_t cycles) {
  {
    const std::lock_guard lock(mu_);
    inputsWritten_ = cycles;
  }
  changed_.notify_all();
}

void PipelineProgress::finishOutputs(int64_t cycles) {
  {
    const std::lock_guard lock(mu_);
    outputsRead_ = cycles;
  }
  changed_.notify_all();
}

void PipelineProgress::abort() {
  {
    const std::lock_guard lock(mu_);
    aborted_ = true;
  }
  changed_.notify_all();
}

template <typename Reached>
void PipelineProgress::waitUntil(Reached reached) {
  std::unique_lock lock(mu_);
  if (aborted_) throw PipelineAborted();
  if (reached()) return;
  // Only a wait that blocks shows in the trace: its span is the time a stage or the host lost.
  std::optional<timeline::Span> traced;
  if (timeline::recording()) traced.emplace(timeline::Category::Host, "pipeline wait");
  changed_.wait(lock, [&] { return aborted_ || reached(); });
  if (aborted_) throw PipelineAborted();
}

void PipelineProgress::waitSlot(int64_t replica, int64_t slot, int64_t microBatches) {
  const auto k = static_cast<size_t>(replica * slots_ + slot);
  waitUntil([&] { return slotDone_[k] >= microBatches; });
}

void PipelineProgress::waitSlotOnEveryReplica(int64_t slot, int64_t microBatches) {
  waitUntil([&] {
    for (int64_t r = 0; r < replicas_; ++r) {
      if (slotDone_[static_cast<size_t>(r * slots_ + slot)] < microBatches) return false;
    }
    return true;
  });
}

void PipelineProgress::waitInputs(int64_t cycles) {
  waitUntil([&] { return inputsWritten_ >= cycles; });
}

void PipelineProgress::waitOutputs(int64_t cycles) {
  waitUntil([&] { return outputsRead_ >= cycles; });
}

bool PipelineProgress::met(const PipelineNeed& need) const {
  switch (need.kind) {
    case PipelineNeed::Kind::Slot:
      return slotDone_[static_cast<size_t>(need.replica * slots_ + need.slot)] >= need.count;
    case PipelineNeed::Kind::Inputs: return inputsWritten_ >= need.count;
    case PipelineNeed::Kind::Outputs: return outputsRead_ >= need.count;
  }
  return false;
}

size_t PipelineProgress::waitForAny(const std::vector<PipelineNeeds>& candidates) {
  size_t chosen = 0;
  waitUntil([&] {
    for (size_t i = 0; i < candidates.size(); ++i) {
      const PipelineNeeds& needs = candidates[i];
      if (std::all_of(needs.begin(), needs.end(), [&](const PipelineNeed& n) { return met(n); })) {
        chosen = i;
        return true;
      }
    }
    return false;
  });
  return chosen;
}

}  // namespace xtrain::session
