// Kernel of MultiConv (src/ir/ops/multiconv_ops.cpp): one Conv kernel (conv_kernels.cpp) per
// convolution, created from the registry with that convolution's slice of the attributes and run
// in order on its buffers.
#include <memory>
#include <vector>

#include "device/kernel.hpp"

namespace xtrain::device {
namespace {

std::vector<int64_t> sliceInts(const std::vector<int64_t>& all, size_t offset, size_t count) {
  if (offset + count > all.size()) {
    throw internal_error("MultiConv: attribute list of {} values sliced at [{}, {})", all.size(),
                         offset, offset + count);
  }
  return std::vector<int64_t>(all.begin() + static_cast<std::ptrdiff_t>(offset),
                              all.begin() + static_cast<std::ptrdiff_t>(offset + count));
}

class MultiConvKernel final : public Kernel {
 public:
  explicit MultiConvKernel(const KernelSpec& spec) {
    const auto n = static_cast<size_t>(spec.attrs.getInt("numConvs"));
    size_t off = 0;
    for (size_t i = 0; i < n; ++i) {
      const TensorInfo& x = spec.inputs.at(3 * i);
      const TensorInfo& w = spec.inputs.at(3 * i + 1);
      const size_t nd = x.rank() - 2;
      KernelSpec conv;
      conv.type = "Conv";
      conv.domain = "ai.onnx";
      conv.description = format("{} (convolution {})", spec.description, i);
      conv.attrs.set("kernel_shape", Shape(w.shape().begin() + 2, w.shape().end()));
      conv.attrs.set("strides", sliceInts(spec.attrs.getInts("strides"), off, nd));
      conv.attrs.set("dilations", sliceInts(spec.attrs.getInts("dilations"), off, nd));
      conv.attrs.set("pads", sliceInts(spec.attrs.getInts("pads"), 2 * off, 2 * nd));
      conv.attrs.set("group", spec.attrs.getInts("group").at(i));
      conv.inputs = {x, w, spec.hasInput(3 * i + 2) ? spec.inputs[3 * i + 2] : TensorInfo()};
      conv.outputs = {spec.outputs.at(i)};
      convs_.push_back(KernelRegistry::instance().create(conv));
      off += nd;
    }
  }

  void run(const KernelIO& io) override {
    for (size_t i = 0; i < convs_.size(); ++i) {
      HostTensor* ins[3] = {io.inputs[3 * i], io.inputs[3 * i + 1],
                            io.hasIn(3 * i + 2) ? io.inputs[3 * i + 2] : nullptr};
      HostTensor* outs[1] = {io.outputs[i]};
      KernelIO sub{.inputs = ins, .outputs = outs, .seed = io.seed};
      convs_[i]->run(sub);
    }
  }

 private:
  std::vector<std::unique_ptr<Kernel>> convs_;
};

XT_REGISTER_KERNEL("ai.graphcore", "MultiConv",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     return std::make_unique<MultiConvKernel>(spec);
                   });

}  // namespace
}  // namespace xtrain::device
