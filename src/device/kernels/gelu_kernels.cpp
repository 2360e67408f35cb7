// GELU and its gradient on oneDNN's eltwise primitives (gelu_tanh, gelu_erf): ai.graphcore Gelu
// (the tanh approximation), ai.xtrain Gelu (attribute approximate "none" or "tanh", what the fusion
// pass of src/ir/fusion writes for the exporters' GELU subgraphs) and ai.xtrain GeluGrad (gy, x)
// with the same attribute ("tanh" when absent, for ai.graphcore Gelu's gradient).
//
// Why oneDNN: its JIT kernels evaluate tanh and erf with vector polynomials at the machine's full
// vector width (AVX-512 here, where this library is compiled for SSE2) and split the elements over
// the kernel threads. Each element is computed by the same instructions whatever the split, so
// results do not depend on the thread count (tests/ops/gelu_ops_test.cpp checks it). Tensors are
// viewed as one dimension: GELU is elementwise, so shape and rank (0-d scalars too) do not matter.
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "device/kernel.hpp"
#include "device/kernels/dnnl_engine.hpp"

namespace xtrain::device {
namespace {

dnnl::algorithm geluAlgorithm(const KernelSpec& spec, const std::string& fallback) {
  const std::string approximate = spec.attrs.getString("approximate", fallback);
  if (approximate == "tanh") return dnnl::algorithm::eltwise_gelu_tanh;
  if (approximate == "none") return dnnl::algorithm::eltwise_gelu_erf;
  spec.fail("attribute 'approximate' is \"{}\", expected \"none\" or \"tanh\"", approximate);
}

dnnl::memory::desc flatDesc(int64_t n) {
  return dnnl::memory::desc({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
}

std::byte* scratchFor(const dnnl_util::Primitive& prim) {
  const size_t bytes = prim.scratchpadBytes();
  return bytes > 0 ? dnnl_util::threadScratch(bytes) : nullptr;
}

dnnl::eltwise_forward::primitive_desc forwardPd(dnnl::algorithm alg, const dnnl::memory::desc& md) {
  return dnnl::eltwise_forward::primitive_desc(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, md, 0.0f, 0.0f),
      dnnl_util::userScratchpadAttr(), dnnl_util::engine());
}

// y = gelu(x).
KernelFactory geluForward(const std::string& fallback) {
  return [fallback](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    spec.requireFloatInputs();
    const dnnl::algorithm alg = geluAlgorithm(spec, fallback);
    const int64_t n = spec.inputs.at(0).nelms();
    if (n == 0) return makeKernel([](const KernelIO&) {});
    const dnnl::memory::desc md = flatDesc(n);
    auto prim = dnnl_util::create(spec, "GELU forward", [&] {
      return dnnl_util::makePrimitive<dnnl::eltwise_forward>(forwardPd(alg, md));
    });
    return makeKernel([prim, md](const KernelIO& io) {
      dnnl_util::execute(prim,
                         {{DNNL_ARG_SRC, dnnl_util::wrap(md, io.in(0).data<float>())},
                          {DNNL_ARG_DST, dnnl_util::wrap(md, io.out(0).data<float>())}},
                         scratchFor(prim));
    });
  };
}

// gx = gy * gelu'(x), inputs (gy, x).
KernelFactory geluBackward(const std::string& fallback) {
  return [fallback](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    spec.requireFloatInputs();
    const dnnl::algorithm alg = geluAlgorithm(spec, fallback);
    const int64_t n = spec.outputs.at(0).nelms();
    if (n == 0) return makeKernel([](const KernelIO&) {});
    const dnnl::memory::desc md = flatDesc(n);
    auto prim = dnnl_util::create(spec, "GELU backward", [&] {
      return dnnl_util::makePrimitive<dnnl::eltwise_backward>(
          dnnl::eltwise_backward::primitive_desc(
              dnnl::eltwise_backward::desc(alg, md, md, 0.0f, 0.0f),
              dnnl_util::userScratchpadAttr(), dnnl_util::engine(), forwardPd(alg, md)));
    });
    return makeKernel([prim, md](const KernelIO& io) {
      dnnl_util::execute(prim,
                         {{DNNL_ARG_DIFF_DST, dnnl_util::wrap(md, io.in(0).data<float>())},
                          {DNNL_ARG_SRC, dnnl_util::wrap(md, io.in(1).data<float>())},
                          {DNNL_ARG_DIFF_SRC, dnnl_util::wrap(md, io.out(0).data<float>())}},
                         scratchFor(prim));
    });
  };
}

XT_REGISTER_KERNEL("ai.graphcore", "Gelu", geluForward("tanh"));
XT_REGISTER_KERNEL("ai.xtrain", "Gelu", geluForward("none"));
XT_REGISTER_KERNEL("ai.xtrain", "GeluGrad", geluBackward("tanh"));

}  // namespace
}  // namespace xtrain::device
