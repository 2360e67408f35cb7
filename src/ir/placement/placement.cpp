// Placement of ops on virtual graphs (placement.hpp): reading the annotations, Manual's check, the
// placement of the training graph's ops and the copies between virtual graphs. Auto's split is in
// auto_virtual_graph.cpp.
#include "ir/placement/placement.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "common/check.hpp"
#include "ir/op_registry.hpp"

namespace xtrain::ir {

namespace {

int64_t takeIndex(Attributes& attrs, const char* name, const std::string& label) {
  if (!attrs.has(name)) return Placement::kNone;
  const auto& all = attrs.all();
  const AttrValue& v = all.at(name);
  if (!std::holds_alternative<int64_t>(v)) {
    throw error("{}: attribute '{}' must be an INT (the index PopART's Builder writes)", label,
                name);
  }
  const int64_t value = std::get<int64_t>(v);
  if (value < 0) {
    throw error(
        "{}: attribute '{}' is {}; a virtual graph, pipeline stage or execution phase is "
        "an index >= 0",
        label, name, value);
  }
  attrs.erase(name);
  return value;
}

bool isIpuCopy(const Op& op) {
  return op.type == kIpuCopyType && op.domain == kXtrainDomain;
}

const std::vector<int>& modifiedInputs(const Op& op) {
  static const std::vector<int> none;
  const OpDef* def = OpRegistry::instance().find(op.domain, op.type);
  return def == nullptr ? none : def->modifiesInputs;
}

bool modifies(const Op& op, size_t input) {
  const auto& m = modifiedInputs(op);
  return std::find(m.begin(), m.end(), static_cast<int>(input)) != m.end();
}

// The lowest virtual graph among the placed ops that read or write `t` (IpuCopy ops excluded: they
// read from the source).
std::optional<int64_t> lowestReader(const Graph& g, const Tensor& t) {
  std::optional<int64_t> best;
  for (OpId c : t.consumers) {
    const Op& op = g.op(c);
    if (isIpuCopy(op) || !op.placement.hasVirtualGraph()) continue;
    if (!best || op.placement.virtualGraph < *best) best = op.placement.virtualGraph;
  }
  return best;
}

// Where an unplaced op goes (completePlacement's rules), or nullopt when nothing decides it yet.
std::optional<int64_t> chooseVirtualGraph(const Graph& g, const Op& op,
                                          const std::map<TensorId, int64_t>& pinned) {
  for (const auto* ids : {&op.inputs, &op.outputs}) {
    for (const auto& id : *ids) {
      if (auto it = pinned.find(id); !id.empty() && it != pinned.end()) return it->second;
    }
  }
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i].empty() || !modifies(op, i)) continue;
    const Tensor& t = g.tensor(op.inputs[i]);
    if (t.producer < 0) {
      if (auto r = lowestReader(g, t)) return r;
    }
  }
  for (const auto& in : op.inputs) {
    if (in.empty()) continue;
    const Tensor& t = g.tensor(in);
    if (t.producer >= 0 && g.op(t.producer).placement.hasVirtualGraph()) {
      return g.op(t.producer).placement.virtualGraph;
    }
  }
  for (const auto& in : op.inputs) {
    if (in.empty() || g.tensor(in).producer >= 0) continue;
    if (auto r = lowestReader(g, g.tensor(in))) return r;
  }
  std::optional<int64_t> best;
  for (const auto& out : op.outputs) {
    if (out.empty()) continue;
    if (auto r = lowestReader(g, g.tensor(out)); r && (!best || *r < *best)) best = r;
  }
  return best;
}

// Where a tensor that no op produces lives: where the ops writing it in place run, else the lowest
// of its readers'.
std::map<TensorId, int64_t> homes(const Graph& g) {
  std::map<TensorId, int64_t> home;
  for (const auto& [id, op] : g.ops()) {
    for (int i : modifiedInputs(*op)) {
      const size_t k = static_cast<size_t>(i);
      if (k < op->inputs.size() && !op->inputs[k].empty() && op->placement.hasVirtualGraph()) {
        home.emplace(op->inputs[k], op->placement.virtualGraph);
      }
    }
  }
  for (const auto& [id, t] : g.tensors()) {
    if (t->producer >= 0 || home.count(id)) continue;
    if (auto r = lowestReader(g, *t)) home[id] = *r;
  }
  return home;
}

void replaceInput(Graph& g, Op& op, size_t index, const TensorId& to) {
  auto& from = g.tensor(op.inputs[index]).consumers;
  from.erase(std::find(from.begin(), from.end(), op.id));
  op.inputs[index] = to;
  g.tensor(to).consumers.push_back(op.id);
}

}  // namespace

Placement takePlacement(Attributes& attrs, const std::string& label) {
  Placement p;
  p.virtualGraph = takeIndex(attrs, kVirtualGraphAttribute, label);
  p.pipelineStage = takeIndex(attrs, kPipelineStageAttribute, label);
  p.executionPhase = takeIndex(attrs, kExecutionPhaseAttribute, label);
  return p;
}

OpId nextOpId(const Graph& graph) {
  return graph.ops().empty() ? 0 : graph.ops().rbegin()->first + 1;
}

void inheritPlacement(Graph& graph, OpId firstNew, const Placement& from) {
  for (auto it = graph.ops().lower_bound(firstNew); it != graph.ops().end(); ++it) {
    Op& op = *it->second;
    if (!op.placement.hasVirtualGraph()) op.placement.virtualGraph = from.virtualGraph;
    if (op.placement.pipelineStage == Placement::kNone) {
      op.placement.pipelineStage = from.pipelineStage;
    }
  }
}

int64_t clearVirtualGraphs(Graph& graph) {
  int64_t had = 0;
  for (const auto& [id, op] : graph.ops()) {
    if (op->placement.hasVirtualGraph() || op->placement.pipelineStage != Placement::kNone) ++had;
    op->placement.virtualGraph = Placement::kNone;
    op->placement.pipelineStage = Placement::kNone;
  }
  return had;
}

std::string describeWithTensors(const Op& op) {
  std::string s = op.describe();
  s.pop_back();  // the ')'
  const auto list = [](const std::vector<TensorId>& ids) {
    std::string out;
    for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
    return "[" + out + "]";
  };
  return s + ", inputs=" + list(op.inputs) + ", outputs=" + list(op.outputs) + ")";
}

void checkManualPlacement(const Graph& graph) {
  std::map<int64_t, int64_t> perGraph;
  std::vector<const Op*> unplaced;
  for (const auto& [id, op] : graph.ops()) {
    if (op->placement.hasVirtualGraph()) {
      ++perGraph[op->placement.virtualGraph];
    } else {
      unplaced.push_back(op.get());
    }
  }
  if (unplaced.empty() || graph.ops().empty()) return;
  if (perGraph.empty()) {
    throw error(
        "SessionOptions flag virtualGraphMode is Manual, but no Ops have been annotated with "
        "virtual graph information (place every op with Builder::virtualGraph, or use "
        "VirtualGraphMode::Auto or Off)");
  }
  std::ostringstream m;
  m << "Either all Ops must have their virtual graph ids set, or none must "
       "(VirtualGraphMode::Manual). Op count per virtual graph id\n";
  for (const auto& [vg, n] : perGraph) m << "  " << vg << " : " << n << "\n";
  m << "  unplaced : " << unplaced.size() << "\nOps with no virtual graph id:\n";
  for (const Op* op : unplaced) m << "  " << describeWithTensors(*op) << "\n";
  throw error("{}", m.str());
}

void completePlacement(Graph& graph, const std::vector<std::vector<TensorId>>& families) {
  std::map<TensorId, int64_t> pinned;
  for (const auto& family : families) {
    std::optional<int64_t> vg;
    for (const auto& id : family) {
      if (id.empty() || !graph.hasTensor(id)) continue;
      const Tensor& t = graph.tensor(id);
      if (t.producer >= 0 && graph.op(t.producer).placement.hasVirtualGraph()) {
        vg = graph.op(t.producer).placement.virtualGraph;
      } else {
        vg = lowestReader(graph, t);
      }
      if (vg) break;
    }
    if (!vg) continue;
    for (const auto& id : family) {
      if (!id.empty() && graph.hasTensor(id)) pinned.emplace(id, *vg);
    }
  }
  std::vector<OpId> open;
  for (OpId id : graph.schedule()) {
    if (!graph.op(id).placement.hasVirtualGraph()) open.push_back(id);
  }
  // Rounds until nothing more is decided (an op may depend on a later one's placement), then 0.
  for (bool progress = true; progress && !open.empty();) {
    progress = false;
    std::vector<OpId> still;
    for (OpId id : open) {
      Op& op = graph.op(id);
      if (auto vg = chooseVirtualGraph(graph, op, pinned)) {
        op.placement.virtualGraph = *vg;
        for (int i : modifiedInputs(op)) {
          const size_t k = static_cast<size_t>(i);
          if (k < op.inputs.size() && !op.inputs[k].empty()) pinned.emplace(op.inputs[k], *vg);
        }
        progress = true;
      } else {
        still.push_back(id);
      }
    }
    open = std::move(still);
  }
  for (OpId id : open) graph.op(id).placement.virtualGraph = 0;
}

IpuCopies insertIpuCopies(Graph& graph) {
  IpuCopies report;
  const std::map<TensorId, int64_t> home = homes(graph);
  std::map<std::pair<TensorId, int64_t>, TensorId> copies;
  for (OpId id : graph.schedule()) {
    Op* op = &graph.op(id);  // ops are held by pointer: addOp leaves it valid
    if (isIpuCopy(*op)) continue;
    XT_CHECK(op->placement.hasVirtualGraph(), "{} has no virtual graph", op->describe());
    const int64_t to = op->placement.virtualGraph;
    for (size_t i = 0; i < op->inputs.size(); ++i) {
      const TensorId t = op->inputs[i];
      if (t.empty()) continue;
      const Tensor& tensor = graph.tensor(t);
      int64_t from = to;
      if (tensor.producer >= 0) {
        const Op& p = graph.op(tensor.producer);
        from = isIpuCopy(p) ? p.attrs.getInt(kIpuCopyDestination) : p.placement.virtualGraph;
      } else if (auto h = home.find(t); h != home.end()) {
        from = h->second;
      }
      if (from == to) continue;
      XT_CHECK(!modifies(*op, i), "{} writes '{}' in place on virtual graph {}, which lives on {}",
               op->describe(), t, to, from);
      auto [it, fresh] = copies.emplace(std::make_pair(t, to), TensorId());
      if (fresh) {
        OpSpec spec;
        spec.type = kIpuCopyType;
        spec.domain = kXtrainDomain;
        spec.inputs = {t};
        spec.outputs = {graph.uniqueId(t + "_c" + std::to_string(to))};
        spec.attrs.set(kIpuCopySource, from);
        spec.attrs.set(kIpuCopyDestination, to);
        spec.phase = op->phase;
        spec.placement = op->placement;
        spec.placement.virtualGraph = from;
        spec.name = "ipucopy/" + t + "/" + std::to_string(to);
        it->second = graph.addOp(std::move(spec)).outputs.at(0);
        ++report.copies;
        report.bytes += tensor.info.nbytes();
      }
      replaceInput(graph, *op, i, it->second);
    }
  }
  return report;
}

std::map<TensorId, int64_t> tensorVirtualGraphs(const Graph& graph) {
  std::map<TensorId, int64_t> out = homes(graph);
  for (const auto& [id, t] : graph.tensors()) {
    if (t->producer >= 0) {
      const Op& p = graph.op(t->producer);
      out[id] = isIpuCopy(p) ? p.attrs.getInt(kIpuCopyDestination)
                             : std::max<int64_t>(0, p.placement.virtualGraph);
    } else {
      out.emplace(id, 0);
    }
  }
  return out;
}

int64_t virtualGraphCount(const Graph& graph) {
  int64_t highest = 0;
  for (const auto& [id, op] : graph.ops()) {
    highest = std::max(highest, op->placement.virtualGraph);
    if (isIpuCopy(*op)) highest = std::max(highest, op->attrs.getInt(kIpuCopyDestination));
  }
  return highest + 1;
}

}  // namespace xtrain::ir
