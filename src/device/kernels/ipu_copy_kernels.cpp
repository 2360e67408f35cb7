// The kernel of IpuCopy (ai.xtrain; src/ir/ops/ipu_copy_ops.cpp): a byte copy of any fixed-size
// element type. On a simulated device the IPUs of a replica share the host's memory, so the copy
// is a memcpy; the cycle model charges it as IPU-Link traffic (session/cycle_model.hpp).
#include <cstring>

#include "device/kernel.hpp"

namespace xtrain::device {
namespace {

XT_REGISTER_KERNEL("ai.xtrain", "IpuCopy", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  if (dataTypeSize(spec.inputs.at(0).dataType()) == 0) {
    spec.fail("input 0 is {}; expected a tensor of a fixed-size element type",
              spec.inputs.at(0).toString());
  }
  return makeKernel([](const KernelIO& io) {
    const size_t bytes = io.out(0).nbytes();
    if (bytes != 0) std::memcpy(io.out(0).raw(), io.in(0).raw(), bytes);
  });
});

}  // namespace
}  // namespace xtrain::device
