#include "session/kernel_spec.hpp"

#include "common/check.hpp"
#include "ir/op_registry.hpp"

namespace xtrain::session {

device::KernelSpec kernelSpecOf(const ir::Graph& graph, const ir::Op& op) {
  device::KernelSpec spec;
  spec.type = op.type;
  spec.domain = op.domain;
  spec.description = op.describe();
  spec.attrs = op.attrs;
  if (const ir::OpDef* def = ir::OpRegistry::instance().find(op.domain, op.type)) {
    spec.modifiedInputs = def->modifiesInputs;
  }
  for (const auto& in : op.inputs) {
    spec.inputs.push_back(in.empty() ? TensorInfo() : graph.tensor(in).info);
  }
  for (const auto& out : op.outputs) {
    spec.outputs.push_back(out.empty() ? TensorInfo() : graph.tensor(out).info);
  }
  return spec;
}

std::vector<HostTensor> evaluateConstantOp(const ir::Op& op, const ir::Graph& graph,
                                           const std::vector<const HostTensor*>& inputs) {
  const device::KernelSpec spec = kernelSpecOf(graph, op);
  XT_CHECK_EQ(inputs.size(), spec.inputs.size(), "constant inputs of {}", op.describe());
  const std::unique_ptr<device::Kernel> kernel = device::KernelRegistry::instance().create(spec);
  // Kernels take mutable buffers: they get copies, so a kernel can never write a graph constant.
  std::vector<HostTensor> in;
  in.reserve(inputs.size());
  for (const HostTensor* t : inputs) in.push_back(t ? *t : HostTensor());
  std::vector<HostTensor> out;
  out.reserve(spec.outputs.size());
  for (const TensorInfo& info : spec.outputs)
    out.push_back(info.isSet() ? HostTensor(info) : HostTensor());
  std::vector<HostTensor*> inPtrs;
  std::vector<HostTensor*> outPtrs;
  for (size_t i = 0; i < in.size(); ++i) inPtrs.push_back(inputs[i] ? &in[i] : nullptr);
  for (size_t i = 0; i < out.size(); ++i)
    outPtrs.push_back(spec.outputs[i].isSet() ? &out[i] : nullptr);
  kernel->run(device::KernelIO{inPtrs, outPtrs, 0});
  return out;
}

}  // namespace xtrain::session
