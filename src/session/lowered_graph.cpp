#include "session/lowered_graph.hpp"

#include <functional>

#include "common/check.hpp"

namespace xtrain::session {

LoweredGraph::LoweredGraph(const ir::Graph& graph) : graph_(graph) {
  for (const auto& [id, t] : graph.tensors()) {
    index_[id] = static_cast<int>(tensors_.size());
    tensors_.push_back(id);
  }
  for (OpId opId : graph.schedule()) {
    const ir::Op& op = graph.op(opId);
    device::KernelSpec spec;
    spec.type = op.type;
    spec.domain = op.domain;
    spec.description = op.describe();
    spec.attrs = op.attrs;
    device::Instruction instr;
    for (const auto& in : op.inputs) {
      spec.inputs.push_back(in.empty() ? TensorInfo() : graph.tensor(in).info);
      instr.inputs.push_back(in.empty() ? -1 : index_.at(in));
    }
    for (const auto& out : op.outputs) {
      spec.outputs.push_back(out.empty() ? TensorInfo() : graph.tensor(out).info);
      instr.outputs.push_back(out.empty() ? -1 : index_.at(out));
    }
    instr.kernel = device::KernelRegistry::instance().create(spec);
    instr.description = op.describe();
    instr.seedSalt = std::hash<std::string>{}(op.name + "#" + std::to_string(op.id));
    programs_[static_cast<size_t>(op.phase)].append(std::move(instr));
  }
}

int LoweredGraph::bufferIndex(const TensorId& id) const {
  auto it = index_.find(id);
  if (it == index_.end()) throw error("tensor '{}' has no buffer on the device", id);
  return it->second;
}

std::vector<HostTensor> LoweredGraph::makeBuffers() const {
  std::vector<HostTensor> buffers;
  buffers.reserve(tensors_.size());
  for (const auto& id : tensors_) {
    const ir::Tensor& t = graph_.tensor(id);
    if (t.value) {
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
