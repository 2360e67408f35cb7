// LeakyCube, a custom op in a library of its own:
//   y = x^3 where x >= 0, alpha * x where x < 0 (attribute alpha, default 0.1)
// Its gradient is a second custom op, LeakyCubeGrad(gy, x) = gy * (3 x^2 or alpha).
// Loading this library registers both (XTRAIN_REGISTER_CUSTOM_OP).
#include <xtrain/customop.hpp>

namespace {

constexpr const char* kDomain = "com.acme";

// Both ops: one output shaped and typed as the last input, which must be FLOAT or FLOAT16.
std::vector<xtrain::TensorInfo> likeLastInput(const std::vector<xtrain::TensorInfo>& inputs,
                                              const xtrain::CustomOpAttributes&) {
  const xtrain::TensorInfo& x = inputs.back();
  if (x.dataType() != xtrain::DataType::FLOAT && x.dataType() != xtrain::DataType::FLOAT16) {
    throw xtrain::error("input x is {}; expected FLOAT or FLOAT16", x.toString());
  }
  for (const auto& in : inputs) {
    if (in != x) throw xtrain::error("inputs {} and {} differ", in.toString(), x.toString());
  }
  return {x};
}

float alphaOf(const xtrain::CustomOpAttributes& attributes) {
  return xtrain::customOpAttribute<float>(attributes, "alpha", 0.1f);
}

xtrain::CustomOpDefinition leakyCube() {
  xtrain::CustomOpDefinition def(xtrain::OperatorIdentifier(kDomain, "LeakyCube", 1));
  def.attributeNames = {"alpha"};
  def.inferShapes = likeLastInput;
  // The kernel: a tight loop over the raw buffers (FLOAT; FLOAT16 nodes run promoted).
  def.kernel = [](const std::vector<xtrain::TensorInfo>& inputs,
                  const std::vector<xtrain::TensorInfo>&,
                  const xtrain::CustomOpAttributes& attributes) -> xtrain::CustomOpKernel {
    const float alpha = alphaOf(attributes);
    const int64_t n = inputs[0].nelms();
    return [alpha, n](const xtrain::CustomOpKernelArgs& args) {
      const float* x = args.input<float>(0);
      float* y = args.output<float>(0);
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] * x[i] * x[i] : alpha * x[i];
    };
  };
  // The gradient: one LeakyCubeGrad node with the same alpha.
  def.grad = [](xtrain::CustomOpGradBuilder& grad) {
    const xtrain::TensorId gx = grad.op(kDomain, "LeakyCubeGrad", {grad.gradOut(0), grad.input(0)},
                                        1, grad.attributes())[0];
    grad.setGradIn(0, gx);
  };
  return def;
}

xtrain::CustomOpDefinition leakyCubeGrad() {
  xtrain::CustomOpDefinition def(xtrain::OperatorIdentifier(kDomain, "LeakyCubeGrad", 1));
  def.minInputs = def.maxInputs = 2;  // gy, x
  def.attributeNames = {"alpha"};
  def.inferShapes = likeLastInput;
  def.kernel = [](const std::vector<xtrain::TensorInfo>& inputs,
                  const std::vector<xtrain::TensorInfo>&,
                  const xtrain::CustomOpAttributes& attributes) -> xtrain::CustomOpKernel {
    const float alpha = alphaOf(attributes);
    const int64_t n = inputs[0].nelms();
    return [alpha, n](const xtrain::CustomOpKernelArgs& args) {
      const float* gy = args.input<float>(0);
      const float* x = args.input<float>(1);
      float* gx = args.output<float>(0);
      for (int64_t i = 0; i < n; ++i) gx[i] = gy[i] * (x[i] >= 0.0f ? 3.0f * x[i] * x[i] : alpha);
    };
  };
  return def;  // no grad: LeakyCube is differentiable once, which training needs
}

}  // namespace

XTRAIN_REGISTER_CUSTOM_OP(leakyCube());
XTRAIN_REGISTER_CUSTOM_OP(leakyCubeGrad());
