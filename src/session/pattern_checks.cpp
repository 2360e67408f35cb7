#include "session/pattern_checks.hpp"

#include <array>
#include <string_view>

#include "xtrain/error.hpp"

namespace xtrain::session {
namespace {

// The words PopART's tests (and so users' programs) match on end every refusal.
constexpr std::string_view kPopartPhrase = "This op should have been removed by pattern";

struct ForwardRule {
  std::string_view type;
  std::string_view pattern;
};

// Forward ops PopART lowers only through a pattern.
constexpr std::array<ForwardRule, 4> kForwardRules{{
    {"Cosh", "CoshOp"},
    {"ConvTranspose", "ConvTranspose"},
    {"RandomNormalLike", "RandomNormalLikeOpPattern"},
    {"RandomUniformLike", "RandomUniformLikeOpPattern"},
}};

struct GradientRule {
  std::string_view type;
  std::array<std::string_view, 2> perInput;  // empty: that input's gradient needs no pattern
};

// Gradients PopART makes only through a pattern, by the forward op and its input.
constexpr std::array<GradientRule, 18> kGradientRules{{
    {"Abs", {"AbsGradOp", ""}},
    {"Atan2", {"Atan2Arg0GradOp", "Atan2Arg1GradOp"}},
    {"Conv", {"ConvDataGrad", ""}},
    {"ConvTranspose", {"ConvDataGrad", "ConvFlipWeightsGradOp"}},
    {"Cos", {"CosGradOp", ""}},
    {"Div", {"DivArg0GradOp", "DivArg1GradOp"}},
    {"Exp", {"ExpGradOp", ""}},
    {"Expm1", {"Expm1GradOp", ""}},
    {"Fmod", {"FmodArg0GradOp", ""}},
    {"Log", {"LogGradOp", ""}},
    {"Log1p", {"Log1pGradOp", ""}},
    {"MatMul", {"MatMulLhsGradOp", "MatMulRhsGradOp"}},
    {"Mul", {"MulArgGradOp", "MulArgGradOp"}},
    {"Pow", {"PowArg0GradOp", "PowArg1GradOp"}},
    {"Reciprocal", {"ReciprocalGradOp", ""}},
    {"Sin", {"SinGradOp", ""}},
    {"Sqrt", {"SqrtGradOp", ""}},
    {"Sub", {"", "SubtractArg1GradOp"}},
}};

const GradientRule* gradientRuleOf(const std::string& type) {
  for (const auto& r : kGradientRules) {
    if (r.type == type) return &r;
  }
  return nullptr;
}

}  // namespace

void checkForwardOpsAgainstPatterns(const ir::Graph& graph, const Patterns& patterns) {
  for (const auto& [id, op] : graph.ops()) {
    if (op->phase != ir::Phase::Forward) continue;
    for (const auto& r : kForwardRules) {
      if (op->type != r.type || patterns.isPatternEnabled(std::string(r.pattern))) continue;
      throw error(
          "{} cannot run: PopART computes {} only through its pattern {}, which the session's "
          "Patterns disable; enable {} (or leave runtime asserts on, which refuses such a set "
          "up front). {} {}",
          op->describe(), r.type, r.pattern, r.pattern, kPopartPhrase, r.pattern);
    }
  }
}

void checkGradientAgainstPatterns(const ir::Op& op, const std::vector<bool>& needsGrad,
                                  const Patterns& patterns) {
  const GradientRule* rule = gradientRuleOf(op.type);
  if (rule == nullptr) return;
  for (size_t i = 0; i < needsGrad.size() && i < rule->perInput.size(); ++i) {
    const std::string_view pattern = rule->perInput[i];
    if (!needsGrad[i] || pattern.empty() || patterns.isPatternEnabled(std::string(pattern))) {
      continue;
    }
    throw error(
        "the gradient of input {} ('{}') of {} cannot be made: PopART makes it only through "
        "pattern {}, which the session's Patterns disable; enable {} to train through this op. "
        "{} {}",
        i, op.inputs[i], op.describe(), pattern, pattern, kPopartPhrase, pattern);
  }
}

}  // namespace xtrain::session
