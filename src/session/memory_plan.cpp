// The session's memory accounting: what each replica keeps on its simulated IPU, charged to the
// device's memory model by tensor class. Activations are charged as the session allocates them: the
// buffer plan's block (session/buffer_plan.hpp) plus, of the activations kept out of it, those live
// at the schedule's peak (a real IPU compiler reuses activation memory the same way). With
// XTRAIN_BUFFER_REUSE=0, every activation live at the peak.
#include <filesystem>
#include <set>

#include "common/output_file.hpp"
#include "device/ipu/memory_model.hpp"
#include "session/buffer_plan.hpp"
#include "session/session_impl.hpp"

namespace xtrain::session {

namespace {

std::optional<device::TensorClass> classOf(ir::TensorKind kind) {
  switch (kind) {
    case ir::TensorKind::Variable: return device::TensorClass::Weights;
    case ir::TensorKind::OptimizerState: return device::TensorClass::OptimizerState;
    case ir::TensorKind::Accumulator: return device::TensorClass::Accumulators;
    case ir::TensorKind::Stream: return device::TensorClass::Streams;
    case ir::TensorKind::Const: return device::TensorClass::Other;
    case ir::TensorKind::Activation: return std::nullopt;
  }
  return std::nullopt;
}

// The activations live at the schedule's peak (by bytes).
std::vector<const ir::Tensor*> peakActivations(const ir::Graph& graph) {
  const std::vector<OpId> order = graph.schedule();
  std::map<OpId, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  // Last use of each activation (its producer's position when nothing reads it).
  std::map<TensorId, size_t> lastUse;
  for (const auto& [id, t] : graph.tensors()) {
    if (t->kind != ir::TensorKind::Activation || t->producer < 0) continue;
    size_t last = position.at(t->producer);
    for (OpId c : t->consumers) last = std::max(last, position.at(c));
    lastUse[id] = last;
  }
  std::set<const ir::Tensor*> live;
  std::vector<const ir::Tensor*> peak;
  int64_t liveBytes = 0, peakBytes = -1;
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Op& op = graph.op(order[i]);
    for (const auto& out : op.outputs) {
      if (out.empty()) continue;
      const ir::Tensor& t = graph.tensor(out);
      if (live.insert(&t).second) liveBytes += t.info.nbytes();
    }
    if (liveBytes > peakBytes) {
      peakBytes = liveBytes;
      peak.assign(live.begin(), live.end());
    }
    for (auto it = live.begin(); it != live.end();) {
      if (lastUse.at((*it)->id) <= i) {
        liveBytes -= (*it)->info.nbytes();
        it = live.erase(it);
      } else {
        ++it;
      }
    }
  }
  return peak;
}

}  // namespace

void SessionImpl::computeMemory() {
  device::MemoryModel model = device::MemoryModel::forDevice(*config_.device);
  const int ipusPerReplica =
      std::max(1, model.numIpus() / static_cast<int>(std::max<int64_t>(1, localReplicas_)));
  std::vector<const ir::Tensor*> peak = peakActivations(*graph_);
  std::vector<TensorId> ids;
  for (const auto& [id, t] : graph_->tensors()) ids.push_back(id);
  const auto& anchors = config_.dataFlow.anchors();
  const BufferPlan plan =
      planBuffers(*graph_, ids, std::set<TensorId>(anchors.begin(), anchors.end()),
                  bufferReuseFromEnvironment());
  std::set<TensorId> planned;
  for (size_t b = 0; b < ids.size(); ++b) {
    if (plan.shared(b)) planned.insert(ids[b]);
  }
  std::erase_if(peak, [&](const ir::Tensor* t) { return planned.count(t->id) != 0; });
  for (int64_t r = 0; r < localReplicas_; ++r) {
    const int ipu = static_cast<int>(r) * ipusPerReplica;
    if (ipu >= model.numIpus()) break;
    for (const auto& [id, t] : graph_->tensors()) {
      auto shard = shards_.find(id);
      if (shard != shards_.end() && shard->second.weightStored) {
        // A weight kept as a shard: its shard resides, the whole weight is gathered into a
        // temporary before use (charged with the activations).
        model.add(ipu, device::TensorClass::Weights, id + " (shard)",
                  static_cast<uint64_t>(shard->second.shard) * sizeof(float));
        model.add(ipu, device::TensorClass::Activations, id + " (gathered)",
                  static_cast<uint64_t>(t->info.nbytes()));
      } else if (auto cls = classOf(t->kind)) {
        model.add(ipu, *cls, id, static_cast<uint64_t>(t->info.nbytes()));
      }
    }
    if (plan.blockBytes > 0) {
      model.add(ipu, device::TensorClass::Activations,
                format("buffer plan: {} activations in one block", plan.plannedTensors),
                plan.blockBytes);
    }
    for (const ir::Tensor* t : peak) {
      model.add(ipu, device::TensorClass::Activations, t->id,
                static_cast<uint64_t>(t->info.nbytes()));
    }
  }
  memoryModel_ = model;
  // SessionOptions::logDir: the report is also written there (before the check, so an overflow
  // leaves it).
  if (!config_.options.logDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(config_.options.logDir, ec);
    const std::string path = config_.options.logDir + "/memory-report.txt";
    // logDir may be shared: its fixed names are replaced, never written through.
    replaceOwnFile(path, summaryReport(), "SessionOptions::logDir");
  }
  model.check();
}

}  // namespace xtrain::session
