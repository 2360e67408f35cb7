// FLOAT16 partials for MatMul and MatMulT (see matmul_half_partials.hpp). A plain loop rather than
// oneDNN: oneDNN's f16 matmul accumulates in f32, which is the "float" partials this kernel exists
// to differ from. The matmuls that ask for half partials are FLOAT16 models' and small enough here.
#include "device/kernels/matmul_half_partials.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace xtrain::device {

bool wantsHalfPartials(const KernelSpec& spec) {
  const std::string value = spec.attrs.getString("__partials_type", "");
  std::string t = value;
  std::transform(t.begin(), t.end(), t.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t.empty() || t == "float") return false;
  if (t != "half") {
    spec.fail("partials type '{}' is not 'float' or 'half' (any letter case)", value);
  }
  auto isHalf = [&](const TensorInfo& info) {
    return info.isSet() && info.dataType() == DataType::FLOAT16;
  };
  return spec.inputs.size() >= 2 && isHalf(spec.inputs[0]) && isHalf(spec.inputs[1]) &&
         !spec.outputs.empty() && isHalf(spec.outputs[0]);
}

namespace {

// Element offsets of each output batch entry in A and B (batch dimensions broadcast numpy's way).
struct BatchOffsets {
  std::vector<int64_t> a, b;
};

BatchOffsets batchOffsets(const Shape& a, const Shape& b, int64_t matA, int64_t matB) {
  const size_t ra = a.size() - 2, rb = b.size() - 2, rank = std::max(ra, rb);
  Shape dims(rank), strideA(rank, 0), strideB(rank, 0);
  int64_t sa = matA, sb = matB;
  for (size_t i = rank; i-- > 0;) {
    const int64_t da = i < rank - ra ? 1 : a[i - (rank - ra)];
    const int64_t db = i < rank - rb ? 1 : b[i - (rank - rb)];
    dims[i] = da == 1 ? db : da;
    strideA[i] = da == 1 ? 0 : sa;
    strideB[i] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  BatchOffsets out;
  const int64_t count = shapeNelms(dims);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat, oa = 0, ob = 0;
    for (size_t i = rank; i-- > 0;) {
      const int64_t idx = rest % dims[i];
      rest /= dims[i];
      oa += idx * strideA[i];
      ob += idx * strideB[i];
    }
    out.a.push_back(oa);
    out.b.push_back(ob);
  }
  return out;
}

float roundedToHalf(float x) {
  return halfToFloat(floatToHalf(x));
}

class HalfPartialsMatMul final : public Kernel {
 public:
  HalfPartialsMatMul(const Shape& a, const Shape& b, bool transA, bool transB, float alpha)
      : transA_(transA), transB_(transB), alpha_(alpha) {
    const size_t ra = a.size(), rb = b.size();
    m_ = transA ? a[ra - 1] : a[ra - 2];
    k_ = transA ? a[ra - 2] : a[ra - 1];
    n_ = transB ? b[rb - 2] : b[rb - 1];
    offsets_ = batchOffsets(a, b, m_ * k_, k_ * n_);
  }

  void run(const KernelIO& io) override {
    const auto* a = reinterpret_cast<const uint16_t*>(io.in(0).raw());
    const auto* b = reinterpret_cast<const uint16_t*>(io.in(1).raw());
    auto* y = reinterpret_cast<uint16_t*>(io.out(0).raw());
    std::vector<float> rowA(static_cast<size_t>(k_)), colB(static_cast<size_t>(k_));
    for (size_t batch = 0; batch < offsets_.a.size(); ++batch) {
      const uint16_t* pa = a + offsets_.a[batch];
      const uint16_t* pb = b + offsets_.b[batch];
      uint16_t* py = y + static_cast<int64_t>(batch) * m_ * n_;
      for (int64_t i = 0; i < m_; ++i) {
        for (int64_t kk = 0; kk < k_; ++kk) {
          rowA[kk] = halfToFloat(pa[transA_ ? kk * m_ + i : i * k_ + kk]);
        }
        for (int64_t j = 0; j < n_; ++j) {
          for (int64_t kk = 0; kk < k_; ++kk) {
            colB[kk] = halfToFloat(pb[transB_ ? j * k_ + kk : kk * n_ + j]);
          }
          py[i * n_ + j] = floatToHalf(alpha_ * dot(rowA, colB));
        }
      }
    }
  }

 private:
  // The AMP's groups summed in FLOAT, each group's sum added to a FLOAT16 partial.
  float dot(const std::vector<float>& x, const std::vector<float>& w) const {
    float partial = 0.0f;
    for (int64_t start = 0; start < k_; start += kAmpProductsPerPartial) {
      const int64_t end = std::min(k_, start + kAmpProductsPerPartial);
      float group = 0.0f;
      for (int64_t kk = start; kk < end; ++kk) group += x[kk] * w[kk];
      partial = roundedToHalf(partial + group);
    }
    return partial;
  }

  bool transA_, transB_;
  float alpha_;
  int64_t m_ = 0, k_ = 0, n_ = 0;
  BatchOffsets offsets_;
};

}  // namespace

std::unique_ptr<Kernel> makeHalfPartialsMatMul(const KernelSpec& spec, const Shape& a,
                                               const Shape& b, bool transA, bool transB,
                                               float alpha) {
  if (a.size() < 2 || b.size() < 2) {
    spec.fail("operands must have rank >= 2, got {} and {}", shapeToString(a), shapeToString(b));
  }
  const int64_t ka = transA ? a[a.size() - 2] : a.back();
  const int64_t kb = transB ? b.back() : b[b.size() - 2];
  if (ka != kb) spec.fail("inner dimensions {} and {} differ", ka, kb);
  return std::make_unique<HalfPartialsMatMul>(a, b, transA, transB, alpha);
}

}  // namespace xtrain::device
