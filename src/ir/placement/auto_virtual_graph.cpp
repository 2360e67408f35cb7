// VirtualGraphMode::Auto (placement.hpp): PopART's AutoVirtualGraph split, rewritten for xtrain's
// IR.
//
// 1. The forward graph is cut into subgraphs: one starts at each reader of a graph input (a
//    stream); an op joins the subgraph of the op that made its inputs, and an op fed by two
//    subgraphs starts a new one (unless the subgraph it was given holds only that op, at no cost
//    yet: it moves).
// 2. Each op has a cost: the bytes of the weights and constants it reads (twice with gradient
//    accumulation, for the accumulator), and in training the bytes of the activations its gradient
//    keeps (its other inputs; PopART's per-op list of the gradient's forward inputs, approximated).
//    Where everything a subgraph has produced so far meets in one op, the subgraph may be split
//    after it; the split is recorded with the subgraph's cost up to it.
// 3. The subgraphs, in order, are dealt to the virtual graphs: virtual graph i gets cost up to
//    (i + 1) / n of the total (or the running sum of virtualGraphSplitRatios); a subgraph that
//    overflows the budget is split at the recorded split closest to it, and the rest goes on.
//    Fewer splits than virtual graphs is PopART's error "[AutoVirtualGraph] Couldn't find enough
//    splits for N IPUs. Only found K".
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "ir/placement/placement.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::ir {

namespace {

struct Subgraph {
  explicit Subgraph(OpId first) : candidates{first} {}

  std::set<OpId> candidates;         // ops expected to join before the next split point
  float cost = 0;                    // the cost of its ops so far
  std::map<float, OpId> splitNodes;  // cost up to a split point -> the op after which to split
  std::set<OpId> finalSplits;        // the split points chosen
  int64_t virtualGraph = 0;
  bool hasBeenSplit = false;

  // Removes and returns the split point whose cost is closest to `cost`, from the first at or
  // above it and the one before.
  std::optional<OpId> bestSplit(float cost) {
    auto lb = splitNodes.lower_bound(cost);
    if (lb == splitNodes.end()) return std::nullopt;
    auto best = lb;
    if (lb != splitNodes.begin()) {
      auto prev = std::prev(lb);
      if (cost - prev->first < lb->first - cost) best = prev;
    }
    const OpId op = best->second;
    splitNodes.erase(best);
    return op;
  }
};

float costOf(const Graph& g, const Op& op, const AutoSplitOptions& options) {
  const float weightFactor = options.gradientAccumulation ? 2.0f : 1.0f;
  float total = 0;
  std::set<TensorId> seen;
  for (const auto& in : op.inputs) {
    if (in.empty() || !seen.insert(in).second) continue;
    const Tensor& t = g.tensor(in);
    const float bytes = static_cast<float>(t.info.nbytes());
    if (t.kind == TensorKind::Variable || t.kind == TensorKind::Const) {
      total += weightFactor * bytes;
    } else if (options.training) {
      total += bytes;
    }
  }
  return total;
}

// Steps 1 and 2: the subgraphs and their split points; returns the total cost.
float buildSubgraphs(const Graph& g, const std::vector<OpId>& schedule,
                     const AutoSplitOptions& options, std::vector<Subgraph>& subgraphs,
                     std::map<OpId, size_t>& subgraphOf) {
  const auto start = [&](OpId op) {
    auto [it, fresh] = subgraphOf.emplace(op, subgraphs.size());
    if (fresh) subgraphs.emplace_back(op);
    return it;
  };
  for (const auto& id : g.inputs()) {
    if (!g.hasTensor(id) || g.tensor(id).kind != TensorKind::Stream) continue;
    for (OpId c : g.tensor(id).consumers) start(c);
  }
  float total = 0;
  for (OpId id : schedule) {
    const Op& op = g.op(id);
    const float cost = costOf(g, op, options);
    total += cost;
    auto found = subgraphOf.find(id);
    if (found == subgraphOf.end()) found = start(id);
    const size_t s = found->second;
    subgraphs[s].cost += cost;
    if (subgraphs[s].candidates.erase(id) && subgraphs[s].candidates.empty()) {
      subgraphs[s].splitNodes.emplace(subgraphs[s].cost, id);
    }
    for (const auto& out : op.outputs) {
      if (out.empty()) continue;
      for (OpId c : g.tensor(out).consumers) {
        auto [it, fresh] = subgraphOf.emplace(c, s);
        if (fresh || it->second == s) {
          if (fresh) subgraphs[s].candidates.insert(c);
          continue;
        }
        Subgraph& other = subgraphs[it->second];
        if (other.candidates.size() == 1 && other.cost == 0.0f) {
          other.candidates.erase(c);  // a lone op at no cost yet: it moves here
          subgraphs[s].candidates.insert(c);
          it->second = s;
        } else {
          it->second = subgraphs.size();
          subgraphs.emplace_back(c);
        }
      }
    }
  }
  return total;
}

void checkRatios(const AutoSplitOptions& o) {
  if (o.splitRatios.empty()) return;
  if (static_cast<int64_t>(o.splitRatios.size()) != o.ipus) {
    throw error(
        "SessionOptions.virtualGraphSplitRatios has {} ratios, but VirtualGraphMode::Auto splits "
        "the model over {} IPUs: the size of virtualGraphSplitRatios must be equal to num_ipus",
        o.splitRatios.size(), o.ipus);
  }
  float sum = 0;
  for (float r : o.splitRatios) sum += r;
  if (std::fabs(sum - 1.0f) > 1e-5f) {
    throw error(
        "Sum of virtualGraphSplitRatios[i] must be equal to 1.0, but found {} "
        "(SessionOptions.virtualGraphSplitRatios {})",
        sum, o.splitRatios);
  }
}

// Step 3: deals the subgraphs to the virtual graphs; returns the last virtual graph used.
int64_t dealSubgraphs(std::vector<Subgraph>& subgraphs, float total, const AutoSplitOptions& o) {
  float assigned = 0, ratioSum = 0;
  int64_t vg = 0;
  size_t s = 0;
  for (int64_t i = 1; i <= o.ipus; ++i) {
    float ratio = static_cast<float>(i) / static_cast<float>(o.ipus);
    if (!o.splitRatios.empty()) ratio = ratioSum + o.splitRatios[static_cast<size_t>(i - 1)];
    ratioSum = ratio;
    const float budget = ratio * total;
    const bool last = i == o.ipus;
    while (s < subgraphs.size()) {
      Subgraph& sg = subgraphs[s];
      // A subgraph at no cost always stays on the current virtual graph.
      const bool over = sg.cost + assigned > budget && sg.cost > 0;
      bool splitAtEnd = sg.cost + assigned - budget == 0.0f;
      if (over && !last) {
        if (auto split = sg.bestSplit(budget - assigned)) {
          sg.finalSplits.insert(*split);
          if (!sg.hasBeenSplit) sg.virtualGraph = vg;
          sg.hasBeenSplit = true;
          ++vg;
          break;
        }
        splitAtEnd = true;
      }
      assigned += sg.cost;
      ++s;
      if (!sg.hasBeenSplit) sg.virtualGraph = vg;
      if (splitAtEnd && !last && s != subgraphs.size()) {
        ++vg;
        break;
      }
    }
  }
  return vg;
}

}  // namespace

void autoVirtualGraph(Graph& graph, const AutoSplitOptions& options) {
  if (graph.ops().empty()) return;
  logging::transform::info("[AutoVirtualGraph] Auto virtual graph with {} IPUs", options.ipus);
  if (options.ipus <= 1) {
    for (const auto& [id, op] : graph.ops()) op->placement.virtualGraph = 0;
    return;
  }
  checkRatios(options);
  const std::vector<OpId> schedule = graph.schedule();
  std::vector<Subgraph> subgraphs;
  std::map<OpId, size_t> subgraphOf;
  const float total = buildSubgraphs(graph, schedule, options, subgraphs, subgraphOf);
  const int64_t last = dealSubgraphs(subgraphs, total, options);
  if (last != options.ipus - 1) {
    throw error(
        "[AutoVirtualGraph] Couldn't find enough splits for {} IPUs. Only found {} (the model "
        "has too few places where it can be cut: use fewer IPUs per replica, or place its ops "
        "with VirtualGraphMode::Manual)",
        options.ipus, last);
  }
  for (OpId id : schedule) {
    Subgraph& sg = subgraphs[subgraphOf.at(id)];
    graph.op(id).placement.virtualGraph = sg.virtualGraph;
    if (sg.finalSplits.erase(id)) ++sg.virtualGraph;  // the split op ends its virtual graph
  }
}

}  // namespace xtrain::ir
