#include "ir/autodiff/autodiff.hpp"

#include <functional>
#include <set>

#include "common/check.hpp"
#include "ir/op_registry.hpp"
#include "ir/placement/placement.hpp"

namespace xtrain::ir {

namespace {

// Adds up the contributions to one gradient (a single contribution is returned as it is).
TensorId sumContributions(Graph& graph, const TensorId& of, const std::vector<TensorId>& parts,
                          std::vector<GradientContribution>* record) {
  XT_CHECK(!parts.empty(), "no gradient contributions for {}", of);
  if (parts.size() == 1) return parts[0];
  OpSpec spec;
  spec.type = "Sum";
  spec.inputs = parts;
  spec.phase = Phase::Backward;
  spec.outputs = {graph.uniqueId(of + "__grad_sum")};
  TensorId sum = graph.addOp(std::move(spec)).outputs[0];
  if (record != nullptr) record->push_back({-1, 0, sum});
  return sum;
}

// The element types that carry gradients: floating point, and INT32 when the loss is INT32 (PopART
// allows one: an integer graph such as ReduceMedian of INT32 data differentiates exactly, its
// gradients INT32). Throws when the loss is of neither kind.
std::function<bool(DataType)> gradientTypes(const TensorId& loss, const TensorInfo& info) {
  const bool intLoss = info.dataType() == DataType::INT32;
  if (!isFloatingPoint(info.dataType()) && !intLoss) {
    throw error("the loss '{}' has type {}; a loss must be floating point or INT32", loss,
                info.toString());
  }
  return [intLoss](DataType t) { return isFloatingPoint(t) || (intLoss && t == DataType::INT32); };
}

}  // namespace

std::map<TensorId, TensorId> autodiff(Graph& graph, const TensorId& loss,
                                      const std::vector<TensorId>& wrt,
                                      const AutodiffOptions& options) {
  const Tensor& lossTensor = graph.tensor(loss);
  const auto differentiable = gradientTypes(loss, lossTensor.info);

  std::vector<OpId> forward;
  for (OpId id : graph.schedule()) {
    if (graph.op(id).phase == Phase::Forward) forward.push_back(id);
  }

  // Tensors that depend on some wrt tensor (forward reachability)...
  std::set<TensorId> fromWrt(wrt.begin(), wrt.end());
  for (OpId id : forward) {
    const Op& op = graph.op(id);
    bool any = false;
    for (const auto& in : op.inputs) any = any || (!in.empty() && fromWrt.count(in));
    if (!any) continue;
    for (const auto& out : op.outputs) {
      if (!out.empty() && differentiable(graph.tensor(out).info.dataType())) fromWrt.insert(out);
    }
  }
  // ...and that the loss depends on (backward reachability).
  std::set<TensorId> toLoss{loss};
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const Op& op = graph.op(*it);
    bool any = false;
    for (const auto& out : op.outputs) any = any || (!out.empty() && toLoss.count(out));
    if (!any) continue;
    for (const auto& in : op.inputs) {
      if (!in.empty()) toLoss.insert(in);
    }
  }
  auto needs = [&](const TensorId& t) {
    return !t.empty() && fromWrt.count(t) && toLoss.count(t) &&
           differentiable(graph.tensor(t).info.dataType());
  };

  std::map<TensorId, std::vector<TensorId>> contributions;
  if (!options.seed.empty()) {
    const TensorInfo& si = graph.tensor(options.seed).info;
    if (si != lossTensor.info) {
      throw error("loss gradient seed '{}' is {} but the loss '{}' is {}", options.seed,
                  si.toString(), loss, lossTensor.info.toString());
    }
    contributions[loss].push_back(options.seed);
  } else {
    HostTensor ones(TensorInfo(DataType::FLOAT, lossTensor.info.shape()));
    for (auto& v : ones.span<float>()) v = 1.0f;
    if (lossTensor.info.dataType() != DataType::FLOAT) {
      ones = ones.castTo(lossTensor.info.dataType());
    }
    TensorId seed = graph.uniqueId(loss + "__grad_seed");
    graph.addTensor(seed, lossTensor.info, TensorKind::Const,
                    std::make_shared<HostTensor>(std::move(ones)));
    contributions[loss].push_back(seed);
  }

  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const Op& op = graph.op(*it);
    std::vector<bool> needsGrad(op.inputs.size());
    bool anyInput = false;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      needsGrad[i] = needs(op.inputs[i]);
      anyInput = anyInput || needsGrad[i];
    }
    if (!anyInput) continue;
    // The gradient ops of an op (and the sums of its outputs' gradients) run where it runs.
    const OpId firstNew = nextOpId(graph);
    std::vector<TensorId> gradOuts(op.outputs.size());
    bool anyOutput = false;
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      auto c = contributions.find(op.outputs[i]);
      if (op.outputs[i].empty() || c == contributions.end()) continue;
      gradOuts[i] = sumContributions(graph, op.outputs[i], c->second, options.contributions);
      anyOutput = true;
    }
    if (!anyOutput) continue;

    if (options.beforeGradient) options.beforeGradient(op, needsGrad);
    const OpDef& def = OpRegistry::instance().get(op);
    if (!def.grad) {
      std::string from;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        if (needsGrad[i]) from += (from.empty() ? "" : ", ") + op.inputs[i];
      }
      throw error("{} has no gradient, but the loss '{}' needs gradients through it (to {})",
                  op.describe(), loss, from);
    }
    GradContext ctx(graph, op, gradOuts, needsGrad);
    def.grad(ctx);
    inheritPlacement(graph, firstNew, op.placement);
    const auto& gradIns = ctx.gradIns();
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (!needsGrad[i] || gradIns[i].empty()) continue;
      const TensorInfo& gi = graph.tensor(gradIns[i]).info;
      const TensorInfo& xi = graph.tensor(op.inputs[i]).info;
      XT_CHECK(gi == xi, "{}: gradient of input {} ('{}') is {} but the input is {}", op.describe(),
               i, op.inputs[i], gi.toString(), xi.toString());
      contributions[op.inputs[i]].push_back(gradIns[i]);
      if (options.contributions != nullptr) {
        options.contributions->push_back({op.id, i, gradIns[i]});
      }
    }
  }

  std::map<TensorId, TensorId> result;
  for (const auto& w : wrt) {
    auto c = contributions.find(w);
    if (c == contributions.end()) continue;
    result[w] = sumContributions(graph, w, c->second, options.contributions);
  }
  return result;
}

}  // namespace xtrain::ir
