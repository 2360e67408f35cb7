// LoweredGraph: an IR graph turned into device Programs, one per Phase, over a table of buffers
// (one buffer per tensor; by the BufferPlan, activations that are never live at the same time share
// bytes of one block). Built once per session; each replica owns its own buffer table
// (makeBuffers), so one LoweredGraph serves every local replica.
#pragma once
#pragma GCC visibility push(default)

#include <array>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "device/program.hpp"
#include "ir/graph.hpp"
#include "session/buffer_plan.hpp"
#include "session/offchip_plan.hpp"

namespace xtrain::session {

// How a graph is lowered. By default every tensor has a buffer of its own and every buffer is
// plain (row-major in its shape), so that any tensor can be read by id (as the op tests do). A
// session asks for the buffer plan (XTRAIN_BUFFER_REUSE) and channels-last activations
// (session/layout_plan.hpp), and names the tensors the host reads besides the graph's outputs
// (anchors), which keep their own, plain buffers.
struct LoweringOptions {
  BufferReuse bufferReuse = BufferReuse::Off;
  bool channelsLast = false;
  std::set<TensorId> hostRead;
  // SessionOptions::enableFloatingPointChecks: every program checks its ops' floating-point
  // outputs for inf and nan (device::Program::setFloatingPointChecks).
  bool floatingPointChecks = false;
  // The off-chip tensors' loads and stores, traced around the ops that make them (must outlive the
  // constructor only); none when null.
  const OffChipPlan* offChip = nullptr;
  // Pipelining (session/pipeline_plan.hpp): the pipeline slot of every Forward, Backward and
  // Accumulate op. Each phase's program then holds its ops by slot (in schedule order within a
  // slot), so that a slot is one contiguous range of instructions (runSlot).
  std::map<OpId, int64_t> pipelineSlots;
  int64_t slots = 0;
  // The Update ops by the stage thread that runs them (PipelinePlan::updateGroups): the Update
  // program holds them by group, group k being the range runSlot(Update, k) runs.
  std::map<OpId, int64_t> updateGroups;
  // (tensor, slot): a buffer of its own for the tensor that the ops of that slot read instead of
  // the tensor's (a pipeline stash restored there, or a value written per slot): slots on threads
  // of their own then never share a buffer that one of them writes.
  std::vector<std::pair<TensorId, int64_t>> slotCopies;
};

class LoweredGraph {
 public:
  // Creates a kernel for every op (throws xtrain::error naming an op without a kernel) and assigns
  // buffers (by the buffer plan when `options` asks for it).
  explicit LoweredGraph(const ir::Graph& graph, const LoweringOptions& options = {});

  // Index of a tensor's buffer; throws xtrain::error naming the tensor when it has none, and
  // internal_error when its bytes are shared by the plan (only the programs may touch those).
  int bufferIndex(const TensorId& id) const;
  bool hasBuffer(const TensorId& id) const { return index_.count(id) != 0; }
  const std::vector<TensorId>& bufferTensors() const { return tensors_; }

  // A fresh buffer table: every buffer allocated; Variables, Consts and optimizer state hold their
  // initial values, everything else zeros (XTRAIN_BUFFER_POISON=1: the shared block holds NaNs, to
  // find a kernel that reads an output before writing it).
  std::vector<HostTensor> makeBuffers() const;
  const BufferPlan& bufferPlan() const { return plan_; }

  const device::Program& program(ir::Phase phase) const {
    return programs_[static_cast<size_t>(phase)];
  }
  // The op of each instruction of `phase`, in program order.
  const std::vector<OpId>& ops(ir::Phase phase) const { return ops_[static_cast<size_t>(phase)]; }
  // Turns per-instruction timing on or off for every phase (device::Program::setProfiling); the
  // session's profile reads it (session/session_profile.hpp). resetProfile zeroes the counters.
  void setProfiling(bool on);
  void resetProfile();
  bool profiling() const { return profiling_; }

  // Runs one phase's program on a buffer table.
  void run(ir::Phase phase, std::vector<HostTensor>& buffers, uint64_t seed,
           const std::function<void(size_t)>& afterInstruction = {}) const {
    program(phase).run(buffers, seed, afterInstruction);
  }
  // Pipelining: runs the instructions of one slot of `phase` (LoweringOptions::pipelineSlots).
  void runSlot(ir::Phase phase, int64_t slot, std::vector<HostTensor>& buffers,
               uint64_t seed) const;
  // The buffer of slot `slot`'s own copy of `id` (LoweringOptions::slotCopies).
  int slotCopyIndex(const TensorId& id, int64_t slot) const;
  // The index of the last instruction of `phase` that writes `id`, or -1 when none does.
  int64_t lastWriter(ir::Phase phase, const TensorId& id) const;
  // The layout of a tensor's buffer (Plain for every tensor the host reads).
  device::Layout layout(const TensorId& id) const {
    return channelsLast_.count(id) != 0 ? device::Layout::ChannelsLast : device::Layout::Plain;
  }

 private:
  const ir::Graph& graph_;
  std::map<TensorId, int> index_;
  std::vector<TensorId> tensors_;
  std::set<TensorId> channelsLast_;
  std::array<device::Program, ir::kPhaseCount> programs_;
  std::array<std::vector<OpId>, ir::kPhaseCount> ops_;
  // Pipelining: per phase, the first instruction of each slot (and one past the last).
  std::array<std::vector<size_t>, ir::kPhaseCount> slotStarts_;
  std::map<std::pair<TensorId, int64_t>, int> slotCopies_;
  BufferPlan plan_;
  bool profiling_ = false;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
