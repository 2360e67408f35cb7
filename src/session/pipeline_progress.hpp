// PipelineProgress: what the stage threads and the host have done of one pipelined batch, so that
// each waits for exactly what it needs instead of for the end of every pipeline cycle
// (ReplicaRuntime::runPipeline; docs/pipelining.md, "Schedule").
//
// The counts. slotDone(r, k): micro-batches that slot k of local replica r has finished (a slot
// runs its micro-batches in order, on one thread). inputsWritten: cycles whose inputs the host has
// written; outputsRead: cycles whose anchors the host has read. Each only grows within a batch.
//
// Contract: every wait returns once its count has reached the value asked for, and throws
// PipelineAborted once abort() was called (by the thread that failed, so that no other waits for
// it forever). All members are safe to call from any thread.
#pragma once
#pragma GCC visibility push(default)

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>

namespace xtrain::session {

// One thing a slot's micro-batch needs before it may run: a count of the progress reached.
struct PipelineNeed {
  enum class Kind { Slot, Inputs, Outputs };
  Kind kind = Kind::Slot;
  int64_t replica = 0;  // Kind::Slot: slotDone(replica, slot) >= count
  int64_t slot = 0;
  int64_t count = 0;  // Kind::Inputs / Outputs: inputsWritten / outputsRead >= count
};
using PipelineNeeds = std::vector<PipelineNeed>;

// Thrown by a wait of an aborted batch: the error that aborted it is reported by its own thread.
struct PipelineAborted final : std::exception {
  const char* what() const noexcept override { return "pipelined batch aborted"; }
};

class PipelineProgress {
 public:
  PipelineProgress(int64_t replicas, int64_t slots);

  void finishSlot(int64_t replica, int64_t slot);  // one more micro-batch of the slot done
  void finishInputs(int64_t cycles);               // the inputs of `cycles` cycles written
  void finishOutputs(int64_t cycles);              // the anchors of `cycles` cycles read
  void abort();

  void waitSlot(int64_t replica, int64_t slot, int64_t microBatches);
  void waitSlotOnEveryReplica(int64_t slot, int64_t microBatches);
  void waitInputs(int64_t cycles);
  void waitOutputs(int64_t cycles);
  // Blocks until every need of one of `candidates` (not empty) is met; returns the index of the
  // first such candidate, in their order (a stage thread's preference among its slots).
  size_t waitForAny(const std::vector<PipelineNeeds>& candidates);

 private:
  template <typename Reached>
  void waitUntil(Reached reached);
  bool met(const PipelineNeed& need) const;  // with mu_ held

  std::mutex mu_;
  std::condition_variable changed_;
  int64_t replicas_;
  int64_t slots_;
  std::vector<int64_t> slotDone_;  // [replica * slots + slot]
  int64_t inputsWritten_ = 0;
  int64_t outputsRead_ = 0;
  bool aborted_ = false;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
