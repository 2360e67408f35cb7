// LeakyRelu (com.acme, version 1) with a float attribute alpha (default 0.01), as PopTorch's
// custom op tests have it: y = x where x >= 0, alpha * x elsewhere. Its gradient is a grad op of
// its own, LeakyReluGrad(gy, x) = gy where x >= 0, alpha * gy elsewhere.
#include <xtrain/customop.hpp>

namespace {

constexpr const char* kDomain = "com.acme";

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
  return xtrain::customOpAttribute<float>(attributes, "alpha", 0.01f);
}

// y[i] = scale[i] * (x[i] >= 0 ? 1 : alpha): the forward (scale = x) and the gradient (scale = gy).
xtrain::CustomOpKernelFactory leakyKernel(size_t scaleInput) {
  return [scaleInput](const std::vector<xtrain::TensorInfo>& inputs,
                      const std::vector<xtrain::TensorInfo>&,
                      const xtrain::CustomOpAttributes& attributes) -> xtrain::CustomOpKernel {
    const float alpha = alphaOf(attributes);
    const int64_t n = inputs.back().nelms();
    const size_t xInput = inputs.size() - 1;
    return [alpha, n, scaleInput, xInput](const xtrain::CustomOpKernelArgs& args) {
      const float* scale = args.input<float>(scaleInput);
      const float* x = args.input<float>(xInput);
      float* y = args.output<float>(0);
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] >= 0.0f ? scale[i] : alpha * scale[i];
    };
  };
}

xtrain::CustomOpDefinition leakyRelu() {
  xtrain::CustomOpDefinition def(xtrain::OperatorIdentifier(kDomain, "LeakyRelu", 1));
  def.attributeNames = {"alpha"};
  def.inferShapes = likeLastInput;
  def.kernel = leakyKernel(0);
  def.grad = [](xtrain::CustomOpGradBuilder& grad) {
    grad.setGradIn(0, grad.op(kDomain, "LeakyReluGrad", {grad.gradOut(0), grad.input(0)}, 1,
                              grad.attributes())[0]);
  };
  return def;
}

xtrain::CustomOpDefinition leakyReluGrad() {
  xtrain::CustomOpDefinition def(xtrain::OperatorIdentifier(kDomain, "LeakyReluGrad", 1));
  def.minInputs = def.maxInputs = 2;  // gy, x
  def.attributeNames = {"alpha"};
  def.inferShapes = likeLastInput;
  def.kernel = leakyKernel(0);
  return def;
}

}  // namespace

XTRAIN_REGISTER_CUSTOM_OP(leakyRelu());
XTRAIN_REGISTER_CUSTOM_OP(leakyReluGrad());
