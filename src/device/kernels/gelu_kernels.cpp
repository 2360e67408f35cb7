// GELU and its gradient on oneDNN's eltwise primitives gelu_tanh and gelu_erf (dnnl_eltwise.hpp):
// ai.graphcore Gelu (the tanh approximation), ai.xtrain Gelu (attribute approximate "none" or
// "tanh", what the fusion pass of src/ir/fusion writes for the exporters' GELU subgraphs) and
// ai.xtrain GeluGrad (gy, x) with the same attribute ("tanh" when absent, for ai.graphcore Gelu's
// gradient).
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "device/kernel.hpp"
#include "device/kernels/dnnl_eltwise.hpp"

namespace xtrain::device {
namespace {

dnnl::algorithm geluAlgorithm(const KernelSpec& spec, const std::string& fallback) {
  const std::string approximate = spec.attrs.getString("approximate", fallback);
  if (approximate == "tanh") return dnnl::algorithm::eltwise_gelu_tanh;
  if (approximate == "none") return dnnl::algorithm::eltwise_gelu_erf;
  spec.fail("attribute 'approximate' is \"{}\", expected \"none\" or \"tanh\"", approximate);
}

KernelFactory geluForward(const std::string& fallback) {
  return [fallback](const KernelSpec& spec) {
    return dnnl_util::eltwiseForward(spec, geluAlgorithm(spec, fallback));
  };
}

KernelFactory geluBackward(const std::string& fallback) {
  return [fallback](const KernelSpec& spec) {
    return dnnl_util::eltwiseBackward(spec, geluAlgorithm(spec, fallback));
  };
}

XT_REGISTER_KERNEL("ai.graphcore", "Gelu", geluForward("tanh"));
XT_REGISTER_KERNEL("ai.xtrain", "Gelu", geluForward("none"));
// PopART's exact GELU (src/ir/ops/activation_rounding_ops.cpp); its gradient is GeluGrad "none".
XT_REGISTER_KERNEL("ai.graphcore", "GeluErf", geluForward("none"));
XT_REGISTER_KERNEL("ai.xtrain", "GeluGrad", geluBackward("tanh"));

}  // namespace
}  // namespace xtrain::device
