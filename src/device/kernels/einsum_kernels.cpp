// Kernels of Einsum and GeneralEinsum (FLOAT; FLOAT16 runs promoted).
//
// Two operands whose labels are each shared by two of (A, B, output) without repeats or
// broadcasting (matrix products, batched or not, attention's "bhqd,bhkd->bhqk", outer products,
// ...) run as one oneDNN batched matmul: A is permuted into [batch, m, k], B into [batch, k, n]
// (a copy only when the labels are not already in that order), and the [batch, m, n] product
// permuted into the output's order. Three or more operands are contracted two at a time. Every
// other equation runs a loop nest over all labels, output
// labels outermost and summed labels innermost, with per-operand strides (0 where an operand lacks
// a label or broadcasts it; repeated labels add their strides, which reads or writes diagonals).
#include <algorithm>
#include <cstring>
#include <map>

#include "device/kernel.hpp"
#include "device/kernels/dnnl_engine.hpp"

namespace xtrain::device {
namespace {

struct Terms {
  std::vector<std::string> inputs;
  std::string output;
};

Terms splitEquation(const KernelSpec& spec) {
  const std::string eq = spec.attrs.getString("equation");
  Terms t;
  const size_t arrow = eq.find("->");
  if (arrow == std::string::npos) spec.fail("equation '{}' is not canonical", eq);
  const std::string lhs = eq.substr(0, arrow);
  t.output = eq.substr(arrow + 2);
  size_t start = 0;
  for (;;) {
    const size_t comma = lhs.find(',', start);
    t.inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (t.inputs.size() != spec.inputs.size()) spec.fail("equation '{}' does not fit the inputs", eq);
  return t;
}

std::vector<int64_t> rowMajorStrides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Copies src (strided view with `dims` and `strides`, in elements) into dense dst.
void gatherStrided(const float* src, float* dst, const Shape& dims,
                   const std::vector<int64_t>& strides) {
  const size_t rank = dims.size();
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t is = strides[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (int64_t base = 0; base < total; base += inner) {
    const float* s = src + off;
    float* __restrict d = dst + base;
    if (is == 1) {
      std::memcpy(d, s, static_cast<size_t>(inner) * sizeof(float));
    } else {
      for (int64_t j = 0; j < inner; ++j) d[j] = s[j * is];
    }
    for (size_t k = rank - 1; k-- > 0;) {
      off += strides[k];
      if (++idx[k] < dims[k]) break;
      off -= strides[k] * dims[k];
      idx[k] = 0;
    }
  }
}

struct Label {
  char c;
  int64_t size;
};

// The general loop nest.
class LoopEinsum final : public Kernel {
 public:
  LoopEinsum(const KernelSpec& spec, const Terms& t) {
    std::map<char, int64_t> size;
    for (size_t k = 0; k < t.inputs.size(); ++k) {
      const Shape& s = spec.inputs[k].shape();
      if (s.size() != t.inputs[k].size()) spec.fail("term '{}' does not fit", t.inputs[k]);
      for (size_t p = 0; p < s.size(); ++p) {
        int64_t& v = size[t.inputs[k][p]];
        v = std::max(v, s[p]);
      }
    }
    const Shape& os = spec.outputs.at(0).shape();
    if (os.size() != t.output.size()) spec.fail("output term '{}' does not fit", t.output);
    for (size_t p = 0; p < os.size(); ++p) size[t.output[p]] = os[p];
    // Output labels first (in output order), then the summed ones.
    std::vector<char> order;
    for (char c : t.output) {
      if (std::find(order.begin(), order.end(), c) == order.end()) order.push_back(c);
    }
    numOut_ = order.size();
    for (const auto& [c, s] : size) {
      if (std::find(order.begin(), order.end(), c) == order.end()) order.push_back(c);
    }
    for (char c : order) {
      dims_.push_back(size[c]);
      empty_ = empty_ || size[c] == 0;
    }
    auto stridesFor = [&](const std::string& term, const Shape& shape) {
      const std::vector<int64_t> rm = rowMajorStrides(shape);
      std::vector<int64_t> st(order.size(), 0);
      for (size_t p = 0; p < term.size(); ++p) {
        const size_t l =
            static_cast<size_t>(std::find(order.begin(), order.end(), term[p]) - order.begin());
        if (shape[p] != 1 || size[term[p]] == 1) st[l] += rm[p];
      }
      return st;
    };
    for (size_t k = 0; k < t.inputs.size(); ++k) {
      in_.push_back(stridesFor(t.inputs[k], spec.inputs[k].shape()));
    }
    out_ = stridesFor(t.output, os);
    offs_.resize(in_.size());
    ptrs_.resize(in_.size());
    idx_.resize(dims_.size());
  }

  void run(const KernelIO& io) override {
    HostTensor& y = io.out(0);
    y.fillZero();
    if (empty_) return;
    float* out = y.data<float>();
    const size_t n = in_.size();
    for (size_t k = 0; k < n; ++k) ptrs_[k] = io.in(k).data<float>();
    const size_t L = dims_.size();
    if (L == 0) {
      float p = 1;
      for (size_t k = 0; k < n; ++k) p *= ptrs_[k][0];
      out[0] = p;
      return;
    }
    const size_t last = L - 1;
    const int64_t inner = dims_[last];
    const bool innerSummed = last >= numOut_;
    std::fill(idx_.begin(), idx_.end(), 0);
    std::fill(offs_.begin(), offs_.end(), 0);
    int64_t oOff = 0;
    for (;;) {
      if (n == 1) {
        const float* __restrict a = ptrs_[0] + offs_[0];
        const int64_t sa = in_[0][last];
        if (innerSummed) {
          float acc = 0;
          for (int64_t j = 0; j < inner; ++j) acc += a[j * sa];
          out[oOff] += acc;
        } else {
          const int64_t so = out_[last];
          for (int64_t j = 0; j < inner; ++j) out[oOff + j * so] += a[j * sa];
        }
      } else if (n == 2) {
        const float* __restrict a = ptrs_[0] + offs_[0];
        const float* __restrict b = ptrs_[1] + offs_[1];
        const int64_t sa = in_[0][last], sb = in_[1][last];
        if (innerSummed) {
          float acc = 0;
          for (int64_t j = 0; j < inner; ++j) acc += a[j * sa] * b[j * sb];
          out[oOff] += acc;
        } else {
          const int64_t so = out_[last];
          for (int64_t j = 0; j < inner; ++j) out[oOff + j * so] += a[j * sa] * b[j * sb];
        }
      } else {
        const int64_t so = innerSummed ? 0 : out_[last];
        for (int64_t j = 0; j < inner; ++j) {
          float p = 1;
          for (size_t k = 0; k < n; ++k) p *= ptrs_[k][offs_[k] + j * in_[k][last]];
          out[oOff + j * so] += p;
        }
      }
      // Advance the odometer over labels 0..last-1.
      size_t d = last;
      for (;;) {
        if (d == 0) return;
        --d;
        ++idx_[d];
        oOff += out_[d];
        for (size_t k = 0; k < n; ++k) offs_[k] += in_[k][d];
        if (idx_[d] < dims_[d]) break;
        oOff -= out_[d] * dims_[d];
        for (size_t k = 0; k < n; ++k) offs_[k] -= in_[k][d] * dims_[d];
        idx_[d] = 0;
      }
    }
  }

 private:
  size_t numOut_ = 0;
  bool empty_ = false;
  std::vector<int64_t> dims_;
  std::vector<std::vector<int64_t>> in_;
  std::vector<int64_t> out_;
  std::vector<int64_t> offs_, idx_;
  std::vector<const float*> ptrs_;
};

// A permutation of a dense tensor into the label order `want`, or none when it is the identity.
struct Permute {
  bool identity = true;
  Shape dims;                    // in the new order
  std::vector<int64_t> strides;  // source strides in the new order
  int64_t size = 0;
};

Permute permuteTo(const std::string& term, const Shape& shape, const std::string& want) {
  Permute p;
  const std::vector<int64_t> rm = rowMajorStrides(shape);
  p.size = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    const size_t at = term.find(want[i]);
    p.dims.push_back(shape[at]);
    p.strides.push_back(rm[at]);
    p.size *= shape[at];
  }
  p.identity = term == want;
  return p;
}

// Two-operand contractions as a batched matmul.
class MatMulEinsum final : public Kernel {
 public:
  MatMulEinsum(const KernelSpec& spec, const Terms& t, const std::string& batch,
               const std::string& m, const std::string& n, const std::string& k) {
    auto sizeOf = [&](const std::string& labels) {
      int64_t s = 1;
      for (char c : labels) {
        const size_t a = t.inputs[0].find(c);
        s *= a != std::string::npos ? spec.inputs[0].shape()[a]
                                    : spec.inputs[1].shape()[t.inputs[1].find(c)];
      }
      return s;
    };
    B_ = sizeOf(batch);
    M_ = sizeOf(m);
    N_ = sizeOf(n);
    K_ = sizeOf(k);
    a_ = permuteTo(t.inputs[0], spec.inputs[0].shape(), batch + m + k);
    b_ = permuteTo(t.inputs[1], spec.inputs[1].shape(), batch + k + n);
    // The product [batch, m, n] viewed in the output's order, to scatter it back.
    const std::string prodTerm = batch + m + n;
    Shape prodShape;
    for (char c : prodTerm) prodShape.push_back(spec.outputs[0].shape()[t.output.find(c)]);
    y_ = permuteTo(prodTerm, prodShape, t.output);
    if (!a_.identity) aBuf_.resize(static_cast<size_t>(a_.size));
    if (!b_.identity) bBuf_.resize(static_cast<size_t>(b_.size));
    if (!y_.identity) yBuf_.resize(static_cast<size_t>(y_.size));
    if (B_ * M_ * N_ * K_ == 0) return;
    using dnnl_util::plainDesc;
    prim_ = dnnl_util::create(spec, "matmul", [&] {
      return dnnl_util::makePrimitive<dnnl::matmul>(dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(plainDesc({B_, M_, K_}), plainDesc({B_, K_, N_}),
                             plainDesc({B_, M_, N_})),
          dnnl_util::userScratchpadAttr(), dnnl_util::engine()));
    });
    scratch_.resize(prim_.scratchpadBytes() + 64);
  }

  void run(const KernelIO& io) override {
    HostTensor& y = io.out(0);
    if (B_ * M_ * N_ * K_ == 0) {
      y.fillZero();
      return;
    }
    const float* a = io.in(0).data<float>();
    const float* b = io.in(1).data<float>();
    if (!a_.identity) {
      gatherStrided(a, aBuf_.data(), a_.dims, a_.strides);
      a = aBuf_.data();
    }
    if (!b_.identity) {
      gatherStrided(b, bBuf_.data(), b_.dims, b_.strides);
      b = bBuf_.data();
    }
    float* prod = y_.identity ? y.data<float>() : yBuf_.data();
    using dnnl_util::plainDesc;
    using dnnl_util::wrap;
    std::byte* pad = alignedScratch();
    dnnl_util::execute(prim_,
                       {{DNNL_ARG_SRC, wrap(plainDesc({B_, M_, K_}), a)},
                        {DNNL_ARG_WEIGHTS, wrap(plainDesc({B_, K_, N_}), b)},
                        {DNNL_ARG_DST, wrap(plainDesc({B_, M_, N_}), prod)}},
                       pad);
    if (!y_.identity) gatherStrided(prod, y.data<float>(), y_.dims, y_.strides);
  }

 private:
  std::byte* alignedScratch() {
    auto p = reinterpret_cast<uintptr_t>(scratch_.data());
    return scratch_.data() + ((64 - p % 64) % 64);
  }

  int64_t B_ = 1, M_ = 1, N_ = 1, K_ = 1;
  Permute a_, b_, y_;
  std::vector<float> aBuf_, bBuf_, yBuf_;
  dnnl_util::Primitive prim_;
  std::vector<std::byte> scratch_;
};

bool hasRepeats(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.find(s[i], i + 1) != std::string::npos) return true;
  }
  return false;
}

std::unique_ptr<Kernel> makeEinsumOf(const KernelSpec& spec, const Terms& t);

// Three or more operands: contracted left to right, two at a time, so that every step can take
// the matmul path (and no step loops over more labels than its two operands have). An
// intermediate keeps the labels the output or a later operand still needs.
class ChainEinsum final : public Kernel {
 public:
  ChainEinsum(const KernelSpec& spec, const Terms& t) {
    std::map<char, int64_t> size;
    for (size_t k = 0; k < t.inputs.size(); ++k) {
      for (size_t p = 0; p < t.inputs[k].size(); ++p) {
        int64_t& v = size[t.inputs[k][p]];
        v = std::max(v, spec.inputs[k].shape()[p]);
      }
    }
    std::string cur = t.inputs[0];
    TensorInfo curInfo = spec.inputs[0];
    for (size_t k = 1; k < t.inputs.size(); ++k) {
      const bool last = k + 1 == t.inputs.size();
      std::string next;
      Shape nextShape;
      if (last) {
        next = t.output;
        nextShape = spec.outputs[0].shape();
      } else {
        std::string later = t.output;
        for (size_t j = k + 1; j < t.inputs.size(); ++j) later += t.inputs[j];
        for (char c : cur + t.inputs[k]) {
          if (later.find(c) == std::string::npos || next.find(c) != std::string::npos) continue;
          next += c;
          // The size within the two operands (a label both broadcast stays 1).
          int64_t s = 1;
          const size_t a = cur.find(c), b = t.inputs[k].find(c);
          if (a != std::string::npos) s = std::max(s, curInfo.shape()[a]);
          if (b != std::string::npos) s = std::max(s, spec.inputs[k].shape()[b]);
          nextShape.push_back(s);
        }
      }
      KernelSpec step;
      step.type = spec.type;
      step.domain = spec.domain;
      step.description = spec.description;
      step.inputs = {curInfo, spec.inputs[k]};
      step.outputs = {TensorInfo(DataType::FLOAT, nextShape)};
      Terms st{{cur, t.inputs[k]}, next};
      step.attrs.set("equation", cur + "," + t.inputs[k] + "->" + next);
      steps_.push_back(makeEinsumOf(step, st));
      if (!last) temps_.emplace_back(step.outputs[0]);
      cur = next;
      curInfo = step.outputs[0];
    }
  }

  void run(const KernelIO& io) override {
    for (size_t k = 0; k < steps_.size(); ++k) {
      HostTensor* ins[2] = {k == 0 ? &io.in(0) : &temps_[k - 1], &io.in(k + 1)};
      HostTensor* outs[1] = {k + 1 == steps_.size() ? &io.out(0) : &temps_[k]};
      KernelIO sub;
      sub.inputs = std::span<HostTensor* const>(ins, 2);
      sub.outputs = std::span<HostTensor* const>(outs, 1);
      sub.seed = io.seed;
      steps_[k]->run(sub);
    }
  }

 private:
  std::vector<std::unique_ptr<Kernel>> steps_;
  std::vector<HostTensor> temps_;
};

std::unique_ptr<Kernel> makeEinsumOf(const KernelSpec& spec, const Terms& t) {
  if (t.inputs.size() > 2) return std::make_unique<ChainEinsum>(spec, t);
  if (t.inputs.size() == 2) {
    const std::string& a = t.inputs[0];
    const std::string& b = t.inputs[1];
    const std::string& o = t.output;
    bool ok = !hasRepeats(a) && !hasRepeats(b) && !hasRepeats(o);
    std::string batch, m, n, k;
    auto sizeIn = [&](size_t op, char c) {
      const std::string& term = t.inputs[op];
      return spec.inputs[op].shape()[term.find(c)];
    };
    for (char c : o) {
      const bool inA = a.find(c) != std::string::npos, inB = b.find(c) != std::string::npos;
      if (inA && inB) {
        batch += c;
        ok = ok && sizeIn(0, c) == sizeIn(1, c);
      } else if (inA) {
        m += c;
      } else if (inB) {
        n += c;
      } else {
        ok = false;
      }
    }
    for (char c : a) {
      if (o.find(c) != std::string::npos) continue;
      if (b.find(c) == std::string::npos) {
        ok = false;  // summed in A alone
      } else {
        k += c;
        ok = ok && sizeIn(0, c) == sizeIn(1, c);
      }
    }
    for (char c : b) {
      if (o.find(c) == std::string::npos && a.find(c) == std::string::npos) ok = false;
    }
    if (ok) return std::make_unique<MatMulEinsum>(spec, t, batch, m, n, k);
  }
  return std::make_unique<LoopEinsum>(spec, t);
}

std::unique_ptr<Kernel> makeEinsum(const KernelSpec& spec) {
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (spec.inputs[i].dataType() != DataType::FLOAT) {
      spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
    }
  }
  return makeEinsumOf(spec, splitEquation(spec));
}

XT_REGISTER_KERNEL("ai.onnx", "Einsum", makeEinsum);
XT_REGISTER_KERNEL("ai.xtrain", "GeneralEinsum", makeEinsum);

}  // namespace
}  // namespace xtrain::device
