#include "ir/recompute/recompute.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ir/op_registry.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::ir {

namespace {

bool isNorm(const Op& op) {
  static const std::set<std::string> norms = {"BatchNormalization", "LayerNormalization",
                                              "GroupNormalization", "InstanceNormalization"};
  return norms.count(op.type) != 0;
}

// The elementwise non-linearities PopART's NormOnly recomputes when they follow a norm.
bool isNonLinearity(const Op& op) {
  static const std::set<std::string> fns = {
      "Relu", "Gelu",     "Sigmoid",  "Tanh", "LeakyRelu", "Elu",         "Selu",
      "Celu", "Softplus", "Softsign", "Mish", "HardSwish", "HardSigmoid", "Erf"};
  return fns.count(op.type) != 0 && op.inputs.size() == 1;
}

// The forward ops the loss depends on, in schedule order.
std::vector<OpId> forwardOpsToLoss(const Graph& g, const TensorId& loss) {
  std::set<OpId> toLoss;
  std::vector<TensorId> work = {loss};
  while (!work.empty()) {
    const Tensor& t = g.tensor(work.back());
    work.pop_back();
    if (t.producer < 0 || g.op(t.producer).phase != Phase::Forward) continue;
    if (!toLoss.insert(t.producer).second) continue;
    for (const auto& in : g.op(t.producer).inputs) {
      if (!in.empty()) work.push_back(in);
    }
  }
  std::vector<OpId> ordered;
  for (OpId id : g.schedule()) {
    if (toLoss.count(id)) ordered.push_back(id);
  }
  return ordered;
}

int64_t outputBytes(const Graph& g, const Op& op) {
  int64_t bytes = 0;
  for (const auto& out : op.outputs) {
    if (!out.empty()) bytes += g.tensor(out).info.nbytes();
  }
  return bytes;
}

// [begin, end) intervals over n positions, longest first: K, K-1, ..., 1, then ones, with K about
// 0.75 (sqrt(2n) - 1) (PopART's choice: a little fewer checkpoints than the sqrt(n) optimum, which
// costs little memory and saves recomputation). Early layers, where CNNs keep most, get the long
// intervals.
std::vector<std::pair<size_t, size_t>> decreasingIntervals(size_t n) {
  const auto root = static_cast<int64_t>(std::sqrt(2.0 * static_cast<double>(n)));
  int64_t k = static_cast<int64_t>(static_cast<double>(root - 1) * 0.75);
  std::vector<std::pair<size_t, size_t>> intervals;
  size_t begin = 0;
  while (k > 0 && begin + static_cast<size_t>(k) <= n) {
    intervals.emplace_back(begin, begin + static_cast<size_t>(k));
    begin += static_cast<size_t>(k);
    --k;
  }
  for (; begin < n; ++begin) intervals.emplace_back(begin, begin + 1);
  return intervals;
}

// Standard: after each forward op, the ops whose outputs later forward ops still await (the op
// itself included) are live; each interval's cheapest live set is kept (checkpoints), the rest is
// recomputed.
std::set<OpId> standardChoice(const Graph& g, const std::vector<OpId>& fwd) {
  const std::set<OpId> inFwd(fwd.begin(), fwd.end());
  std::map<OpId, int> awaited;  // forward readers of the op's outputs not run yet
  for (OpId id : fwd) {
    for (const auto& out : g.op(id).outputs) {
      if (out.empty()) continue;
      std::set<OpId> readers;
      for (OpId c : g.tensor(out).consumers) {
        if (inFwd.count(c)) readers.insert(c);
      }
      awaited[id] += static_cast<int>(readers.size());
    }
  }
  std::vector<std::set<OpId>> liveSets;
  std::vector<int64_t> liveBytes;
  std::set<OpId> live;
  for (OpId id : fwd) {
    std::set<OpId> producers;
    for (const auto& in : g.op(id).inputs) {
      if (in.empty()) continue;
      const OpId p = g.tensor(in).producer;
      if (inFwd.count(p)) producers.insert(p);
    }
    for (OpId p : producers) {
      // One count per (reader, output): an op reading two outputs of p counted twice above.
      for (const auto& out : g.op(p).outputs) {
        if (out.empty()) continue;
        const auto& ins = g.op(id).inputs;
        if (std::find(ins.begin(), ins.end(), out) != ins.end() && --awaited[p] == 0) {
          live.erase(p);
        }
      }
    }
    live.insert(id);
    liveSets.push_back(live);
    int64_t bytes = 0;
    for (OpId l : live) bytes += outputBytes(g, g.op(l));
    liveBytes.push_back(bytes);
  }
  std::set<OpId> checkpoints;
  for (const auto& [begin, end] : decreasingIntervals(fwd.size())) {
    size_t best = begin;
    for (size_t i = begin; i < end; ++i) {
      if (liveBytes[i] < liveBytes[best]) best = i;
    }
    checkpoints.insert(liveSets[best].begin(), liveSets[best].end());
  }
  std::set<OpId> chosen;
  for (OpId id : fwd) {
    if (!checkpoints.count(id)) chosen.insert(id);
  }
  return chosen;
}

std::set<OpId> normOnlyChoice(const Graph& g, const std::vector<OpId>& fwd) {
  std::set<OpId> chosen;
  for (OpId id : fwd) {
    const Op& op = g.op(id);
    if (isNorm(op)) {
      chosen.insert(id);
    } else if (isNonLinearity(op)) {
      const OpId p = g.tensor(op.inputs[0]).producer;
      if (p >= 0 && chosen.count(p)) chosen.insert(id);
    }
  }
  return chosen;
}

// Makes `reader`'s inputs that are `from` read `to` instead.
void redirect(Graph& g, OpId reader, const TensorId& from, const TensorId& to) {
  Op& op = g.op(reader);
  auto& consumers = g.tensor(from).consumers;
  for (auto& in : op.inputs) {
    if (in != from) continue;
    in = to;
    consumers.erase(std::find(consumers.begin(), consumers.end(), reader));
    g.tensor(to).consumers.push_back(reader);
  }
}

}  // namespace

RecomputeType takeRecomputeType(Attributes& attrs, const std::string& label) {
  if (!attrs.has(kRecomputeAttribute)) return RecomputeType::Undefined;
  const AttrValue& v = attrs.all().at(kRecomputeAttribute);
  const int64_t value = std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v) : -1;
  if (value < 0 || value > static_cast<int64_t>(RecomputeType::Recompute)) {
    throw error(
        "{}: attribute '{}' must be an INT of 0 (Undefined), 1 (Checkpoint) or 2 (Recompute), "
        "the values PopART's Builder writes",
        label, kRecomputeAttribute);
  }
  attrs.erase(kRecomputeAttribute);
  return static_cast<RecomputeType>(value);
}

bool canRecompute(const Op& op) {
  if (op.phase != Phase::Forward || op.outputs.empty() || op.recomputes >= 0) return false;
  const bool builtIn =
      op.domain == kOnnxDomain || op.domain == kGraphcoreDomain || op.domain == kXtrainDomain;
  if (!builtIn) return false;  // a custom op: its kernel may keep state or have effects
  if (op.domain == kGraphcoreDomain &&
      (op.type.rfind("Replicated", 0) == 0 || op.type == "Abort" || op.type == "PrintTensor")) {
    return false;  // collectives meet other replicas; Abort and PrintTensor act on the world
  }
  const OpDef* def = OpRegistry::instance().find(op.domain, op.type);
  return def != nullptr && def->modifiesInputs.empty();
}

RecomputeReport recompute(Graph& g, RecomputationType mode, const TensorId& loss,
                          const std::set<TensorId>& keep) {
  RecomputeReport report;
  const auto marked = [&](OpId id, RecomputeType t) { return g.op(id).recomputeType == t; };
  std::vector<OpId> manual;
  for (const auto& [id, op] : g.ops()) {
    if (op->phase == Phase::Forward && op->recomputeType == RecomputeType::Recompute) {
      manual.push_back(id);
    }
  }
  if (mode != RecomputationType::None && !manual.empty()) {
    // PopART's words alone (its programs compare them); the culprit goes to the log.
    logging::ir::err(
        "{} is marked Recompute (Builder::recomputeOutputInBackwardPass) while "
        "SessionOptions.autoRecomputation chooses the ops; use autoRecomputation = None with the "
        "marks, or remove them",
        g.op(manual.front()).describe());
    throw error("A mixture of auto and manual recomputation is not supported");
  }
  if (mode == RecomputationType::None && manual.empty()) return report;
  const std::vector<OpId> fwd = forwardOpsToLoss(g, loss);
  std::set<OpId> chosen;
  switch (mode) {
    case RecomputationType::None: chosen.insert(manual.begin(), manual.end()); break;
    case RecomputationType::Standard: chosen = standardChoice(g, fwd); break;
    case RecomputationType::NormOnly: chosen = normOnlyChoice(g, fwd); break;
    case RecomputationType::RecomputeAll:
    case RecomputationType::Pipeline: chosen.insert(fwd.begin(), fwd.end()); break;
    default: break;
  }
  std::set<TensorId> outputs(g.outputs().begin(), g.outputs().end());
  std::erase_if(chosen, [&](OpId id) {
    const Op& op = g.op(id);
    if (!canRecompute(op) || marked(id, RecomputeType::Checkpoint)) return true;
    return std::any_of(op.outputs.begin(), op.outputs.end(), [&](const TensorId& out) {
      return keep.count(out) != 0 || outputs.count(out) != 0;
    });
  });
  report.candidates = static_cast<int>(chosen.size());

  // Which chosen ops to clone: those with a Backward reader, or read by another clone (decided
  // first, since readers come later in the schedule).
  std::set<OpId> cloned;
  for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
    if (!chosen.count(*it)) continue;
    for (const auto& out : g.op(*it).outputs) {
      if (out.empty()) continue;
      for (OpId c : g.tensor(out).consumers) {
        const bool sameStage = mode != RecomputationType::Pipeline ||
                               g.op(c).placement.pipelineStage ==
                                   g.op(*it).placement.pipelineStage;
        if ((g.op(c).phase == Phase::Backward || cloned.count(c)) && sameStage) {
          cloned.insert(*it);
        }
      }
    }
  }
  // Clones in forward order, so that a clone's cloned producers exist.
  std::map<TensorId, TensorId> cloneOf;
  for (OpId id : fwd) {
    if (!cloned.count(id)) continue;
    const Op original = g.op(id);  // a copy: addOp may rehash the op map
    OpSpec spec;
    spec.type = original.type;
    spec.domain = original.domain;
    spec.attrs = original.attrs;
    spec.opset = original.opset;
    spec.placement = original.placement;
    spec.phase = Phase::Backward;
    spec.name = "recompute/" + (original.name.empty() ? original.type : original.name);
    for (const auto& in : original.inputs) {
      auto c = cloneOf.find(in);
      // Pipeline: a stage recomputes from its own inputs (stashed), never from another stage's
      // recomputation, which runs in another pipeline slot.
      const bool sameStage = c != cloneOf.end() &&
                             (mode != RecomputationType::Pipeline ||
                              g.op(g.tensor(in).producer).placement.pipelineStage ==
                                  original.placement.pipelineStage);
      spec.inputs.push_back(sameStage ? c->second : in);
    }
    for (const auto& out : original.outputs) {
      spec.outputs.push_back(out.empty() ? TensorId() : g.uniqueId(out + "/recompute"));
    }
    Op& clone = g.addOp(std::move(spec));
    clone.recomputes = id;
    for (size_t i = 0; i < original.outputs.size(); ++i) {
      if (!original.outputs[i].empty()) cloneOf[original.outputs[i]] = clone.outputs[i];
    }
    ++report.cloned;
  }
  // Backward readers of the originals read the clones.
  for (const auto& [from, to] : cloneOf) {
    const std::vector<OpId> readers = g.tensor(from).consumers;
    for (OpId r : std::set<OpId>(readers.begin(), readers.end())) {
      const Op& reader = g.op(r);
      // Pipeline: only the original's own stage reads the recomputation (another stage's
      // backward runs in another slot, and reads the stashed original).
      const bool sameStage = mode != RecomputationType::Pipeline ||
                             reader.placement.pipelineStage ==
                                 g.op(g.tensor(from).producer).placement.pipelineStage;
      if (reader.phase == Phase::Backward && reader.recomputes < 0 && sameStage) {
        redirect(g, r, from, to);
      }
    }
  }
  return report;
}

}  // namespace xtrain::ir
