// PopART's ai.graphcore bitwise ops on integer tensors: BitwiseNot(X), and BitwiseAnd, BitwiseOr,
// BitwiseXor, BitwiseXnor(X, Y) with numpy broadcasting. The output has the inputs' type. PopART
// defines them for INT32 and UINT32; the bits of any integer type (INT8 to UINT64) are handled the
// same way, so xtrain accepts them all. Like PopART's, they have no gradient.
#include <string>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

void requireIntegerInput(const ShapeContext& ctx, size_t i) {
  const TensorInfo& in = ctx.input(i);
  if (!isInteger(in.dataType())) {
    ctx.fail(
        "input {} is {}, expected an integer tensor (INT32 or UINT32, or another integer type)", i,
        in.toString());
  }
}

XT_REGISTER_OP([] {
  OpDef d{.type = "BitwiseNot", .domain = kGraphcoreDomain};
  d.infer = [](const ShapeContext& ctx) {
    requireIntegerInput(ctx, 0);
    return std::vector<TensorInfo>{ctx.input(0)};
  };
  return d;
}());

OpDef bitwiseBinary(const std::string& type) {
  OpDef d{.type = type, .domain = kGraphcoreDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = [](const ShapeContext& ctx) {
    requireIntegerInput(ctx, 0);
    requireIntegerInput(ctx, 1);
    const TensorInfo& a = ctx.input(0);
    const TensorInfo& b = ctx.input(1);
    if (a.dataType() != b.dataType()) {
      ctx.fail("inputs are {} and {}; expected one element type", a.toString(), b.toString());
    }
    return std::vector<TensorInfo>{
        TensorInfo(a.dataType(), broadcastShapes(ctx, a.shape(), b.shape()))};
  };
  return d;
}

XT_REGISTER_OP(bitwiseBinary("BitwiseAnd"));
XT_REGISTER_OP(bitwiseBinary("BitwiseOr"));
XT_REGISTER_OP(bitwiseBinary("BitwiseXor"));
XT_REGISTER_OP(bitwiseBinary("BitwiseXnor"));

}  // namespace
}  // namespace xtrain::ir
