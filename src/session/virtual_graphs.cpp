#include "session/virtual_graphs.hpp"

#include <algorithm>
#include <vector>

#include "session/pipeline_plan.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

int64_t ipusPerReplica(const DeviceInfo& device, int64_t localReplicas) {
  if (device.getType() == DeviceType::Cpu) return 1;
  return std::max<int64_t>(1, device.getNumIpus() / std::max<int64_t>(1, localReplicas));
}

int64_t placeForwardGraph(ir::Graph& graph, const SessionConfig& config, int64_t localReplicas) {
  const SessionOptions& o = config.options;
  if (o.enablePipelining && o.virtualGraphMode == VirtualGraphMode::Off) {
    checkPipelineOptions(config, 0, 0);  // names virtualGraphMode
  }
  switch (o.virtualGraphMode) {
    case VirtualGraphMode::Off: {
      if (const int64_t had = ir::clearVirtualGraphs(graph); had > 0) {
        logging::session::debug(
            "virtualGraphMode is Off: the virtual graph and pipeline stage annotations of {} ops "
            "are ignored, as in PopART",
            had);
      }
      return 0;
    }
    case VirtualGraphMode::Manual: ir::checkManualPlacement(graph); break;
    case VirtualGraphMode::Auto: {
      ir::AutoSplitOptions split;
      split.ipus = ipusPerReplica(*config.device, localReplicas);
      split.splitRatios = o.virtualGraphSplitRatios;
      split.training = config.training;
      split.gradientAccumulation = o.enableGradientAccumulation;
      ir::autoVirtualGraph(graph, split);
      break;
    }
    case VirtualGraphMode::ExecutionPhases:
      throw error(
          "SessionOptions.virtualGraphMode = ExecutionPhases is not supported yet: phased "
          "execution is not implemented in xtrain; use VirtualGraphMode::Manual or Auto "
          "(docs/model-parallelism.md)");
  }
  if (o.enablePipelining) {
    const int64_t stages = ir::assignPipelineStages(graph);
    checkPipelineOptions(config, stages, ir::virtualGraphCount(graph));
    logging::session::info("pipelining: {} stages over {} virtual graphs", stages,
                           ir::virtualGraphCount(graph));
    return stages;
  }
  // Without pipelining a pipeline stage means nothing (PopART drops it too).
  for (const auto& [id, op] : graph.ops()) op->placement.pipelineStage = ir::Placement::kNone;
  return 0;
}

ir::IpuCopies placeTrainingGraph(ir::Graph& graph, const SessionConfig& config,
                                 const ir::OptimizerGraph& updates) {
  if (config.options.virtualGraphMode == VirtualGraphMode::Off) return {};
  // A weight and everything its update touches live on one IPU: the session writes some of them
  // between the phases (the reduced gradient, hyperparameters, shards), so no copy of them may be
  // taken before it does.
  std::vector<std::vector<TensorId>> families;
  for (const auto& u : updates.updates) {
    std::vector<TensorId> f{u.weight,    u.accumulator, u.reduced,  u.hyper,
                            u.lambNorms, u.weightShard, u.gradShard};
    for (const auto& s : u.state) f.push_back(s.id);
    families.push_back(std::move(f));
  }
  ir::completePlacement(graph, families);
  const ir::IpuCopies copies = ir::insertIpuCopies(graph);
  logging::session::info(
      "virtual graphs: {} IPUs per replica used, {} IpuCopy ops ({} bytes per micro-batch and "
      "step)",
      ir::virtualGraphCount(graph), copies.copies, copies.bytes);
  return copies;
}

void checkVirtualGraphs(const ir::Graph& graph, const SessionConfig& config,
                        int64_t localReplicas) {
  if (config.options.virtualGraphMode == VirtualGraphMode::Off) return;
  const DeviceInfo& device = *config.device;
  const int64_t ipus = ipusPerReplica(device, localReplicas);
  for (OpId id : graph.schedule()) {
    const ir::Op& op = graph.op(id);
    const int64_t vg = op.placement.virtualGraph;
    if (vg >= 0 && vg < ipus) continue;
    const int64_t needed = ir::virtualGraphCount(graph);
    throw error(
        "{} has been assigned to an invalid virtual graph {}. numIPUs = {}. A replica of this "
        "session has {} IPU{} (the device's {} IPU{} over {} local replica{}); the model uses "
        "virtual graphs 0 to {}: acquire a device of {} IPUs ({} x {})",
        ir::describeWithTensors(op), vg, ipus, ipus, ipus == 1 ? "" : "s",
        device.getType() == DeviceType::Cpu ? 1 : device.getNumIpus(),
        device.getType() == DeviceType::Cpu || device.getNumIpus() == 1 ? "" : "s", localReplicas,
        localReplicas == 1 ? "" : "s", needed - 1, localReplicas * needed, localReplicas, needed);
  }
}

}  // namespace xtrain::session
