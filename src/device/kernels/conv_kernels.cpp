// Kernels for Conv and its gradients ConvGradInput / ConvGradWeight on oneDNN's convolution
// primitives (forward, backward data, backward weights), 1 to 3 spatial dims; ConvTranspose is the
// backward data of a Conv with the roles of X and Y swapped, plus its bias.
//
// The primitives are built once per op in the factory, with layout `any`: oneDNN's direct
// convolutions on blocked or channels-last layouts (nChw16c, nhwc, OIhw16i16o, ...) measured
// 1.4-2x faster on one thread than its im2col+GEMM path on plain layouts (3x3, 64 channels),
// including the cost of reordering. Plain buffers (ncw/nchw/ncdhw activations, oiw/oihw/oidhw
// weights, seen as g-o-i-spatial when grouped) are reordered by PrimitiveRunner into per-thread
// scratch with reorders created here, so a kernel keeps no per-run state and may run concurrently
// on several replicas. An activation the lowering made channels-last (KernelSpec's layouts,
// session/layout_plan.hpp) is given to the primitive as nhwc, as it is: no reorder.
#include <algorithm>
#include <memory>
#include <string>

#include "common/check.hpp"
#include "device/kernel.hpp"
#include "device/kernels/dnnl_engine.hpp"

namespace xtrain::device {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

// Descriptors shared by the three convolution kernels.
struct ConvSetup {
  dnnl_util::Window win;
  dnnl::memory::desc x, w, b, y;        // the plain layouts of the buffers; b is empty without bias
  dnnl::memory::desc xAny, wAny, yAny;  // the same dims in format `any`: the implementation picks
  dnnl::memory::dims strides, dilations, padL, padR;
  bool forced = false;  // xAny/yAny are nhwc rather than `any` (channels-last activations)

  // Back to letting oneDNN choose every layout (the activations are then reordered).
  void chooseAny() {
    xAny =
        dnnl::memory::desc(x.dims(), dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
    yAny =
        dnnl::memory::desc(y.dims(), dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
    forced = false;
  }

  // Forward descriptor; also the hint for the backward primitives.
  dnnl::convolution_forward::desc forward(prop_kind kind) const {
    return dnnl::convolution_forward::desc(kind, algorithm::convolution_direct, xAny, wAny, b, yAny,
                                           strides, dilations, padL, padR);
  }
};

dnnl::memory::desc anyDesc(const dnnl::memory::desc& plain) {
  return dnnl::memory::desc(plain.dims(), dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::any);
}

// The buffer's descriptor and the one the primitive is created with: a plain buffer lets oneDNN
// choose (`any`, then reordered), a channels-last one is used as it is.
void activationDescs(const Shape& shape, Layout layout, dnnl::memory::desc& buffer,
                     dnnl::memory::desc& primitive) {
  if (layout == Layout::ChannelsLast && shape.size() == 4) {
    buffer = dnnl::memory::desc(dnnl_util::toDims(shape), dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::nhwc);
    primitive = buffer;
  } else {
    buffer = dnnl_util::plainDesc(shape);
    primitive = anyDesc(buffer);
  }
}

// xLayout and yLayout: the layouts of the buffers holding x (or dX) and y (or gY).
ConvSetup makeConv(const KernelSpec& spec, const Shape& x, const Shape& w, const Shape& y,
                   bool bias, Layout xLayout = Layout::Plain, Layout yLayout = Layout::Plain) {
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (spec.hasInput(i) && spec.inputs[i].dataType() != DataType::FLOAT) {
      spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
    }
  }
  ConvSetup s;
  s.win = dnnl_util::makeWindow(spec, x, y, Shape(w.begin() + 2, w.end()));
  const int64_t group = spec.attrs.getInt("group", 1);
  XT_CHECK(group >= 1 && w[0] % group == 0, "{}: group {}", spec.description, group);
  activationDescs(x, xLayout, s.x, s.xAny);
  activationDescs(y, yLayout, s.y, s.yAny);
  if (xLayout != yLayout && x.size() == 4) {
    // One channels-last activation: the other is reordered to nhwc too, since oneDNN has fast
    // implementations for nhwc throughout but not for every mix of nhwc and its own choice.
    s.xAny = dnnl::memory::desc(s.x.dims(), dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::nhwc);
    s.yAny = dnnl::memory::desc(s.y.dims(), dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::nhwc);
    s.forced = true;
  }
  s.forced = s.forced || xLayout == Layout::ChannelsLast || yLayout == Layout::ChannelsLast;
  if (group == 1) {
    s.w = dnnl_util::plainDesc(w);
  } else {
    // [M, C/g, k...] is the same memory as [g, M/g, C/g, k...].
    Shape gw{group, w[0] / group};
    gw.insert(gw.end(), w.begin() + 1, w.end());
    s.w = dnnl_util::plainDesc(gw);
  }
  if (bias) {
    s.b = dnnl_util::plainDesc({w[0]});
  }
  s.wAny = anyDesc(s.w);
  s.strides = s.win.dnnlStrides();
  s.dilations = s.win.dnnlDilations();
  s.padL = s.win.dnnlPadBegin();
  s.padR = s.win.dnnlPadEndDims();
  return s;
}

using Runner = std::shared_ptr<const dnnl_util::PrimitiveRunner>;

// make(s) -> primitive descriptor. When s forces nhwc activations and oneDNN has only its reference
// implementation for that problem (e.g. some grouped convolutions), the descriptor is made again
// with every layout `any`: a reorder costs far less than the reference convolution.
template <typename Make>
auto bestDescriptor(ConvSetup& s, Make make) -> decltype(make(s)) {
  auto pd = make(s);
  if (s.forced && std::string(pd.impl_info_str()).rfind("ref", 0) == 0) {
    s.chooseAny();
    pd = make(s);
  }
  return pd;
}

// Conv(X, W, B?) -> Y.
XT_REGISTER_KERNEL("ai.onnx", "Conv", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const bool bias = spec.hasInput(2);
  const Shape& y = spec.outputs.at(0).shape();
  if (shapeNelms(y) == 0) return makeKernel([](const KernelIO&) {});
  ConvSetup s = makeConv(spec, spec.inputs.at(0).shape(), spec.inputs.at(1).shape(), y, bias,
                         spec.inputLayout(0), spec.outputLayout(0));
  Runner runner = dnnl_util::create(spec, "convolution forward", [&] {
    const auto pd = bestDescriptor(s, [](const ConvSetup& c) {
      return dnnl::convolution_forward::primitive_desc(c.forward(prop_kind::forward_inference),
                                                       dnnl_util::userScratchpadAttr(),
                                                       dnnl_util::engine());
    });
    auto r = std::make_shared<dnnl_util::PrimitiveRunner>();
    r->add(DNNL_ARG_SRC, s.x, pd.src_desc(), false);
    r->add(DNNL_ARG_WEIGHTS, s.w, pd.weights_desc(), false);
    r->add(DNNL_ARG_DST, s.y, pd.dst_desc(), true);
    if (bias) r->add(DNNL_ARG_BIAS, s.b, pd.bias_desc(), false);
    r->setPrimitive(dnnl_util::makePrimitive<dnnl::convolution_forward>(pd));
    return r;
  });
  if (bias) {
    return makeKernel([runner](const KernelIO& io) {
      runner->run({io.in(0).data<float>(), io.in(1).data<float>(), io.out(0).data<float>(),
                   io.in(2).data<float>()});
    });
  }
  return makeKernel([runner](const KernelIO& io) {
    runner->run({io.in(0).data<float>(), io.in(1).data<float>(), io.out(0).data<float>()});
  });
});

// oneDNN's convolution backward data for a Conv of x with w giving gy: the runner takes (gY, W,
// dX).
Runner backwardDataRunner(const KernelSpec& spec, const Shape& x, const Shape& w, const Shape& gy,
                          Layout xLayout = Layout::Plain, Layout gyLayout = Layout::Plain) {
  ConvSetup s = makeConv(spec, x, w, gy, false, xLayout, gyLayout);
  return dnnl_util::create(spec, "convolution backward data", [&] {
    const auto pd = bestDescriptor(s, [](const ConvSetup& c) {
      dnnl::convolution_forward::primitive_desc hint(c.forward(prop_kind::forward_training),
                                                     dnnl_util::engine());
      dnnl::convolution_backward_data::desc desc(algorithm::convolution_direct, c.xAny, c.wAny,
                                                 c.yAny, c.strides, c.dilations, c.padL, c.padR);
      return dnnl::convolution_backward_data::primitive_desc(desc, dnnl_util::userScratchpadAttr(),
                                                             dnnl_util::engine(), hint);
    });
    auto r = std::make_shared<dnnl_util::PrimitiveRunner>();
    r->add(DNNL_ARG_DIFF_DST, s.y, pd.diff_dst_desc(), false);
    r->add(DNNL_ARG_WEIGHTS, s.w, pd.weights_desc(), false);
    r->add(DNNL_ARG_DIFF_SRC, s.x, pd.diff_src_desc(), true);
    r->setPrimitive(dnnl_util::makePrimitive<dnnl::convolution_backward_data>(pd));
    return Runner(std::move(r));
  });
}

// ConvGradInput(gY, W) -> dX, dX's shape in attribute `shape`.
XT_REGISTER_KERNEL(
    "ai.xtrain", "ConvGradInput", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      const Shape& x = spec.outputs.at(0).shape();
      const Shape& gy = spec.inputs.at(0).shape();
      if (shapeNelms(x) == 0) return makeKernel([](const KernelIO&) {});
      if (shapeNelms(gy) == 0) return makeKernel([](const KernelIO& io) { io.out(0).fillZero(); });
      Runner runner = backwardDataRunner(spec, x, spec.inputs.at(1).shape(), gy,
                                         spec.outputLayout(0), spec.inputLayout(0));
      return makeKernel([runner](const KernelIO& io) {
        runner->run({io.in(0).data<float>(), io.in(1).data<float>(), io.out(0).data<float>()});
      });
    });

// Adds b[m] to every element of channel m of y [N, M, spatial...].
void addChannelBias(float* y, const float* b, int64_t n, int64_t m, int64_t plane) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < m; ++c) {
      float* row = y + (i * m + c) * plane;
      const float v = b[c];
      for (int64_t j = 0; j < plane; ++j) {
        row[j] += v;
      }
    }
  }
}

// ConvTranspose(X, W, B?) -> Y: the backward data of the Conv that maps Y to X with W (see
// src/ir/ops/conv_ops.cpp), then the bias.
XT_REGISTER_KERNEL("ai.onnx", "ConvTranspose",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const bool bias = spec.hasInput(2);
                     const Shape& x = spec.inputs.at(0).shape();
                     const Shape& y = spec.outputs.at(0).shape();
                     if (shapeNelms(y) == 0) return makeKernel([](const KernelIO&) {});
                     spec.requireFloatInputs();
                     const int64_t n = y[0], m = y[1],
                                   plane = shapeNelms(y) / std::max<int64_t>(n * m, 1);
                     if (shapeNelms(x) == 0) {
                       return makeKernel([bias, n, m, plane](const KernelIO& io) {
                         io.out(0).fillZero();
                         if (bias)
                           addChannelBias(io.out(0).data<float>(), io.in(2).data<float>(), n, m,
                                          plane);
                       });
                     }
                     Runner runner = backwardDataRunner(spec, y, spec.inputs.at(1).shape(), x);
                     return makeKernel([runner, bias, n, m, plane](const KernelIO& io) {
                       float* out = io.out(0).data<float>();
                       runner->run({io.in(0).data<float>(), io.in(1).data<float>(), out});
                       if (bias) addChannelBias(out, io.in(2).data<float>(), n, m, plane);
                     });
                   });

// ConvGradWeight(gY, X) -> dW (shape in attribute `shape`), dB? ([M], when the second output is
// present).
XT_REGISTER_KERNEL(
    "ai.xtrain", "ConvGradWeight", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      const bool bias = spec.hasOutput(1);
      const Shape& w = spec.outputs.at(0).shape();
      const Shape& gy = spec.inputs.at(0).shape();
      if (shapeNelms(gy) == 0 || shapeNelms(w) == 0) {
        return makeKernel([bias](const KernelIO& io) {
          io.out(0).fillZero();
          if (bias) io.out(1).fillZero();
        });
      }
      ConvSetup s = makeConv(spec, spec.inputs.at(1).shape(), w, gy, bias, spec.inputLayout(1),
                             spec.inputLayout(0));
      Runner runner = dnnl_util::create(spec, "convolution backward weights", [&] {
        const auto pd = bestDescriptor(s, [](const ConvSetup& c) {
          dnnl::convolution_forward::primitive_desc hint(c.forward(prop_kind::forward_training),
                                                         dnnl_util::engine());
          dnnl::convolution_backward_weights::desc desc(algorithm::convolution_direct, c.xAny,
                                                        c.wAny, c.b, c.yAny, c.strides, c.dilations,
                                                        c.padL, c.padR);
          return dnnl::convolution_backward_weights::primitive_desc(
              desc, dnnl_util::userScratchpadAttr(), dnnl_util::engine(), hint);
        });
        auto r = std::make_shared<dnnl_util::PrimitiveRunner>();
        r->add(DNNL_ARG_DIFF_DST, s.y, pd.diff_dst_desc(), false);
        r->add(DNNL_ARG_SRC, s.x, pd.src_desc(), false);
        r->add(DNNL_ARG_DIFF_WEIGHTS, s.w, pd.diff_weights_desc(), true);
        if (bias) r->add(DNNL_ARG_DIFF_BIAS, s.b, pd.diff_bias_desc(), true);
        r->setPrimitive(dnnl_util::makePrimitive<dnnl::convolution_backward_weights>(pd));
        return r;
      });
      if (bias) {
        return makeKernel([runner](const KernelIO& io) {
          runner->run({io.in(0).data<float>(), io.in(1).data<float>(), io.out(0).data<float>(),
                       io.out(1).data<float>()});
        });
      }
      return makeKernel([runner](const KernelIO& io) {
        runner->run({io.in(0).data<float>(), io.in(1).data<float>(), io.out(0).data<float>()});
      });
    });

}  // namespace
}  // namespace xtrain::device
