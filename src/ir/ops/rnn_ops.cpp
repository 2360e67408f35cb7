// Recurrent ops: ONNX LSTM, GRU and RNN (opsets 7-17; opset 14 added `layout`), and their one-pass
// backpropagation-through-time gradients LSTMGrad, GRUGrad and RNNGrad (ai.xtrain).
//
// Canonical form (set by canonicalize, read by device/kernels/rnn_kernels.cpp and
// rnn_grad_kernels.cpp):
//  - direction: "forward" | "reverse" | "bidirectional" (default forward);
//  - hidden_size: set from R's shape when absent (and checked against it when present);
//  - layout: 0 (X [seq, batch, input], Y [seq, dirs, batch, H], states [dirs, batch, H]) or 1
//    (batch first: X [batch, seq, input], Y [batch, seq, dirs, H], states [batch, dirs, H]); only
//    accepted from opset 14, as ONNX defines it;
//  - activations: the full list, one entry per gate function and direction (LSTM 3, GRU 2, RNN 1
//    per direction), each "Sigmoid", "Tanh" or "Relu" (a per-direction list given once for a
//    bidirectional op is repeated); other activation functions are refused naming the op, and so
//    are activation_alpha/beta values (no supported function takes one; an empty list is fine);
//  - clip (float, present only when clipping; the gate functions' inputs are clamped to
//    [-clip, clip], the cell output function's is not), input_forget (LSTM: f = 1 - i),
//    linear_before_reset (GRU; PyTorch exports 1). LSTM peepholes P are supported.
// sequence_lens (int32 [batch]) may be given, each length in [0, seq_length] (a constant one is
// checked here, the kernels check at run time): as the ONNX spec defines, a sequence's steps past
// its length leave its state unchanged (Y_h/Y_c are the state after its last step; the reverse
// direction starts at its last valid step) and its Y there is 0.
//
// Gradients: the forward op saves what the backward needs (the gate pre-activations, the hidden
// and cell states of every step) in an extra internal FLOAT output (output 3 for LSTM, 2 for GRU
// and RNN in the internal numbering below), which the grad function appends to the forward op when
// autodiff reaches it (an op run only forward keeps that state in kernel scratch instead of a
// graph tensor, and the ONNX import needs no internal outputs); the attribute `__save` marks such
// an op. The grad op reads that output and the incoming gradients of Y, Y_h (and Y_c) and computes
// the gradients of X, W, R, B, initial_h (initial_c, P) in one pass.
#include <algorithm>
#include <cctype>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

enum class Cell { Lstm, Gru, Rnn };

struct CellInfo {
  Cell cell;
  const char* type;
  int gates;        // gate blocks in W and R (LSTM 4: i o f c; GRU 3: z r h; RNN 1)
  int functions;    // activation functions per direction
  int onnxInputs;   // LSTM 8 (X W R B sequence_lens initial_h initial_c P), GRU/RNN 6
  int onnxOutputs;  // LSTM 3 (Y Y_h Y_c), GRU/RNN 2
  std::vector<std::string> defaultActivations;
};

const CellInfo kLstm{Cell::Lstm, "LSTM", 4, 3, 8, 3, {"Sigmoid", "Tanh", "Tanh"}};
const CellInfo kGru{Cell::Gru, "GRU", 3, 2, 6, 2, {"Sigmoid", "Tanh"}};
const CellInfo kRnn{Cell::Rnn, "RNN", 1, 1, 6, 2, {"Tanh"}};

// Floats saved per step and batch entry (see device/kernels/rnn_common.hpp): LSTM pre-activations
// (4H), h, c; GRU pre-activations (3H), h, and the recurrent term of the candidate gate (H); RNN
// pre-activation and h.
int64_t savedWidth(Cell cell, int64_t h) {
  switch (cell) {
    case Cell::Lstm: return 6 * h;
    case Cell::Gru: return 5 * h;
    case Cell::Rnn: return 2 * h;
  }
  return 0;
}

int64_t numDirections(const Attributes& a) {
  return a.getString("direction", "forward") == "bidirectional" ? 2 : 1;
}

std::string canonicalActivation(const ShapeContext& ctx, const std::string& name) {
  std::string lower;
  for (char c : name)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "sigmoid") return "Sigmoid";
  if (lower == "tanh") return "Tanh";
  if (lower == "relu") return "Relu";
  ctx.fail(
      "activation '{}' is not supported; supported activation functions are Sigmoid, Tanh "
      "and Relu",
      name);
}

void canonicalizeRnn(const CellInfo& ci, Op& op, const Graph& graph) {
  ShapeContext ctx(graph, op);
  Attributes& a = op.attrs;
  if (op.opset != 0 && op.opset < 7) {
    ctx.fail("opset {} is not supported; {} is supported at opsets 7 to 17", op.opset, ci.type);
  }
  // The canonical form records layout 0, so an op canonicalized before (a recomputation clone)
  // passes again.
  if (op.opset != 0 && op.opset < 14 && a.has("layout") && a.getInt("layout") != 0) {
    ctx.fail("attribute 'layout' exists from opset 14; this op is opset {}", op.opset);
  }
  const int64_t layout = a.getInt("layout", 0);
  if (layout != 0 && layout != 1) ctx.fail("attribute 'layout' is {}, expected 0 or 1", layout);
  a.set("layout", layout);
  const std::string dir = a.getString("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") {
    ctx.fail("attribute 'direction' is '{}', expected 'forward', 'reverse' or 'bidirectional'",
             dir);
  }
  a.set("direction", dir);
  const int64_t dirs = numDirections(a);

  // hidden_size from R [dirs, gates*H, H].
  const TensorInfo& r = ctx.input(2);
  if (r.rank() != 3)
    ctx.fail("R is {}; expected rank 3 [num_directions, {}*hidden_size, hidden_size]", r.toString(),
             ci.gates);
  const int64_t hs = r.shape()[2];
  if (a.has("hidden_size") && a.getInt("hidden_size") != hs) {
    ctx.fail("attribute hidden_size {} does not match R {}, whose hidden size is {}",
             a.getInt("hidden_size"), r.toString(), hs);
  }
  a.set("hidden_size", hs);

  std::vector<std::string> acts =
      a.has("activations") ? a.getStrings("activations") : ci.defaultActivations;
  if (static_cast<int64_t>(acts.size()) == ci.functions && dirs == 2) {
    std::vector<std::string> both = acts;
    both.insert(both.end(), acts.begin(), acts.end());
    acts = both;
  }
  if (static_cast<int64_t>(acts.size()) != ci.functions * dirs) {
    ctx.fail("attribute 'activations' has {} entries; expected {} ({} per direction)", acts.size(),
             ci.functions * dirs, ci.functions);
  }
  for (auto& s : acts) s = canonicalActivation(ctx, s);
  a.set("activations", acts);
  // activation_alpha/beta only parameterise functions (Affine, LeakyRelu, ...) that are refused
  // above; Sigmoid, Tanh and Relu take none, so a value given would be used by none of them.
  for (const char* name : {"activation_alpha", "activation_beta"}) {
    if (a.has(name) && !a.getFloats(name).empty()) {
      std::string names;
      for (const auto& f : acts) names += (names.empty() ? "" : ", ") + f;
      ctx.fail("attribute '{}' is not supported: none of the activations ({}) takes a parameter, "
               "so its {} value(s) would have no effect; leave it out",
               name, names, a.getFloats(name).size());
    }
    a.erase(name);
  }

  if (a.has("clip")) {
    const float clip = a.getFloat("clip");
    if (!(clip > 0.0f)) ctx.fail("attribute 'clip' is {}, expected a positive threshold", clip);
  }
  if (ci.cell == Cell::Lstm) {
    const int64_t f = a.getInt("input_forget", 0);
    if (f != 0 && f != 1) ctx.fail("attribute 'input_forget' is {}, expected 0 or 1", f);
    a.set("input_forget", f);
  }
  if (ci.cell == Cell::Gru) {
    const int64_t l = a.getInt("linear_before_reset", 0);
    if (l != 0 && l != 1) ctx.fail("attribute 'linear_before_reset' is {}, expected 0 or 1", l);
    a.set("linear_before_reset", l);
  }

  // A constant sequence_lens must hold lengths in [0, seq_length].
  if (op.hasInput(4)) {
    if (const HostTensor* v = ctx.constValue(4)) {
      const TensorInfo& x = ctx.input(0);
      const int64_t seq = x.rank() == 3 ? x.shape()[layout == 0 ? 0 : 1] : -1;
      if (seq >= 0) {  // (a dimension not known yet is checked by the kernel)
        for (int64_t i = 0; i < v->nelms(); ++i) {
          const auto len = static_cast<int64_t>(v->getAsDouble(i));
          if (len < 0 || len > seq) {
            ctx.fail("sequence_lens[{}] is {}; expected a length in [0, {}] (seq_length)", i, len,
                     seq);
          }
        }
      }
    }
  }
}

void expectShape(const ShapeContext& ctx, size_t i, const char* name, const Shape& want) {
  if (ctx.input(i).shape() != want) {
    ctx.fail("{} (input {}) is {}; expected shape {}", name, i, ctx.input(i).toString(),
             shapeToString(want));
  }
}

struct Dims {
  int64_t seq, batch, input, hidden, dirs, layout;
};

// Checks the forward op's inputs; returns the problem's dimensions.
Dims checkInputs(const CellInfo& ci, const ShapeContext& ctx) {
  const Attributes& a = ctx.attrs();
  ctx.requireFloatOrHalf(0, "X");
  ctx.requireFloatOrHalf(1, "W");
  ctx.requireFloatOrHalf(2, "R");
  const TensorInfo& x = ctx.input(0);
  if (x.rank() != 3) {
    ctx.fail("X is {}; expected rank 3 ({})", x.toString(),
             a.getInt("layout") == 0 ? "[seq_length, batch_size, input_size]"
                                     : "[batch_size, seq_length, input_size]");
  }
  Dims d{};
  d.layout = a.getInt("layout");
  d.seq = x.shape()[d.layout == 0 ? 0 : 1];
  d.batch = x.shape()[d.layout == 0 ? 1 : 0];
  d.input = x.shape()[2];
  d.hidden = a.getInt("hidden_size");
  d.dirs = numDirections(a);
  const int64_t g = ci.gates;
  expectShape(ctx, 1, "W", {d.dirs, g * d.hidden, d.input});
  expectShape(ctx, 2, "R", {d.dirs, g * d.hidden, d.hidden});
  const DataType t = x.dataType();
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    if (i == 4 || !ctx.hasInput(i)) continue;
    if (ctx.input(i).dataType() != t) {
      ctx.fail("input {} is {} but X is {}; expected one floating-point type", i,
               ctx.input(i).toString(), x.toString());
    }
  }
  if (ctx.hasInput(3)) expectShape(ctx, 3, "B", {d.dirs, 2 * g * d.hidden});
  if (ctx.hasInput(4)) {
    const TensorInfo& s = ctx.input(4);
    if (s.dataType() != DataType::INT32 && s.dataType() != DataType::INT64) {
      ctx.fail("sequence_lens is {}; expected INT32", s.toString());
    }
    expectShape(ctx, 4, "sequence_lens", {d.batch});
  }
  const Shape state =
      d.layout == 0 ? Shape{d.dirs, d.batch, d.hidden} : Shape{d.batch, d.dirs, d.hidden};
  if (ctx.hasInput(5)) expectShape(ctx, 5, "initial_h", state);
  if (ci.cell == Cell::Lstm) {
    if (ctx.hasInput(6)) expectShape(ctx, 6, "initial_c", state);
    if (ctx.hasInput(7)) expectShape(ctx, 7, "P", {d.dirs, 3 * d.hidden});
  }
  return d;
}

std::vector<TensorInfo> inferRnn(const CellInfo& ci, const ShapeContext& ctx) {
  const Dims d = checkInputs(ci, ctx);
  const Op& op = ctx.op();
  if (op.hasOutput(static_cast<size_t>(ci.onnxOutputs)) && !ctx.attrs().has("__save")) {
    ctx.fail("has {} outputs; {} has at most {}", op.outputs.size(), ci.type, ci.onnxOutputs);
  }
  const DataType t = ctx.input(0).dataType();
  const Shape y = d.layout == 0 ? Shape{d.seq, d.dirs, d.batch, d.hidden}
                                : Shape{d.batch, d.seq, d.dirs, d.hidden};
  const Shape state =
      d.layout == 0 ? Shape{d.dirs, d.batch, d.hidden} : Shape{d.batch, d.dirs, d.hidden};
  std::vector<TensorInfo> out{TensorInfo(t, y), TensorInfo(t, state)};
  if (ci.cell == Cell::Lstm) out.emplace_back(t, state);
  out.emplace_back(DataType::FLOAT, Shape{d.dirs, d.seq, d.batch, savedWidth(ci.cell, d.hidden)});
  return out;
}

// Grad op inputs: X W R B? initial_h? [initial_c? P? for LSTM] Saved dY? dY_h? [dY_c?]
// sequence_lens?;
// outputs: dX dW dR dB dInitial_h [dInitial_c dP]. The attributes are the forward op's.
void gradRnn(const CellInfo& ci, GradContext& g) {
  const bool lstm = ci.cell == Cell::Lstm;
  const size_t savedIndex = static_cast<size_t>(ci.onnxOutputs);
  Graph& graph = g.graph();
  Op& fwd = graph.op(g.op().id);
  TensorId saved;
  if (fwd.hasOutput(savedIndex)) {
    saved = fwd.outputs[savedIndex];
  } else {
    fwd.attrs.set("__save", int64_t{1});
    fwd.outputs.resize(savedIndex + 1);
    saved = graph.uniqueId((fwd.name.empty() ? std::string(ci.type) : fwd.name) + "/saved");
    fwd.outputs[savedIndex] = saved;
    ShapeContext ctx(graph, fwd);
    const TensorInfo info = inferRnn(ci, ctx).at(savedIndex);
    Tensor& t = graph.addTensor(saved, info, TensorKind::Activation);
    t.producer = fwd.id;
  }
  const Op& op = g.op();
  auto opt = [&](size_t i) { return op.hasInput(i) ? op.inputs[i] : TensorId(); };
  auto optGrad = [&](size_t i) { return op.hasOutput(i) ? g.gradOut(i) : TensorId(); };
  std::vector<TensorId> ins{g.input(0), g.input(1), g.input(2), opt(3), opt(5)};
  if (lstm) {
    ins.push_back(opt(6));
    ins.push_back(opt(7));
  }
  ins.push_back(saved);
  ins.push_back(optGrad(0));
  ins.push_back(optGrad(1));
  if (lstm) ins.push_back(optGrad(2));
  ins.push_back(opt(4));
  Attributes a = op.attrs;
  a.erase("__save");
  const int nOut = lstm ? 7 : 5;
  auto outs = g.emitMulti(std::string(ci.type) + "Grad", std::move(ins), nOut, a);
  if (g.needsGrad(0)) g.setGradIn(0, outs[0]);
  if (g.needsGrad(1)) g.setGradIn(1, outs[1]);
  if (g.needsGrad(2)) g.setGradIn(2, outs[2]);
  if (op.hasInput(3) && g.needsGrad(3)) g.setGradIn(3, outs[3]);
  if (op.hasInput(5) && g.needsGrad(5)) g.setGradIn(5, outs[4]);
  if (lstm && op.hasInput(6) && g.needsGrad(6)) g.setGradIn(6, outs[5]);
  if (lstm && op.hasInput(7) && g.needsGrad(7)) g.setGradIn(7, outs[6]);
}

OpDef rnnDef(const CellInfo& ci) {
  OpDef d{.type = ci.type,
          .minInputs = 3,
          .maxInputs = ci.onnxInputs,
          .minOutputs = 1,
          .maxOutputs = ci.onnxOutputs + 1};
  d.canonicalize = [&ci](Op& op, const Graph& graph) { canonicalizeRnn(ci, op, graph); };
  d.infer = [&ci](const ShapeContext& ctx) { return inferRnn(ci, ctx); };
  d.grad = [&ci](GradContext& g) { gradRnn(ci, g); };
  return d;
}

XT_REGISTER_OP(rnnDef(kLstm));
XT_REGISTER_OP(rnnDef(kGru));
XT_REGISTER_OP(rnnDef(kRnn));

OpDef rnnGradDef(const CellInfo& ci) {
  OpDef d{.type = std::string(ci.type) + "Grad", .domain = kXtrainDomain};
  const bool lstm = ci.cell == Cell::Lstm;
  d.minInputs = 3;  // X W R; Saved (after optional inputs) is checked in infer
  d.maxInputs = lstm ? 12 : 9;
  d.minOutputs = d.maxOutputs = lstm ? 7 : 5;
  d.infer = [&ci, lstm](const ShapeContext& ctx) {
    const TensorInfo& x = ctx.input(0);
    const TensorInfo& w = ctx.input(1);
    const TensorInfo& r = ctx.input(2);
    if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3) {
      ctx.fail("X {}, W {} and R {} must have rank 3", x.toString(), w.toString(), r.toString());
    }
    const int64_t layout = ctx.attrs().getInt("layout");
    const int64_t seq = x.shape()[layout == 0 ? 0 : 1];
    const int64_t batch = x.shape()[layout == 0 ? 1 : 0];
    const int64_t h = ctx.attrs().getInt("hidden_size");
    const int64_t dirs = numDirections(ctx.attrs());
    const Shape state = layout == 0 ? Shape{dirs, batch, h} : Shape{batch, dirs, h};
    const size_t savedIndex = lstm ? 7 : 5;
    expectShape(ctx, savedIndex, "Saved", {dirs, seq, batch, savedWidth(ci.cell, h)});
    const DataType t = x.dataType();
    std::vector<TensorInfo> out{x, w, r, TensorInfo(t, {dirs, 2 * ci.gates * h}),
                                TensorInfo(t, state)};
    if (lstm) {
      out.emplace_back(t, state);
      out.emplace_back(t, Shape{dirs, 3 * h});
    }
    const Shape y = layout == 0 ? Shape{seq, dirs, batch, h} : Shape{batch, seq, dirs, h};
    if (ctx.hasInput(savedIndex + 1)) expectShape(ctx, savedIndex + 1, "dY", y);
    if (ctx.hasInput(savedIndex + 2)) expectShape(ctx, savedIndex + 2, "dY_h", state);
    if (lstm && ctx.hasInput(savedIndex + 3)) expectShape(ctx, savedIndex + 3, "dY_c", state);
    return out;
  };
  return d;
}

XT_REGISTER_OP(rnnGradDef(kLstm));
XT_REGISTER_OP(rnnGradDef(kGru));
XT_REGISTER_OP(rnnGradDef(kRnn));

}  // namespace
}  // namespace xtrain::ir
