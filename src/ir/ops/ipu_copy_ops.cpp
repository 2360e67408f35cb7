// IpuCopy (ai.xtrain): the copy of a tensor from one virtual graph (IPU) of a replica to another,
// which ir/placement inserts where an op reads a tensor living on another IPU (PopART's IpuCopyOp,
// docs/model-parallelism.md). Attributes sourceIpu and destIpu (ints); the output is the input.
// It is added after autodiff, so it has no gradient.
#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

XT_REGISTER_OP([] {
  OpDef d{.type = "IpuCopy", .domain = kXtrainDomain};
  d.infer = [](const ShapeContext& ctx) {
    for (const char* a : {"sourceIpu", "destIpu"}) {
      if (ctx.attrs().getInt(a, -1) < 0)
        ctx.fail("attribute '{}' (an IPU index >= 0) is required", a);
    }
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
