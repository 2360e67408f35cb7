#include "device/kernels/dnnl_eltwise.hpp"

#include "device/kernels/dnnl_engine.hpp"

namespace xtrain::device::dnnl_util {
namespace {

dnnl::memory::desc flatDesc(int64_t n) {
  return dnnl::memory::desc({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
}

std::byte* scratchFor(const Primitive& prim) {
  const size_t bytes = prim.scratchpadBytes();
  return bytes > 0 ? threadScratch(bytes) : nullptr;
}

dnnl::eltwise_forward::primitive_desc forwardPd(dnnl::algorithm alg, const dnnl::memory::desc& md,
                                                float alpha, float beta) {
  return dnnl::eltwise_forward::primitive_desc(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, md, alpha, beta),
      userScratchpadAttr(), engine());
}

bool usesDestination(dnnl::algorithm alg) {
  switch (alg) {
    case dnnl::algorithm::eltwise_relu_use_dst_for_bwd:
    case dnnl::algorithm::eltwise_tanh_use_dst_for_bwd:
    case dnnl::algorithm::eltwise_elu_use_dst_for_bwd:
    case dnnl::algorithm::eltwise_sqrt_use_dst_for_bwd:
    case dnnl::algorithm::eltwise_logistic_use_dst_for_bwd:
    case dnnl::algorithm::eltwise_exp_use_dst_for_bwd:
    case dnnl::algorithm::eltwise_clip_v2_use_dst_for_bwd: return true;
    default: return false;
  }
}

}  // namespace

std::unique_ptr<Kernel> eltwiseForward(const KernelSpec& spec, dnnl::algorithm alg, float alpha,
                                       float beta) {
  spec.requireFloatInputs();
  const int64_t n = spec.inputs.at(0).nelms();
  if (n == 0) return makeKernel([](const KernelIO&) {});
  const dnnl::memory::desc md = flatDesc(n);
  auto prim = create(spec, "eltwise forward", [&] {
    return makePrimitive<dnnl::eltwise_forward>(forwardPd(alg, md, alpha, beta));
  });
  return makeKernel([prim, md](const KernelIO& io) {
    execute(prim,
            {{DNNL_ARG_SRC, wrap(md, io.in(0).data<float>())},
             {DNNL_ARG_DST, wrap(md, io.out(0).data<float>())}},
            scratchFor(prim));
  });
}

std::unique_ptr<Kernel> eltwiseBackward(const KernelSpec& spec, dnnl::algorithm alg, float alpha,
                                        float beta) {
  spec.requireFloatInputs();
  const int64_t n = spec.outputs.at(0).nelms();
  if (n == 0) return makeKernel([](const KernelIO&) {});
  const dnnl::memory::desc md = flatDesc(n);
  auto prim = create(spec, "eltwise backward", [&] {
    return makePrimitive<dnnl::eltwise_backward>(dnnl::eltwise_backward::primitive_desc(
        dnnl::eltwise_backward::desc(alg, md, md, alpha, beta), userScratchpadAttr(), engine(),
        forwardPd(alg, md, alpha, beta)));
  });
  const int zArg = usesDestination(alg) ? DNNL_ARG_DST : DNNL_ARG_SRC;
  return makeKernel([prim, md, zArg](const KernelIO& io) {
    execute(prim,
            {{DNNL_ARG_DIFF_DST, wrap(md, io.in(0).data<float>())},
             {zArg, wrap(md, io.in(1).data<float>())},
             {DNNL_ARG_DIFF_SRC, wrap(md, io.out(0).data<float>())}},
            scratchFor(prim));
  });
}

}  // namespace xtrain::device::dnnl_util
