// Shared by the recurrent kernels (rnn_kernels.cpp: LSTM, GRU, RNN; rnn_grad_kernels.cpp: their
// gradients): the op's static configuration, the GEMM and activation helpers, and the layout of the
// state the forward op saves for the backward one.
//
// Saved (internal output, FLOAT [dirs, seq, batch, S]), per step t (in time order) and batch entry:
//   LSTM S = 6H: pre-activations a_i a_o a_f a_c (peephole terms included, before clip) | h_t | c_t
//   GRU  S = 5H: pre-activations a_z a_r a_h | h_t | e_t, where e_t = h_{t-1}.R_h^T + Rb_h when
//               linear_before_reset is 1, else r_t*h_{t-1} (the operand of R_h either way)
//   RNN  S = 2H: pre-activation a | h_t
// sequence_lens: a batch entry's steps at t >= its length keep its state (Saved holds the kept
// state there) and write 0 to Y; backward gives those steps zero gate gradients and passes the
// state gradients through.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/kernel_threads.hpp"
#include "device/kernels/vector_math.hpp"

#pragma GCC visibility push(default)

namespace xtrain::device::rnn_detail {

enum class Cell { Lstm, Gru, Rnn };
enum class Act { Sigmoid, Tanh, Relu };

// C[M,N] = op(A).op(B) + beta*C, row-major with leading dimensions; oneDNN's sgemm.
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (beta == 0.0f) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    }
    return;
  }
  const dnnl::status s =
      dnnl::sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  if (s != dnnl::status::success) {
    throw error("rnn sgemm(M={}, N={}, K={}) failed in oneDNN (status {})", m, n, k,
                static_cast<int>(s));
  }
}

// The per-step work (one small GEMM over the batch and H-long elementwise rows) is too small to
// pay for an OpenMP team's barriers, which cost far more than the arithmetic when the cores are
// shared; below this many multiply-adds per step GEMM the time loop runs on the calling thread
// alone. The all-steps GEMMs (input projection, dX, dW, dR) keep the caller's thread count.
constexpr int64_t kSerialStepMacs = int64_t{1} << 24;

// Limits the calling thread's kernel threads to one while alive (when `serial`).
class SerialScope {
 public:
  explicit SerialScope(bool serial) : saved_(kernelThreadsForThisThread()), active_(serial) {
    if (active_) setKernelThreadsForThisThread(1);
  }
  ~SerialScope() {
    if (active_) setKernelThreadsForThisThread(saved_);
  }
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;

 private:
  int saved_;
  bool active_;
};

// Elementwise math on 4 floats at a time (vmath::V4) with the compiler's vector extensions: without
// -fno-trapping-math GCC will not if-convert the selects of a clamp or of Relu, and libm's expf and
// tanhf are scalar calls, so plain loops over std::exp / std::tanh ran one element at a time and
// took a third of an LSTM's training step.
using vmath::V4;

inline V4 splat(float v) {
  return V4{} + v;
}

inline V4 vmin(V4 a, V4 b) {
  return a < b ? a : b;
}
inline V4 vmax(V4 a, V4 b) {
  return a > b ? a : b;
}

// exp(x) with x clamped to [-87, 88] (relative error below 2e-7; exp(-87) ~ 1.6e-38 stands in for
// smaller results, so 2^n stays a normal float); NaN propagates.
inline V4 vexp(V4 x) {
  const V4 y = vmath::expInRange(vmin(vmax(x, splat(-87.0f)), splat(88.0f)));
  return x == x ? y : x;
}

inline V4 vsigmoid(V4 x) {
  return 1.0f / (1.0f + vexp(-x));
}

// tanh(x) = sign(x) e / (e + 2) with e = expm1(2|x|): a Taylor polynomial of expm1 for 2|x| < 1
// (where exp(u) - 1 would cancel), exp otherwise.
inline V4 vtanh(V4 x) {
  const V4 u = vmax(x, -x) * 2.0f;
  const V4 q = vmath::horner(u, 1.0f / 39916800.0f, 1.0f / 3628800.0f, 1.0f / 362880.0f,
                             1.0f / 40320.0f, 1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f,
                             1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f);
  const V4 e = u < 1.0f ? q * u : vexp(u) - 1.0f;
  const V4 t = e / (e + 2.0f);
  return x < 0.0f ? -t : t;
}

// y[j] = f(a[j]) (and y[j] = f(a[j], b[j])) over n elements, 4 at a time; the tail is padded.
template <typename F>
inline void map1(const float* a, float* y, int64_t n, F f) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    V4 v;
    std::memcpy(&v, a + j, sizeof(V4));
    v = f(v);
    std::memcpy(y + j, &v, sizeof(V4));
  }
  if (j < n) {
    V4 v{};
    std::memcpy(&v, a + j, static_cast<size_t>(n - j) * sizeof(float));
    v = f(v);
    std::memcpy(y + j, &v, static_cast<size_t>(n - j) * sizeof(float));
  }
}
template <typename F>
inline void map2(const float* a, const float* b, float* y, int64_t n, F f) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    V4 v, w;
    std::memcpy(&v, a + j, sizeof(V4));
    std::memcpy(&w, b + j, sizeof(V4));
    v = f(v, w);
    std::memcpy(y + j, &v, sizeof(V4));
  }
  if (j < n) {
    V4 v{}, w{};
    const size_t bytes = static_cast<size_t>(n - j) * sizeof(float);
    std::memcpy(&v, a + j, bytes);
    std::memcpy(&w, b + j, bytes);
    v = f(v, w);
    std::memcpy(y + j, &v, bytes);
  }
}

// y = act(clip(a)) over n elements (clip <= 0: none). y may be a.
inline void activate(Act act, const float* a, float* y, int64_t n, float clip) {
  const V4 lo = splat(clip > 0.0f ? -clip : -INFINITY);
  const V4 hi = splat(clip > 0.0f ? clip : INFINITY);
  switch (act) {
    case Act::Sigmoid: map1(a, y, n, [&](V4 v) { return vsigmoid(vmin(vmax(v, lo), hi)); }); break;
    case Act::Tanh: map1(a, y, n, [&](V4 v) { return vtanh(vmin(vmax(v, lo), hi)); }); break;
    case Act::Relu:
      map1(a, y, n, [&](V4 v) { return vmax(vmin(vmax(v, lo), hi), splat(0.0f)); });
      break;
  }
}

// d = act'(clip(a)) * [|a| <= clip], from the activation's output y.
inline void derivative(Act act, const float* a, const float* y, float* d, int64_t n, float clip) {
  switch (act) {
    case Act::Sigmoid: map1(y, d, n, [](V4 v) { return v * (1.0f - v); }); break;
    case Act::Tanh: map1(y, d, n, [](V4 v) { return 1.0f - v * v; }); break;
    case Act::Relu: map1(y, d, n, [](V4 v) { return v > 0.0f ? splat(1.0f) : splat(0.0f); }); break;
  }
  if (clip > 0.0f) {
    map2(a, d, d, n,
         [clip](V4 av, V4 dv) { return (av >= -clip) & (av <= clip) ? dv : splat(0.0f); });
  }
}

inline Act parseAct(const KernelSpec& spec, const std::string& s) {
  if (s == "Sigmoid") return Act::Sigmoid;
  if (s == "Tanh") return Act::Tanh;
  if (s == "Relu") return Act::Relu;
  spec.fail("activation '{}' is not supported (Sigmoid, Tanh, Relu)", s);
}

// The static configuration of one op, from its canonical attributes and X/R shapes.
struct Config {
  Cell cell = Cell::Lstm;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, layout = 0, gates = 1, width = 0;
  bool reverse = false;  // direction "reverse" (direction 0 runs backwards)
  std::vector<Act> acts;
  int functions = 1;
  float clip = 0.0f;
  bool inputForget = false;
  bool lbr = false;

  Config(const KernelSpec& spec, Cell c) : cell(c) {
    const Attributes& a = spec.attrs;
    gates = c == Cell::Lstm ? 4 : c == Cell::Gru ? 3 : 1;
    functions = c == Cell::Lstm ? 3 : c == Cell::Gru ? 2 : 1;
    layout = a.getInt("layout", 0);
    const std::string dir = a.getString("direction", "forward");
    dirs = dir == "bidirectional" ? 2 : 1;
    reverse = dir == "reverse";
    hidden = a.getInt("hidden_size");
    const Shape& x = spec.inputs.at(0).shape();
    if (x.size() != 3) spec.fail("X must have rank 3, got {}", shapeToString(x));
    seq = x[layout == 0 ? 0 : 1];
    batch = x[layout == 0 ? 1 : 0];
    input = x[2];
    for (const auto& s : a.getStrings("activations")) acts.push_back(parseAct(spec, s));
    if (static_cast<int64_t>(acts.size()) != functions * dirs) {
      spec.fail("{} activations given, expected {}", acts.size(), functions * dirs);
    }
    clip = a.has("clip") ? a.getFloat("clip") : 0.0f;
    inputForget = a.getInt("input_forget", 0) != 0;
    lbr = a.getInt("linear_before_reset", 0) != 0;
    width = (c == Cell::Lstm ? 6 : c == Cell::Gru ? 5 : 2) * hidden;
  }
  int64_t gh() const { return gates * hidden; }
  bool serialSteps() const { return batch * gh() * hidden < kSerialStepMacs; }
  bool backwards(int64_t d) const { return d == 1 || reverse; }
  Act act(int64_t d, int k) const { return acts[static_cast<size_t>(d * functions + k)]; }
  // Offsets of Y(t, d, b, 0) and of a state (initial_h, Y_h, ...) (d, b, 0).
  int64_t yOff(int64_t t, int64_t d, int64_t b) const {
    return (layout == 0 ? (t * dirs + d) * batch + b : (b * seq + t) * dirs + d) * hidden;
  }
  int64_t stateOff(int64_t d, int64_t b) const {
    return (layout == 0 ? d * batch + b : b * dirs + d) * hidden;
  }
  // Leading dimension of a state's rows for one direction.
  int64_t stateLd() const { return layout == 0 ? hidden : dirs * hidden; }
  float* savedRow(float* saved, int64_t d, int64_t t, int64_t b) const {
    return saved + ((d * seq + t) * batch + b) * width;
  }
};

inline void requireFloatExcept(const KernelSpec& spec, size_t skip) {
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (i != skip && spec.hasInput(i) && spec.inputs[i].dataType() != DataType::FLOAT) {
      spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
    }
  }
}

// sequence_lens as int64 in `lens`, checked against [0, seq]; returns whether any is shorter
// than seq (the only case that needs masking).
inline bool readLengths(const std::string& desc, const Config& c, const HostTensor* t,
                        std::vector<int64_t>& lens) {
  lens.assign(static_cast<size_t>(c.batch), c.seq);
  if (t == nullptr) return false;
  bool shorter = false;
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t v =
        t->dataType() == DataType::INT64 ? t->data<int64_t>()[b] : int64_t{t->data<int32_t>()[b]};
    if (v < 0 || v > c.seq) {
      throw error("{}: sequence_lens[{}] is {}; expected a length in [0, {}] (seq_length)", desc, b,
                  v, c.seq);
    }
    lens[static_cast<size_t>(b)] = v;
    shorter = shorter || v < c.seq;
  }
  return shorter;
}

// active[b] = 1 when step t is within batch entry b's sequence.
inline void activeRows(const std::vector<int64_t>& lens, int64_t t, std::vector<uint8_t>& active) {
  active.resize(lens.size());
  for (size_t b = 0; b < lens.size(); ++b) active[b] = t < lens[b] ? 1 : 0;
}

// X time-major: X itself (layout 0) or a transposed copy in `buf` (layout 1: [batch, seq, in]).
inline const float* timeMajor(const Config& c, const float* x, std::vector<float>& buf) {
  if (c.layout == 0) return x;
  buf.resize(static_cast<size_t>(c.seq * c.batch * c.input));
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t t = 0; t < c.seq; ++t) {
      std::memcpy(buf.data() + (t * c.batch + b) * c.input, x + (b * c.seq + t) * c.input,
                  static_cast<size_t>(c.input) * sizeof(float));
    }
  }
  return buf.data();
}

// Points `rows` at consecutive h-float rows of scratch, in order (the per-gate rows of one batch
// entry).
template <typename... Rows>
void carveRows(float* scratch, int64_t h, Rows&... rows) {
  ((rows = scratch, scratch += h), ...);
}

// What the forward and the backward kernel share: the configuration, the op's description (for
// errors), and scratch for a time-major X, zero states and the sequence lengths.
class RnnKernelBase : public Kernel {
 protected:
  RnnKernelBase(const KernelSpec& spec, Cell cell)
      : c_(spec, cell), desc_(spec.description), lstm_(cell == Cell::Lstm) {}

  Config c_;
  std::string desc_;
  bool lstm_;
  std::vector<float> xt_, zeros_;
  std::vector<int64_t> lens_;
  std::vector<uint8_t> active_;
};

// The factory of kernel K (RnnKernelBase's forward or backward) for cell C.
template <typename K, Cell C>
std::unique_ptr<Kernel> makeRnnKernel(const KernelSpec& spec) {
  return std::make_unique<K>(spec, C);
}

}  // namespace xtrain::device::rnn_detail

#pragma GCC visibility pop
