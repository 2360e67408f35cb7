// MatMul with FLOAT16 partials: PopART's partials type "half" (SessionOptions.partialsTypeMatMuls,
// Builder.setPartialsType), which asks Poplar to keep a FLOAT16 matmul's running sums in FLOAT16.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <memory>

#include "device/kernel.hpp"

namespace xtrain::device {

// How many products the IPU's accumulating matrix product unit (AMP) sums before a partial is
// formed: for FLOAT16 inputs it takes 16 input channels at a time and adds their products at its
// own internal precision. Partials (in the partials type) are only formed across such groups, so a
// contraction of at most 16 is the same for either partials type (PopART's partials tests choose
// sizes over 16 for this reason).
inline constexpr int64_t kAmpProductsPerPartial = 16;

// True when the op's attribute __partials_type is "half" (any case) and both operands and the
// output are FLOAT16. For FLOAT operands the option means nothing: Poplar ignores a partials type
// smaller than the output type, and so does xtrain. Throws (naming the op) on a value other than
// "float" or "half".
bool wantsHalfPartials(const KernelSpec& spec);

// Y = alpha * op(A) x op(B) over FLOAT16 buffers viewed as `a` and `b` (rank >= 2, batch
// dimensions broadcast; transposes swap the last two dims). Each output's sum runs over the
// contraction in groups of kAmpProductsPerPartial: a group's products are summed in FLOAT, then
// added to the FLOAT16 partial, rounded to nearest even after each addition.
std::unique_ptr<Kernel> makeHalfPartialsMatMul(const KernelSpec& spec, const Shape& a,
                                               const Shape& b, bool transA, bool transB,
                                               float alpha);

}  // namespace xtrain::device

#pragma GCC visibility pop
