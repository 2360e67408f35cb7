// The internal MatMulT op (ai.xtrain): the products MatMul's and Gemm's gradients are built from,
// and the form the fusion pass gives a MatMul whose operands or result torch.onnx transposes
// (src/ir/fusion/transpose_matmul_fusion.cpp). Its gradient covers the forms the fusion writes.
#include <string>
#include <string_view>
#include <utility>

#include "common/matmul_permutation.hpp"
#include "ir/op_registry.hpp"
#include "ir/ops/matmul_shapes.hpp"

namespace xtrain::ir {

// Shape of op(A) x op(B) for rank >= 2 operands (transposes swap the last two dims), batch dims
// broadcast.
Shape batchedProductShape(const ShapeContext& ctx, const Shape& a, const Shape& b, bool transA,
                          bool transB, const Shape& origA, const Shape& origB) {
  const size_t ra = a.size();
  const size_t rb = b.size();
  const int64_t m = transA ? a[ra - 1] : a[ra - 2];
  const int64_t ka = transA ? a[ra - 2] : a[ra - 1];
  const int64_t kb = transB ? b[rb - 1] : b[rb - 2];
  const int64_t n = transB ? b[rb - 2] : b[rb - 1];
  if (ka != kb) {
    ctx.fail("inner dimensions do not match: A {} has K={} but B {} has K={}", shapeToString(origA),
             ka, shapeToString(origB), kb);
  }
  Shape batchA(a.begin(), a.end() - 2);
  Shape batchB(b.begin(), b.end() - 2);
  const size_t rank = std::max(batchA.size(), batchB.size());
  Shape batch(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - batchA.size() ? 1 : batchA[i - (rank - batchA.size())];
    const int64_t db = i < rank - batchB.size() ? 1 : batchB[i - (rank - batchB.size())];
    if (da != db && da != 1 && db != 1) {
      ctx.fail("batch dimensions of A {} and B {} cannot be broadcast together",
               shapeToString(origA), shapeToString(origB));
    }
    batch[i] = da == 1 ? db : da;
  }
  batch.push_back(m);
  batch.push_back(n);
  return batch;
}

Attributes matMulTAttrs(bool transA, bool transB, float alpha, const Shape& viewA,
                        const Shape& viewB, const Shape& outShape) {
  Attributes a;
  a.set("transA", int64_t{transA});
  a.set("transB", int64_t{transB});
  if (alpha != 1.0f) {
    a.set("alpha", alpha);
  }
  if (!viewA.empty()) {
    a.set("viewA", viewA);
  }
  if (!viewB.empty()) {
    a.set("viewB", viewB);
  }
  if (!outShape.empty()) {
    a.set("outShape", outShape);
  }
  return a;
}

namespace {

template <typename... Args>
[[noreturn]] void failGrad(const GradContext& g, std::string_view f, const Args&... args) {
  throw error(g.op().describe() + ": " + xtrain::format(f, args...));
}

Shape batchOf(const Shape& s) {
  return Shape(s.begin(), s.end() - 2);
}

// An operand's logical shape: its view (default its shape), permuted by `permName` when present.
Shape permutedOperand(const ShapeContext& ctx, size_t i, const char* viewName,
                      const char* permName) {
  const Shape& shape = ctx.input(i).shape();
  const Shape view = ctx.attrs().getInts(viewName, shape);
  if (shapeNelms(view) != shapeNelms(shape)) {
    ctx.fail("{} {} does not have the element count of input {} {}", viewName, shapeToString(view),
             i, shapeToString(shape));
  }
  if (view.size() < 2) {
    ctx.fail("operands must have rank >= 2, got input {} viewed as {}", i, shapeToString(view));
  }
  if (!ctx.attrs().has(permName)) return view;
  const Permutation& perm = ctx.attrs().getInts(permName);
  if (!isPermutation(perm, view.size())) {
    ctx.fail("{} {} is not a permutation of the {} dimensions of input {} {}", permName,
             shapeToString(perm), view.size(), i, shapeToString(view));
  }
  return permutedShape(view, perm);
}

std::vector<TensorInfo> inferMatMulT(const ShapeContext& ctx) {
  ctx.requireFloatOrHalf(0);
  ctx.requireFloatOrHalf(1);
  const Shape a = permutedOperand(ctx, 0, "viewA", "permA");
  const Shape b = permutedOperand(ctx, 1, "viewB", "permB");
  const Attributes& at = ctx.attrs();
  Shape y = batchedProductShape(ctx, a, b, at.getInt("transA", 0) != 0, at.getInt("transB", 0) != 0,
                                a, b);
  if (at.has("permY")) {
    if (at.has("outShape")) ctx.fail("permY and outShape cannot both be given");
    const Permutation& perm = at.getInts("permY");
    if (!isPermutation(perm, y.size())) {
      ctx.fail("permY {} is not a permutation of the {} dimensions of the product {}",
               shapeToString(perm), y.size(), shapeToString(y));
    }
    y = permutedShape(y, perm);
  } else if (at.has("outShape")) {
    const Shape& out = at.getInts("outShape");
    if (shapeNelms(out) != shapeNelms(y)) {
      ctx.fail("outShape {} does not have the element count of the product {}", shapeToString(out),
               shapeToString(y));
    }
    y = out;
  }
  return {TensorInfo(ctx.input(0).dataType(), y)};
}

// A MatMulT's attributes with permutations (identity ones left out) and the forward's alpha and
// partials type.
Attributes permutedAttrs(const GradContext& g, const Permutation& permA, const Permutation& permB,
                         const Permutation& permY) {
  Attributes at = matMulTAttrs(false, false, g.attrs().getFloat("alpha", 1.0f), {}, {}, {});
  if (!isIdentity(permA)) at.set("permA", permA);
  if (!isIdentity(permB)) at.set("permB", permB);
  if (!isIdentity(permY)) at.set("permY", permY);
  if (g.attrs().has("__partials_type")) {
    at.set("__partials_type", g.attrs().getString("__partials_type"));
  }
  return at;
}

// The operand's whole permutation from input to the product's operand, transposition included.
Permutation operandPermutation(const GradContext& g, size_t i) {
  const size_t rank = g.inputInfo(i).shape().size();
  const char* permName = i == 0 ? "permA" : "permB";
  const char* transName = i == 0 ? "transA" : "transB";
  const Permutation perm = matMulTPermutation(g.attrs(), permName, rank);
  return g.attrs().getInt(transName, 0) != 0 ? composed(perm, lastTwoSwapped(rank)) : perm;
}

// With permutations: Y = A' B' (A' = A permuted by pA, B' = B by pB, transpositions included),
// Z = Y permuted by pY, so gY = gZ permuted by pY^-1 and
//   dA = (gY B'^T) permuted by pA^-1,   dB = (A'^T gY) permuted by pB^-1,
// each one MatMulT reading the stored tensors through strides. The batch dimensions of A' and B'
// must be equal (what the fusion pass folds), or B a matrix shared by A's batch when A' is A
// itself.
void gradPermutedMatMulT(GradContext& g) {
  const Shape a = g.inputInfo(0).shape();
  const Shape b = g.inputInfo(1).shape();
  const Permutation pA = operandPermutation(g, 0);
  const Permutation pB = operandPermutation(g, 1);
  const Shape la = permutedShape(a, pA);
  const Shape lb = permutedShape(b, pB);
  const size_t rank = la.size();
  const bool sharedB = lb.size() == 2 && isIdentity(pA);
  if (!sharedB && batchOf(la) != batchOf(lb)) {
    failGrad(g,
             "the gradient of a MatMulT with permuted operands needs equal batch dimensions, got "
             "operands {} and {} (not implemented)",
             shapeToString(la), shapeToString(lb));
  }
  const Permutation pY = matMulTPermutation(g.attrs(), "permY", rank);
  const Permutation gYPerm = inversePermutation(pY);
  const TensorId& gz = g.gradOut(0);
  if (g.needsGrad(0)) {
    const Permutation bT = composed(pB, lastTwoSwapped(lb.size()));
    g.setGradIn(0, g.emit("MatMulT", {gz, g.input(1)},
                          permutedAttrs(g, gYPerm, bT, inversePermutation(pA))));
  }
  if (!g.needsGrad(1)) return;
  if (sharedB) {
    // B' is shared by A's batch: fold the batch into the rows, dB' = A^T gY as one GEMM
    // [k, rows] x [rows, n] (gY dense: pY is the identity), permuted by pB^-1.
    if (!isIdentity(pY))
      failGrad(g, "a shared B with a permuted result has no gradient (not implemented)");
    const int64_t rows = shapeNelms(a) / a.back();
    Attributes at = permutedAttrs(g, {}, {}, inversePermutation(pB));
    at.set("transA", int64_t{1});
    at.set("viewA", Shape{rows, a.back()});
    at.set("viewB", Shape{rows, lb.back()});
    g.setGradIn(1, g.emit("MatMulT", {g.input(0), gz}, at));
    return;
  }
  const Permutation aT = composed(pA, lastTwoSwapped(rank));
  g.setGradIn(
      1, g.emit("MatMulT", {g.input(0), gz}, permutedAttrs(g, aT, gYPerm, inversePermutation(pB))));
}

// Without permutations or views: alpha op(A) op(B), batch dimensions broadcast (summed back).
void gradTransposedMatMulT(GradContext& g) {
  const bool ta = g.attrs().getInt("transA", 0) != 0;
  const bool tb = g.attrs().getInt("transB", 0) != 0;
  const float alpha = g.attrs().getFloat("alpha", 1.0f);
  const Shape a = g.inputInfo(0).shape();
  const Shape b = g.inputInfo(1).shape();
  const TensorId& gy = g.gradOut(0);
  auto attrs = [&g](Attributes at) { return withPartialsTypeOf(g.attrs(), std::move(at)); };
  if (g.needsGrad(0)) {
    // op(A) = A: dA = alpha gy op(B)^T.  op(A) = A^T: dA = alpha op(B) gy^T.
    const TensorId d =
        ta ? g.emit("MatMulT", {g.input(1), gy}, attrs(matMulTAttrs(tb, true, alpha, {}, {}, {})))
           : g.emit("MatMulT", {gy, g.input(1)},
                    attrs(matMulTAttrs(false, !tb, alpha, {}, {}, {})));
    g.setGradIn(0, g.reduceToShape(d, a));
  }
  if (!g.needsGrad(1)) return;
  const Shape& y = g.outputInfo(0).shape();
  if (b.size() == 2 && !ta && batchOf(a) == batchOf(y)) {
    // B shared by A's whole batch (a linear layer): the batch folds into the rows, one GEMM.
    const int64_t rows = shapeNelms(a) / a.back();
    const Shape va{rows, a.back()}, vy{rows, y.back()};
    g.setGradIn(1, tb ? g.emit("MatMulT", {gy, g.input(0)},
                               attrs(matMulTAttrs(true, false, alpha, vy, va, {})))
                      : g.emit("MatMulT", {g.input(0), gy},
                               attrs(matMulTAttrs(true, false, alpha, va, vy, {}))));
    return;
  }
  // op(B) = B: dB = alpha op(A)^T gy.  op(B) = B^T: dB = alpha gy^T op(A).
  const TensorId d =
      tb ? g.emit("MatMulT", {gy, g.input(0)}, attrs(matMulTAttrs(true, ta, alpha, {}, {}, {})))
         : g.emit("MatMulT", {g.input(0), gy}, attrs(matMulTAttrs(!ta, false, alpha, {}, {}, {})));
  g.setGradIn(1, g.reduceToShape(d, b));
}

void gradMatMulT(GradContext& g) {
  const Attributes& at = g.attrs();
  if (at.has("viewA") || at.has("viewB") || at.has("outShape")) {
    failGrad(g,
             "a MatMulT with viewA, viewB or outShape has no gradient (not implemented; such "
             "MatMulTs are themselves gradients)");
  }
  if (hasMatMulTPermutation(at)) {
    gradPermutedMatMulT(g);
  } else {
    gradTransposedMatMulT(g);
  }
}

// MatMulT(A, B), internal: Y = alpha * op(A') x op(B') where A' = Transpose(A viewed as `viewA`,
// permA) (default: A's shape, no permutation), op transposes the last two dims when transA/transB
// is 1, batch dims broadcast (numpy). Both operands must have rank >= 2. The result
// [batch..., m, n] is permuted by `permY`, or given the shape `outShape` (same element count),
// when set. Attributes: transA, transB (default 0), alpha (default 1), viewA, viewB, outShape,
// permA, permB, permY (optional). The kernel reads permuted operands and writes a permuted result
// through strides (no copies).
XT_REGISTER_OP([] {
  OpDef d{.type = "MatMulT", .domain = kXtrainDomain, .minInputs = 2, .maxInputs = 2};
  d.infer = inferMatMulT;
  d.grad = gradMatMulT;
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
