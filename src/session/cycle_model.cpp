#include "session/cycle_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace xtrain::session {
namespace {

int64_t elements(const ir::Graph& graph, const TensorId& id) {
  return id.empty() ? 0 : graph.tensor(id).info.nelms();
}

uint64_t cyclesOf(double work, double perCycle) {
  return static_cast<uint64_t>(std::ceil(work / perCycle));
}

// The length a MatMul-like op sums over: the first input's reduced dimension (its last, or the one
// before when it is transposed), after MatMulT's view of it.
int64_t contractedLength(const ir::Graph& graph, const ir::Op& op) {
  Shape a = graph.tensor(op.inputs.at(0)).info.shape();
  if (op.type == "MatMulT") a = op.attrs.getInts("viewA", a);
  if (a.empty()) return 1;
  const bool transposed = (op.type == "Gemm" || op.type == "MatMulT") &&
                          op.attrs.getInt("transA", 0) != 0 && a.size() >= 2;
  return transposed ? a[a.size() - 2] : a.back();
}

}  // namespace

CycleModel::CycleModel(int tilesPerIpu)
    : tiles_(tilesPerIpu > 0 ? tilesPerIpu : kDefaultTilesPerIpu) {}

bool CycleModel::isDense(const std::string& type) {
  return type == "MatMul" || type == "MatMulT" || type == "Gemm" || type == "Conv" ||
         type == "ConvTranspose" || type == "ConvGradInput" || type == "ConvGradWeight";
}

double CycleModel::flops(const ir::Graph& graph, const ir::Op& op) {
  int64_t largest = 0;
  for (const auto& id : op.inputs) largest = std::max(largest, elements(graph, id));
  for (const auto& id : op.outputs) largest = std::max(largest, elements(graph, id));
  if (!isDense(op.type) || op.inputs.size() < 2 || !op.hasOutput(0)) {
    return static_cast<double>(largest);
  }
  const double out = static_cast<double>(elements(graph, op.outputs[0]));
  if (op.type == "MatMul" || op.type == "MatMulT" || op.type == "Gemm") {
    return 2.0 * out * static_cast<double>(contractedLength(graph, op));
  }
  const double a = static_cast<double>(elements(graph, op.inputs[0]));
  const double b = static_cast<double>(elements(graph, op.inputs[1]));
  return 2.0 * std::sqrt(a * b * out);
}

uint64_t CycleModel::opCycles(const ir::Graph& graph, const ir::Op& op) const {
  if (op.type == "IpuCopy" && op.domain == ir::kXtrainDomain) {
    const auto bytes = static_cast<double>(graph.tensor(op.inputs.at(0)).info.nbytes());
    return kInstructionOverhead + cyclesOf(bytes, kLinkBytesPerCycle);
  }
  double bytes = 0;
  bool half = false;
  for (const auto* ids : {&op.inputs, &op.outputs}) {
    for (const auto& id : *ids) {
      if (id.empty()) continue;
      const TensorInfo& info = graph.tensor(id).info;
      bytes += static_cast<double>(info.nbytes());
      half = half || info.dataType() == DataType::FLOAT16;
    }
  }
  const double perTile = isDense(op.type)
                             ? (half ? kDenseFlopsPerTileHalf : kDenseFlopsPerTileFloat)
                             : (half ? kVectorFlopsPerTileHalf : kVectorFlopsPerTileFloat);
  const uint64_t compute = cyclesOf(flops(graph, op), perTile * tiles_);
  const uint64_t memory = cyclesOf(bytes, kTileBytesPerCycle * tiles_);
  return kInstructionOverhead + std::max(compute, memory);
}

uint64_t CycleModel::collectiveCycles(const std::string& operation, uint64_t bytes,
                                      int64_t groupSize) const {
  if (groupSize <= 1) return 0;
  const double k = static_cast<double>(groupSize);
  const double factor = operation == "all-reduce" ? 2.0 * (k - 1) / k : (k - 1) / k;
  return kCollectiveOverhead + cyclesOf(factor * static_cast<double>(bytes), kLinkBytesPerCycle);
}

uint64_t CycleModel::hostTransferCycles(uint64_t bytes) const {
  return kHostOverhead + cyclesOf(static_cast<double>(bytes), kHostBytesPerCycle);
}

uint64_t CycleModel::remoteTransferCycles(uint64_t bytes) {
  return kRemoteOverhead + cyclesOf(static_cast<double>(bytes), kRemoteBytesPerCycle);
}

uint64_t CycleModel::stashCycles(uint64_t bytes) const {
  return kInstructionOverhead +
         cyclesOf(2.0 * static_cast<double>(bytes), kTileBytesPerCycle * tiles_);
}

uint64_t CycleModel::pipelineCycles(const std::vector<uint64_t>& slotCycles,
                                    const std::vector<int64_t>& slotIpu, int64_t microBatches) {
  const auto slots = static_cast<int64_t>(slotCycles.size());
  uint64_t total = 0;
  std::map<int64_t, uint64_t> busy;
  for (int64_t cycle = 0; cycle < microBatches + slots - 1; ++cycle) {
    busy.clear();
    for (int64_t k = 0; k < slots; ++k) {
      if (cycle - k < 0 || cycle - k >= microBatches) continue;
      busy[slotIpu[static_cast<size_t>(k)]] += slotCycles[static_cast<size_t>(k)];
    }
    uint64_t longest = 0;
    for (const auto& [ipu, c] : busy) longest = std::max(longest, c);
    total += longest;
  }
  return total;
}

}  // namespace xtrain::session
