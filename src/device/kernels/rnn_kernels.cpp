// Kernels for the recurrent ops LSTM, GRU and RNN (ai.onnx); the ops' canonical form is described
// in ir/ops/rnn_ops.cpp, what they save for their gradients (rnn_grad_kernels.cpp) in
// rnn_common.hpp.
//
// Per direction: the input projection X.W^T of every time step is one GEMM; each step then does
// one GEMM h_{t-1}.R^T over the batch (two for a GRU with linear_before_reset 0, whose candidate
// gate multiplies (r*h_{t-1}) by R_h) and elementwise gate arithmetic over H-long rows. Everything
// runs time-major internally: a batch-first X (layout 1) is transposed once into scratch, and Y
// and the states are addressed through their layout.
#include "device/kernels/rnn_common.hpp"

namespace xtrain::device {
namespace {

using namespace rnn_detail;

class RnnForward final : public RnnKernelBase {
 public:
  RnnForward(const KernelSpec& spec, Cell cell) : RnnKernelBase(spec, cell) {
    requireFloatExcept(spec, 4);
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
    float *gi, *go, *gf, *gc, *hc;
    carveRows(tmp_.data(), H, gi, go, gf, gc, hc);
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
    float *z, *rg, *n;
    carveRows(tmp_.data(), H, z, rg, n);
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

  int nOut_ = 2;
  std::vector<float> xw_, hr_, tmp_, biasX_, biasR_, savedBuf_;
};

XT_REGISTER_KERNEL("ai.onnx", "LSTM", makeRnnKernel<RnnForward, Cell::Lstm>);
XT_REGISTER_KERNEL("ai.onnx", "GRU", makeRnnKernel<RnnForward, Cell::Gru>);
XT_REGISTER_KERNEL("ai.onnx", "RNN", makeRnnKernel<RnnForward, Cell::Rnn>);

}  // namespace
}  // namespace xtrain::device
