// Shared by the gradient ops of LayerNormalization (norm_ops.cpp) and GroupNormalization
// (group_norm_ops.cpp), which have one contract: inputs dY, X, scale, mean?, invStdDev?, dMean?,
// dInvStdDev? (the forward op's saved statistics, recomputed from X when absent, and the gradients
// arriving at them); outputs dX, dScale, dBias.
#pragma once
#pragma GCC visibility push(default)

#include <functional>
#include <utility>
#include <vector>

#include "ir/op_registry.hpp"

namespace xtrain::ir {

inline OpDef normGradDef(const char* type,
                         std::function<std::vector<TensorInfo>(const ShapeContext&)> infer) {
  return OpDef{.type = type,
               .domain = kXtrainDomain,
               .minInputs = 3,
               .maxInputs = 7,
               .minOutputs = 3,
               .maxOutputs = 3,
               .infer = std::move(infer)};
}

// Checks that dY has X's info and that the statistics present (inputs 3 to 6) have shape `stat`,
// mean and invStdDev given together; `mean` and `invStdDev` name them in the message.
inline void checkNormGradInputs(const ShapeContext& ctx, const Shape& stat, const char* mean,
                                const char* invStdDev) {
  const TensorInfo& x = ctx.input(1);
  if (ctx.input(0) != x) ctx.fail("dY is {} but X is {}", ctx.input(0).toString(), x.toString());
  for (size_t i = 3; i < 7; ++i) {
    if (ctx.hasInput(i) && ctx.input(i).shape() != stat) {
      ctx.fail("input {} is {}; expected statistics of shape {}", i, ctx.input(i).toString(),
               shapeToString(stat));
    }
  }
  if (ctx.hasInput(3) != ctx.hasInput(4))
    ctx.fail("{} and {} must be given together", mean, invStdDev);
}

}  // namespace xtrain::ir

#pragma GCC visibility pop
