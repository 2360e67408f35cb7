// Kernels for the recurrent ops LSTM, GRU and RNN (ai.onnx) and their gradients LSTMGrad, GRUGrad
// and RNNGrad (ai.xtrain); the ops' canonical form is described in ir/ops/rnn_ops.cpp.
//
// Forward, per direction: the input projection X.W^T of every time step is one GEMM; each step
// then does one GEMM h_{t-1}.R^T over the batch (two for a GRU with linear_before_reset 0, whose
// candidate gate multiplies (r*h_{t-1}) by R_h) and elementwise gate arithmetic over H-long rows.
// Everything runs time-major internally: a batch-first X (layout 1) is transposed once into
// scratch, and Y and the states are addressed through their layout.
//
// Saved (internal output, FLOAT [dirs, seq, batch, S]), per step t (in time order) and batch entry:
//   LSTM S = 6H: pre-activations a_i a_o a_f a_c (peephole terms included, before clip) | h_t | c_t
//   GRU  S = 5H: pre-activations a_z a_r a_h | h_t | e_t, where e_t = h_{t-1}.R_h^T + Rb_h when
//               linear_before_reset is 1, else r_t*h_{t-1} (the operand of R_h either way)
//   RNN  S = 2H: pre-activation a | h_t
// Backward, per direction, walks the steps in reverse processing order: elementwise gate
// gradients into dG [seq, batch, gates*H] and one GEMM dG_t.R for dh_{t-1} per step; then dX, dW
// and dR are one GEMM each over all steps (dR pairs dG_t with h_{t-1}, which Saved holds one step
// away), and dB is dG's column sums. Activations are recomputed from the saved pre-activations.
// sequence_lens: a batch entry's steps at t >= its length keep its state (Saved holds the kept
// state there) and write 0 to Y; backward gives those steps zero gate gradients and passes the
// state gradients through.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/kernel_threads.hpp"

namespace xtrain::device {
namespace {

enum class Cell { Lstm, Gru, Rnn };
enum class Act { Sigmoid, Tanh, Relu };

// C[M,N] = op(A).op(B) + beta*C, row-major with leading dimensions; oneDNN's sgemm.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
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

// y = act(clip(a)) over n elements (clip <= 0: none).
void activate(Act act, const float* a, float* y, int64_t n, float clip) {
  if (clip > 0.0f) {
    for (int64_t j = 0; j < n; ++j) y[j] = std::min(std::max(a[j], -clip), clip);
    a = y;
  }
  switch (act) {
    case Act::Sigmoid:
      for (int64_t j = 0; j < n; ++j) y[j] = 1.0f / (1.0f + std::exp(-a[j]));
      break;
    case Act::Tanh:
      for (int64_t j = 0; j < n; ++j) y[j] = std::tanh(a[j]);
      break;
    case Act::Relu:
      for (int64_t j = 0; j < n; ++j) y[j] = std::max(a[j], 0.0f);
      break;
  }
}

// d = act'(clip(a)) * [|a| <= clip], from the activation's output y.
void derivative(Act act, const float* a, const float* y, float* d, int64_t n, float clip) {
  switch (act) {
    case Act::Sigmoid:
      for (int64_t j = 0; j < n; ++j) d[j] = y[j] * (1.0f - y[j]);
      break;
    case Act::Tanh:
      for (int64_t j = 0; j < n; ++j) d[j] = 1.0f - y[j] * y[j];
      break;
    case Act::Relu:
      for (int64_t j = 0; j < n; ++j) d[j] = y[j] > 0.0f ? 1.0f : 0.0f;
      break;
  }
  if (clip > 0.0f) {
    for (int64_t j = 0; j < n; ++j) d[j] = (a[j] >= -clip && a[j] <= clip) ? d[j] : 0.0f;
  }
}

Act parseAct(const KernelSpec& spec, const std::string& s) {
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

void requireFloatExcept(const KernelSpec& spec, size_t skip) {
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (i != skip && spec.hasInput(i) && spec.inputs[i].dataType() != DataType::FLOAT) {
      spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
    }
  }
}

// sequence_lens as int64 in `lens`, checked against [0, seq]; returns whether any is shorter
// than seq (the only case that needs masking).
bool readLengths(const std::string& desc, const Config& c, const HostTensor* t,
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
void activeRows(const std::vector<int64_t>& lens, int64_t t, std::vector<uint8_t>& active) {
  active.resize(lens.size());
  for (size_t b = 0; b < lens.size(); ++b) active[b] = t < lens[b] ? 1 : 0;
}

// X time-major: X itself (layout 0) or a transposed copy in `buf` (layout 1: [batch, seq, in]).
const float* timeMajor(const Config& c, const float* x, std::vector<float>& buf) {
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

// ---------------------------------------------------------------------------------------------
// Forward

class RnnForward final : public Kernel {
 public:
  RnnForward(const KernelSpec& spec, Cell cell) : c_(spec, cell), desc_(spec.description) {
    requireFloatExcept(spec, 4);
    lstm_ = cell == Cell::Lstm;
    nOut_ = lstm_ ? 3 : 2;
  }

  void run(const KernelIO& io) override {
    const Config& c = c_;
    const int64_t H = c.hidden, GH = c.gh(), S = c.width;
    const bool varLen = readLengths(desc_, c, io.hasIn(4) ? &io.in(4) : nullptr, lens_);
    const float* x = timeMajor(c, io.in(0).data<float>(), xt_);
    const float* w = io.in(1).data<float>();
    const float* r = io.in(2).data<float>();
    const float* bias = io.hasIn(3) ? io.in(3).data<float>() : nullptr;
    const float* h0 = io.hasIn(5) ? io.in(5).data<float>() : nullptr;
    const float* c0 = lstm_ && io.hasIn(6) ? io.in(6).data<float>() : nullptr;
    const float* p = lstm_ && io.hasIn(7) ? io.in(7).data<float>() : nullptr;
    float* y = io.hasOut(0) ? io.out(0).data<float>() : nullptr;
    float* yh = io.hasOut(1) ? io.out(1).data<float>() : nullptr;
    float* yc = lstm_ && io.hasOut(2) ? io.out(2).data<float>() : nullptr;
    float* saved;
    if (io.hasOut(static_cast<size_t>(nOut_))) {
      saved = io.out(static_cast<size_t>(nOut_)).data<float>();
    } else {
      savedBuf_.resize(static_cast<size_t>(c.dirs * c.seq * c.batch * S));
      saved = savedBuf_.data();
    }
    const int64_t rows = c.seq * c.batch;
    xw_.resize(static_cast<size_t>(rows * GH));
    hr_.resize(static_cast<size_t>(c.batch * GH));
    tmp_.resize(static_cast<size_t>(8 * H));
    zeros_.assign(static_cast<size_t>(c.batch * H), 0.0f);
    biasX_.resize(static_cast<size_t>(GH));
    biasR_.assign(static_cast<size_t>(H), 0.0f);

    for (int64_t d = 0; d < c.dirs; ++d) {
      const float* wd = w + d * GH * c.input;
      const float* rd = r + d * GH * H;
      gemm(false, true, rows, GH, c.input, x, c.input, wd, c.input, 0.0f, xw_.data(), GH);
      // Biases: Wb + Rb per gate, except a GRU with linear_before_reset, whose Rb_h is added to
      // the recurrent term inside the reset gate's product.
      for (int64_t j = 0; j < GH; ++j) {
        biasX_[j] = bias ? bias[d * 2 * GH + j] + bias[d * 2 * GH + GH + j] : 0.0f;
      }
      if (c.cell == Cell::Gru && c.lbr && bias) {
        for (int64_t j = 0; j < H; ++j) {
          biasX_[2 * H + j] = bias[d * 2 * GH + 2 * H + j];
          biasR_[j] = bias[d * 2 * GH + GH + 2 * H + j];
        }
      }
      const float* hPrev = h0 ? h0 + c.stateOff(d, 0) : zeros_.data();
      int64_t hLd = h0 ? c.stateLd() : H;
      const float* cPrev = c0 ? c0 + c.stateOff(d, 0) : zeros_.data();
      int64_t cLd = c0 ? c.stateLd() : H;
      const float* pd = p ? p + d * 3 * H : nullptr;
      const SerialScope serial(c.serialSteps());
      for (int64_t s = 0; s < c.seq; ++s) {
        const int64_t t = c.backwards(d) ? c.seq - 1 - s : s;
        float* sv = c.savedRow(saved, d, t, 0);
        switch (c.cell) {
          case Cell::Lstm: lstmStep(d, t, rd, pd, hPrev, hLd, cPrev, cLd, sv); break;
          case Cell::Gru: gruStep(d, t, rd, hPrev, hLd, sv); break;
          case Cell::Rnn: rnnStep(d, t, rd, hPrev, hLd, sv); break;
        }
        const int64_t hOff = c.cell == Cell::Lstm ? 4 * H : c.cell == Cell::Gru ? 3 * H : H;
        if (varLen) {
          // Past its length a sequence keeps its state (Y_h is the last valid one) and Y is 0.
          activeRows(lens_, t, active_);
          for (int64_t b = 0; b < c.batch; ++b) {
            if (active_[static_cast<size_t>(b)]) continue;
            std::memcpy(sv + b * S + hOff, hPrev + b * hLd, static_cast<size_t>(H) * sizeof(float));
            if (lstm_) {
              std::memcpy(sv + b * S + 5 * H, cPrev + b * cLd,
                          static_cast<size_t>(H) * sizeof(float));
            }
          }
        }
        hPrev = sv + hOff;
        hLd = S;
        cPrev = sv + 5 * H;
        cLd = S;
        if (y) {
          for (int64_t b = 0; b < c.batch; ++b) {
            if (varLen && !active_[static_cast<size_t>(b)]) {
              std::fill(y + c.yOff(t, d, b), y + c.yOff(t, d, b) + H, 0.0f);
            } else {
              std::memcpy(y + c.yOff(t, d, b), sv + b * S + hOff,
                          static_cast<size_t>(H) * sizeof(float));
            }
          }
        }
      }
      for (int64_t b = 0; b < c.batch; ++b) {
        if (yh) {
          std::memcpy(yh + c.stateOff(d, b), hPrev + b * hLd,
                      static_cast<size_t>(H) * sizeof(float));
        }
        if (yc) {
          std::memcpy(yc + c.stateOff(d, b), cPrev + b * cLd,
                      static_cast<size_t>(H) * sizeof(float));
        }
      }
    }
  }

 private:
  // Adds the input projection of step t, batch entry b, and the biases to `a` (GH floats).
  void addInput(int64_t t, int64_t b, const float* hr, float* a) const {
    const int64_t GH = c_.gh();
    const float* xw = xw_.data() + (t * c_.batch + b) * GH;
    const float* bx = biasX_.data();
    for (int64_t j = 0; j < GH; ++j) a[j] = xw[j] + hr[j] + bx[j];
  }

  void lstmStep(int64_t d, int64_t t, const float* rd, const float* pd, const float* hPrev,
                int64_t hLd, const float* cPrev, int64_t cLd, float* sv) {
    const Config& c = c_;
    const int64_t H = c.hidden, GH = c.gh(), S = c.width;
    gemm(false, true, c.batch, GH, H, hPrev, hLd, rd, H, 0.0f, hr_.data(), GH);
    float* gi = tmp_.data();
    float* go = gi + H;
    float* gf = go + H;
    float* gc = gf + H;
    float* hc = gc + H;
    const Act f = c.act(d, 0), g = c.act(d, 1), h = c.act(d, 2);
    for (int64_t b = 0; b < c.batch; ++b) {
      float* a = sv + b * S;  // a_i a_o a_f a_c
      float* ht = a + 4 * H;
      float* ct = a + 5 * H;
      const float* cp = cPrev + b * cLd;
      addInput(t, b, hr_.data() + b * GH, a);
      if (pd) {
        for (int64_t j = 0; j < H; ++j) {
          a[j] += pd[j] * cp[j];
          a[2 * H + j] += pd[2 * H + j] * cp[j];
        }
      }
      activate(f, a, gi, H, c.clip);
      if (c.inputForget) {
        for (int64_t j = 0; j < H; ++j) gf[j] = 1.0f - gi[j];
      } else {
        activate(f, a + 2 * H, gf, H, c.clip);
      }
      activate(g, a + 3 * H, gc, H, c.clip);
      for (int64_t j = 0; j < H; ++j) ct[j] = gf[j] * cp[j] + gi[j] * gc[j];
      if (pd) {
        for (int64_t j = 0; j < H; ++j) a[H + j] += pd[H + j] * ct[j];
      }
      activate(f, a + H, go, H, c.clip);
      activate(h, ct, hc, H, 0.0f);
      for (int64_t j = 0; j < H; ++j) ht[j] = go[j] * hc[j];
    }
  }

  void gruStep(int64_t d, int64_t t, const float* rd, const float* hPrev, int64_t hLd, float* sv) {
    const Config& c = c_;
    const int64_t H = c.hidden, GH = c.gh(), S = c.width;
    const Act f = c.act(d, 0), g = c.act(d, 1);
    float* z = tmp_.data();
    float* rg = z + H;
    float* n = rg + H;
    // Recurrent terms of z and r (and, with linear_before_reset, of h) for the whole batch.
    gemm(false, true, c.batch, c.lbr ? GH : 2 * H, H, hPrev, hLd, rd, H, 0.0f, hr_.data(), GH);
    if (!c.lbr) {
      // e = r * h_{t-1}, then its product with R_h.
      for (int64_t b = 0; b < c.batch; ++b) {
        float* a = sv + b * S;
        const float* hr = hr_.data() + b * GH;
        const float* xw = xw_.data() + (t * c.batch + b) * GH;
        for (int64_t j = 0; j < H; ++j) a[H + j] = xw[H + j] + hr[H + j] + biasX_[H + j];
        activate(f, a + H, rg, H, c.clip);
        const float* hp = hPrev + b * hLd;
        float* e = a + 4 * H;
        for (int64_t j = 0; j < H; ++j) e[j] = rg[j] * hp[j];
      }
      gemm(false, true, c.batch, H, H, sv + 4 * H, S, rd + 2 * H * H, H, 0.0f, hr_.data() + 2 * H,
           GH);
    }
    for (int64_t b = 0; b < c.batch; ++b) {
      float* a = sv + b * S;
      float* ht = a + 3 * H;
      float* e = a + 4 * H;
      const float* hr = hr_.data() + b * GH;
      const float* xw = xw_.data() + (t * c.batch + b) * GH;
      const float* hp = hPrev + b * hLd;
      for (int64_t j = 0; j < 2 * H; ++j) a[j] = xw[j] + hr[j] + biasX_[j];
      activate(f, a, z, H, c.clip);
      activate(f, a + H, rg, H, c.clip);
      if (c.lbr) {
        for (int64_t j = 0; j < H; ++j) {
          e[j] = hr[2 * H + j] + biasR_[j];
          a[2 * H + j] = xw[2 * H + j] + biasX_[2 * H + j] + rg[j] * e[j];
        }
      } else {
        for (int64_t j = 0; j < H; ++j)
          a[2 * H + j] = xw[2 * H + j] + hr[2 * H + j] + biasX_[2 * H + j];
      }
      activate(g, a + 2 * H, n, H, c.clip);
      for (int64_t j = 0; j < H; ++j) ht[j] = (1.0f - z[j]) * n[j] + z[j] * hp[j];
    }
  }

  void rnnStep(int64_t d, int64_t t, const float* rd, const float* hPrev, int64_t hLd, float* sv) {
    const Config& c = c_;
    const int64_t H = c.hidden, S = c.width;
    gemm(false, true, c.batch, H, H, hPrev, hLd, rd, H, 0.0f, hr_.data(), H);
    for (int64_t b = 0; b < c.batch; ++b) {
      float* a = sv + b * S;
      addInput(t, b, hr_.data() + b * H, a);
      activate(c.act(d, 0), a, a + H, H, c.clip);
    }
  }

  Config c_;
  std::string desc_;
  bool lstm_ = false;
  int nOut_ = 2;
  std::vector<float> xt_, xw_, hr_, tmp_, zeros_, biasX_, biasR_, savedBuf_;
  std::vector<int64_t> lens_;
  std::vector<uint8_t> active_;
};

// ---------------------------------------------------------------------------------------------
// Backward. Inputs: X W R B? initial_h? [initial_c? P?] Saved dY? dY_h? [dY_c?]; outputs dX dW dR
// dB dInitial_h [dInitial_c dP]; sequence_lens? is the last input (after dY_h / dY_c).

class RnnBackward final : public Kernel {
 public:
  RnnBackward(const KernelSpec& spec, Cell cell) : c_(spec, cell), desc_(spec.description) {
    lstm_ = cell == Cell::Lstm;
    savedIn_ = lstm_ ? 7 : 5;
    requireFloatExcept(spec, savedIn_ + (lstm_ ? 4 : 3));
  }

  void run(const KernelIO& io) override {
    const Config& c = c_;
    const int64_t H = c.hidden, GH = c.gh(), S = c.width, B = c.batch;
    const float* x = timeMajor(c, io.in(0).data<float>(), xt_);
    const float* w = io.in(1).data<float>();
    const float* r = io.in(2).data<float>();
    const float* h0 = io.hasIn(4) ? io.in(4).data<float>() : nullptr;
    const float* c0 = lstm_ && io.hasIn(5) ? io.in(5).data<float>() : nullptr;
    const float* p = lstm_ && io.hasIn(6) ? io.in(6).data<float>() : nullptr;
    float* saved = io.in(savedIn_).data<float>();
    const float* dy = io.hasIn(savedIn_ + 1) ? io.in(savedIn_ + 1).data<float>() : nullptr;
    const float* dyh = io.hasIn(savedIn_ + 2) ? io.in(savedIn_ + 2).data<float>() : nullptr;
    const float* dyc =
        lstm_ && io.hasIn(savedIn_ + 3) ? io.in(savedIn_ + 3).data<float>() : nullptr;
    const size_t lensIn = savedIn_ + (lstm_ ? 4 : 3);
    const bool varLen = readLengths(desc_, c, io.hasIn(lensIn) ? &io.in(lensIn) : nullptr, lens_);
    const int64_t rows = c.seq * B;
    float* dxOut = io.out(0).data<float>();
    float* dx = dxOut;
    if (c.layout == 1) {
      dxt_.resize(static_cast<size_t>(rows * c.input));
      dx = dxt_.data();
    }
    float* dw = io.out(1).data<float>();
    float* dr = io.out(2).data<float>();
    float* db = io.out(3).data<float>();
    float* dh0 = io.out(4).data<float>();
    float* dc0 = lstm_ ? io.out(5).data<float>() : nullptr;
    float* dp = lstm_ ? io.out(6).data<float>() : nullptr;
    if (dp) std::fill(dp, dp + c.dirs * 3 * H, 0.0f);

    dG_.resize(static_cast<size_t>(rows * GH));
    if (c.cell == Cell::Gru && c.lbr) dGR_.resize(static_cast<size_t>(rows * GH));
    dH_.resize(static_cast<size_t>(B * H));
    dHnext_.resize(static_cast<size_t>(B * H));
    dC_.resize(static_cast<size_t>(B * H));
    dq_.resize(static_cast<size_t>(B * H));
    zeros_.assign(static_cast<size_t>(B * H), 0.0f);
    tmp_.resize(static_cast<size_t>(16 * H));
    if (rows == 0 || c.input == 0) std::fill(dx, dx + rows * c.input, 0.0f);

    for (int64_t d = 0; d < c.dirs; ++d) {
      const float* rd = r + d * GH * H;
      const float* pd = p ? p + d * 3 * H : nullptr;
      float* dpd = dp ? dp + d * 3 * H : nullptr;
      // Incoming gradients of the final states.
      for (int64_t b = 0; b < B; ++b) {
        float* dh = dHnext_.data() + b * H;
        float* dc = dC_.data() + b * H;
        for (int64_t j = 0; j < H; ++j) {
          dh[j] = dyh ? dyh[c.stateOff(d, b) + j] : 0.0f;
          dc[j] = dyc ? dyc[c.stateOff(d, b) + j] : 0.0f;
        }
      }
      const int64_t hOff = c.cell == Cell::Lstm ? 4 * H : c.cell == Cell::Gru ? 3 * H : H;
      std::optional<SerialScope> serial;
      serial.emplace(c.serialSteps());
      for (int64_t s = c.seq - 1; s >= 0; --s) {
        const int64_t t = c.backwards(d) ? c.seq - 1 - s : s;
        const float* hPrev;
        int64_t hLd;
        const float* cPrev;
        int64_t cLd;
        if (s > 0) {
          const int64_t tp = c.backwards(d) ? t + 1 : t - 1;
          hPrev = c.savedRow(saved, d, tp, 0) + hOff;
          cPrev = c.savedRow(saved, d, tp, 0) + 5 * H;
          hLd = cLd = S;
        } else {
          hPrev = h0 ? h0 + c.stateOff(d, 0) : zeros_.data();
          hLd = h0 ? c.stateLd() : H;
          cPrev = c0 ? c0 + c.stateOff(d, 0) : zeros_.data();
          cLd = c0 ? c.stateLd() : H;
        }
        // dH = gradient from the next step + dY at t (Y is 0 past a sequence's length).
        if (varLen) activeRows(lens_, t, active_);
        const uint8_t* active = varLen ? active_.data() : nullptr;
        for (int64_t b = 0; b < B; ++b) {
          float* dh = dH_.data() + b * H;
          const float* dn = dHnext_.data() + b * H;
          if (dy && (!active || active[b])) {
            const float* g = dy + c.yOff(t, d, b);
            for (int64_t j = 0; j < H; ++j) dh[j] = dn[j] + g[j];
          } else {
            std::memcpy(dh, dn, static_cast<size_t>(H) * sizeof(float));
          }
        }
        float* sv = c.savedRow(saved, d, t, 0);
        float* dg = dG_.data() + t * B * GH;
        switch (c.cell) {
          case Cell::Lstm: lstmStep(d, rd, pd, dpd, cPrev, cLd, sv, dg, active); break;
          case Cell::Gru: gruStep(d, t, rd, hPrev, hLd, sv, dg, active); break;
          case Cell::Rnn: rnnStep(d, rd, sv, dg, active); break;
        }
        if (active) {
          // An inactive row's state passed through unchanged: so does its gradient (its gate
          // gradients are 0, so the GEMMs above added nothing to it).
          for (int64_t b = 0; b < B; ++b) {
            if (active[b]) continue;
            std::memcpy(dHnext_.data() + b * H, dH_.data() + b * H,
                        static_cast<size_t>(H) * sizeof(float));
          }
        }
      }
      serial.reset();
      for (int64_t b = 0; b < B; ++b) {
        std::memcpy(dh0 + c.stateOff(d, b), dHnext_.data() + b * H,
                    static_cast<size_t>(H) * sizeof(float));
        if (dc0) {
          std::memcpy(dc0 + c.stateOff(d, b), dC_.data() + b * H,
                      static_cast<size_t>(H) * sizeof(float));
        }
      }
      weightGrads(d, x, w, h0, saved, dx, dw, dr, db);
    }
    if (c.layout == 1) {
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t t = 0; t < c.seq; ++t) {
          std::memcpy(dxOut + (b * c.seq + t) * c.input, dx + (t * B + b) * c.input,
                      static_cast<size_t>(c.input) * sizeof(float));
        }
      }
    }
  }

 private:
  // dX += dG.W_d, dW_d = dG^T.X, dR_d = sum_t dG_t^T.h_{t-1}, dB_d = column sums.
  void weightGrads(int64_t d, const float* x, const float* w, const float* h0, float* saved,
                   float* dx, float* dw, float* dr, float* db) {
    const Config& c = c_;
    const int64_t H = c.hidden, GH = c.gh(), S = c.width, B = c.batch, rows = c.seq * B;
    const float* g = dG_.data();
    gemm(false, false, rows, c.input, GH, g, GH, w + d * GH * c.input, c.input,
         d == 0 ? 0.0f : 1.0f, dx, c.input);
    gemm(true, false, GH, c.input, rows, g, GH, x, c.input, 0.0f, dw + d * GH * c.input, c.input);
    // dR: the gradient that multiplies R (dG, or for a GRU with linear_before_reset the h block's
    // ds) paired with h_{t-1}; a GRU without it pairs the h block with e_t = r_t*h_{t-1}.
    const float* gr = (c.cell == Cell::Gru && c.lbr) ? dGR_.data() : g;
    const int64_t nH = (c.cell == Cell::Gru && !c.lbr) ? 2 * H : GH;  // rows of R paired with h
    float* drd = dr + d * GH * H;
    const int64_t hOff = c.cell == Cell::Lstm ? 4 * H : c.cell == Cell::Gru ? 3 * H : H;
    const float* hs = c.savedRow(saved, d, 0, 0) + hOff;  // h_t rows, time-major, ld S
    const float* hInit = h0 ? h0 + c.stateOff(d, 0) : zeros_.data();
    const int64_t initLd = h0 ? c.stateLd() : H;
    if (c.seq == 0) {
      for (int64_t i = 0; i < GH * H; ++i) drd[i] = 0.0f;
    } else if (!c.backwards(d)) {
      // t = 0 pairs with the initial state, t >= 1 with h_{t-1}.
      gemm(true, false, nH, H, B, gr, GH, hInit, initLd, 0.0f, drd, H);
      gemm(true, false, nH, H, (c.seq - 1) * B, gr + B * GH, GH, hs, S, 1.0f, drd, H);
    } else {
      gemm(true, false, nH, H, B, gr + (c.seq - 1) * B * GH, GH, hInit, initLd, 0.0f, drd, H);
      gemm(true, false, nH, H, (c.seq - 1) * B, gr, GH, hs + B * S, S, 1.0f, drd, H);
    }
    if (c.cell == Cell::Gru && !c.lbr) {
      gemm(true, false, H, H, rows, g + 2 * H, GH, c.savedRow(saved, d, 0, 0) + 4 * H, S, 0.0f,
           drd + 2 * H * H, H);
    }
    float* dbw = db + d * 2 * GH;
    float* dbr = dbw + GH;
    std::fill(dbw, dbw + GH, 0.0f);
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = g + i * GH;
      for (int64_t j = 0; j < GH; ++j) dbw[j] += row[j];
    }
    std::memcpy(dbr, dbw, static_cast<size_t>(GH) * sizeof(float));
    if (c.cell == Cell::Gru && c.lbr) {
      std::fill(dbr + 2 * H, dbr + 3 * H, 0.0f);
      for (int64_t i = 0; i < rows; ++i) {
        const float* row = gr + i * GH + 2 * H;
        for (int64_t j = 0; j < H; ++j) dbr[2 * H + j] += row[j];
      }
    }
  }

  // dH_ holds dL/dh_t, dC_ dL/dc_t (from later steps); leaves dL/dh_{t-1} in dHnext_ and
  // dL/dc_{t-1} in dC_, and the gate pre-activation gradients in dg [batch, 4H].
  void lstmStep(int64_t d, const float* rd, const float* pd, float* dpd, const float* cPrev,
                int64_t cLd, const float* sv, float* dg, const uint8_t* active) {
    const Config& c = c_;
    const int64_t H = c.hidden, GH = c.gh(), S = c.width;
    const Act f = c.act(d, 0), g = c.act(d, 1), h = c.act(d, 2);
    float* gi = tmp_.data();
    float* go = gi + H;
    float* gf = go + H;
    float* gc = gf + H;
    float* hc = gc + H;
    float* di = hc + H;
    float* dO = di + H;
    float* df = dO + H;
    float* dcg = df + H;
    float* dhc = dcg + H;
    for (int64_t b = 0; b < c.batch; ++b) {
      const float* a = sv + b * S;
      const float* ct = a + 5 * H;
      const float* cp = cPrev + b * cLd;
      const float* dh = dH_.data() + b * H;
      float* dc = dC_.data() + b * H;
      float* gb = dg + b * GH;
      if (active && !active[b]) {
        std::fill(gb, gb + GH, 0.0f);  // dC_ passes through unchanged
        continue;
      }
      activate(f, a, gi, H, c.clip);
      activate(f, a + H, go, H, c.clip);
      if (c.inputForget) {
        for (int64_t j = 0; j < H; ++j) gf[j] = 1.0f - gi[j];
      } else {
        activate(f, a + 2 * H, gf, H, c.clip);
      }
      activate(g, a + 3 * H, gc, H, c.clip);
      activate(h, ct, hc, H, 0.0f);
      derivative(f, a, gi, di, H, c.clip);
      derivative(f, a + H, go, dO, H, c.clip);
      if (!c.inputForget) derivative(f, a + 2 * H, gf, df, H, c.clip);
      derivative(g, a + 3 * H, gc, dcg, H, c.clip);
      derivative(h, ct, hc, dhc, H, 0.0f);
      float* dai = gb;
      float* dao = gb + H;
      float* daf = gb + 2 * H;
      float* dac = gb + 3 * H;
      for (int64_t j = 0; j < H; ++j) {
        dao[j] = dh[j] * hc[j] * dO[j];
        dc[j] += dh[j] * go[j] * dhc[j];
      }
      if (pd) {
        for (int64_t j = 0; j < H; ++j) {
          dc[j] += dao[j] * pd[H + j];
          dpd[H + j] += dao[j] * ct[j];
        }
      }
      if (c.inputForget) {
        // f = 1 - i: the forget gate's gradient flows into the input gate.
        for (int64_t j = 0; j < H; ++j) {
          dai[j] = (dc[j] * gc[j] - dc[j] * cp[j]) * di[j];
          daf[j] = 0.0f;
        }
      } else {
        for (int64_t j = 0; j < H; ++j) {
          dai[j] = dc[j] * gc[j] * di[j];
          daf[j] = dc[j] * cp[j] * df[j];
        }
      }
      for (int64_t j = 0; j < H; ++j) {
        dac[j] = dc[j] * gi[j] * dcg[j];
        dc[j] *= gf[j];  // now dL/dc_{t-1}
      }
      if (pd) {
        for (int64_t j = 0; j < H; ++j) {
          dc[j] += dai[j] * pd[j] + daf[j] * pd[2 * H + j];
          dpd[j] += dai[j] * cp[j];
          dpd[2 * H + j] += daf[j] * cp[j];
        }
      }
    }
    gemm(false, false, c.batch, H, GH, dg, GH, rd, H, 0.0f, dHnext_.data(), H);
  }

  void gruStep(int64_t d, int64_t t, const float* rd, const float* hPrev, int64_t hLd,
               const float* sv, float* dg, const uint8_t* active) {
    const Config& c = c_;
    const int64_t H = c.hidden, GH = c.gh(), S = c.width, B = c.batch;
    const Act f = c.act(d, 0), g = c.act(d, 1);
    float* z = tmp_.data();
    float* rg = z + H;
    float* n = rg + H;
    float* dz = n + H;
    float* drg = dz + H;
    float* dn = drg + H;
    float* dgr = c.lbr ? dGR_.data() + t * B * GH : nullptr;
    // Pass 1: z and the candidate; dL/dh_{t-1} through z starts in dHnext_.
    for (int64_t b = 0; b < B; ++b) {
      const float* a = sv + b * S;
      const float* e = a + 4 * H;
      const float* hp = hPrev + b * hLd;
      const float* dh = dH_.data() + b * H;
      float* dhp = dHnext_.data() + b * H;
      float* gb = dg + b * GH;
      if (active && !active[b]) {
        std::fill(gb, gb + GH, 0.0f);
        if (dgr) std::fill(dgr + b * GH, dgr + (b + 1) * GH, 0.0f);
        continue;
      }
      activate(f, a, z, H, c.clip);
      activate(g, a + 2 * H, n, H, c.clip);
      derivative(f, a, z, dz, H, c.clip);
      derivative(g, a + 2 * H, n, dn, H, c.clip);
      for (int64_t j = 0; j < H; ++j) {
        gb[j] = dh[j] * (hp[j] - n[j]) * dz[j];
        gb[2 * H + j] = dh[j] * (1.0f - z[j]) * dn[j];
        dhp[j] = dh[j] * z[j];
      }
      if (c.lbr) {
        activate(f, a + H, rg, H, c.clip);
        derivative(f, a + H, rg, drg, H, c.clip);
        float* gr = dgr + b * GH;
        for (int64_t j = 0; j < H; ++j) {
          gb[H + j] = gb[2 * H + j] * e[j] * drg[j];
          gr[j] = gb[j];
          gr[H + j] = gb[H + j];
          gr[2 * H + j] = gb[2 * H + j] * rg[j];
        }
      }
    }
    if (c.lbr) {
      gemm(false, false, B, H, GH, dgr, GH, rd, H, 1.0f, dHnext_.data(), H);
      return;
    }
    // dq = da_h.R_h (q = r*h_{t-1}); then r's gradient, and dh_{t-1} through q, z and r.
    gemm(false, false, B, H, H, dg + 2 * H, GH, rd + 2 * H * H, H, 0.0f, dq_.data(), H);
    for (int64_t b = 0; b < B; ++b) {
      const float* a = sv + b * S;
      const float* hp = hPrev + b * hLd;
      const float* dq = dq_.data() + b * H;
      float* dhp = dHnext_.data() + b * H;
      float* gb = dg + b * GH;
      if (active && !active[b]) continue;
      activate(f, a + H, rg, H, c.clip);
      derivative(f, a + H, rg, drg, H, c.clip);
      for (int64_t j = 0; j < H; ++j) {
        gb[H + j] = dq[j] * hp[j] * drg[j];
        dhp[j] += dq[j] * rg[j];
      }
    }
    gemm(false, false, B, H, 2 * H, dg, GH, rd, H, 1.0f, dHnext_.data(), H);
  }

  void rnnStep(int64_t d, const float* rd, const float* sv, float* dg, const uint8_t* active) {
    const Config& c = c_;
    const int64_t H = c.hidden, S = c.width;
    float* der = tmp_.data();
    for (int64_t b = 0; b < c.batch; ++b) {
      const float* a = sv + b * S;
      const float* dh = dH_.data() + b * H;
      float* gb = dg + b * H;
      if (active && !active[b]) {
        std::fill(gb, gb + H, 0.0f);
        continue;
      }
      derivative(c.act(d, 0), a, a + H, der, H, c.clip);
      for (int64_t j = 0; j < H; ++j) gb[j] = dh[j] * der[j];
    }
    gemm(false, false, c.batch, H, H, dg, H, rd, H, 0.0f, dHnext_.data(), H);
  }

  Config c_;
  bool lstm_ = false;
  size_t savedIn_ = 5;
  std::string desc_;
  std::vector<float> xt_, dxt_, dG_, dGR_, dH_, dHnext_, dC_, dq_, zeros_, tmp_;
  std::vector<int64_t> lens_;
  std::vector<uint8_t> active_;
};

template <Cell C>
std::unique_ptr<Kernel> makeForward(const KernelSpec& spec) {
  return std::make_unique<RnnForward>(spec, C);
}
template <Cell C>
std::unique_ptr<Kernel> makeBackward(const KernelSpec& spec) {
  return std::make_unique<RnnBackward>(spec, C);
}

XT_REGISTER_KERNEL("ai.onnx", "LSTM", makeForward<Cell::Lstm>);
XT_REGISTER_KERNEL("ai.onnx", "GRU", makeForward<Cell::Gru>);
XT_REGISTER_KERNEL("ai.onnx", "RNN", makeForward<Cell::Rnn>);
XT_REGISTER_KERNEL("ai.xtrain", "LSTMGrad", makeBackward<Cell::Lstm>);
XT_REGISTER_KERNEL("ai.xtrain", "GRUGrad", makeBackward<Cell::Gru>);
XT_REGISTER_KERNEL("ai.xtrain", "RNNGrad", makeBackward<Cell::Rnn>);

}  // namespace
}  // namespace xtrain::device
