// ManyAttributeOp (test.poptorch, version 1), as in PopTorch's custom op tests: y = x + 1 when the
// node carries exactly the attributes of PopTorch's listing 4.26 (each of its type: float, int,
// list of floats, list of ints, str, list of strs, with those values), y = x otherwise. So a test
// sees from the output whether every attribute reached the kernel with its type and value. The
// gradient is the identity either way.
#include <xtrain/customop.hpp>

namespace {

const xtrain::CustomOpAttributes& listingAttributes() {
  static const xtrain::CustomOpAttributes expected = {
      {"float_one", 1.0f},
      {"float_minus_two", -2.0f},
      {"int_zero", int64_t{0}},
      {"int_minus_five", int64_t{-5}},
      {"floats_one_two_three", std::vector<float>{1.0f, 2.0f, 3.0f}},
      {"floats_minus_one_two_three", std::vector<float>{-1.0f, -2.0f, -3.0f}},
      {"ints_one_two_three", std::vector<int64_t>{1, 2, 3}},
      {"ints_minus_one_two_three", std::vector<int64_t>{-1, -2, -3}},
      {"a_string", std::string("string with quotes and slash \" ' \\ end")},
      {"strs", std::vector<std::string>{"abc", "def", "ghi"}}};
  return expected;
}

xtrain::CustomOpDefinition manyAttributeOp() {
  xtrain::CustomOpDefinition def(xtrain::OperatorIdentifier("test.poptorch", "ManyAttributeOp", 1));
  def.inferShapes = [](const std::vector<xtrain::TensorInfo>& inputs,
                       const xtrain::CustomOpAttributes&) {
    if (inputs[0].dataType() != xtrain::DataType::FLOAT &&
        inputs[0].dataType() != xtrain::DataType::FLOAT16) {
      throw xtrain::error("input x is {}; expected FLOAT or FLOAT16", inputs[0].toString());
    }
    return std::vector<xtrain::TensorInfo>{inputs[0]};
  };
  def.kernel = [](const std::vector<xtrain::TensorInfo>& inputs,
                  const std::vector<xtrain::TensorInfo>&,
                  const xtrain::CustomOpAttributes& attributes) -> xtrain::CustomOpKernel {
    const float added = attributes == listingAttributes() ? 1.0f : 0.0f;
    const int64_t n = inputs[0].nelms();
    return [added, n](const xtrain::CustomOpKernelArgs& args) {
      const float* x = args.input<float>(0);
      float* y = args.output<float>(0);
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] + added;
    };
  };
  def.grad = [](xtrain::CustomOpGradBuilder& grad) { grad.setGradIn(0, grad.gradOut(0)); };
  return def;
}

}  // namespace

XTRAIN_REGISTER_CUSTOM_OP(manyAttributeOp());
