// PipelinePlan (pipeline_plan.hpp): the pipelined session's checks, slots and stashes.
#include "session/pipeline_plan.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "ir/op_registry.hpp"
#include "ir/placement/placement.hpp"
#include "session/option_values.hpp"
#include "xtrain/error.hpp"

namespace xtrain::session {

namespace {

bool perMicroBatch(ir::Phase p) {
  return p == ir::Phase::Forward || p == ir::Phase::Backward || p == ir::Phase::Accumulate;
}

// The per-micro-batch ops that write each tensor: its producer and the ops that modify it in place.
std::map<TensorId, std::vector<OpId>> writersOf(const ir::Graph& graph) {
  std::map<TensorId, std::vector<OpId>> writers;
  for (const auto& [id, op] : graph.ops()) {
    if (!perMicroBatch(op->phase)) continue;
    for (const auto& out : op->outputs) {
      if (!out.empty()) writers[out].push_back(id);
    }
    const ir::OpDef* def = ir::OpRegistry::instance().find(op->domain, op->type);
    if (def == nullptr) continue;
    for (int i : def->modifiesInputs) {
      if (op->hasInput(static_cast<size_t>(i))) {
        writers[op->inputs[static_cast<size_t>(i)]].push_back(id);
      }
    }
  }
  return writers;
}

// An op after the forward pass that writes a weight in place which forward ops read (the running
// statistics' CopyVarUpdate after BatchNormalization): it runs in the slot of those readers, so
// that micro-batch m + 1's forward reads what micro-batch m's update wrote, as without pipelining
// (in a later slot it would run a cycle late, on another stage's thread, beside the reader).
// nullopt for any other op; an error when its inputs are made only after that slot.
std::optional<int64_t> slotOfVariableWriter(const ir::Graph& graph, const ir::Op& op,
                                            const PipelinePlan& plan,
                                            const std::map<TensorId, std::vector<OpId>>& writers) {
  const ir::OpDef* def = ir::OpRegistry::instance().find(op.domain, op.type);
  if (def == nullptr) return std::nullopt;
  std::optional<int64_t> readerSlot;
  TensorId written;
  for (int i : def->modifiesInputs) {
    if (!op.hasInput(static_cast<size_t>(i))) continue;
    const ir::Tensor& t = graph.tensor(op.inputs[static_cast<size_t>(i)]);
    if (t.kind != ir::TensorKind::Variable) continue;
    for (OpId c : t.consumers) {
      const auto s = plan.slotOf.find(c);
      if (graph.op(c).phase != ir::Phase::Forward || s == plan.slotOf.end()) continue;
      if (!readerSlot || s->second < *readerSlot) readerSlot = s->second;
      written = t.id;
    }
  }
  if (!readerSlot) return std::nullopt;
  for (const auto& in : op.inputs) {
    auto w = writers.find(in);
    if (w == writers.end()) continue;
    for (OpId p : w->second) {
      const auto s = plan.slotOf.find(p);
      if (p == op.id || s == plan.slotOf.end() || s->second <= *readerSlot) continue;
      throw error(
          "pipelining: {} updates '{}', which the forward pass reads in pipeline slot {}, from "
          "'{}', made in the later slot {}: the update would reach the next micro-batch a cycle "
          "late. Put the ops making '{}' in the stage of the ops reading '{}'",
          op.describe(), written, *readerSlot, in, s->second, in, written);
    }
  }
  return readerSlot;
}

// Slots in schedule order (writers before readers within a phase; phases in order).
void assignSlots(const ir::Graph& graph, PipelinePlan& plan,
                 const std::map<TensorId, std::vector<OpId>>& writers) {
  const int64_t last = plan.stages - 1;
  for (OpId id : graph.schedule()) {
    const ir::Op& op = graph.op(id);
    if (!perMicroBatch(op.phase)) continue;
    // A copy runs where what it copies is made (see the header).
    const int64_t stage = op.type == ir::kIpuCopyType && op.domain == ir::kXtrainDomain
                              ? ir::Placement::kNone
                              : op.placement.pipelineStage;
    int64_t slot = 0;
    if (stage != ir::Placement::kNone) {
      slot = op.phase == ir::Phase::Forward ? stage : 2 * last - stage;
    } else {
      // The backward half starts at the last stage's slot (the loss's gradient).
      slot = op.phase == ir::Phase::Forward ? 0 : last;
      for (const auto& in : op.inputs) {
        auto w = writers.find(in);
        if (w == writers.end()) continue;
        for (OpId p : w->second) {
          auto s = plan.slotOf.find(p);
          if (p != id && s != plan.slotOf.end()) slot = std::max(slot, s->second);
        }
      }
    }
    if (stage == ir::Placement::kNone && op.phase != ir::Phase::Forward) {
      if (auto own = slotOfVariableWriter(graph, op, plan, writers)) slot = *own;
    }
    plan.slotOf[id] = slot;
  }
}

// A reader never runs in an earlier slot than what it reads is written in.
void checkSlots(const ir::Graph& graph, const PipelinePlan& plan,
                const std::map<TensorId, std::vector<OpId>>& writers) {
  for (const auto& [id, slot] : plan.slotOf) {
    const ir::Op& op = graph.op(id);
    for (const auto& in : op.inputs) {
      auto w = writers.find(in);
      if (w == writers.end()) continue;
      for (OpId p : w->second) {
        if (p == id || plan.slotOf.at(p) <= slot) continue;
        throw internal_error(
            "pipelining: {} (slot {}) reads '{}', written by {} in the later slot {}: the graph "
            "cannot be pipelined as placed",
            op.describe(), slot, in, graph.op(p).describe(), plan.slotOf.at(p));
      }
    }
  }
}

// Whether a tensor holds one micro-batch's value (weights, state and accumulators do not).
bool isPerMicroBatch(const ir::Graph& graph, const ir::Tensor& t) {
  if (t.kind != ir::TensorKind::Activation && t.kind != ir::TensorKind::Stream) return false;
  for (OpId c : t.consumers) {
    if (!perMicroBatch(graph.op(c).phase)) return false;
  }
  return t.producer < 0 || perMicroBatch(graph.op(t.producer).phase);
}

}  // namespace

int64_t PipelinePlan::stashBytes(int64_t vg) const {
  int64_t total = 0;
  for (const auto& s : stashes) {
    if (s.virtualGraph == vg) total += s.depth * s.bytes;
  }
  return total;
}

int64_t PipelinePlan::virtualGraphs() const {
  int64_t highest = 0;
  for (int64_t vg : slotVirtualGraph) highest = std::max(highest, vg);
  for (const auto& s : stashes) highest = std::max(highest, s.virtualGraph);
  return highest + 1;
}

void checkPipelineOptions(const SessionConfig& config, int64_t stages, int64_t virtualGraphs) {
  const SessionOptions& o = config.options;
  if (config.training && o.automaticLossScalingSettings.enabled && !o.enableGradientAccumulation) {
    // Checked first, as PopART's automatic loss scaling transform does.
    throw error(
        "SessionOptions.automaticLossScalingSettings.enabled with enablePipelining and no "
        "gradient accumulation (set enableGradientAccumulation = true): Automatic loss scaling is "
        "not currently supported when the 'enablePipelining' SessionOption is set to 'true', but "
        "the 'enableGradientAccumulation' SessionOption is set to 'false'");
  }
  const bool placed = o.virtualGraphMode == VirtualGraphMode::Manual ||
                      o.virtualGraphMode == VirtualGraphMode::Auto;
  if (!placed || virtualGraphs < 2) {
    throw error(
        "Pipelining requires more than 1 IPU (currently {}) and the 'virtualGraphMode' session "
        "option to not be VirtualGraphMode::Off (currently {}): {}",
        std::max<int64_t>(1, virtualGraphs), enumName(o.virtualGraphMode),
        placed ? "place the model's ops on 2 or more virtual graphs, or set enablePipelining = "
                 "false"
               : "set SessionOptions.virtualGraphMode = Manual (ops placed with "
                 "Builder::virtualGraph) or Auto, or enablePipelining = false");
  }
  const int64_t slots = config.training ? 2 * stages - 1 : stages;
  if (config.training) {
    if (!o.enableGradientAccumulation) {
      throw error(
          "SessionOptions.enablePipelining in a training session requires "
          "enableGradientAccumulation = true: the pipeline runs over the accumulation factor's "
          "micro-batches and updates the weights after the last; set enableGradientAccumulation "
          "= true and accumulationFactor >= {} ({} stages)",
          slots, stages);
    }
    if (o.accumulationFactor < slots) {
      throw error(
          "For pipelining, depth (gradient accumulation factor) must equal at least the number "
          "of pipeline stages ({}): accumulationFactor is {}; {} forward stages and their "
          "backward stages make {} (the last stage's forward and backward share one); set "
          "accumulationFactor >= {}",
          slots, o.accumulationFactor, stages, slots, slots);
    }
  } else if (config.dataFlow.batchesPerStep() * o.accumulationFactor < slots) {
    throw error(
        "For pipelining, depth (batchesPerStep) must equal at least the number of pipeline "
        "stages ({}): batchesPerStep is {}; set DataFlow's batchesPerStep >= {}",
        slots, config.dataFlow.batchesPerStep(), slots);
  }
}

namespace {

// The tensors `op` writes: its outputs and the inputs it modifies in place.
std::vector<TensorId> writtenBy(const ir::Op& op) {
  std::vector<TensorId> written(op.outputs.begin(), op.outputs.end());
  if (const ir::OpDef* def = ir::OpRegistry::instance().find(op.domain, op.type)) {
    for (int i : def->modifiesInputs) {
      if (op.hasInput(static_cast<size_t>(i))) written.push_back(op.inputs[static_cast<size_t>(i)]);
    }
  }
  return written;
}

// PipelinePlan::updateGroups: each Update op's virtual graph (completePlacement put a weight's
// whole update on its IPU), when no IPU's update touches what another's writes.
std::map<OpId, int64_t> planUpdateGroups(const ir::Graph& graph) {
  std::map<OpId, int64_t> groups;
  std::set<int64_t> ipus;
  for (const auto& [id, op] : graph.ops()) {
    if (op->phase != ir::Phase::Update) continue;
    if (op->domain == ir::kGraphcoreDomain && op->type.starts_with("Replicated")) return {};
    groups[id] = std::max<int64_t>(0, op->placement.virtualGraph);
    ipus.insert(groups[id]);
  }
  if (ipus.size() < 2) return {};
  std::map<TensorId, int64_t> writtenOn;  // by an Update op
  for (const auto& [id, vg] : groups) {
    for (const auto& t : writtenBy(graph.op(id))) {
      if (t.empty()) continue;
      if (auto [it, fresh] = writtenOn.emplace(t, vg); !fresh && it->second != vg) return {};
    }
  }
  for (const auto& [id, vg] : groups) {
    for (const auto& in : graph.op(id).inputs) {
      if (auto it = writtenOn.find(in); it != writtenOn.end() && it->second != vg) return {};
    }
  }
  return groups;
}

// PipelinePlan::updateAfterOwnSlots: no slot of one IPU writes what another IPU's Update ops
// read or write, or reads what they write.
bool planUpdateAfterOwnSlots(const ir::Graph& graph, const PipelinePlan& plan) {
  if (plan.updateGroups.empty()) return false;
  std::map<TensorId, int64_t> writtenOn;         // by an Update op, on its IPU
  std::map<TensorId, std::set<int64_t>> readOn;  // by Update ops, on their IPUs
  for (const auto& [id, ipu] : plan.updateGroups) {
    const ir::Op& op = graph.op(id);
    for (const TensorId& t : op.inputs) readOn[t].insert(ipu);
    for (const TensorId& t : writtenBy(op)) writtenOn.emplace(t, ipu);
  }
  for (const auto& [id, slot] : plan.slotOf) {
    const ir::Op& op = graph.op(id);
    const int64_t ipu = plan.slotVirtualGraph[static_cast<size_t>(slot)];
    auto updatedElsewhere = [&](const TensorId& t) {
      const auto it = writtenOn.find(t);
      return it != writtenOn.end() && it->second != ipu;
    };
    auto readElsewhere = [&](const TensorId& t) {
      const auto it = readOn.find(t);
      return it != readOn.end() && (it->second.size() > 1 || *it->second.begin() != ipu);
    };
    if (std::any_of(op.inputs.begin(), op.inputs.end(), updatedElsewhere)) return false;
    for (const TensorId& t : writtenBy(op)) {
      if (updatedElsewhere(t) || readElsewhere(t)) return false;
    }
  }
  return true;
}

}  // namespace

PipelinePlan planPipeline(const ir::Graph& graph, int64_t stages, bool training,
                          const std::vector<TensorId>& inputs, const std::vector<TensorId>& anchors,
                          const TensorId& accumulationIndex) {
  PipelinePlan plan;
  plan.stages = stages;
  plan.slots = training ? 2 * stages - 1 : stages;
  const auto writers = writersOf(graph);
  assignSlots(graph, plan, writers);
  checkSlots(graph, plan, writers);
  plan.pushAfter.assign(static_cast<size_t>(plan.slots), {});
  plan.restoreBefore.assign(static_cast<size_t>(plan.slots), {});
  const std::set<TensorId> hostWritten(inputs.begin(), inputs.end());
  const std::map<TensorId, int64_t> where = ir::tensorVirtualGraphs(graph);
  for (const auto& [id, t] : graph.tensors()) {
    const bool input = hostWritten.count(id) != 0;
    auto w = writers.find(id);
    if (!input && w == writers.end()) continue;
    if (!isPerMicroBatch(graph, *t)) continue;
    std::set<int64_t> readers;
    for (OpId c : t->consumers) readers.insert(plan.slotOf.at(c));
    if (input) plan.inputSlot[id] = readers.empty() ? 0 : *readers.begin();
    if (readers.empty()) continue;
    std::set<int64_t> writerSlots;
    if (input) writerSlots.insert(plan.inputSlot[id]);
    if (w != writers.end()) {
      for (OpId p : w->second) writerSlots.insert(plan.slotOf.at(p));
    }
    // Written in two slots (an op writing it in place in another slot than its producer), it would
    // hold two micro-batches at once, and the stages' threads would write it together.
    if (writerSlots.size() > 1) {
      throw internal_error(
          "pipelining: '{}' is written in {} pipeline slots (by {}): a tensor of one micro-batch "
          "must be written in one slot",
          id, writerSlots.size(), graph.op(w->second.back()).describe());
    }
    const int64_t writer = *writerSlots.rbegin();
    if (*readers.rbegin() <= writer) continue;  // read only where it is written: no stash
    const size_t k = plan.stashes.size();
    plan.stashes.push_back(PipelineStash{id, writer, input, *readers.rbegin() - writer + 1,
                                         where.count(id) ? where.at(id) : 0, t->info.nbytes()});
    if (input) {
      plan.pushInputs.push_back(k);
    } else {
      plan.pushAfter[static_cast<size_t>(writer)].push_back(k);
    }
    for (int64_t r : readers) {
      if (r <= writer) continue;
      plan.restoreBefore[static_cast<size_t>(r)].push_back(k);
      plan.slotCopies.emplace_back(id, r);
    }
  }
  plan.accumulationIndex = accumulationIndex;
  if (!accumulationIndex.empty() && graph.hasTensor(accumulationIndex)) {
    for (int64_t k = 0; k < plan.slots; ++k) plan.slotCopies.emplace_back(accumulationIndex, k);
  }
  // Each slot's IPU: its stage's virtual graph (slot s and 2N-2-s are stage s).
  plan.slotVirtualGraph.assign(static_cast<size_t>(plan.slots), 0);
  for (const auto& [id, slot] : plan.slotOf) {
    const ir::Op& op = graph.op(id);
    if (op.placement.pipelineStage == ir::Placement::kNone || !op.placement.hasVirtualGraph()) {
      continue;
    }
    if (op.type == ir::kIpuCopyType && op.domain == ir::kXtrainDomain) continue;
    plan.slotVirtualGraph[static_cast<size_t>(slot)] = op.placement.virtualGraph;
  }
  if (training) {
    plan.updateGroups = planUpdateGroups(graph);
    plan.updateAfterOwnSlots = planUpdateAfterOwnSlots(graph, plan);
  }
  for (const TensorId& id : anchors) {
    auto in = plan.inputSlot.find(id);
    auto w = writers.find(id);
    if (in != plan.inputSlot.end()) {
      plan.anchorSlot[id] = in->second;
    } else if (w != writers.end()) {
      int64_t slot = 0;
      for (OpId p : w->second) slot = std::max(slot, plan.slotOf.at(p));
      plan.anchorSlot[id] = slot;
    }
  }
  return plan;
}

void chargePipelineStashes(device::MemoryModel& model, const PipelinePlan& plan,
                           int64_t localReplicas) {
  const int ipusPerReplica =
      std::max(1, model.numIpus() / static_cast<int>(std::max<int64_t>(1, localReplicas)));
  for (int64_t r = 0; r < localReplicas; ++r) {
    for (const PipelineStash& s : plan.stashes) {
      const int ipu = static_cast<int>(r) * ipusPerReplica + static_cast<int>(s.virtualGraph);
      if (ipu >= model.numIpus()) continue;
      model.add(ipu, device::TensorClass::Activations,
                format("{} (pipeline stash of {})", s.tensor, s.depth),
                static_cast<uint64_t>(s.depth * s.bytes));
    }
  }
}

}  // namespace xtrain::session
