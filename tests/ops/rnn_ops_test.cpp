// LSTM, GRU and RNN: forward against a double-precision reference written from the ONNX operator
// spec (every direction, both layouts, optional inputs, peepholes, clip, input_forget,
// linear_before_reset, custom activations), gradients (BPTT) against finite differences, values
// PyTorch computes, and error messages.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ir/autodiff/autodiff.hpp"
#include "ir/op_registry.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

struct Case {
  std::string type = "LSTM";
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t seq = 3, batch = 2, input = 3, hidden = 4;
  bool bias = true, h0 = true, c0 = true, peep = false, lens = false;
  std::vector<int32_t> lengths;   // with lens: per batch entry (empty: all seq)
  std::vector<std::string> acts;  // empty: the op's default
  float clip = 0.0f;
  int64_t inputForget = 0, lbr = 0;
  int opset = 14;
  bool outY = true, outYh = true, outYc = true;
  bool setHiddenSize = true;

  int gates() const { return type == "LSTM" ? 4 : type == "GRU" ? 3 : 1; }
  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  bool lstm() const { return type == "LSTM"; }
  int onnxInputs() const { return lstm() ? 8 : 6; }
  Shape stateShape() const {
    return layout == 0 ? Shape{dirs(), batch, hidden} : Shape{batch, dirs(), hidden};
  }
};

// The op's inputs in ONNX order; absent ones are empty (undefined) tensors.
std::vector<HostTensor> makeInputs(const Case& c, uint64_t seed) {
  const int64_t gh = c.gates() * c.hidden;
  std::vector<HostTensor> in(static_cast<size_t>(c.onnxInputs()));
  in[0] = randomTensor(
      c.layout == 0 ? Shape{c.seq, c.batch, c.input} : Shape{c.batch, c.seq, c.input}, seed);
  in[1] = randomTensor({c.dirs(), gh, c.input}, seed + 1, -0.7f, 0.7f);
  in[2] = randomTensor({c.dirs(), gh, c.hidden}, seed + 2, -0.7f, 0.7f);
  if (c.bias) in[3] = randomTensor({c.dirs(), 2 * gh}, seed + 3, -0.5f, 0.5f);
  if (c.lens) {
    in[4] = HostTensor::fromVector<int32_t>(
        {c.batch}, c.lengths.empty() ? std::vector<int32_t>(static_cast<size_t>(c.batch),
                                                            static_cast<int32_t>(c.seq))
                                     : c.lengths);
  }
  if (c.h0) in[5] = randomTensor(c.stateShape(), seed + 5);
  if (c.lstm() && c.c0) in[6] = randomTensor(c.stateShape(), seed + 6);
  if (c.lstm() && c.peep) in[7] = randomTensor({c.dirs(), 3 * c.hidden}, seed + 7);
  return in;
}

Attributes makeAttrs(const Case& c) {
  Attributes a;
  if (c.direction != "forward") a.set("direction", c.direction);
  if (c.setHiddenSize) a.set("hidden_size", c.hidden);
  if (c.opset >= 14 && c.layout != 0) a.set("layout", c.layout);
  if (!c.acts.empty()) a.set("activations", c.acts);
  if (c.clip > 0.0f) a.set("clip", c.clip);
  if (c.lstm() && c.inputForget) a.set("input_forget", c.inputForget);
  if (c.type == "GRU" && c.lbr) a.set("linear_before_reset", c.lbr);
  return a;
}

// Present tensors only (runForward/expectGradientsMatch take a dense list) and the slot of each.
struct Packed {
  std::vector<HostTensor> tensors;
  std::vector<int> slot;  // ONNX input index of tensors[k]
};

Packed pack(const std::vector<HostTensor>& in) {
  Packed p;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].info().isSet()) {
      p.tensors.push_back(in[i]);
      p.slot.push_back(static_cast<int>(i));
    }
  }
  return p;
}

BuildFn buildOp(const Case& c, const Packed& p) {
  return [c, slots = p.slot](ir::Graph& graph, const std::vector<TensorId>& ids) {
    std::vector<TensorId> inputs(static_cast<size_t>(c.onnxInputs()));
    for (size_t k = 0; k < ids.size(); ++k) inputs[static_cast<size_t>(slots[k])] = ids[k];
    ir::OpSpec spec;
    spec.type = c.type;
    spec.inputs = inputs;
    spec.attrs = makeAttrs(c);
    spec.opset = c.opset;
    spec.name = "rnn_under_test";
    const std::vector<bool> want =
        c.lstm() ? std::vector<bool>{c.outY, c.outYh, c.outYc} : std::vector<bool>{c.outY, c.outYh};
    for (size_t i = 0; i < want.size(); ++i)
      spec.outputs.push_back(want[i] ? "out" + std::to_string(i) : "");
    while (!spec.outputs.empty() && spec.outputs.back().empty()) spec.outputs.pop_back();
    const ir::Op& op = graph.addOp(std::move(spec));
    std::vector<TensorId> outs;
    for (const auto& o : op.outputs) {
      if (!o.empty()) outs.push_back(o);
    }
    return outs;
  };
}

// ---- reference ------------------------------------------------------------------------------

double act(std::string name, double x) {
  for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (name == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "tanh") return std::tanh(x);
  if (name == "relu") return x > 0 ? x : 0.0;
  ADD_FAILURE() << "no reference for " << name;
  return 0;
}

// Returns Y, Y_h and (LSTM) Y_c, computed in double from the ONNX definitions.
std::vector<HostTensor> reference(const Case& c, const std::vector<HostTensor>& in) {
  const int64_t H = c.hidden, G = c.gates(), GH = G * H, D = c.dirs();
  const int64_t S = c.seq, N = c.batch, I = c.input;
  std::vector<std::string> acts = c.acts;
  if (acts.empty()) {
    acts = c.lstm()          ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
           : c.type == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                             : std::vector<std::string>{"Tanh"};
  }
  const size_t nf = c.lstm() ? 3 : c.type == "GRU" ? 2 : 1;
  if (acts.size() == nf && D == 2) {
    auto a = acts;
    acts.insert(acts.end(), a.begin(), a.end());
  }
  auto X = [&](int64_t t, int64_t b, int64_t i) {
    return in[0].getAsDouble(c.layout == 0 ? (t * N + b) * I + i : (b * S + t) * I + i);
  };
  auto W = [&](int64_t d, int64_t r, int64_t i) { return in[1].getAsDouble((d * GH + r) * I + i); };
  auto R = [&](int64_t d, int64_t r, int64_t m) { return in[2].getAsDouble((d * GH + r) * H + m); };
  auto Bv = [&](int64_t d, int64_t k) { return c.bias ? in[3].getAsDouble(d * 2 * GH + k) : 0.0; };
  auto stOff = [&](int64_t d, int64_t b) { return (c.layout == 0 ? d * N + b : b * D + d) * H; };
  auto clip = [&](double x) {
    return c.clip > 0 ? std::min(std::max(x, -double(c.clip)), double(c.clip)) : x;
  };
  const Shape yShape = c.layout == 0 ? Shape{S, D, N, H} : Shape{N, S, D, H};
  HostTensor Y(TensorInfo(DataType::FLOAT, yShape));
  HostTensor Yh(TensorInfo(DataType::FLOAT, c.stateShape()));
  HostTensor Yc(TensorInfo(DataType::FLOAT, c.stateShape()));
  for (int64_t d = 0; d < D; ++d) {
    const bool back = d == 1 || c.direction == "reverse";
    auto f = [&](double x) { return act(acts[static_cast<size_t>(d) * nf], clip(x)); };
    auto g = [&](double x) {
      return act(acts[static_cast<size_t>(d) * nf + (nf > 1 ? 1 : 0)], clip(x));
    };
    auto h = [&](double x) { return act(acts[static_cast<size_t>(d) * nf + 2], x); };
    std::vector<std::vector<double>> hs(static_cast<size_t>(N),
                                        std::vector<double>(static_cast<size_t>(H)));
    auto cs = hs;
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        hs[b][j] = c.h0 ? in[5].getAsDouble(stOff(d, b) + j) : 0.0;
        cs[b][j] = c.lstm() && c.c0 ? in[6].getAsDouble(stOff(d, b) + j) : 0.0;
      }
    }
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = back ? S - 1 - s : s;
      auto newH = hs;
      auto newC = cs;
      for (int64_t b = 0; b < N; ++b) {
        if (c.lens && !c.lengths.empty() && t >= c.lengths[static_cast<size_t>(b)]) continue;
        // xw[k] = X_t W_k^T + Wb_k; hr[k] = H_{t-1} R_k^T + Rb_k (per row k of the gate blocks).
        std::vector<double> xw(static_cast<size_t>(GH)), hr(static_cast<size_t>(GH));
        for (int64_t k = 0; k < GH; ++k) {
          double sx = Bv(d, k), sh = Bv(d, GH + k);
          for (int64_t i = 0; i < I; ++i) sx += X(t, b, i) * W(d, k, i);
          for (int64_t m = 0; m < H; ++m) sh += hs[b][m] * R(d, k, m);
          xw[k] = sx;
          hr[k] = sh;
        }
        for (int64_t j = 0; j < H; ++j) {
          if (c.lstm()) {
            const double p = [&](int64_t k) {
              return c.peep ? in[7].getAsDouble(d * 3 * H + k * H + j) : 0.0;
            }(0);
            const double pf = c.peep ? in[7].getAsDouble(d * 3 * H + 2 * H + j) : 0.0;
            const double po = c.peep ? in[7].getAsDouble(d * 3 * H + H + j) : 0.0;
            const double ig = f(xw[j] + hr[j] + p * cs[b][j]);
            const double fg =
                c.inputForget ? 1.0 - ig : f(xw[2 * H + j] + hr[2 * H + j] + pf * cs[b][j]);
            const double cg = g(xw[3 * H + j] + hr[3 * H + j]);
            const double ct = fg * cs[b][j] + ig * cg;
            const double og = f(xw[H + j] + hr[H + j] + po * ct);
            newC[b][j] = ct;
            newH[b][j] = og * h(ct);
          } else if (c.type == "GRU") {
            const double z = f(xw[j] + hr[j]);
            const double r = f(xw[H + j] + hr[H + j]);
            double n;
            if (c.lbr) {
              n = g(xw[2 * H + j] + r * hr[2 * H + j]);
            } else {
              double q = Bv(d, GH + 2 * H + j);
              for (int64_t m = 0; m < H; ++m) {
                const double rm = f(xw[H + m] + hr[H + m]);
                q += rm * hs[b][m] * R(d, 2 * H + j, m);
              }
              n = g(xw[2 * H + j] + q);
            }
            newH[b][j] = (1 - z) * n + z * hs[b][j];
          } else {
            newH[b][j] = f(xw[j] + hr[j]);
          }
        }
      }
      hs = newH;
      cs = newC;
      for (int64_t b = 0; b < N; ++b) {
        for (int64_t j = 0; j < H; ++j) {
          const int64_t off = (c.layout == 0 ? (t * D + d) * N + b : (b * S + t) * D + d) * H + j;
          const bool past = c.lens && !c.lengths.empty() && t >= c.lengths[static_cast<size_t>(b)];
          Y.setFromDouble(off, past ? 0.0 : hs[b][j]);
        }
      }
    }
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        Yh.setFromDouble(stOff(d, b) + j, hs[b][j]);
        Yc.setFromDouble(stOff(d, b) + j, cs[b][j]);
      }
    }
  }
  std::vector<HostTensor> out{Y, Yh};
  if (c.lstm()) out.push_back(Yc);
  return out;
}

void checkForward(const Case& c, uint64_t seed = 11) {
  SCOPED_TRACE(c.type + " " + c.direction + " layout " + std::to_string(c.layout) + " opset " +
               std::to_string(c.opset));
  const auto in = makeInputs(c, seed);
  const Packed p = pack(in);
  const auto got = runForward(buildOp(c, p), p.tensors);
  const auto want = reference(c, in);
  const std::vector<bool> present = {c.outY, c.outYh, c.outYc};
  size_t k = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!present[i]) continue;
    ASSERT_LT(k, got.size());
    EXPECT_TRUE(allClose(got[k], want[i], 1e-5, 1e-5)) << "output " << i;
    ++k;
  }
}

void checkGradients(const Case& c, uint64_t seed = 21) {
  SCOPED_TRACE(c.type + " " + c.direction + " layout " + std::to_string(c.layout));
  const auto in = makeInputs(c, seed);
  const Packed p = pack(in);
  GradCheckOptions o;
  o.rtol = 2e-2;
  o.atol = 3e-3;
  expectGradientsMatch(buildOp(c, p), p.tensors, o);
}

std::vector<Case> forwardCases() {
  std::vector<Case> cases;
  for (const char* type : {"LSTM", "GRU", "RNN"}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      for (int64_t layout : {0, 1}) {
        Case c;
        c.type = type;
        c.direction = dir;
        c.layout = layout;
        cases.push_back(c);
      }
    }
  }
  return cases;
}

TEST(RnnOps, ForwardEveryDirectionAndLayout) {
  for (const Case& c : forwardCases()) checkForward(c);
}

TEST(RnnOps, ForwardGruLinearBeforeReset) {
  for (const char* dir : {"forward", "bidirectional"}) {
    Case c;
    c.type = "GRU";
    c.direction = dir;
    c.lbr = 1;
    checkForward(c);
  }
}

TEST(RnnOps, ForwardWithoutOptionalInputs) {
  for (const char* type : {"LSTM", "GRU", "RNN"}) {
    Case c;
    c.type = type;
    c.bias = c.h0 = c.c0 = false;
    c.setHiddenSize = false;  // taken from R
    checkForward(c);
    c.lens = true;  // all lengths equal to seq_length
    c.h0 = true;
    checkForward(c);
  }
}

TEST(RnnOps, ForwardOpset7To13) {
  for (int opset : {7, 9, 13}) {
    for (const char* type : {"LSTM", "GRU", "RNN"}) {
      Case c;
      c.type = type;
      c.opset = opset;
      c.direction = "bidirectional";
      checkForward(c);
    }
  }
}

// Canonicalizing a canonical op again (a recomputation's clone) passes: before opset 14 the
// recorded layout 0 is not taken for the user's attribute.
TEST(RnnOps, CanonicalFormBeforeOpset14CanonicalizesAgain) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {2, 1, 3}), ir::TensorKind::Stream);
  g.addTensor("w", TensorInfo(DataType::FLOAT, {1, 8, 3}), ir::TensorKind::Stream);
  g.addTensor("r", TensorInfo(DataType::FLOAT, {1, 8, 2}), ir::TensorKind::Stream);
  const TensorId y = addOp(g, "LSTM", {"x", "w", "r"}, attrs({{"hidden_size", int64_t{2}}}), 1,
                           ir::kOnnxDomain, 10)[0];
  ir::Op clone = g.op(g.tensor(y).producer);
  EXPECT_EQ(clone.attrs.getInt("layout"), 0);
  EXPECT_NO_THROW(ir::OpRegistry::instance().get(clone).canonicalize(clone, g));
}

TEST(RnnOps, ForwardOptionalOutputs) {
  Case c;
  c.outY = false;
  checkForward(c);
  c.outY = true;
  c.outYh = false;
  c.outYc = false;
  checkForward(c);
  c.outY = false;
  c.outYc = true;
  checkForward(c);
}

TEST(RnnOps, ForwardLstmOptions) {
  Case c;
  c.peep = true;
  c.direction = "bidirectional";
  checkForward(c);
  c.inputForget = 1;
  checkForward(c);
  c.clip = 0.4f;
  checkForward(c);
  c.acts = {"Relu", "Tanh", "Sigmoid", "Sigmoid", "Relu", "Tanh"};
  checkForward(c);
}

TEST(RnnOps, ForwardCustomActivationsAndClip) {
  Case g;
  g.type = "GRU";
  g.acts = {"relu", "sigmoid"};  // names are matched case-insensitively
  g.clip = 0.5f;
  g.direction = "bidirectional";
  checkForward(g);
  Case r;
  r.type = "RNN";
  r.acts = {"Relu"};
  checkForward(r);
  r.acts = {"Sigmoid", "Relu"};
  r.direction = "bidirectional";
  r.clip = 0.3f;
  checkForward(r);
}

TEST(RnnOps, ForwardVariableSequenceLengths) {
  for (const char* type : {"LSTM", "GRU", "RNN"}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      Case c;
      c.type = type;
      c.direction = dir;
      c.seq = 4;
      c.batch = 3;
      c.lens = true;
      c.lengths = {4, 0, 2};
      c.layout = c.type == "GRU" ? 1 : 0;
      c.lbr = c.type == "GRU" && c.direction == "reverse" ? 1 : 0;
      checkForward(c);
    }
  }
}

TEST(RnnOps, ForwardOpset17BatchFirst) {
  for (const char* type : {"LSTM", "GRU", "RNN"}) {
    Case c;
    c.type = type;
    c.opset = 17;
    c.layout = 1;
    c.direction = "reverse";
    checkForward(c);
  }
}

TEST(RnnOps, ForwardLargerSizes) {
  for (const char* type : {"LSTM", "GRU"}) {
    Case c;
    c.type = type;
    c.seq = 7;
    c.batch = 5;
    c.input = 17;
    c.hidden = 33;
    c.direction = "bidirectional";
    c.layout = 1;
    checkForward(c, 3);
  }
}

// Pre-activations far outside [-88, 88] (the vectorised exp clamps there) and tiny ones (tanh's
// series branch) both match the double reference.
TEST(RnnOps, ForwardSaturatedAndTinyInputs) {
  for (const char* type : {"LSTM", "GRU", "RNN"}) {
    for (float scale : {60.0f, 1e-4f}) {
      Case c;
      c.type = type;
      c.direction = "bidirectional";
      auto in = makeInputs(c, 13);
      for (size_t i : {0, 5}) {
        for (auto& v : in[i].span<float>()) v *= scale;
      }
      for (auto& v : in[1].span<float>()) v *= scale > 1 ? 3.0f : 1.0f;
      const auto want = reference(c, in);
      const Packed p = pack(in);
      const auto got = runForward(buildOp(c, p), p.tensors);
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_TRUE(allClose(got[k], want[k], 1e-5, 1e-6)) << type << " scale " << scale;
      }
    }
  }
}

TEST(RnnOps, EmptyBatchAndSequence) {
  Case c;
  c.batch = 0;
  checkForward(c);
  c.batch = 2;
  c.seq = 0;  // Y is empty; Y_h and Y_c are the initial states
  checkForward(c);
}

// ---- gradients --------------------------------------------------------------------------------

TEST(RnnOpsGrad, LstmEveryDirectionAndLayout) {
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    for (int64_t layout : {0, 1}) {
      Case c;
      c.direction = dir;
      c.layout = layout;
      checkGradients(c);
    }
  }
}

TEST(RnnOpsGrad, LstmPeepholesAndInputForget) {
  Case c;
  c.peep = true;
  c.direction = "bidirectional";
  checkGradients(c);
  c.inputForget = 1;
  checkGradients(c);
}

TEST(RnnOpsGrad, LstmClipAndActivations) {
  Case c;
  c.clip = 0.6f;
  c.acts = {"Sigmoid", "Tanh", "Sigmoid"};
  checkGradients(c);
}

TEST(RnnOpsGrad, LstmSomeOutputs) {
  Case c;
  c.outY = false;  // only the final states carry gradients
  checkGradients(c);
  c.outY = true;
  c.outYh = c.outYc = false;
  c.bias = c.h0 = c.c0 = false;
  checkGradients(c);
}

TEST(RnnOpsGrad, Gru) {
  for (int64_t lbr : {0, 1}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      Case c;
      c.type = "GRU";
      c.lbr = lbr;
      c.direction = dir;
      c.layout = lbr;
      checkGradients(c);
    }
  }
}

TEST(RnnOpsGrad, VariableSequenceLengths) {
  for (const char* type : {"LSTM", "GRU", "RNN"}) {
    for (const char* dir : {"forward", "bidirectional"}) {
      Case c;
      c.type = type;
      c.direction = dir;
      c.seq = 4;
      c.batch = 3;
      c.lens = true;
      c.lengths = {2, 4, 0};
      c.peep = c.type == "LSTM";
      checkGradients(c);
      if (c.type == "GRU") {
        c.lbr = 1;
        c.layout = 1;
        checkGradients(c);
      }
    }
  }
}

TEST(RnnOpsGrad, Rnn) {
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    Case c;
    c.type = "RNN";
    c.direction = dir;
    checkGradients(c);
  }
  Case s;
  s.type = "RNN";
  s.acts = {"Sigmoid"};
  s.layout = 1;
  s.h0 = false;
  checkGradients(s);
}

// ---- PyTorch ----------------------------------------------------------------------------------

// Values nn.LSTM(2, 2) and nn.GRU(2, 2) (PyTorch's GRU is ONNX's linear_before_reset 1) compute
// for seq 3, batch 1, with their gate blocks reordered into ONNX's (LSTM i o f c, GRU z r h) as
// PyTorch's exporter does; Y and d sum(Y) / d W.
// Lstm
const std::vector<float> kLstmX = {0.80327606f,  0.17483339f, 0.08897810f,
                                   -0.61371803f, 0.04618245f, -1.36825919f};
const std::vector<float> kLstmW = {-0.49519974f, -0.13934414f, -0.63048905f, -0.05740966f,
                                   -0.45130777f, -0.44163743f, -0.29310325f, 0.14099520f,
                                   -0.45876345f, 0.63524050f,  0.49118274f,  0.53012675f,
                                   0.20974261f,  -0.40339348f, 0.63541323f,  -0.68998253f};
const std::vector<float> kLstmR = {-0.53562593f, -0.54476100f, -0.33816725f, 0.43157825f,
                                   0.11656242f,  -0.10137008f, -0.08017544f, -0.46002552f,
                                   -0.51001900f, -0.63420141f, -0.61285537f, -0.34795678f,
                                   -0.18579097f, -0.70099109f, -0.33105859f, 0.01360306f};
const std::vector<float> kLstmB = {0.36225504f,  -0.17034550f, 0.36851442f,  -0.28552094f,
                                   -0.48346075f, -0.17028852f, -0.09878673f, 0.65379494f,
                                   -0.10031851f, 0.62484860f,  0.30294597f,  -0.31492767f,
                                   0.45427138f,  0.17630608f,  -0.25365078f, 0.58836722f};
const std::vector<float> kLstmH0 = {0.15441510f, -0.24799016f};
const std::vector<float> kLstmC0 = {0.45350116f, 0.01209109f};
const std::vector<float> kLstmY = {0.08556616f, 0.12975706f, -0.03549255f,
                                   0.19834925f, 0.02443739f, 0.20349211f};
const std::vector<float> kLstmDW = {-0.02001566f, 0.00046794f,  0.05108685f, -0.05738571f,
                                    0.02589577f,  0.00370520f,  0.06107082f, -0.23930311f,
                                    0.07333619f,  0.00812094f,  0.00316011f, -0.04272440f,
                                    0.35580921f,  -0.81634879f, 0.01559027f, -0.01060366f};
// Gru
const std::vector<float> kGruX = {0.80327606f,  0.17483339f, 0.08897810f,
                                  -0.61371803f, 0.04618245f, -1.36825919f};
const std::vector<float> kGruW = {-0.32075784f, 0.01054455f, 0.43449667f, 0.24442053f,
                                  0.37685344f,  0.31623530f, 0.15210561f, 0.58263195f,
                                  0.08567215f,  0.59127921f, 0.16115345f, 0.47576347f};
const std::vector<float> kGruR = {0.60006291f,  -0.61708075f, 0.28135777f,  -0.62400842f,
                                  -0.60938632f, -0.60932148f, -0.63823056f, 0.04002762f,
                                  -0.46991780f, -0.24112591f, -0.28753591f, 0.20885685f};
const std::vector<float> kGruB = {0.10308529f,  0.24650536f,  -0.59291917f, 0.69925076f,
                                  -0.47766143f, 0.39022452f,  0.12027472f,  0.29428867f,
                                  -0.16510513f, -0.35181516f, 0.07488382f,  -0.24738944f};
const std::vector<float> kGruH0 = {-0.05619294f, -1.43955541f};
const std::vector<float> kGruY = {-0.04671589f, -1.20163155f, -0.19919932f,
                                  -0.94643903f, -0.40793571f, -0.76964718f};
const std::vector<float> kGruDW = {0.01137963f, -0.30137482f, -0.42160437f, 0.28084674f,
                                   0.05698199f, -0.02222424f, -0.03588333f, 0.05719527f,
                                   0.54531091f, -0.24562511f, 0.29434800f,  -0.55571675f};

// Runs the op on the given values and returns Y and the gradient of sum(Y) with respect to W.
std::pair<HostTensor, HostTensor> yAndDw(const std::string& type, const std::vector<HostTensor>& in,
                                         Attributes a) {
  ir::Graph graph;
  std::vector<TensorId> ids;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].info().isSet()) {
      ids.emplace_back();
      continue;
    }
    ids.push_back("in" + std::to_string(i));
    graph.addTensor(ids.back(), in[i].info(), ir::TensorKind::Variable,
                    std::make_shared<HostTensor>(in[i]));
  }
  const TensorId y = addOp(graph, type, ids, std::move(a), 1, ir::kOnnxDomain, 14)[0];
  Attributes r;
  r.set("shape", std::vector<int64_t>{});
  const TensorId loss = addOp(graph, "ReduceSumToShape", {y}, r, 1, ir::kXtrainDomain)[0];
  auto grads = ir::autodiff(graph, loss, {ids[1]});
  session::LoweredGraph lowered(graph);
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, 1);
  lowered.run(ir::Phase::Backward, buffers, 1);
  return {buffers[static_cast<size_t>(lowered.bufferIndex(y))],
          buffers[static_cast<size_t>(lowered.bufferIndex(grads.at(ids[1])))]};
}

TEST(RnnOps, MatchesPyTorchLstm) {
  std::vector<HostTensor> in(8);
  in[0] = HostTensor::fromVector<float>({3, 1, 2}, kLstmX);
  in[1] = HostTensor::fromVector<float>({1, 8, 2}, kLstmW);
  in[2] = HostTensor::fromVector<float>({1, 8, 2}, kLstmR);
  in[3] = HostTensor::fromVector<float>({1, 16}, kLstmB);
  in[5] = HostTensor::fromVector<float>({1, 1, 2}, kLstmH0);
  in[6] = HostTensor::fromVector<float>({1, 1, 2}, kLstmC0);
  in.resize(7);
  auto [y, dw] = yAndDw("LSTM", in, attrs({{"hidden_size", int64_t{2}}}));
  EXPECT_TRUE(allClose(y, HostTensor::fromVector<float>({3, 1, 1, 2}, kLstmY), 1e-5, 1e-6));
  EXPECT_TRUE(allClose(dw, HostTensor::fromVector<float>({1, 8, 2}, kLstmDW), 1e-4, 1e-6));
}

TEST(RnnOps, MatchesPyTorchGru) {
  std::vector<HostTensor> in(6);
  in[0] = HostTensor::fromVector<float>({3, 1, 2}, kGruX);
  in[1] = HostTensor::fromVector<float>({1, 6, 2}, kGruW);
  in[2] = HostTensor::fromVector<float>({1, 6, 2}, kGruR);
  in[3] = HostTensor::fromVector<float>({1, 12}, kGruB);
  in[5] = HostTensor::fromVector<float>({1, 1, 2}, kGruH0);
  auto [y, dw] =
      yAndDw("GRU", in, attrs({{"hidden_size", int64_t{2}}, {"linear_before_reset", int64_t{1}}}));
  EXPECT_TRUE(allClose(y, HostTensor::fromVector<float>({3, 1, 1, 2}, kGruY), 1e-5, 1e-6));
  EXPECT_TRUE(allClose(dw, HostTensor::fromVector<float>({1, 6, 2}, kGruDW), 1e-4, 1e-6));
}

// FLOAT16 tensors run promoted (computed in FLOAT, stored in FLOAT16), forward and backward.
TEST(RnnOps, Float16) {
  for (const char* type : {"LSTM", "GRU"}) {
    Case c;
    c.type = type;
    c.direction = "bidirectional";
    auto in = makeInputs(c, 9);
    for (auto& t : in) {
      if (t.info().isSet() && t.dataType() == DataType::FLOAT) t = t.castTo(DataType::FLOAT16);
    }
    const auto want = reference(c, in);
    const Packed p = pack(in);
    const auto got = runForward(buildOp(c, p), p.tensors);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].dataType(), DataType::FLOAT16);
      EXPECT_TRUE(allClose(got[i].castTo(DataType::FLOAT), want[i], 1e-2, 2e-3)) << "output " << i;
    }
    // The gradient of sum(Y) with respect to W, against the FLOAT one.
    auto in32 = in;
    for (auto& t : in32) {
      if (t.info().isSet() && t.dataType() == DataType::FLOAT16) t = t.castTo(DataType::FLOAT);
    }
    const Attributes at = makeAttrs(c);
    const HostTensor dw16 = yAndDw(type, in, at).second;
    const HostTensor dw32 = yAndDw(type, in32, at).second;
    EXPECT_EQ(dw16.dataType(), DataType::FLOAT16);
    EXPECT_TRUE(allClose(dw16.castTo(DataType::FLOAT), dw32, 2e-2, 2e-2));
  }
}

// ---- errors -----------------------------------------------------------------------------------

void expectOpError(Case c, const std::vector<std::string>& parts, uint64_t seed = 5) {
  const auto in = makeInputs(c, seed);
  const Packed p = pack(in);
  expectError([&] { runForward(buildOp(c, p), p.tensors); }, parts);
}

TEST(RnnOpsErrors, BadAttributes) {
  Case c;
  c.direction = "sideways";
  expectOpError(c, {"LSTM 'rnn_under_test'", "direction", "sideways", "bidirectional"});
  Case a;
  a.acts = {"Sigmoid", "Tanh", "Softsign"};
  expectOpError(a, {"LSTM", "Softsign", "not supported", "Sigmoid, Tanh and Relu"});
  Case n;
  n.type = "GRU";
  n.acts = {"Sigmoid", "Tanh", "Tanh"};
  expectOpError(n, {"GRU", "activations", "3 entries", "expected 2"});
  Case l;
  l.opset = 13;
  l.layout = 1;
  l.setHiddenSize = true;
  {
    auto in = makeInputs(l, 5);
    Packed p = pack(in);
    expectError(
        [&] {
          runForward(
              [&](ir::Graph& graph, const std::vector<TensorId>& ids) {
                Attributes at = makeAttrs(l);
                at.set("layout", int64_t{1});
                return addOp(graph, "LSTM", ids, at, 1, ir::kOnnxDomain, 13);
              },
              p.tensors);
        },
        {"LSTM", "layout", "opset 14", "opset 13"});
  }
  Case h;
  h.type = "RNN";
  Attributes bad;
  {
    auto in = makeInputs(h, 5);
    Packed p = pack(in);
    expectError(
        [&] {
          runForward(
              [&](ir::Graph& graph, const std::vector<TensorId>& ids) {
                std::vector<TensorId> ins(6);
                for (size_t k = 0; k < ids.size(); ++k)
                  ins[static_cast<size_t>(p.slot[k])] = ids[k];
                return addOp(graph, "RNN", ins, attrs({{"hidden_size", int64_t{5}}}), 1);
              },
              p.tensors);
        },
        {"RNN", "hidden_size 5 does not match", "hidden size is 4"});
  }
  Case clip;
  clip.clip = -1.0f;
  // clip <= 0 is not set by makeAttrs; set it by hand.
  {
    auto in = makeInputs(clip, 5);
    Packed p = pack(in);
    expectError(
        [&] {
          runForward(
              [&](ir::Graph& graph, const std::vector<TensorId>& ids) {
                std::vector<TensorId> ins(8);
                for (size_t k = 0; k < ids.size(); ++k)
                  ins[static_cast<size_t>(p.slot[k])] = ids[k];
                return addOp(graph, "LSTM", ins, attrs({{"clip", -1.0f}}), 1);
              },
              p.tensors);
        },
        {"LSTM", "clip", "positive"});
  }
  Case op6;
  op6.opset = 6;
  expectOpError(op6, {"LSTM", "opset 6", "opsets 7 to 17"});
}

// activation_alpha/beta parameterise none of the supported activations: a value given is refused
// (an empty list is accepted).
TEST(RnnOpsErrors, ActivationParametersRefused) {
  Case c;
  c.type = "RNN";
  for (const char* name : {"activation_alpha", "activation_beta"}) {
    auto in = makeInputs(c, 5);
    Packed p = pack(in);
    auto run = [&](std::vector<float> values) {
      runForward(
          [&](ir::Graph& graph, const std::vector<TensorId>& ids) {
            std::vector<TensorId> ins(6);
            for (size_t k = 0; k < ids.size(); ++k) ins[static_cast<size_t>(p.slot[k])] = ids[k];
            return addOp(graph, "RNN", ins, attrs({{name, values}}), 1);
          },
          p.tensors);
    };
    expectError([&] { run({1.0f}); }, {"RNN", name, "not supported", "Tanh", "1 value"});
    EXPECT_NO_THROW(run({}));
  }
}

TEST(RnnOpsErrors, BadShapesAndTypes) {
  Case c;
  auto in = makeInputs(c, 5);
  in[1] = randomTensor({1, 15, 3}, 1);  // W must be [1, 16, 3]
  Packed p = pack(in);
  expectError([&] { runForward(buildOp(c, p), p.tensors); }, {"LSTM", "W (input 1)", "[1,16,3]"});
  in = makeInputs(c, 5);
  in[5] = randomTensor({1, 3, 4}, 1);  // batch 2
  p = pack(in);
  expectError([&] { runForward(buildOp(c, p), p.tensors); }, {"LSTM", "initial_h", "[1,2,4]"});
  in = makeInputs(c, 5);
  in[7] = randomTensor({1, 8}, 1);
  c.peep = true;
  p = pack(in);
  expectError([&] { runForward(buildOp(c, p), p.tensors); }, {"LSTM", "P", "[1,12]"});
  Case g;
  g.type = "GRU";
  in = makeInputs(g, 5);
  in[0] = randomTensor({3, 2}, 1);
  p = pack(in);
  expectError([&] { runForward(buildOp(g, p), p.tensors); }, {"GRU", "X", "rank 3"});
  in = makeInputs(g, 5);
  in[3] = randomTensor({1, 12}, 1);
  p = pack(in);
  expectError([&] { runForward(buildOp(g, p), p.tensors); }, {"GRU", "B (input 3)", "[1,24]"});
}

TEST(RnnOpsErrors, SequenceLengthsOutOfRange) {
  Case c;
  c.type = "GRU";
  c.lens = true;
  c.lengths = {3, 4};
  auto in = makeInputs(c, 5);
  Packed p = pack(in);
  expectError([&] { runForward(buildOp(c, p), p.tensors); },
              {"GRU 'rnn_under_test'", "sequence_lens[1] is 4", "[0, 3] (seq_length)"});
  c.lengths = {-1, 2};
  in = makeInputs(c, 5);
  p = pack(in);
  expectError([&] { runForward(buildOp(c, p), p.tensors); },
              {"GRU 'rnn_under_test'", "sequence_lens[0] is -1"});
}

// sequence_lens fed at run time (not a constant): the kernels check each length.
TEST(RnnOpsErrors, SequenceLengthsCheckedAtRunTime) {
  for (const char* type : {"LSTM", "RNN"}) {
    Case c;
    c.type = type;
    auto in = makeInputs(c, 5);
    ir::Graph graph;
    std::vector<TensorId> ids(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].info().isSet()) continue;
      ids[i] = "in" + std::to_string(i);
      graph.addTensor(ids[i], in[i].info(), ir::TensorKind::Variable,
                      std::make_shared<HostTensor>(in[i]));
    }
    ids[4] = "lens";
    graph.addTensor("lens", TensorInfo(DataType::INT32, {c.batch}), ir::TensorKind::Stream);
    graph.inputs().push_back("lens");
    const TensorId y = addOp(graph, type, ids, makeAttrs(c), 1, ir::kOnnxDomain, 14)[0];
    Attributes r;
    r.set("shape", std::vector<int64_t>{});
    const TensorId loss = addOp(graph, "ReduceSumToShape", {y}, r, 1, ir::kXtrainDomain)[0];
    auto grads = ir::autodiff(graph, loss, {ids[1]});
    session::LoweredGraph lowered(graph);
    auto buffers = lowered.makeBuffers();
    HostTensor& lens = buffers[static_cast<size_t>(lowered.bufferIndex("lens"))];
    lens.data<int32_t>()[0] = 3;
    lens.data<int32_t>()[1] = 1;
    lowered.run(ir::Phase::Forward, buffers, 1);  // a valid length shorter than seq_length
    lowered.run(ir::Phase::Backward, buffers, 1);
    lens.data<int32_t>()[1] = 7;
    expectError([&] { lowered.run(ir::Phase::Forward, buffers, 1); },
                {std::string(type) + " 'op_under_test'", "sequence_lens[1] is 7", "[0, 3]"});
  }
}

}  // namespace
}  // namespace xtrain::testing
