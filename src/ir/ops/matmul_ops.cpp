// Matrix products: ONNX MatMul and Gemm, and the internal MatMulT their gradients are built from.
#include <cctype>
#include <utility>

#include "ir/op_registry.hpp"
#include "ir/ops/matmul_shapes.hpp"
#include "ir/ops/popart_wording.hpp"

namespace xtrain::ir {
namespace {

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) {
    p *= s[i];
  }
  return p;
}

Shape concat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The numpy view of a matmul operand: rank >= 2, 1-D operands promoted ([k] -> [1,k] for A, [k,1]
// for B).
Shape promoteA(const Shape& a) {
  return a.size() == 1 ? Shape{1, a[0]} : a;
}
Shape promoteB(const Shape& b) {
  return b.size() == 1 ? Shape{b[0], 1} : b;
}

// PopART's name of a MatMul in its messages: its MatMul versions are 1, 9 and 13.
std::string popartMatMulName(const Op& op) {
  return popartOpName(op, op.opset >= 13 ? 13 : op.opset >= 9 ? 9 : 1);
}

// The faults PopART's programs compare whole (popart_worded_error): a scalar operand, and unequal
// contracting dimensions.
void checkMatMulOperands(const ShapeContext& ctx, const Shape& a, const Shape& b) {
  const Op& op = ctx.op();
  for (size_t i = 0; i < 2; ++i) {
    if (!(i == 0 ? a : b).empty()) continue;
    const std::string side = i == 0 ? "lhs" : "rhs";
    throw popart_worded_error(
        xtrain::format("{} doesn't support scalar tensor {} as the {} input", popartMatMulName(op),
                       op.inputs[i], side),
        xtrain::format("{}: operands must have rank >= 1, got A {} and B {} (a scalar {} input "
                       "'{}': use Mul to scale by a scalar)",
                       op.describe(), shapeToString(a), shapeToString(b), side, op.inputs[i]));
  }
  const int64_t ka = promoteA(a).back();
  const int64_t kb = *(promoteB(b).end() - 2);
  if (ka == kb) return;
  throw popart_worded_error(
      xtrain::format("{} contracting dimensions unequal: lhs '{}' {}, rhs '{}' {}",
                     popartMatMulName(op), op.inputs[0], popartSequence(a), op.inputs[1],
                     popartSequence(b)),
      xtrain::format("{}: inner dimensions do not match: A '{}' {} has K={} but B '{}' {} has K={}",
                     op.describe(), op.inputs[0], shapeToString(a), ka, op.inputs[1],
                     shapeToString(b), kb));
}

// Builder.setSerializeMatMul's attributes (PopART's names): the factor must divide the dimension
// the mode names. Serialising changes nothing xtrain computes; the check is PopART's, whose
// programs match the start of its message (popart_worded_error).
void checkSerializeMatMul(const ShapeContext& ctx, const Shape& a, const Shape& b) {
  const Attributes& at = ctx.attrs();
  if (!at.has("__serialize_matmul_mode")) return;
  const std::string mode = at.getString("__serialize_matmul_mode");
  if (mode == "none") return;
  const int64_t factor = at.getInt("__serialize_matmul_factor", 0);
  if (factor <= 0) {
    ctx.fail(
        "Invalid serialisation factor {}. Serialisation factor must be a non-zero positive "
        "integer (Builder.setSerializeMatMul, mode '{}')",
        factor, mode);
  }
  const Shape pa = promoteA(a);
  const Shape pb = promoteB(b);
  int64_t dim = 0;
  std::string popart;
  if (mode == "input_channels") {
    dim = pa[pa.size() - 2];
    popart = "input channels dim {}. input_channels";
  } else if (mode == "reducing_dim") {
    dim = pa.back();
    popart = "reducing dimension {}. reducing_dim";
  } else if (mode == "output_channels") {
    dim = pb.back();
    popart = "output channels dim {}. output_channels";
  } else {
    ctx.fail(
        "__serialize_matmul_mode '{}' is not input_channels, reducing_dim, output_channels or "
        "none",
        mode);
  }
  if (dim % factor == 0) return;
  const std::string text =
      xtrain::format("Invalid serialisation factor {} for " + popart +
                         " dim should be a multiple of the serialisation factor",
                     factor, dim);
  throw popart_worded_error(
      text, xtrain::format("{}: {} (Builder.setSerializeMatMul: A {}, B {}, mode '{}')",
                           ctx.op().describe(), text, shapeToString(a), shapeToString(b), mode));
}

// Builder.setPartialsType / SessionOptions.partialsTypeMatMuls (the session writes the option on
// MatMuls without one): "float" or "half" in any letter case, as PopART reads it.
void checkPartialsType(const ShapeContext& ctx) {
  if (!ctx.attrs().has("__partials_type")) return;
  std::string t = ctx.attrs().getString("__partials_type");
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t != "float" && t != "half") {
    ctx.fail(
        "Unable to get option 'partialsTypeMatMul' from string '{}'. Possible values are "
        "'float' and 'half' in any letter case.",
        ctx.attrs().getString("__partials_type"));
  }
}

// MatMul(A, B): numpy matmul. Canonical form = ONNX form (no attributes). 1-D operands are promoted
// and the promoted dimension is removed from the result; batch dimensions broadcast.
std::vector<TensorInfo> inferMatMul(const ShapeContext& ctx) {
  ctx.requireFloatOrHalf(0);
  ctx.requireFloatOrHalf(1);
  const Shape& a = ctx.input(0).shape();
  const Shape& b = ctx.input(1).shape();
  checkMatMulOperands(ctx, a, b);
  checkSerializeMatMul(ctx, a, b);
  checkPartialsType(ctx);
  Shape y = batchedProductShape(ctx, promoteA(a), promoteB(b), false, false, a, b);
  if (b.size() == 1) {
    y.erase(y.end() - 1);
  }
  if (a.size() == 1) {
    y.erase(y.end() - (b.size() == 1 ? 1 : 2));
  }
  return {TensorInfo(ctx.input(0).dataType(), y)};
}

// dA = gy . B^T and dB = A^T . gy on the promoted views, summed over broadcast batch dimensions.
void gradMatMul(GradContext& g) {
  const Shape a = g.inputInfo(0).shape();
  const Shape b = g.inputInfo(1).shape();
  const Shape pa = promoteA(a);
  const Shape pb = promoteB(b);
  const int64_t m = pa[pa.size() - 2];
  const int64_t k = pa.back();
  const int64_t n = pb.back();
  // The output viewed with the promoted dims put back: [batchY..., m, n].
  const Shape& y = g.outputInfo(0).shape();
  const size_t yBatchRank = y.size() - (a.size() == 1 ? 0 : 1) - (b.size() == 1 ? 0 : 1);
  const Shape batchY(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(yBatchRank));
  const Shape py = concat(batchY, {m, n});
  const TensorId& gy = g.gradOut(0);
  // The gradients' products keep the forward MatMul's partials type, as PopART's do.
  auto attrs = [&g](Attributes at) { return withPartialsTypeOf(g.attrs(), std::move(at)); };

  if (g.needsGrad(0)) {
    const Shape out = concat(batchY, a.size() == 1 ? Shape{k} : Shape{m, k});
    TensorId d =
        g.emit("MatMulT", {gy, g.input(1)}, attrs(matMulTAttrs(false, true, 1.0f, py, pb, out)));
    g.setGradIn(0, g.reduceToShape(d, a));
  }
  if (g.needsGrad(1)) {
    const size_t batchARank = pa.size() - 2;
    const bool bHasNoBatch = product(pb, 0, pb.size() - 2) == 1;
    const bool aNotBroadcast = product(pa, 0, batchARank) == product(batchY, 0, batchY.size());
    TensorId d;
    if (bHasNoBatch && aNotBroadcast) {
      // B is shared by every batch entry (a linear layer): fold the batch into the rows, one GEMM
      // [k, P*m] x [P*m, n] and no reduction.
      const int64_t rows = product(batchY, 0, batchY.size()) * m;
      d = g.emit("MatMulT", {g.input(0), gy},
                 attrs(matMulTAttrs(true, false, 1.0f, {rows, k}, {rows, n}, b)));
    } else {
      const Shape out = concat(batchY, b.size() == 1 ? Shape{k} : Shape{k, n});
      d = g.emit("MatMulT", {g.input(0), gy}, attrs(matMulTAttrs(true, false, 1.0f, pa, py, out)));
      d = g.reduceToShape(d, b);
    }
    g.setGradIn(1, d);
  }
}

XT_REGISTER_OP([] {
  OpDef d{.type = "MatMul", .minInputs = 2, .maxInputs = 2};
  d.infer = inferMatMul;
  d.grad = gradMatMul;
  return d;
}());

// Gemm(A, B, C?): Y = alpha * op(A) x op(B) + beta * C, A and B 2-D, C unidirectionally
// broadcastable to [M, N]. Canonical form = ONNX form (C optional since opset 11).
XT_REGISTER_OP([] {
  OpDef d{.type = "Gemm", .minInputs = 2, .maxInputs = 3};
  d.infer = [](const ShapeContext& ctx) {
    ctx.requireFloatOrHalf(0);
    ctx.requireFloatOrHalf(1);
    const Shape& a = ctx.input(0).shape();
    const Shape& b = ctx.input(1).shape();
    if (a.size() != 2 || b.size() != 2) {
      ctx.fail("A and B must be 2-D, got A {} and B {}", shapeToString(a), shapeToString(b));
    }
    const Shape y = batchedProductShape(ctx, a, b, ctx.attrs().getInt("transA", 0) != 0,
                                        ctx.attrs().getInt("transB", 0) != 0, a, b);
    if (ctx.hasInput(2)) {
      ctx.requireFloatOrHalf(2);
      const Shape& c = ctx.input(2).shape();
      bool ok = c.size() <= 2;
      for (size_t i = 0; ok && i < c.size(); ++i) {
        const int64_t want = y[2 - c.size() + i];
        ok = c[i] == want || c[i] == 1;
      }
      if (!ok) {
        ctx.fail("C {} is not unidirectionally broadcastable to the product's shape {}",
                 shapeToString(c), shapeToString(y));
      }
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), y)};
  };
  d.grad = [](GradContext& g) {
    const bool ta = g.attrs().getInt("transA", 0) != 0;
    const bool tb = g.attrs().getInt("transB", 0) != 0;
    const float alpha = g.attrs().getFloat("alpha", 1.0f);
    const float beta = g.attrs().getFloat("beta", 1.0f);
    const TensorId& gy = g.gradOut(0);
    if (g.needsGrad(0)) {
      // op(A) = A: dA = alpha gy op(B)^T.  op(A) = A^T: dA = alpha op(B) gy^T.
      g.setGradIn(
          0, ta ? g.emit("MatMulT", {g.input(1), gy}, matMulTAttrs(tb, true, alpha, {}, {}, {}))
                : g.emit("MatMulT", {gy, g.input(1)}, matMulTAttrs(false, !tb, alpha, {}, {}, {})));
    }
    if (g.needsGrad(1)) {
      // op(B) = B: dB = alpha op(A)^T gy.  op(B) = B^T: dB = alpha gy^T op(A).
      g.setGradIn(
          1, tb ? g.emit("MatMulT", {gy, g.input(0)}, matMulTAttrs(true, ta, alpha, {}, {}, {}))
                : g.emit("MatMulT", {g.input(0), gy}, matMulTAttrs(!ta, false, alpha, {}, {}, {})));
    }
    if (g.op().hasInput(2) && g.needsGrad(2)) {
      TensorId dc = g.reduceToShape(gy, g.inputInfo(2).shape());
      if (beta != 1.0f) {
        dc = g.emit("Mul", {dc, g.scalar(beta, g.inputInfo(2).dataType())}, {}, kOnnxDomain);
      }
      g.setGradIn(2, dc);
    }
  };
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
