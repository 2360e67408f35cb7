#include "ir/fusion/gelu_fusion.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "ir/fusion/subgraph_match.hpp"

namespace xtrain::ir::fusion {
namespace {

// The constants as exporters write them in FLOAT (rounded from these): matched to 1e-6 relative.
constexpr double kHalf = 0.5;
const double kSqrt2OverPi = std::sqrt(2.0 / std::numbers::pi);
constexpr double kCubic = 0.044715;
constexpr double kSqrt2 = std::numbers::sqrt2;

bool allEqual(const std::vector<TensorId>& ts, const TensorId& x, size_t count) {
  return ts.size() == count && std::all_of(ts.begin(), ts.end(), [&](auto& t) { return t == x; });
}

// x^3: the product leaves (constants aside) x, x, x, or Pow(x, 3).
bool isCube(SubgraphMatch& m, const std::vector<TensorId>& others, const TensorId& x) {
  if (allEqual(others, x, 3)) return true;
  if (others.size() != 1) return false;
  const Op* pow = m.producer(others[0], "Pow");
  if (pow == nullptr || pow->inputs.size() != 2 || pow->inputs[0] != x) return false;
  const auto e = m.scalar(pow->inputs[1]);
  return e && *e == 3.0;
}

// sqrt(2/pi) (x + 0.044715 x^3).
bool isTanhArgument(SubgraphMatch& m, const TensorId& u, const TensorId& x) {
  std::vector<TensorId> leaves, others;
  m.productLeaves(u, leaves);
  if (!near(m.constantFactor(leaves, others), kSqrt2OverPi) || others.size() != 1) return false;
  const Op* sum = m.producer(others[0], "Add");
  if (sum == nullptr || sum->inputs.size() != 2) return false;
  const TensorId& cubic = sum->inputs[0] == x ? sum->inputs[1] : sum->inputs[0];
  if (sum->inputs[0] != x && sum->inputs[1] != x) return false;
  std::vector<TensorId> cubicLeaves, cubicOthers;
  m.productLeaves(cubic, cubicLeaves);
  return near(m.constantFactor(cubicLeaves, cubicOthers), kCubic) && isCube(m, cubicOthers, x);
}

// x / sqrt(2) or x * (1/sqrt(2)).
bool isErfArgument(SubgraphMatch& m, const TensorId& u, const TensorId& x) {
  SubgraphMatch asDiv = m;
  if (const Op* div = asDiv.producer(u, "Div"); div != nullptr && div->inputs.size() == 2) {
    const auto d = asDiv.scalar(div->inputs[1]);
    if (div->inputs[0] == x && d && near(*d, kSqrt2)) {
      m = asDiv;
      return true;
    }
  }
  std::vector<TensorId> leaves, others;
  m.productLeaves(u, leaves);
  return near(m.constantFactor(leaves, others), 1.0 / kSqrt2) && allEqual(others, x, 1);
}

// s = 1 + tanh(...) or 1 + erf(...) of x: the approximation it makes, or nothing.
std::optional<std::string> geluKind(SubgraphMatch& m, const TensorId& s, const TensorId& x) {
  const Op* add = m.producer(s, "Add");
  if (add == nullptr || add->inputs.size() != 2) return std::nullopt;
  const bool oneFirst = m.scalar(add->inputs[0]) == 1.0;
  if (!oneFirst && m.scalar(add->inputs[1]) != 1.0) return std::nullopt;
  const TensorId& f = oneFirst ? add->inputs[1] : add->inputs[0];
  if (const Op* tanh = m.producer(f, "Tanh")) {
    if (isTanhArgument(m, tanh->inputs.at(0), x)) return "tanh";
    return std::nullopt;
  }
  if (const Op* erf = m.producer(f, "Erf")) {
    if (isErfArgument(m, erf->inputs.at(0), x)) return "none";
  }
  return std::nullopt;
}

}  // namespace

bool fuseGelu(Graph& graph, const std::set<TensorId>& keep, OpId root) {
  const Op& mul = graph.op(root);
  if (mul.type != "Mul" || mul.domain != kOnnxDomain || mul.inputs.size() != 2) return false;
  SubgraphMatch base(graph, keep, root);
  std::vector<TensorId> leaves, others;
  base.productLeaves(mul.inputs[0], leaves);
  base.productLeaves(mul.inputs[1], leaves);
  if (!near(base.constantFactor(leaves, others), kHalf) || others.size() != 2) return false;
  for (size_t xi : {size_t{0}, size_t{1}}) {
    const TensorId& x = others[xi];
    const TensorInfo& info = graph.tensor(x).info;
    if (info.dataType() != DataType::FLOAT) continue;
    SubgraphMatch m = base;
    const auto kind = geluKind(m, others[1 - xi], x);
    if (!kind || !m.selfContained(info)) continue;
    OpSpec gelu;
    gelu.type = "Gelu";
    gelu.domain = kXtrainDomain;
    gelu.inputs = {x};
    gelu.attrs.set("approximate", *kind);
    gelu.name = mul.name.empty() ? std::string("gelu") : mul.name + "/gelu";
    gelu.phase = mul.phase;
    replaceSubgraph(graph, m.ops(), root, std::move(gelu));
    return true;
  }
  return false;
}

}  // namespace xtrain::ir::fusion
