#include "ir/constant_folding.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include "common/check.hpp"

namespace xtrain::ir {
namespace {

// Ops whose results are not a function of their inputs: folding would fix one draw for good.
bool isRandom(const Op& op) {
  static constexpr std::array<std::string_view, 8> kRandom = {
      "Dropout",           "RandomNormal", "RandomNormalLike", "RandomUniform",
      "RandomUniformLike", "Multinomial",  "Bernoulli",        "ShapedDropout"};
  return std::find(kRandom.begin(), kRandom.end(), op.type) != kRandom.end();
}

// Shape's value: the input's dimensions [start, end) (opset 15; negative bounds count from the
// end and both clamp to [0, rank]).
HostTensor shapeValue(const Op& op, const Shape& in) {
  const auto rank = static_cast<int64_t>(in.size());
  auto clampAxis = [rank](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t{0}, rank); };
  const int64_t start = clampAxis(op.attrs.getInt("start", 0));
  const int64_t end = clampAxis(op.attrs.getInt("end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(in[static_cast<size_t>(i)]);
  return HostTensor::fromVector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
}

// Values computed from the input's shape alone, or nothing for other ops.
std::optional<std::vector<HostTensor>> shapeOnlyValues(const Op& op, const Graph& graph) {
  if (op.domain != kOnnxDomain || !op.hasInput(0)) return std::nullopt;
  const TensorInfo& in = graph.tensor(op.inputs[0]).info;
  if (op.type == "Shape") return std::vector<HostTensor>{shapeValue(op, in.shape())};
  if (op.type == "Size")
    return std::vector<HostTensor>{HostTensor::fromVector<int64_t>({}, {in.nelms()})};
  return std::nullopt;
}

// True also for an op left with no inputs: canonicalisation moved its constant ones into
// attributes (ConstantOfShape's shape), so its result is fixed.
bool allInputsConstant(const Op& op, const Graph& graph) {
  for (const auto& in : op.inputs) {
    if (in.empty()) continue;
    const Tensor& t = graph.tensor(in);
    if (t.kind != TensorKind::Const || !t.value) return false;
  }
  return true;
}

}  // namespace

bool foldIfConstant(Graph& graph, OpId opId, const ConstantEvaluator& evaluate,
                    const std::set<TensorId>& keep) {
  const Op& op = graph.op(opId);
  if (op.domain != kOnnxDomain || isRandom(op)) return false;
  size_t bytes = 0;
  for (const auto& out : op.outputs) {
    if (out.empty()) continue;
    if (keep.count(out) || !graph.tensor(out).consumers.empty()) return false;
    bytes += static_cast<size_t>(graph.tensor(out).info.nbytes());
  }
  if (bytes > kMaxFoldedBytes) return false;

  std::optional<std::vector<HostTensor>> values = shapeOnlyValues(op, graph);
  if (!values) {
    if (!evaluate || !allInputsConstant(op, graph)) return false;
    std::vector<const HostTensor*> inputs;
    for (const auto& in : op.inputs) {
      inputs.push_back(in.empty() ? nullptr : graph.tensor(in).value.get());
    }
    values = evaluate(op, graph, inputs);
  }

  std::vector<std::pair<TensorId, HostTensor>> outputs;
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    if (op.outputs[i].empty()) continue;
    XT_CHECK(i < values->size() && (*values)[i].info() == graph.tensor(op.outputs[i]).info,
             "folding {}: output {} was computed as {}, inferred as {}", op.describe(), i,
             i < values->size() ? (*values)[i].info().toString() : std::string("nothing"),
             graph.tensor(op.outputs[i]).info.toString());
    outputs.emplace_back(op.outputs[i], std::move((*values)[i]));
  }
  graph.removeOp(opId);
  for (auto& [id, value] : outputs) {
    const TensorInfo info = value.info();
    graph.addTensor(id, info, TensorKind::Const, std::make_shared<HostTensor>(std::move(value)));
  }
  return true;
}

}  // namespace xtrain::ir
