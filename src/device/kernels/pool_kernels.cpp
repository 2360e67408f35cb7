// Kernels for MaxPool, AveragePool and their gradients MaxPoolGrad and AveragePoolGrad (oneDNN
// pooling), and GlobalAveragePool and GlobalMaxPool (native). 1 to 3 spatial dims, plain
// [N, C, spatial...].
//
// ceil_mode needs no flag here: the output shape fixes the last window, and oneDNN gets the right
// padding that reaches it (dnnl_util::Window). Padding is never read by max pooling and never
// counted by average pooling without count_include_pad. With count_include_pad oneDNN divides every
// window by the full kernel size, which differs from ONNX only for a ceil_mode window running past
// the end pad; those outputs are rescaled by a per-position factor precomputed in the factory
// (forward: after the primitive; backward: gY is scaled into per-thread scratch first).
//
// MaxPoolGrad recomputes the argmax from X instead of keeping a workspace alive between the passes:
// MaxPool runs in inference mode and produces no extra tensor; MaxPoolGrad reruns oneDNN's
// training-mode forward into per-thread scratch for the workspace (the argmax of each window) and
// then runs oneDNN's backward. This costs one extra forward pooling per step and was about twice
// as fast as a native argmax-and-scatter loop.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/dnnl_engine.hpp"

namespace xtrain::device {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

void requireFloat(const KernelSpec& spec) {
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (spec.hasInput(i) && spec.inputs[i].dataType() != DataType::FLOAT) {
      spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
    }
  }
}

// Scale of each output of an AveragePool with count_include_pad relative to oneDNN's sum / kernel
// size: kernel size / ONNX divisor, where the ONNX divisor counts the window clipped to
// [-pad_begin, in + pad_end). Empty when every factor is 1 (no ceil_mode overhang).
std::vector<float> includePadFactors(const dnnl_util::Window& w) {
  std::vector<std::vector<float>> perDim(static_cast<size_t>(w.nd));
  bool any = false;
  for (size_t i = 0; i < static_cast<size_t>(w.nd); ++i) {
    for (int64_t o = 0; o < w.out[i]; ++o) {
      const int64_t start = o * w.strides[i] - w.padBegin[i];
      const int64_t end = std::min(start + w.kernel[i], w.in[i] + w.padEnd[i]);
      const float f = static_cast<float>(w.kernel[i]) / static_cast<float>(end - start);
      any = any || f != 1.0f;
      perDim[i].push_back(f);
    }
  }
  if (!any) {
    return {};
  }
  std::vector<float> factors{1.0f};
  for (const auto& dim : perDim) {
    std::vector<float> next;
    for (float f : factors) {
      for (float g : dim) {
        next.push_back(f * g);
      }
    }
    factors = std::move(next);
  }
  return factors;
}

// Multiplies every [spatial...] plane of t by factors (one per spatial position).
void scalePlanes(float* t, int64_t planes, const std::vector<float>& factors) {
  const int64_t n = static_cast<int64_t>(factors.size());
  const float* f = factors.data();
  for (int64_t p = 0; p < planes; ++p) {
    float* row = t + p * n;
    for (int64_t i = 0; i < n; ++i) {
      row[i] *= f[i];
    }
  }
}

dnnl::pooling_v2_forward::desc forwardDesc(prop_kind kind, algorithm alg,
                                           const dnnl_util::Window& w, const dnnl::memory::desc& x,
                                           const dnnl::memory::desc& y) {
  return dnnl::pooling_v2_forward::desc(kind, alg, x, y, w.dnnlStrides(), w.dnnlKernel(),
                                        w.dnnlDilations(), w.dnnlPadBegin(), w.dnnlPadEndDims());
}

algorithm averageAlgorithm(const KernelSpec& spec) {
  return spec.attrs.getInt("count_include_pad", 0) != 0 ? algorithm::pooling_avg_include_padding
                                                        : algorithm::pooling_avg_exclude_padding;
}

dnnl::pooling_v2_backward::desc backwardDesc(algorithm alg, const dnnl_util::Window& w,
                                             const dnnl::memory::desc& x,
                                             const dnnl::memory::desc& y) {
  return dnnl::pooling_v2_backward::desc(alg, x, y, w.dnnlStrides(), w.dnnlKernel(),
                                         w.dnnlDilations(), w.dnnlPadBegin(), w.dnnlPadEndDims());
}

std::byte* scratchOrNull(size_t bytes) {
  return bytes > 0 ? dnnl_util::threadScratch(bytes) : nullptr;
}

// MaxPool and AveragePool forward.
KernelFactory poolForward(bool max) {
  return [max](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    requireFloat(spec);
    if (spec.hasOutput(1)) {
      spec.fail("the Indices output is not supported");
    }
    const Shape& x = spec.inputs.at(0).shape();
    const Shape& y = spec.outputs.at(0).shape();
    if (shapeNelms(y) == 0) {
      return makeKernel([](const KernelIO&) {});
    }
    const dnnl_util::Window w = dnnl_util::makeWindow(spec, x, y);
    const algorithm alg = max ? algorithm::pooling_max : averageAlgorithm(spec);
    std::vector<float> factors;
    if (alg == algorithm::pooling_avg_include_padding) {
      factors = includePadFactors(w);
    }
    const dnnl::memory::desc xm = dnnl_util::plainDesc(x), ym = dnnl_util::plainDesc(y);
    auto prim = dnnl_util::create(spec, "pooling forward", [&] {
      return dnnl_util::makePrimitive<dnnl::pooling_v2_forward>(
          dnnl::pooling_v2_forward::primitive_desc(
              forwardDesc(prop_kind::forward_inference, alg, w, xm, ym),
              dnnl_util::userScratchpadAttr(), dnnl_util::engine()));
    });
    const int64_t planes = y[0] * y[1];
    return makeKernel([prim, xm, ym, factors, planes](const KernelIO& io) {
      float* py = io.out(0).data<float>();
      dnnl_util::execute(prim,
                         {{DNNL_ARG_SRC, dnnl_util::wrap(xm, io.in(0).data<float>())},
                          {DNNL_ARG_DST, dnnl_util::wrap(ym, py)}},
                         scratchOrNull(prim.scratchpadBytes()));
      if (!factors.empty()) {
        scalePlanes(py, planes, factors);
      }
    });
  };
}

XT_REGISTER_KERNEL("ai.onnx", "MaxPool", poolForward(true));
XT_REGISTER_KERNEL("ai.onnx", "AveragePool", poolForward(false));

// AveragePoolGrad(gY) -> dX (shape in attribute `shape`).
XT_REGISTER_KERNEL(
    "ai.xtrain", "AveragePoolGrad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      requireFloat(spec);
      const Shape& x = spec.outputs.at(0).shape();
      const Shape& y = spec.inputs.at(0).shape();
      if (shapeNelms(x) == 0) return makeKernel([](const KernelIO&) {});
      if (shapeNelms(y) == 0) return makeKernel([](const KernelIO& io) { io.out(0).fillZero(); });
      const dnnl_util::Window w = dnnl_util::makeWindow(spec, x, y);
      const algorithm alg = averageAlgorithm(spec);
      std::vector<float> factors;
      if (alg == algorithm::pooling_avg_include_padding) factors = includePadFactors(w);
      const dnnl::memory::desc xm = dnnl_util::plainDesc(x), ym = dnnl_util::plainDesc(y);
      auto prim = dnnl_util::create(spec, "pooling backward", [&] {
        dnnl::pooling_v2_forward::primitive_desc hint(
            forwardDesc(prop_kind::forward_training, alg, w, xm, ym), dnnl_util::engine());
        return dnnl_util::makePrimitive<dnnl::pooling_v2_backward>(
            dnnl::pooling_v2_backward::primitive_desc(backwardDesc(alg, w, xm, ym),
                                                      dnnl_util::userScratchpadAttr(),
                                                      dnnl_util::engine(), hint));
      });
      const int64_t planes = y[0] * y[1];
      // Scratch: the rescaled gY when needed, then the primitive's scratchpad.
      const size_t gyBytes = factors.empty() ? 0 : dnnl_util::round64(ym.get_size());
      const size_t scratchBytes = gyBytes + prim.scratchpadBytes();
      return makeKernel([prim, xm, ym, factors, planes, gyBytes, scratchBytes](const KernelIO& io) {
        std::byte* scratch = scratchOrNull(scratchBytes);
        const float* gy = io.in(0).data<float>();
        if (!factors.empty()) {
          // ceil_mode overhang with count_include_pad: rescale gY first.
          float* scaled = reinterpret_cast<float*>(scratch);
          std::copy(gy, gy + static_cast<int64_t>(factors.size()) * planes, scaled);
          scalePlanes(scaled, planes, factors);
          gy = scaled;
        }
        dnnl_util::execute(prim,
                           {{DNNL_ARG_DIFF_DST, dnnl_util::wrap(ym, gy)},
                            {DNNL_ARG_DIFF_SRC, dnnl_util::wrap(xm, io.out(0).data<float>())}},
                           scratch == nullptr ? nullptr : scratch + gyBytes);
      });
    });

// MaxPoolGrad(gY, X) -> dX: reruns the forward in training mode into per-thread scratch to get
// oneDNN's argmax workspace, then oneDNN's backward routes each gY element to its window's maximum.
XT_REGISTER_KERNEL(
    "ai.xtrain", "MaxPoolGrad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      requireFloat(spec);
      const Shape& x = spec.inputs.at(1).shape();
      const Shape& y = spec.inputs.at(0).shape();
      if (shapeNelms(x) == 0) return makeKernel([](const KernelIO&) {});
      if (shapeNelms(y) == 0) return makeKernel([](const KernelIO& io) { io.out(0).fillZero(); });
      const dnnl_util::Window w = dnnl_util::makeWindow(spec, x, y);
      const dnnl::memory::desc xm = dnnl_util::plainDesc(x), ym = dnnl_util::plainDesc(y);
      struct Prims {
        dnnl_util::Primitive forward, backward;
        dnnl::memory::desc workspace;
      };
      const auto prims = dnnl_util::create(spec, "max pooling backward", [&] {
        dnnl::pooling_v2_forward::primitive_desc fwd(
            forwardDesc(prop_kind::forward_training, algorithm::pooling_max, w, xm, ym),
            dnnl_util::userScratchpadAttr(), dnnl_util::engine());
        dnnl::pooling_v2_backward::primitive_desc bwd(
            backwardDesc(algorithm::pooling_max, w, xm, ym), dnnl_util::userScratchpadAttr(),
            dnnl_util::engine(), fwd);
        return std::make_shared<const Prims>(
            Prims{dnnl_util::makePrimitive<dnnl::pooling_v2_forward>(fwd),
                  dnnl_util::makePrimitive<dnnl::pooling_v2_backward>(bwd), fwd.workspace_desc()});
      });
      // Scratch: the recomputed Y, the workspace, then the larger of the two scratchpads.
      const size_t yBytes = dnnl_util::round64(ym.get_size());
      const size_t padOffset = yBytes + dnnl_util::round64(prims->workspace.get_size());
      const size_t scratchBytes =
          padOffset + std::max(prims->forward.scratchpadBytes(), prims->backward.scratchpadBytes());
      return makeKernel([prims, xm, ym, yBytes, padOffset, scratchBytes](const KernelIO& io) {
        std::byte* scratch = dnnl_util::threadScratch(scratchBytes);
        dnnl::memory ws(prims->workspace, dnnl_util::engine(), scratch + yBytes);
        dnnl_util::execute(prims->forward,
                           {{DNNL_ARG_SRC, dnnl_util::wrap(xm, io.in(1).data<float>())},
                            {DNNL_ARG_DST, dnnl_util::wrap(ym, scratch)},
                            {DNNL_ARG_WORKSPACE, ws}},
                           scratch + padOffset);
        dnnl_util::execute(prims->backward,
                           {{DNNL_ARG_DIFF_DST, dnnl_util::wrap(ym, io.in(0).data<float>())},
                            {DNNL_ARG_WORKSPACE, ws},
                            {DNNL_ARG_DIFF_SRC, dnnl_util::wrap(xm, io.out(0).data<float>())}},
                           scratch + padOffset);
      });
    });

// GlobalAveragePool(X) -> Y [N, C, 1, ...]: the mean of each spatial plane.
XT_REGISTER_KERNEL("ai.onnx", "GlobalAveragePool",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloat(spec);
                     const Shape& x = spec.inputs.at(0).shape();
                     const int64_t planes = x[0] * x[1];
                     const int64_t size = shapeNelms(Shape(x.begin() + 2, x.end()));
                     return makeKernel([planes, size](const KernelIO& io) {
                       const float* px = io.in(0).data<float>();
                       float* py = io.out(0).data<float>();
                       const float scale = size > 0 ? 1.0f / static_cast<float>(size) : 0.0f;
                       for (int64_t p = 0; p < planes; ++p) {
                         const float* plane = px + p * size;
                         float s = 0.0f;
                         for (int64_t i = 0; i < size; ++i) {
                           s += plane[i];
                         }
                         py[p] = s * scale;
                       }
                     });
                   });

// GlobalMaxPool(X) -> Y [N, C, 1, ...]: the maximum of each (non-empty) spatial plane; NaN wins,
// as std::max does not let it, so a NaN plane says so.
XT_REGISTER_KERNEL("ai.onnx", "GlobalMaxPool",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloat(spec);
                     const Shape& x = spec.inputs.at(0).shape();
                     const int64_t planes = x[0] * x[1];
                     const int64_t size = shapeNelms(Shape(x.begin() + 2, x.end()));
                     if (size == 0) spec.fail("input {} has empty planes", spec.inputs[0].toString());
                     return makeKernel([planes, size](const KernelIO& io) {
                       const float* px = io.in(0).data<float>();
                       float* py = io.out(0).data<float>();
                       for (int64_t p = 0; p < planes; ++p) {
                         const float* plane = px + p * size;
                         float m = plane[0];
                         for (int64_t i = 1; i < size && !std::isnan(m); ++i) {
                           m = std::isnan(plane[i]) || plane[i] > m ? plane[i] : m;
                         }
                         py[p] = m;
                       }
                     });
                   });

}  // namespace
}  // namespace xtrain::device
