// Kernels for MatMul, MatMulT (ai.xtrain) and Gemm on oneDNN's matmul primitive, plus the sgemm
// helper.
//
// The primitive is built once per op from the static shapes. Batch dimensions are normalised first
// (unit dims dropped, neighbours with the same broadcast pattern merged); when B has no batch and A
// is not transposed, A's batch is folded into the rows and the product is a single 2-D GEMM (the
// linear-layer case). Transposed operands are described with strides, so nothing is copied.
// A FLOAT16 MatMul or MatMulT whose __partials_type is "half" runs matmul_half_partials.cpp's
// kernel instead; other FLOAT16 products run promoted (FLOAT partials).
#include <cstring>

#include "common/check.hpp"
#include "common/matmul_permutation.hpp"
#include "device/kernel.hpp"
#include "device/kernels/dnnl_engine.hpp"
#include "device/kernels/matmul_half_partials.hpp"
#include "device/kernels/sgemm.hpp"

namespace xtrain::device {

void sgemm(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K) {
  const dnnl::status s = dnnl::sgemm('N', 'N', M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
  if (s != dnnl::status::success) {
    throw error("sgemm(M={}, N={}, K={}) failed in oneDNN (status {})", M, N, K,
                static_cast<int>(s));
  }
}

namespace {

using dnnl_util::plainDesc;
using dnnl_util::stridedDesc;

// oneDNN's matmul accepts at most this many dimensions (DNNL_MAX_NDIMS).
constexpr size_t kMaxRank = 12;

// A oneDNN matmul computing Y = alpha * op(A) x op(B) (+ Y when accumulate) over plain buffers;
// empty or K = 0 products need no primitive.
class MatMulPlan {
 public:
  // a, b: shapes (rank >= 2) the input buffers are viewed as; transposes swap their last two dims.
  MatMulPlan(const KernelSpec& spec, const Shape& a, const Shape& b, bool transA, bool transB,
             float alpha, bool accumulate);
  // Operands and result given as strided views (dims and strides, equal ranks >= 2, batch dims
  // broadcast where one operand has 1); `swapOperands`: a describes run()'s b and b its a.
  MatMulPlan(const KernelSpec& spec, const dnnl::memory::desc& a, const dnnl::memory::desc& b,
             const dnnl::memory::desc& y, float alpha, bool hasProduct, bool swapOperands);

  // false when Y is empty or K = 0 (Y then gets no contribution from the product).
  bool hasProduct() const { return hasProduct_; }
  void run(const float* a, const float* b, float* y) const {
    const size_t bytes = prim_.scratchpadBytes();
    dnnl_util::execute(prim_,
                       {{DNNL_ARG_SRC, dnnl_util::wrap(aMd_, swapOperands_ ? b : a)},
                        {DNNL_ARG_WEIGHTS, dnnl_util::wrap(bMd_, swapOperands_ ? a : b)},
                        {DNNL_ARG_DST, dnnl_util::wrap(yMd_, y)}},
                       bytes > 0 ? dnnl_util::threadScratch(bytes) : nullptr);
  }

 private:
  void createPrimitive(const KernelSpec& spec, float alpha, bool accumulate);

  bool hasProduct_ = false;
  bool swapOperands_ = false;
  dnnl_util::Primitive prim_;
  dnnl::memory::desc aMd_, bMd_, yMd_;
};

// Dims of a row-major tensor [batch..., r, c] stored as [batch..., c, r] when `trans`, described as
// [batch..., r, c] with strides.
dnnl::memory::desc operandDesc(const Shape& batch, int64_t r, int64_t c, bool trans) {
  Shape dims = batch;
  dims.push_back(r);
  dims.push_back(c);
  Shape strides(dims.size());
  const size_t n = dims.size();
  strides[n - 2] = trans ? 1 : c;
  strides[n - 1] = trans ? r : 1;
  int64_t s = r * c;
  for (size_t i = batch.size(); i-- > 0;) {
    strides[i] = s;
    s *= batch[i];
  }
  return stridedDesc(dims, strides);
}

MatMulPlan::MatMulPlan(const KernelSpec& spec, const Shape& a, const Shape& b, bool transA,
                       bool transB, float alpha, bool accumulate) {
  XT_CHECK(a.size() >= 2 && b.size() >= 2, "{}: operands {} and {}", spec.description,
           shapeToString(a), shapeToString(b));
  const size_t ra = a.size(), rb = b.size();
  const int64_t m = transA ? a[ra - 1] : a[ra - 2];
  const int64_t k = transA ? a[ra - 2] : a[ra - 1];
  const int64_t n = transB ? b[rb - 2] : b[rb - 1];
  XT_CHECK_EQ(k, transB ? b[rb - 1] : b[rb - 2], "{}", spec.description);

  // Align batch dims, drop the ones of size 1 everywhere, merge neighbours broadcast the same way.
  const size_t rank = std::max(ra, rb) - 2;
  Shape batchA, batchB, batchY;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - (ra - 2) ? 1 : a[i - (rank - (ra - 2))];
    const int64_t db = i < rank - (rb - 2) ? 1 : b[i - (rank - (rb - 2))];
    const int64_t dy = da == 1 ? db : da;
    if (dy == 1) {
      continue;
    }
    if (!batchY.empty() && (batchA.back() == 1) == (da == 1) && (batchB.back() == 1) == (db == 1)) {
      batchA.back() *= da;
      batchB.back() *= db;
      batchY.back() *= dy;
    } else {
      batchA.push_back(da);
      batchB.push_back(db);
      batchY.push_back(dy);
    }
  }
  const int64_t batches = shapeNelms(batchY);
  hasProduct_ = batches * m * n > 0 && k > 0;
  if (!hasProduct_) {
    return;
  }

  bool bShared = true, aFull = true;
  for (size_t i = 0; i < batchY.size(); ++i) {
    bShared = bShared && batchB[i] == 1;
    aFull = aFull && batchA[i] == batchY[i];
  }
  Shape bA, bB, bY;  // batch dims given to oneDNN
  int64_t rows = m;
  if (bShared && aFull && !transA) {
    rows = batches * m;  // one 2-D GEMM: A's batch folds into its rows
  } else {
    if (batchY.size() + 2 > kMaxRank) {
      spec.fail("matmul of {} and {} has {} independent batch dimensions; at most {} are supported",
                shapeToString(a), shapeToString(b), batchY.size(), kMaxRank - 2);
    }
    bA = batchA, bB = batchB, bY = batchY;
  }
  aMd_ = operandDesc(bA, rows, k, transA);
  bMd_ = operandDesc(bB, k, n, transB);
  Shape y = bY;
  y.push_back(rows);
  y.push_back(n);
  yMd_ = plainDesc(y);
  createPrimitive(spec, alpha, accumulate);
}

MatMulPlan::MatMulPlan(const KernelSpec& spec, const dnnl::memory::desc& a,
                       const dnnl::memory::desc& b, const dnnl::memory::desc& y, float alpha,
                       bool hasProduct, bool swapOperands)
    : hasProduct_(hasProduct), swapOperands_(swapOperands), aMd_(a), bMd_(b), yMd_(y) {
  if (hasProduct_) createPrimitive(spec, alpha, false);
}

void MatMulPlan::createPrimitive(const KernelSpec& spec, float alpha, bool accumulate) {
  dnnl::primitive_attr attr = dnnl_util::userScratchpadAttr();
  if (alpha != 1.0f) {
    attr.set_output_scales(0, {alpha});
  }
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  prim_ = dnnl_util::create(spec, "matmul", [&] {
    return dnnl_util::makePrimitive<dnnl::matmul>(dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(aMd_, bMd_, yMd_), attr, dnnl_util::engine()));
  });
}

void requireFloat(const KernelSpec& spec) {
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (spec.hasInput(i) && spec.inputs[i].dataType() != DataType::FLOAT) {
      spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
    }
  }
}

// A dense tensor of `shape` seen as Transpose(T, perm), its last two dims then swapped when
// `trans`: the dims and strides oneDNN is given.
struct StridedView {
  Shape dims, strides;
};

StridedView permutedView(const Shape& shape, const Permutation& perm, bool trans) {
  const size_t rank = shape.size();
  Shape dense(rank);
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    dense[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  StridedView v{permutedShape(shape, perm), permutedShape(dense, perm)};
  if (trans) {
    std::swap(v.dims[rank - 2], v.dims[rank - 1]);
    std::swap(v.strides[rank - 2], v.strides[rank - 1]);
  }
  return v;
}

// Leading unit dims up to `rank` (numpy's alignment of batch dims).
void padTo(StridedView& v, size_t rank) {
  const int64_t outer = v.dims.empty() ? 1 : v.strides.front() * std::max<int64_t>(v.dims[0], 1);
  while (v.dims.size() < rank) {
    v.dims.insert(v.dims.begin(), 1);
    v.strides.insert(v.strides.begin(), outer);
  }
}

// MatMulT with permA, permB or permY (src/common/matmul_permutation.hpp): every operand and the
// result described by its strides, so that the Transposes the fusion pass folded cost nothing.
std::shared_ptr<const MatMulPlan> permutedPlan(const KernelSpec& spec) {
  const Attributes& at = spec.attrs;
  const Shape va = at.getInts("viewA", spec.inputs.at(0).shape());
  const Shape vb = at.getInts("viewB", spec.inputs.at(1).shape());
  StridedView a =
      permutedView(va, matMulTPermutation(at, "permA", va.size()), at.getInt("transA", 0) != 0);
  StridedView b =
      permutedView(vb, matMulTPermutation(at, "permB", vb.size()), at.getInt("transB", 0) != 0);
  const size_t rank = std::max(a.dims.size(), b.dims.size());
  if (rank > kMaxRank) {
    spec.fail("matmul of rank {} operands; at most {} dimensions are supported", rank, kMaxRank);
  }
  padTo(a, rank);
  padTo(b, rank);
  Shape product(rank);
  for (size_t i = 0; i + 2 < rank; ++i) product[i] = a.dims[i] == 1 ? b.dims[i] : a.dims[i];
  product[rank - 2] = a.dims[rank - 2];
  product[rank - 1] = b.dims[rank - 1];
  const Permutation permY = matMulTPermutation(at, "permY", rank);
  StridedView y = permutedView(permutedShape(product, permY), inversePermutation(permY), false);
  const bool swapOperands = y.strides[rank - 1] != 1;
  if (swapOperands) {
    // A result stored transposed (the gradient of a transposed operand): oneDNN's GEMM wants a
    // row-major result, so compute Y^T = op(B)^T op(A)^T into the transposed view instead.
    const auto swapLastTwo = [rank](StridedView& v) {
      std::swap(v.dims[rank - 2], v.dims[rank - 1]);
      std::swap(v.strides[rank - 2], v.strides[rank - 1]);
    };
    std::swap(a, b);
    swapLastTwo(a);
    swapLastTwo(b);
    swapLastTwo(y);
  }
  const bool hasProduct = shapeNelms(product) > 0 && a.dims[rank - 1] > 0;
  return std::make_shared<const MatMulPlan>(
      spec, stridedDesc(a.dims, a.strides), stridedDesc(b.dims, b.strides),
      stridedDesc(y.dims, y.strides), at.getFloat("alpha", 1.0f), hasProduct, swapOperands);
}

// Y = the plan's product of inputs 0 and 1 (zeros when it has none).
std::unique_ptr<Kernel> productKernel(std::shared_ptr<const MatMulPlan> plan) {
  return makeKernel([plan = std::move(plan)](const KernelIO& io) {
    HostTensor& y = io.out(0);
    if (!plan->hasProduct()) {
      y.fillZero();
      return;
    }
    plan->run(io.in(0).data<float>(), io.in(1).data<float>(), y.data<float>());
  });
}

// MatMul: numpy promotion of 1-D operands, then the batched product; the output buffer is the
// product's [batch..., m, n] with the promoted unit dims removed, i.e. the same memory.
XT_REGISTER_KERNEL("ai.onnx", "MatMul", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  Shape a = spec.inputs.at(0).shape();
  Shape b = spec.inputs.at(1).shape();
  if (a.empty() || b.empty()) spec.fail("operands must have rank >= 1");
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  if (wantsHalfPartials(spec)) return makeHalfPartialsMatMul(spec, a, b, false, false, 1.0f);
  requireFloat(spec);
  auto plan = std::make_shared<const MatMulPlan>(spec, a, b, false, false, 1.0f, false);
  return productKernel(std::move(plan));
});

XT_REGISTER_KERNEL("ai.xtrain", "MatMulT", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const Shape a = spec.attrs.getInts("viewA", spec.inputs.at(0).shape());
  const Shape b = spec.attrs.getInts("viewB", spec.inputs.at(1).shape());
  if (a.size() < 2 || b.size() < 2) {
    spec.fail("operands must have rank >= 2, got {} and {}", shapeToString(a), shapeToString(b));
  }
  if (hasMatMulTPermutation(spec.attrs)) {
    if (wantsHalfPartials(spec))
      spec.fail("half partials with permA, permB or permY (not implemented)");
    requireFloat(spec);
    return productKernel(permutedPlan(spec));
  }
  if (wantsHalfPartials(spec)) {
    return makeHalfPartialsMatMul(spec, a, b, spec.attrs.getInt("transA", 0) != 0,
                                  spec.attrs.getInt("transB", 0) != 0,
                                  spec.attrs.getFloat("alpha", 1.0f));
  }
  requireFloat(spec);
  auto plan = std::make_shared<const MatMulPlan>(spec, a, b, spec.attrs.getInt("transA", 0) != 0,
                                                 spec.attrs.getInt("transB", 0) != 0,
                                                 spec.attrs.getFloat("alpha", 1.0f), false);
  return productKernel(std::move(plan));
});

// Gemm: Y is first filled with beta * C (broadcast), then the matmul adds alpha * op(A) op(B)
// through a sum post-op, so C costs one pass over Y and no temporary.
XT_REGISTER_KERNEL("ai.onnx", "Gemm", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  requireFloat(spec);
  const Shape& a = spec.inputs.at(0).shape();
  const Shape& b = spec.inputs.at(1).shape();
  if (a.size() != 2 || b.size() != 2) {
    spec.fail("A and B must be 2-D, got {} and {}", shapeToString(a), shapeToString(b));
  }
  const float beta = spec.attrs.getFloat("beta", 1.0f);
  const bool withC = spec.hasInput(2) && beta != 0.0f;
  auto plan = std::make_shared<const MatMulPlan>(spec, a, b, spec.attrs.getInt("transA", 0) != 0,
                                                 spec.attrs.getInt("transB", 0) != 0,
                                                 spec.attrs.getFloat("alpha", 1.0f), withC);
  const Shape& y = spec.outputs.at(0).shape();
  const int64_t m = y[0], n = y[1];
  // C's broadcast: rows and columns it actually has (1 = broadcast).
  Shape c = withC ? spec.inputs[2].shape() : Shape{};
  const int64_t cm = c.size() == 2 ? c[0] : 1;
  const int64_t cn = c.empty() ? 1 : c.back();
  return makeKernel([plan, withC, beta, m, n, cm, cn](const KernelIO& io) {
    float* py = io.out(0).data<float>();
    if (withC) {
      const float* pc = io.in(2).data<float>();
      for (int64_t i = 0; i < m; ++i) {
        const float* row = pc + (cm == 1 ? 0 : i * cn);
        float* out = py + i * n;
        if (cn == 1) {
          for (int64_t j = 0; j < n; ++j) {
            out[j] = beta * row[0];
          }
        } else {
          for (int64_t j = 0; j < n; ++j) {
            out[j] = beta * row[j];
          }
        }
      }
    } else if (!plan->hasProduct()) {
      std::memset(py, 0, static_cast<size_t>(m * n) * sizeof(float));
    }
    if (plan->hasProduct()) plan->run(io.in(0).data<float>(), io.in(1).data<float>(), py);
  });
});

}  // namespace
}  // namespace xtrain::device
