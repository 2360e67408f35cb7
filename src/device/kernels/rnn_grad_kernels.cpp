// The gradients of the recurrent ops: LSTMGrad, GRUGrad and RNNGrad (ai.xtrain), one-pass
// backpropagation through time over the state the forward op saved (rnn_common.hpp).
//
// Per direction, the steps are walked in reverse processing order: elementwise gate gradients into
// dG [seq, batch, gates*H] and one GEMM dG_t.R for dh_{t-1} per step; then dX, dW and dR are one
// GEMM each over all steps (dR pairs dG_t with h_{t-1}, which Saved holds one step away), and dB
// is dG's column sums. Activations are recomputed from the saved pre-activations.
#include <optional>

#include "device/kernels/rnn_common.hpp"

namespace xtrain::device {
namespace {

using namespace rnn_detail;

// Inputs: X W R B? initial_h? [initial_c? P?] Saved dY? dY_h? [dY_c?]; outputs dX dW dR
// dB dInitial_h [dInitial_c dP]; sequence_lens? is the last input (after dY_h / dY_c).

class RnnBackward final : public RnnKernelBase {
 public:
  RnnBackward(const KernelSpec& spec, Cell cell) : RnnKernelBase(spec, cell) {
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

    resizeScratch();
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
    if (c.layout == 1) toBatchMajor(dx, dxOut);
  }

 private:
  // The scratch of one run, sized for this run's configuration (kept between runs).
  void resizeScratch() {
    const Config& c = c_;
    const int64_t H = c.hidden, GH = c.gh(), B = c.batch, rows = c.seq * B;
    dG_.resize(static_cast<size_t>(rows * GH));
    if (c.cell == Cell::Gru && c.lbr) dGR_.resize(static_cast<size_t>(rows * GH));
    dH_.resize(static_cast<size_t>(B * H));
    dHnext_.resize(static_cast<size_t>(B * H));
    dC_.resize(static_cast<size_t>(B * H));
    dq_.resize(static_cast<size_t>(B * H));
    zeros_.assign(static_cast<size_t>(B * H), 0.0f);
    tmp_.resize(static_cast<size_t>(16 * H));
  }

  // dX computed time-major ([seq, batch, input]) into the [batch, seq, input] output of layout 1.
  void toBatchMajor(const float* dx, float* dxOut) const {
    const Config& c = c_;
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t t = 0; t < c.seq; ++t) {
        std::memcpy(dxOut + (b * c.seq + t) * c.input, dx + (t * c.batch + b) * c.input,
                    static_cast<size_t>(c.input) * sizeof(float));
      }
    }
  }

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

  // Runs step(b, a, dh, gb) for each batch entry active at this step (all of them without sequence
  // lengths) with its saved row a, its dL/dh_t dh and its gate gradients gb (GH floats of dg). An
  // inactive entry's gate gradients are 0, in dg and (when given) in dgr: its state passed through
  // unchanged, and so does its gradient (see run()).
  template <typename Step>
  void forEachActive(const float* sv, float* dg, float* dgr, const uint8_t* active, Step step) {
    const int64_t H = c_.hidden, GH = c_.gh(), S = c_.width;
    for (int64_t b = 0; b < c_.batch; ++b) {
      float* gb = dg + b * GH;
      if (active && !active[b]) {
        std::fill(gb, gb + GH, 0.0f);
        if (dgr) std::fill(dgr + b * GH, dgr + (b + 1) * GH, 0.0f);
        continue;
      }
      step(b, sv + b * S, dH_.data() + b * H, gb);
    }
  }

  // dH_ holds dL/dh_t, dC_ dL/dc_t (from later steps); leaves dL/dh_{t-1} in dHnext_ and
  // dL/dc_{t-1} in dC_, and the gate pre-activation gradients in dg [batch, 4H].
  void lstmStep(int64_t d, const float* rd, const float* pd, float* dpd, const float* cPrev,
                int64_t cLd, const float* sv, float* dg, const uint8_t* active) {
    const Config& c = c_;
    const int64_t H = c.hidden, GH = c.gh();
    const Act f = c.act(d, 0), g = c.act(d, 1), h = c.act(d, 2);
    float *gi, *go, *gf, *gc, *hc, *di, *dO, *df, *dcg, *dhc;
    carveRows(tmp_.data(), H, gi, go, gf, gc, hc, di, dO, df, dcg, dhc);
    // An inactive entry's dC_ passes through unchanged.
    const auto step = [&](int64_t b, const float* a, const float* dh, float* gb) {
      const float* ct = a + 5 * H;
      const float* cp = cPrev + b * cLd;
      float* dc = dC_.data() + b * H;
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
    };
    forEachActive(sv, dg, nullptr, active, step);
    gemm(false, false, c.batch, H, GH, dg, GH, rd, H, 0.0f, dHnext_.data(), H);
  }

  void gruStep(int64_t d, int64_t t, const float* rd, const float* hPrev, int64_t hLd,
               const float* sv, float* dg, const uint8_t* active) {
    const Config& c = c_;
    const int64_t H = c.hidden, GH = c.gh(), B = c.batch;
    const Act f = c.act(d, 0), g = c.act(d, 1);
    float *z, *rg, *n, *dz, *drg, *dn;
    carveRows(tmp_.data(), H, z, rg, n, dz, drg, dn);
    float* dgr = c.lbr ? dGR_.data() + t * B * GH : nullptr;
    // Pass 1: z and the candidate; dL/dh_{t-1} through z starts in dHnext_.
    const auto pass1 = [&](int64_t b, const float* a, const float* dh, float* gb) {
      const float* e = a + 4 * H;
      const float* hp = hPrev + b * hLd;
      float* dhp = dHnext_.data() + b * H;
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
    };
    forEachActive(sv, dg, dgr, active, pass1);
    if (c.lbr) {
      gemm(false, false, B, H, GH, dgr, GH, rd, H, 1.0f, dHnext_.data(), H);
      return;
    }
    // dq = da_h.R_h (q = r*h_{t-1}); then r's gradient, and dh_{t-1} through q, z and r.
    gemm(false, false, B, H, H, dg + 2 * H, GH, rd + 2 * H * H, H, 0.0f, dq_.data(), H);
    // (An inactive entry's gate gradients are zeroed again: they already are.)
    const auto pass2 = [&](int64_t b, const float* a, const float*, float* gb) {
      const float* hp = hPrev + b * hLd;
      const float* dq = dq_.data() + b * H;
      float* dhp = dHnext_.data() + b * H;
      activate(f, a + H, rg, H, c.clip);
      derivative(f, a + H, rg, drg, H, c.clip);
      for (int64_t j = 0; j < H; ++j) {
        gb[H + j] = dq[j] * hp[j] * drg[j];
        dhp[j] += dq[j] * rg[j];
      }
    };
    forEachActive(sv, dg, nullptr, active, pass2);
    gemm(false, false, B, H, 2 * H, dg, GH, rd, H, 1.0f, dHnext_.data(), H);
  }

  void rnnStep(int64_t d, const float* rd, const float* sv, float* dg, const uint8_t* active) {
    const Config& c = c_;
    const int64_t H = c.hidden;
    float* der = tmp_.data();
    const auto step = [&](int64_t, const float* a, const float* dh, float* gb) {
      derivative(c.act(d, 0), a, a + H, der, H, c.clip);
      for (int64_t j = 0; j < H; ++j) gb[j] = dh[j] * der[j];
    };
    forEachActive(sv, dg, nullptr, active, step);
    gemm(false, false, c.batch, H, H, dg, H, rd, H, 0.0f, dHnext_.data(), H);
  }

  size_t savedIn_ = 5;
  std::vector<float> dxt_, dG_, dGR_, dH_, dHnext_, dC_, dq_, tmp_;
};

XT_REGISTER_KERNEL("ai.xtrain", "LSTMGrad", makeRnnKernel<RnnBackward, Cell::Lstm>);
XT_REGISTER_KERNEL("ai.xtrain", "GRUGrad", makeRnnKernel<RnnBackward, Cell::Gru>);
XT_REGISTER_KERNEL("ai.xtrain", "RNNGrad", makeRnnKernel<RnnBackward, Cell::Rnn>);

}  // namespace
}  // namespace xtrain::device
