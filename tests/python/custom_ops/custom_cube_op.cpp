// Cube (com.acme, version 1), the two-output op of PopTorch's custom op tests:
//   Cube(x, bias) = (x^3 + bias, x^3)
// Its gradient is a grad op of its own, CubeGrad(g0, g1, x) = 3 x^2 (g0 + g1) for x; bias's
// gradient is g0 itself.
#include <xtrain/customop.hpp>

namespace {

constexpr const char* kDomain = "com.acme";

// Every input must be FLOAT (FLOAT16 arrives promoted) and of one shape: the outputs are that.
xtrain::TensorInfo sameFloatInfo(const std::vector<xtrain::TensorInfo>& inputs) {
  const xtrain::TensorInfo& first = inputs.front();
  if (first.dataType() != xtrain::DataType::FLOAT &&
      first.dataType() != xtrain::DataType::FLOAT16) {
    throw xtrain::error("input 0 is {}; expected FLOAT or FLOAT16", first.toString());
  }
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i] != first) {
      throw xtrain::error("input {} is {}; expected {} (as input 0)", i, inputs[i].toString(),
                          first.toString());
    }
  }
  return first;
}

xtrain::CustomOpDefinition cube() {
  xtrain::CustomOpDefinition def(xtrain::OperatorIdentifier(kDomain, "Cube", 1));
  def.minInputs = def.maxInputs = 2;  // x, bias
  def.numOutputs = 2;
  def.inferShapes = [](const std::vector<xtrain::TensorInfo>& inputs,
                       const xtrain::CustomOpAttributes&) {
    const xtrain::TensorInfo info = sameFloatInfo(inputs);
    return std::vector<xtrain::TensorInfo>{info, info};
  };
  def.kernel = [](const std::vector<xtrain::TensorInfo>& inputs,
                  const std::vector<xtrain::TensorInfo>&,
                  const xtrain::CustomOpAttributes&) -> xtrain::CustomOpKernel {
    const int64_t n = inputs[0].nelms();
    return [n](const xtrain::CustomOpKernelArgs& args) {
      const float* x = args.input<float>(0);
      const float* bias = args.input<float>(1);
      float* plusBias = args.output<float>(0);
      float* cubed = args.output<float>(1);
      for (int64_t i = 0; i < n; ++i) {
        cubed[i] = x[i] * x[i] * x[i];
        plusBias[i] = cubed[i] + bias[i];
      }
    };
  };
  def.grad = [](xtrain::CustomOpGradBuilder& grad) {
    if (grad.needsGrad(0)) {
      grad.setGradIn(
          0, grad.op(kDomain, "CubeGrad", {grad.gradOut(0), grad.gradOut(1), grad.input(0)})[0]);
    }
    if (grad.needsGrad(1)) grad.setGradIn(1, grad.gradOut(0));
  };
  return def;
}

xtrain::CustomOpDefinition cubeGrad() {
  xtrain::CustomOpDefinition def(xtrain::OperatorIdentifier(kDomain, "CubeGrad", 1));
  def.minInputs = def.maxInputs = 3;  // g0, g1, x
  def.inferShapes = [](const std::vector<xtrain::TensorInfo>& inputs,
                       const xtrain::CustomOpAttributes&) {
    return std::vector<xtrain::TensorInfo>{sameFloatInfo(inputs)};
  };
  def.kernel = [](const std::vector<xtrain::TensorInfo>& inputs,
                  const std::vector<xtrain::TensorInfo>&,
                  const xtrain::CustomOpAttributes&) -> xtrain::CustomOpKernel {
    const int64_t n = inputs[0].nelms();
    return [n](const xtrain::CustomOpKernelArgs& args) {
      const float* g0 = args.input<float>(0);
      const float* g1 = args.input<float>(1);
      const float* x = args.input<float>(2);
      float* gx = args.output<float>(0);
      for (int64_t i = 0; i < n; ++i) gx[i] = 3.0f * x[i] * x[i] * (g0[i] + g1[i]);
    };
  };
  return def;
}

}  // namespace

XTRAIN_REGISTER_CUSTOM_OP(cube());
XTRAIN_REGISTER_CUSTOM_OP(cubeGrad());
