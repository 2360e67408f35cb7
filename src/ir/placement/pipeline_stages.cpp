// Pipeline stages of a forward graph (pipeline_stages.hpp).
#include "ir/placement/pipeline_stages.hpp"

#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "ir/placement/placement.hpp"
#include "xtrain/error.hpp"

namespace xtrain::ir {

namespace {

// PopART's "Only some ops have had their pipeline stage set" with every op that has none.
void refuseMixedStages(const Graph& graph, const std::vector<const Op*>& unstaged) {
  std::ostringstream m;
  m << "Only some ops have had their pipeline stage set. Ops missing the pipeline stage:";
  for (const Op* op : unstaged) m << "\n  " << describeWithTensors(*op);
  m << "\nGive every op a pipeline stage (Builder::pipelineStage or its scope), or none, so that "
       "each op's stage is its virtual graph ("
    << graph.ops().size() - unstaged.size() << " of " << graph.ops().size() << " ops have one)";
  throw error("{}", m.str());
}

// Every op of a stage on one virtual graph (PopART's rule: a stage runs on one IPU).
void checkOneVirtualGraphPerStage(const Graph& graph) {
  std::map<int64_t, std::map<int64_t, std::vector<std::string>>> perStage;
  for (const auto& [id, op] : graph.ops()) {
    perStage[op->placement.pipelineStage][op->placement.virtualGraph].push_back(op->describe());
  }
  for (const auto& [stage, graphs] : perStage) {
    if (graphs.size() < 2) continue;
    std::ostringstream names;
    std::ostringstream ids;
    std::ostringstream where;
    for (const auto& [vg, ops] : graphs) {
      ids << (ids.tellp() > 0 ? ", " : "") << vg;
      for (const auto& n : ops) {
        names << (names.tellp() > 0 ? ", " : "") << n;
        where << "\n  " << n << " on virtual graph " << vg;
      }
    }
    throw error(
        "Ops [{}] have the same pipeline stage {}, but different virtual graph ids [{}]. All ops "
        "with the same pipeline stage must also have the same virtual graph id:{}",
        names.str(), stage, ids.str(), where.str());
  }
}

// The stages in use are 0..N-1 (PopART's rule); returns N.
int64_t checkContiguous(const Graph& graph) {
  std::set<int64_t> stages;
  for (const auto& [id, op] : graph.ops()) stages.insert(op->placement.pipelineStage);
  const auto n = static_cast<int64_t>(stages.size());
  for (int64_t s = 0; s < n; ++s) {
    if (stages.count(s) == 0) {
      throw error(
          "The set of pipeline stages for all Ops contains {} stages, but stage {} is missing "
          "(number the stages 0 to {})",
          n, s, n - 1);
    }
  }
  return n;
}

// No op reads what a later stage makes: the stages run in order, each micro-batch flowing from
// stage 0 to stage N-1, so data may only flow forward.
void checkDataFlow(const Graph& graph) {
  for (OpId id : graph.schedule()) {
    const Op& op = graph.op(id);
    for (const auto& in : op.inputs) {
      if (in.empty()) continue;
      const Tensor& t = graph.tensor(in);
      if (t.producer < 0) continue;
      const Op& from = graph.op(t.producer);
      if (from.placement.pipelineStage <= op.placement.pipelineStage) continue;
      throw error(
          "{} in pipeline stage {} reads '{}', made by {} in the later pipeline stage {}: a "
          "stage may read only what its own or an earlier stage makes (a later stage feeding an "
          "earlier one); put {} in stage {} or later, or {} in stage {} or earlier",
          describeWithTensors(op), op.placement.pipelineStage, in, from.describe(),
          from.placement.pipelineStage, op.describe(), from.placement.pipelineStage,
          from.describe(), op.placement.pipelineStage);
    }
  }
}

// Consecutive stages on one virtual graph become one stage (PopART's merge): they would run one
// after the other on that IPU anyway, and a merged pipeline needs fewer micro-batches to fill.
int64_t mergeConsecutiveStages(Graph& graph, int64_t stages) {
  std::map<int64_t, int64_t> graphOf;
  for (const auto& [id, op] : graph.ops()) {
    graphOf[op->placement.pipelineStage] = op->placement.virtualGraph;
  }
  std::map<int64_t, int64_t> merged;
  int64_t next = 0;
  for (int64_t s = 0; s < stages; ++s) {
    if (s > 0 && graphOf.at(s) != graphOf.at(s - 1)) ++next;
    merged[s] = next;
  }
  for (const auto& [id, op] : graph.ops()) {
    op->placement.pipelineStage = merged.at(op->placement.pipelineStage);
  }
  return next + 1;
}

}  // namespace

int64_t assignPipelineStages(Graph& graph) {
  std::vector<const Op*> unstaged;
  for (const auto& [id, op] : graph.ops()) {
    if (op->placement.pipelineStage == Placement::kNone) unstaged.push_back(op.get());
  }
  if (unstaged.size() == graph.ops().size()) {
    // PopART: with no stage set, an op's stage is its virtual graph.
    for (const auto& [id, op] : graph.ops()) {
      op->placement.pipelineStage = op->placement.virtualGraph;
    }
  } else if (!unstaged.empty()) {
    refuseMixedStages(graph, unstaged);
  }
  checkOneVirtualGraphPerStage(graph);
  const int64_t n = checkContiguous(graph);
  checkDataFlow(graph);
  return mergeConsecutiveStages(graph, n);
}

}  // namespace xtrain::ir
