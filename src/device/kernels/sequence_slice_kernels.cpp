// Kernel of ai.graphcore SequenceSlice (src/ir/ops/sequence_slice_ops.cpp): rows of bytes copied
// from source into a copy of destination, so any element type works.
#include <cstring>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/copy_util.hpp"

namespace xtrain::device {
namespace {

class SequenceSliceKernel final : public Kernel {
 public:
  SequenceSliceKernel(std::string description, size_t rowBytes, bool zeroUnused)
      : description_(std::move(description)), rowBytes_(rowBytes), zeroUnused_(zeroUnused) {}

  void run(const KernelIO& io) override {
    const HostTensor& src = io.in(0);
    const HostTensor& dst = io.in(1);
    HostTensor& out = io.out(0);
    copyutil::readIndexTensor(io.in(2), n_);
    copyutil::readIndexTensor(io.in(3), srcOffset_);
    copyutil::readIndexTensor(io.in(4), dstOffset_);
    const int64_t srcRows = src.shape()[0];
    const int64_t dstRows = dst.shape()[0];
    std::memcpy(out.raw(), dst.raw(), out.nbytes());
    std::vector<bool> written(static_cast<size_t>(dstRows), false);
    for (size_t i = 0; i < n_.size(); ++i) {
      const int64_t n = n_[i], s = srcOffset_[i], d = dstOffset_[i];
      if (n < 0 || s < 0 || d < 0 || s + n > srcRows || d + n > dstRows) {
        throw runtime_error(
            "{}: entry {} (N {}, sourceOffset {}, destinationOffset {}) is outside the source's "
            "{} rows or the destination's {}",
            description_, i, n, s, d, srcRows, dstRows);
      }
      if (n == 0) continue;
      std::memcpy(out.raw() + static_cast<size_t>(d) * rowBytes_,
                  src.raw() + static_cast<size_t>(s) * rowBytes_,
                  static_cast<size_t>(n) * rowBytes_);
      for (int64_t r = d; r < d + n; ++r) written[static_cast<size_t>(r)] = true;
    }
    if (!zeroUnused_) return;
    for (int64_t r = 0; r < dstRows; ++r) {
      if (!written[static_cast<size_t>(r)]) {
        std::memset(out.raw() + static_cast<size_t>(r) * rowBytes_, 0, rowBytes_);
      }
    }
  }

 private:
  std::string description_;
  size_t rowBytes_;
  bool zeroUnused_;
  std::vector<int64_t> n_, srcOffset_, dstOffset_;
};

XT_REGISTER_KERNEL("ai.graphcore", "SequenceSlice",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const TensorInfo& dst = spec.inputs.at(1);
                     const int64_t rows = dst.shape().at(0);
                     const size_t esize = copyutil::elementSize(spec, dst);
                     const size_t rowBytes =
                         rows == 0 ? 0 : static_cast<size_t>(dst.nelms() / rows) * esize;
                     return std::make_unique<SequenceSliceKernel>(
                         spec.description, rowBytes, spec.attrs.getInt("zeroUnused", 0) != 0);
                   });

}  // namespace
}  // namespace xtrain::device
