// PopART's ai.graphcore SequenceSlice(source, destination, N, sourceOffset, destinationOffset)
// with attribute zeroUnused (default 0): a copy of destination in which, for every entry i,
//   out[destinationOffset[i] : destinationOffset[i] + N[i]] = source[sourceOffset[i] : ... + N[i]]
// along the outer dimension. source and destination have rank >= 2, one element type, and the
// same number of elements per outer row (their inner shapes may differ); N and the offsets are
// 1-D integer tensors (INT32, UINT32 or INT64) of one length. zeroUnused 1 zeroes the rows of
// the output no entry writes. A row range outside source or destination is a runtime error naming
// the op and the entry. PopART lets entries after the first N = 0 be ignored; here every entry is
// applied, which is one of the results it allows.
//
// No gradient: PopART's SequenceSlice has no grad ops (it serves packed-sequence bookkeeping).
// Autodiff refuses a trainable path through it rather than silently dropping the gradient.
#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

int64_t innerElements(const Shape& s) {
  int64_t n = 1;
  for (size_t i = 1; i < s.size(); ++i) n *= s[i];
  return n;
}

XT_REGISTER_OP([] {
  OpDef d{.type = "SequenceSlice", .domain = kGraphcoreDomain, .minInputs = 5, .maxInputs = 5};
  d.infer = [](const ShapeContext& ctx) {
    const TensorInfo& src = ctx.input(0);
    const TensorInfo& dst = ctx.input(1);
    if (src.rank() < 2 || dst.rank() < 2) {
      ctx.fail("input 0 (source) {} and input 1 (destination) {} must have rank >= 2",
               src.toString(), dst.toString());
    }
    if (src.dataType() != dst.dataType() ||
        innerElements(src.shape()) != innerElements(dst.shape())) {
      ctx.fail(
          "input 0 (source) {} and input 1 (destination) {} must have one element type and as "
          "many elements per outer row",
          src.toString(), dst.toString());
    }
    const char* names[] = {"N", "sourceOffset", "destinationOffset"};
    for (size_t i = 2; i < 5; ++i) {
      const TensorInfo& t = ctx.input(i);
      const DataType type = t.dataType();
      if (t.rank() != 1 || t.shape() != ctx.input(2).shape() ||
          (type != DataType::INT32 && type != DataType::UINT32 && type != DataType::INT64)) {
        ctx.fail(
            "input {} ({}) is {}; expected a 1-D INT32, UINT32 or INT64 tensor as long as N {}", i,
            names[i - 2], t.toString(), ctx.input(2).toString());
      }
    }
    return std::vector<TensorInfo>{dst};
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
