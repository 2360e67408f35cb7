#include "session/lowered_graph.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

#include "common/check.hpp"
#include "common/env_switch.hpp"
#include "session/cycle_model.hpp"
#include "session/kernel_spec.hpp"
#include "session/layout_plan.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

LoweredGraph::LoweredGraph(const ir::Graph& graph, const LoweringOptions& options) : graph_(graph) {
  if (options.channelsLast) channelsLast_ = channelsLastTensors(graph, options.hostRead);
  for (const auto& [id, t] : graph.tensors()) {
    index_[id] = static_cast<int>(tensors_.size());
    tensors_.push_back(id);
  }
  // Slot copies after the graph's tensors: the buffer of index i < graph.tensors().size() is the
  // tensor's own.
  for (const auto& [id, slot] : options.slotCopies) {
    slotCopies_[{id, slot}] = static_cast<int>(tensors_.size());
    tensors_.push_back(id);
  }
  std::vector<OpId> order = graph.schedule();
  auto slotOf = [&](OpId id) -> int64_t {
    auto it = options.pipelineSlots.find(id);
    if (it != options.pipelineSlots.end()) return it->second;
    auto group = options.updateGroups.find(id);
    return group == options.updateGroups.end() ? 0 : group->second;
  };
  if (options.slots > 0) {
    // By phase, then slot; stable, so schedule order within a slot (the plan checked that no op
    // reads what a later slot writes, so this order is still topological).
    std::stable_sort(order.begin(), order.end(), [&](OpId a, OpId b) {
      const auto pa = graph.op(a).phase;
      const auto pb = graph.op(b).phase;
      return pa != pb ? pa < pb : slotOf(a) < slotOf(b);
    });
    for (auto& starts : slotStarts_) starts.assign(static_cast<size_t>(options.slots) + 1, 0);
  }
  for (OpId opId : order) {
    const ir::Op& op = graph.op(opId);
    device::Instruction instr;
    for (const auto& in : op.inputs) {
      auto copy = slotCopies_.find({in, slotOf(opId)});
      const bool mine = copy != slotCopies_.end() && options.pipelineSlots.count(opId) != 0;
      instr.inputs.push_back(in.empty() ? -1 : mine ? copy->second : index_.at(in));
    }
    for (const auto& out : op.outputs) instr.outputs.push_back(out.empty() ? -1 : index_.at(out));
    device::KernelSpec spec = kernelSpecOf(graph, op);
    if (!channelsLast_.empty()) {
      for (const auto& in : op.inputs) spec.inputLayouts.push_back(layout(in));
      for (const auto& out : op.outputs) spec.outputLayouts.push_back(layout(out));
    }
    instr.kernel = device::KernelRegistry::instance().create(spec);
    instr.description = op.describe();
    // A recomputation clone draws its original's random numbers (a Dropout mask recomputed in the
    // backward pass is the forward pass's).
    const ir::Op& seeded = op.recomputes >= 0 ? graph.op(op.recomputes) : op;
    instr.seedSalt = std::hash<std::string>{}(seeded.name + "#" + std::to_string(seeded.id));
    if (options.offChip != nullptr) {
      if (auto it = options.offChip->transfers.find(opId); it != options.offChip->transfers.end()) {
        for (const RemoteTransfer& t : it->second) {
          instr.remote.push_back(
              {(t.store ? "RemoteStore " : "RemoteLoad ") + t.tensor, static_cast<int64_t>(t.bytes),
               static_cast<int64_t>(CycleModel::remoteTransferCycles(t.bytes)), t.store});
        }
      }
    }
    programs_[static_cast<size_t>(op.phase)].append(std::move(instr));
    ops_[static_cast<size_t>(op.phase)].push_back(opId);
    if (options.slots > 0) {
      // Every slot after this op's starts after it.
      auto& starts = slotStarts_[static_cast<size_t>(op.phase)];
      for (size_t k = static_cast<size_t>(slotOf(opId)) + 1; k < starts.size(); ++k) {
        starts[k] = ops_[static_cast<size_t>(op.phase)].size();
      }
    }
  }
  plan_ = planBuffers(graph, tensors_, options.hostRead, options.bufferReuse, channelsLast_);
  if (plan_.plannedTensors > 0) {
    logging::session::debug(
        "buffer plan: {} activations ({} bytes, one buffer each) in a block of {} bytes; {} "
        "shape-only op outputs over their input",
        plan_.plannedTensors, plan_.plannedBytes, plan_.blockBytes, plan_.aliases);
  }
  if (options.floatingPointChecks) {
    for (auto& p : programs_) p.setFloatingPointChecks(tensors_);
  }
}

int LoweredGraph::slotCopyIndex(const TensorId& id, int64_t slot) const {
  auto it = slotCopies_.find({id, slot});
  XT_CHECK(it != slotCopies_.end(), "no copy of '{}' for pipeline slot {}", id, slot);
  return it->second;
}

int64_t LoweredGraph::lastWriter(ir::Phase phase, const TensorId& id) const {
  auto it = index_.find(id);
  if (it == index_.end()) return -1;
  const auto& instructions = program(phase).instructions();
  for (size_t k = instructions.size(); k-- > 0;) {
    const auto& outs = instructions[k].outputs;
    if (std::find(outs.begin(), outs.end(), it->second) != outs.end())
      return static_cast<int64_t>(k);
  }
  return -1;
}

void LoweredGraph::runSlot(ir::Phase phase, int64_t slot, std::vector<HostTensor>& buffers,
                           uint64_t seed) const {
  const auto& starts = slotStarts_[static_cast<size_t>(phase)];
  XT_CHECK(slot >= 0 && static_cast<size_t>(slot) + 1 < starts.size(),
           "pipeline slot {} of a program lowered with {} slots", slot,
           starts.empty() ? 0 : starts.size() - 1);
  program(phase).runRange(buffers, seed, starts[static_cast<size_t>(slot)],
                          starts[static_cast<size_t>(slot) + 1]);
}

void LoweredGraph::setProfiling(bool on) {
  profiling_ = on;
  for (auto& p : programs_) p.setProfiling(on);
}

void LoweredGraph::resetProfile() {
  for (auto& p : programs_) p.resetProfile();
}

int LoweredGraph::bufferIndex(const TensorId& id) const {
  auto it = index_.find(id);
  if (it == index_.end()) throw error("tensor '{}' has no buffer on the device", id);
  if (plan_.shared(static_cast<size_t>(it->second))) {
    throw internal_error(
        "tensor '{}' is read by id but its buffer is shared by the buffer plan (a tensor the "
        "session uses must be kept out of it; XTRAIN_BUFFER_REUSE=0 turns the plan off)",
        id);
  }
  return it->second;
}

std::vector<HostTensor> LoweredGraph::makeBuffers() const {
  std::vector<HostTensor> buffers;
  buffers.reserve(tensors_.size());
  // The plan's block, shared by the views into it (which keep it alive).
  std::shared_ptr<std::byte> block;
  if (plan_.blockBytes > 0) {
    void* p = std::aligned_alloc(64, plan_.blockBytes);
    if (p == nullptr) throw error("out of host memory allocating {} bytes", plan_.blockBytes);
    block.reset(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
    if (readBoolSwitch("XTRAIN_BUFFER_POISON", false)) {
      std::memset(p, 0xff, plan_.blockBytes);  // NaN in every floating-point type
    } else {
      std::memset(p, 0, plan_.blockBytes);
    }
  }
  for (size_t b = 0; b < tensors_.size(); ++b) {
    const TensorId& id = tensors_[b];
    const ir::Tensor& t = graph_.tensor(id);
    if (plan_.shared(b)) {
      buffers.push_back(
          HostTensor::view(t.info, block.get() + plan_.offsets[b], std::shared_ptr<void>(block)));
    } else if (t.value) {
      XT_CHECK(t.value->info() == t.info, "initial value of {} is {} but the tensor is {}", id,
               t.value->info().toString(), t.info.toString());
      buffers.push_back(*t.value);
    } else {
      buffers.emplace_back(t.info);
    }
  }
  return buffers;
}

}  // namespace xtrain::session
