// What the matrix-product ops share (matmul_ops.cpp: MatMul, Gemm; matmul_t_ops.cpp: MatMulT).
#pragma once
#pragma GCC visibility push(default)

#include "ir/op_registry.hpp"

namespace xtrain::ir {

// Shape of op(A) x op(B) for rank >= 2 operands (transposes swap the last two dims), batch dims
// broadcast (numpy). origA and origB name the operands in messages.
Shape batchedProductShape(const ShapeContext& ctx, const Shape& a, const Shape& b, bool transA,
                          bool transB, const Shape& origA, const Shape& origB);

// The attributes of a MatMulT computing alpha * op(A) x op(B); empty views and outShape are left
// out (the inputs' own shapes, the product's shape).
Attributes matMulTAttrs(bool transA, bool transB, float alpha, const Shape& viewA,
                        const Shape& viewB, const Shape& outShape);

// `at` with the forward product's __partials_type, if it has one: a gradient's products keep the
// forward's partials type, as PopART's do.
inline Attributes withPartialsTypeOf(const Attributes& forward, Attributes at) {
  if (forward.has("__partials_type")) {
    at.set("__partials_type", forward.getString("__partials_type"));
  }
  return at;
}

}  // namespace xtrain::ir

#pragma GCC visibility pop
