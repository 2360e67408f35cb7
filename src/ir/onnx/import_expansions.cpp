// Nodes the importer writes as several ai.onnx ops (see node_import.hpp).
//
// PopART's ai.graphcore LSTM:
//   inputs  X [S, B, I], Weights [4, I + H, H], Bias [4, H]?, InitialState [2, B, H]?,
//           SeqLengths [B] (INT32)?
//   outputs Output [S, B, H] (attribute output_full_sequence, default 1) or [B, H] (the last
//           step's hidden state), CellState [B, H] (the last step's cell state)
// Weights[g] holds gate g's input weights (rows 0..I-1) over its recurrent weights (rows I..),
// both transposed against ONNX's W/R, with PopART's gate order forget, input, cell, output
// (ONNX's is input, output, forget, cell); Bias is the sum of ONNX's Wb and Rb; InitialState
// stacks initial_h over initial_c. Sigmoid gates and tanh cell/output activations, as ONNX's
// defaults. The gathers, transposes and slices below carry the gradients back to Weights and
// Bias, so training needs nothing of its own.
//
// ai.onnx BatchNormalization with spatial = 0 (opsets 7 and 8): statistics per element of
// [C, D1, ...] (over N only) rather than per channel. That is the spatial BatchNormalization of X
// reshaped to [N, M] (M = C*D1*...) with scale, B, mean and var reshaped to [M], so the node
// becomes that, with Y and the statistics reshaped back.
#include "ir/onnx/node_import.hpp"

namespace xtrain::ir::onnximport {
namespace {

class Expander {
 public:
  Expander(Graph& graph, const OpSpec& node) : graph_(graph), node_(node) {}

  TensorId add(const std::string& type, std::vector<TensorId> inputs, Attributes attrs = {},
               TensorId output = {}) {
    return addMulti(type, std::move(inputs), 1, std::move(attrs), {std::move(output)})[0];
  }

  std::vector<TensorId> addMulti(const std::string& type, std::vector<TensorId> inputs,
                                 int numOutputs, Attributes attrs, std::vector<TensorId> outputs,
                                 int opset = 13) {
    OpSpec spec;
    spec.type = type;
    spec.domain = kOnnxDomain;
    spec.opset = opset;
    spec.inputs = std::move(inputs);
    spec.numOutputs = numOutputs;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].empty()) {
        outputs[i] = graph_.uniqueId(node_.name + "/" + type + ":" + std::to_string(i));
      }
    }
    spec.outputs = std::move(outputs);
    spec.attrs = std::move(attrs);
    spec.name = node_.name + "/" + type;
    spec.placement = node_.placement;
    spec.phase = Phase::Forward;
    return graph_.addOp(std::move(spec)).outputs;
  }

  TensorId ints(const std::vector<int64_t>& v) {
    HostTensor t(TensorInfo(DataType::INT64, {static_cast<int64_t>(v.size())}));
    for (size_t i = 0; i < v.size(); ++i) t.span<int64_t>()[i] = v[i];
    const TensorId id = graph_.uniqueId(node_.name + "/indices");
    const TensorInfo info = t.info();
    graph_.addTensor(id, info, TensorKind::Const, std::make_shared<HostTensor>(std::move(t)));
    return id;
  }

  TensorId zeros(const TensorInfo& info) {
    HostTensor t(info);
    t.fillZero();
    const TensorId id = graph_.uniqueId(node_.name + "/zeros");
    graph_.addTensor(id, info, TensorKind::Const, std::make_shared<HostTensor>(std::move(t)));
    return id;
  }

  TensorId reshape(const TensorId& x, const Shape& shape, TensorId output = {}) {
    return add("Reshape", {x}, attrs({{"shape", std::vector<int64_t>(shape)}}), std::move(output));
  }

  TensorId slice(const TensorId& x, int64_t axis, int64_t begin, int64_t end) {
    return add("Slice", {x},
               attrs({{"starts", std::vector<int64_t>{begin}},
                      {"ends", std::vector<int64_t>{end}},
                      {"axes", std::vector<int64_t>{axis}}}));
  }

  static Attributes attrs(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
    Attributes a;
    for (const auto& [k, v] : kv) a.set(k, v);
    return a;
  }

 private:
  Graph& graph_;
  const OpSpec& node_;
};

const TensorInfo& infoOf(const Graph& graph, const std::vector<TensorId>& in, size_t i) {
  return graph.tensor(in[i]).info;
}

}  // namespace

bool isPopartLstm(const std::string& domain, const std::string& type) {
  return domain == kGraphcoreDomain && type == "LSTM";
}

void importPopartLstm(Graph& graph, const OpSpec& node, const std::string& label) {
  const std::vector<TensorId>& in = node.inputs;
  auto has = [&](size_t i) { return i < in.size() && !in[i].empty(); };
  if (!has(0) || !has(1) || in.size() > 5) {
    throw error("{}: LSTM takes X, Weights and optionally Bias, InitialState, SeqLengths", label);
  }
  if (node.outputs.empty() || node.outputs.size() > 2) {
    throw error("{}: LSTM has 1 or 2 outputs (Output, CellState), not {}", label,
                node.outputs.size());
  }
  const TensorInfo& x = infoOf(graph, in, 0);
  const TensorInfo& w = infoOf(graph, in, 1);
  if (x.rank() != 3 || w.rank() != 3 || w.dim(0) != 4 || w.dim(1) != x.dim(2) + w.dim(2)) {
    throw error("{}: X is {} and Weights {}; expected X [S, B, I] and Weights [4, I + H, H]", label,
                x.toString(), w.toString());
  }
  const int64_t I = x.dim(2), H = w.dim(2), B = x.dim(1);
  if (has(2) && infoOf(graph, in, 2).shape() != Shape{4, H}) {
    throw error("{}: Bias is {}; expected [4, {}]", label, infoOf(graph, in, 2).toString(), H);
  }
  if (has(3) && infoOf(graph, in, 3).shape() != Shape{2, B, H}) {
    throw error("{}: InitialState is {}; expected [2, {}, {}]", label,
                infoOf(graph, in, 3).toString(), B, H);
  }
  const int64_t full = node.attrs.getInt("output_full_sequence", 1);
  if (full != 0 && full != 1) {
    throw error("{}: output_full_sequence is {}; expected 0 or 1", label, full);
  }

  Expander e(graph, node);
  const TensorId order = e.ints({1, 3, 0, 2});  // PopART's f i c o -> ONNX's i o f c
  TensorId gates = e.add("Gather", {in[1], order}, Expander::attrs({{"axis", int64_t{0}}}));
  gates = e.add("Transpose", {gates},
                Expander::attrs({{"perm", std::vector<int64_t>{0, 2, 1}}}));  // [4, H, I + H]
  gates = e.add("Reshape", {gates},
                Expander::attrs({{"shape", std::vector<int64_t>{1, 4 * H, I + H}}}));
  const TensorId W = e.slice(gates, 2, 0, I);
  const TensorId R = e.slice(gates, 2, I, I + H);
  TensorId bias;
  if (has(2)) {
    bias = e.add("Gather", {in[2], order}, Expander::attrs({{"axis", int64_t{0}}}));
    bias = e.add("Reshape", {bias}, Expander::attrs({{"shape", std::vector<int64_t>{1, 4 * H}}}));
    const TensorId rb = e.zeros(TensorInfo(x.dataType(), {1, 4 * H}));
    bias = e.add("Concat", {bias, rb}, Expander::attrs({{"axis", int64_t{1}}}));
  }
  TensorId h0, c0;
  if (has(3)) {
    h0 = e.slice(in[3], 0, 0, 1);
    c0 = e.slice(in[3], 0, 1, 2);
  }
  const auto ys = e.addMulti("LSTM", {in[0], W, R, bias, has(4) ? in[4] : TensorId(), h0, c0}, 3,
                             Expander::attrs({{"hidden_size", H}}), {{}, {}, {}});
  const auto squeeze = [](int64_t axis) {
    return Expander::attrs({{"axes", std::vector<int64_t>{axis}}});
  };
  e.add("Squeeze", {full != 0 ? ys[0] : ys[1]}, squeeze(full != 0 ? 1 : 0), node.outputs[0]);
  if (node.outputs.size() > 1 && !node.outputs[1].empty()) {
    e.add("Squeeze", {ys[2]}, squeeze(0), node.outputs[1]);
  }
}

bool isNonSpatialBatchNorm(const std::string& domain, const std::string& type,
                           const Attributes& attrs) {
  return domain == kOnnxDomain && type == "BatchNormalization" && attrs.has("spatial") &&
         attrs.getInt("spatial") == 0;
}

void importNonSpatialBatchNorm(Graph& graph, const OpSpec& node, const std::string& label) {
  const std::vector<TensorId>& in = node.inputs;
  if (in.size() != 5)
    throw error("{}: BatchNormalization takes 5 inputs, it has {}", label, in.size());
  const TensorInfo& x = infoOf(graph, in, 0);
  if (x.rank() < 2) throw error("{}: X is {}; expected rank >= 2", label, x.toString());
  const Shape stats(x.shape().begin() + 1, x.shape().end());
  const int64_t m = shapeNelms(stats);
  const char* names[] = {"X", "scale", "B", "mean", "var"};
  for (size_t i = 1; i < 5; ++i) {
    if (infoOf(graph, in, i).shape() != stats) {
      throw error("{}: {} is {}; with spatial=0 it has X's shape without N, {}", label, names[i],
                  infoOf(graph, in, i).toString(), shapeToString(stats));
    }
  }
  Expander e(graph, node);
  std::vector<TensorId> ins = {e.reshape(in[0], {x.dim(0), m})};
  for (size_t i = 1; i < 5; ++i) ins.push_back(e.reshape(in[i], {m}));
  Attributes a = node.attrs;
  a.erase("spatial");
  std::vector<TensorId> outs(node.outputs.size());
  const auto ys = e.addMulti("BatchNormalization", std::move(ins), static_cast<int>(outs.size()),
                             std::move(a), std::move(outs), node.opset);
  e.reshape(ys[0], x.shape(), node.outputs[0]);
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty()) e.reshape(ys[i], stats, node.outputs[i]);
  }
}

}  // namespace xtrain::ir::onnximport
