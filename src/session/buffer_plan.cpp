#include "session/buffer_plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>

#include "common/env_value.hpp"
#include "ir/op_registry.hpp"
#include "xtrain/error.hpp"

namespace xtrain::session {

namespace {

constexpr uint64_t kAlignment = 64;

uint64_t aligned(uint64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

bool perMicroBatch(ir::Phase phase) {
  return phase == ir::Phase::Forward || phase == ir::Phase::Backward;
}

bool isShapeOnly(const ir::Op& op) {
  return op.domain == ir::kOnnxDomain && (op.type == "Reshape" || op.type == "Flatten" ||
                                          op.type == "Squeeze" || op.type == "Unsqueeze");
}

// A set of tensors sharing one place (a tensor and the shape-only views of it) and the span of
// schedule positions in which any of them is live.
struct Group {
  size_t first = 0;
  size_t last = 0;
  uint64_t bytes = 0;
  int64_t offset = -1;
};

// Where a group goes: the smallest gap between the groups already placed that are live at the same
// time, else above them all.
int64_t bestFit(const Group& g, const std::vector<const Group*>& placed) {
  std::vector<const Group*> overlapping;
  for (const Group* p : placed) {
    if (p->first <= g.last && g.first <= p->last) overlapping.push_back(p);
  }
  std::sort(overlapping.begin(), overlapping.end(),
            [](const Group* a, const Group* b) { return a->offset < b->offset; });
  int64_t best = -1;
  uint64_t bestGap = 0;
  uint64_t end = 0;  // the highest byte used so far by the groups below
  for (const Group* p : overlapping) {
    const auto offset = static_cast<uint64_t>(p->offset);
    if (offset > end && offset - end >= g.bytes && (best < 0 || offset - end < bestGap)) {
      best = static_cast<int64_t>(end);
      bestGap = offset - end;
    }
    end = std::max(end, offset + p->bytes);
  }
  return best >= 0 ? best : static_cast<int64_t>(end);
}

}  // namespace

BufferReuse bufferReuseFromEnvironment() {
  const std::string v = readEnvChoice("XTRAIN_BUFFER_REUSE", {"0", "1", "alias"}).value_or("1");
  if (v == "0") return BufferReuse::Off;
  if (v == "alias") return BufferReuse::AliasOnly;
  return BufferReuse::Full;
}

BufferPlan planBuffers(const ir::Graph& graph, const std::vector<TensorId>& tensors,
                       const std::set<TensorId>& keep, BufferReuse mode,
                       const std::set<TensorId>& channelsLast) {
  BufferPlan plan;
  plan.offsets.assign(tensors.size(), -1);
  if (mode == BufferReuse::Off) return plan;

  const std::vector<OpId> order = graph.schedule();
  std::map<OpId, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  // Tensors an op writes in place have more than one writer: they keep their own buffer.
  std::set<TensorId> modified;
  for (OpId id : order) {
    const ir::Op& op = graph.op(id);
    if (const ir::OpDef* def = ir::OpRegistry::instance().find(op.domain, op.type)) {
      for (int i : def->modifiesInputs) {
        if (op.hasInput(static_cast<size_t>(i))) modified.insert(op.inputs[static_cast<size_t>(i)]);
      }
    }
  }
  std::set<TensorId> io(graph.inputs().begin(), graph.inputs().end());
  io.insert(graph.outputs().begin(), graph.outputs().end());

  // A tensor can be planned when it is written once and read only within one micro-batch's
  // Forward and Backward programs, after it was written, and nothing outside the programs uses it.
  const auto plannable = [&](const ir::Tensor& t) {
    if (t.kind != ir::TensorKind::Activation || t.value || t.producer < 0 || t.consumers.empty())
      return false;
    if (keep.count(t.id) || io.count(t.id) || modified.count(t.id) || t.info.nbytes() <= 0)
      return false;
    const ir::Op& producer = graph.op(t.producer);
    if (!perMicroBatch(producer.phase)) return false;
    const size_t written = position.at(t.producer);
    return std::all_of(t.consumers.begin(), t.consumers.end(), [&](OpId c) {
      return perMicroBatch(graph.op(c).phase) && position.at(c) > written;
    });
  };

  std::map<TensorId, size_t> bufferOf;
  for (size_t b = 0; b < tensors.size(); ++b) bufferOf[tensors[b]] = b;
  // Union-find over buffers: a shape-only op's output joins its input's group.
  std::vector<size_t> parent(tensors.size());
  std::iota(parent.begin(), parent.end(), size_t{0});
  const auto root = [&](size_t b) {
    while (parent[b] != b) b = parent[b] = parent[parent[b]];
    return b;
  };
  std::vector<bool> planned(tensors.size(), false);
  for (size_t b = 0; b < tensors.size(); ++b) planned[b] = plannable(graph.tensor(tensors[b]));
  for (OpId id : order) {
    const ir::Op& op = graph.op(id);
    if (!isShapeOnly(op) || !op.hasInput(0) || !op.hasOutput(0)) continue;
    // A plan of some of the tensors (one IPU's, for the memory model) may hold one side only.
    if (!bufferOf.count(op.inputs[0]) || !bufferOf.count(op.outputs[0])) continue;
    const size_t in = bufferOf.at(op.inputs[0]);
    const size_t out = bufferOf.at(op.outputs[0]);
    const TensorInfo& a = graph.tensor(op.inputs[0]).info;
    const TensorInfo& b = graph.tensor(op.outputs[0]).info;
    if (!planned[in] || !planned[out] || a.dataType() != b.dataType() || a.nbytes() != b.nbytes() ||
        channelsLast.count(op.inputs[0]) || channelsLast.count(op.outputs[0]))
      continue;
    parent[out] = root(in);
    ++plan.aliases;
  }

  std::map<size_t, Group> groups;
  for (size_t b = 0; b < tensors.size(); ++b) {
    if (!planned[b]) continue;
    const ir::Tensor& t = graph.tensor(tensors[b]);
    size_t last = 0;
    for (OpId c : t.consumers) last = std::max(last, position.at(c));
    const size_t first = position.at(t.producer);
    auto [it, fresh] = groups.try_emplace(root(b));
    Group& g = it->second;
    g.first = fresh ? first : std::min(g.first, first);
    g.last = std::max(g.last, last);
    g.bytes = std::max(g.bytes, aligned(static_cast<uint64_t>(t.info.nbytes())));
    plan.plannedBytes += static_cast<uint64_t>(t.info.nbytes());
    ++plan.plannedTensors;
  }
  // Largest first (ties in schedule order, then by buffer: the same plan on every replica).
  std::vector<std::pair<size_t, Group*>> bySize;
  for (auto& [b, g] : groups) bySize.emplace_back(b, &g);
  std::sort(bySize.begin(), bySize.end(), [](const auto& x, const auto& y) {
    if (x.second->bytes != y.second->bytes) return x.second->bytes > y.second->bytes;
    if (x.second->first != y.second->first) return x.second->first < y.second->first;
    return x.first < y.first;
  });
  std::vector<const Group*> placed;
  for (auto& [b, g] : bySize) {
    if (mode == BufferReuse::AliasOnly) {
      g->offset = static_cast<int64_t>(plan.blockBytes);
    } else {
      g->offset = bestFit(*g, placed);
      placed.push_back(g);
    }
    plan.blockBytes = std::max(plan.blockBytes, static_cast<uint64_t>(g->offset) + g->bytes);
  }
  for (size_t b = 0; b < tensors.size(); ++b) {
    if (planned[b]) plan.offsets[b] = groups.at(root(b)).offset;
  }
  return plan;
}

}  // namespace xtrain::session
