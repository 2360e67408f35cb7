// Kernels of Gather and ai.graphcore GroupedGather (any element type, INT32/INT64/UINT32 indices)
// and their gradients GatherGrad and GroupedGatherGrad (FLOAT scatter-adds). All view data as
// [groups, outer, axisDim, inner], the indices as [groups, numIndices] and the output/gradient as
// [groups, outer, numIndices, inner]; Gather is the one-group case.
#include <cstring>

#include "device/kernel.hpp"
#include "device/kernels/copy_util.hpp"

namespace xtrain::device {
namespace {

struct GatherLayout {
  int64_t groups = 1;
  int64_t outer = 1;
  int64_t axisDim = 0;
  int64_t inner = 1;
  int64_t numIndices = 0;
};

GatherLayout gatherLayout(const KernelSpec& spec, const Shape& data, int64_t axis,
                          const TensorInfo& indices) {
  const auto rank = static_cast<int64_t>(data.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    spec.fail("axis {} is out of range for data of shape {}", axis, shapeToString(data));
  if (indices.dataType() != DataType::INT32 && indices.dataType() != DataType::INT64 &&
      indices.dataType() != DataType::UINT32) {
    spec.fail("indices {} must be INT32, INT64 or UINT32", indices.toString());
  }
  GatherLayout l;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t d = data[static_cast<size_t>(k)];
    if (k < axis) l.outer *= d;
    if (k > axis) l.inner *= d;
  }
  l.axisDim = data[static_cast<size_t>(axis)];
  l.numIndices = indices.nelms();
  return l;
}

// GroupedGather's layout (src/ir/ops/grouped_gather_ops.cpp): with group_size G > 1, dimension 0
// of data and indices is the group; the rest is Gather's layout within one group.
GatherLayout groupedLayout(const KernelSpec& spec, const Shape& data, const TensorInfo& indices) {
  const int64_t groups = spec.attrs.getInt("group_size", 1);
  int64_t axis = spec.attrs.getInt("axis", 0);
  if (groups == 1) return gatherLayout(spec, data, axis, indices);
  if (axis < 0) axis += static_cast<int64_t>(data.size());
  if (axis < 1 || data.empty() || data[0] != groups || indices.rank() == 0 ||
      indices.shape()[0] != groups) {
    spec.fail("data {} and indices {} do not have group_size {} groups, or axis {} is not in one",
              shapeToString(data), indices.toString(), groups, axis);
  }
  const Shape inGroup(data.begin() + 1, data.end());
  const Shape idx(indices.shape().begin() + 1, indices.shape().end());
  GatherLayout l = gatherLayout(spec, inGroup, axis - 1, TensorInfo(indices.dataType(), idx));
  l.groups = groups;
  return l;
}

// Reads and checks every index once per run into `out` (negative ones count from the end). An index
// out of range is a runtime error naming the op, the index and its position.
void readIndices(const std::string& description, const HostTensor& indices, int64_t axisDim,
                 std::vector<int64_t>& out) {
  copyutil::readIndexTensor(indices, out);
  for (size_t j = 0; j < out.size(); ++j) {
    const int64_t v = out[j];
    const int64_t k = v < 0 ? v + axisDim : v;
    if (k < 0 || k >= axisDim) {
      throw runtime_error(
          "{}: index {} (element {} of the indices) is out of range for an axis of size {}",
          description, v, j, axisDim);
    }
    out[j] = k;
  }
}

class GatherKernel final : public Kernel {
 public:
  GatherKernel(std::string description, GatherLayout layout, size_t esize)
      : description_(std::move(description)),
        l_(layout),
        rowBytes_(static_cast<size_t>(layout.inner) * esize),
        indices_(static_cast<size_t>(layout.groups * layout.numIndices)) {}

  void run(const KernelIO& io) override {
    readIndices(description_, io.in(1), l_.axisDim, indices_);
    if (rowBytes_ == 0) return;
    const std::byte* x = io.in(0).raw();
    std::byte* y = io.out(0).raw();
    for (int64_t g = 0; g < l_.groups; ++g) {
      const int64_t* idx = indices_.data() + g * l_.numIndices;
      for (int64_t o = 0; o < l_.outer; ++o) {
        const std::byte* src = x + static_cast<size_t>((g * l_.outer + o) * l_.axisDim) * rowBytes_;
        for (int64_t j = 0; j < l_.numIndices; ++j) {
          std::memcpy(y, src + static_cast<size_t>(idx[j]) * rowBytes_, rowBytes_);
          y += rowBytes_;
        }
      }
    }
  }

 private:
  std::string description_;
  GatherLayout l_;
  size_t rowBytes_;
  std::vector<int64_t> indices_;
};

XT_REGISTER_KERNEL("ai.onnx", "Gather", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& data = spec.inputs.at(0);
  const size_t esize = dataTypeSize(data.dataType());
  if (esize == 0) spec.fail("element type of {} cannot be copied", data.toString());
  const GatherLayout l =
      gatherLayout(spec, data.shape(), spec.attrs.getInt("axis", 0), spec.inputs.at(1));
  return std::make_unique<GatherKernel>(spec.description, l, esize);
});

// Adds row j of dy into row indices[j] of the (zeroed) output; repeated indices accumulate.
class GatherGradKernel final : public Kernel {
 public:
  GatherGradKernel(std::string description, GatherLayout layout)
      : description_(std::move(description)),
        l_(layout),
        indices_(static_cast<size_t>(layout.groups * layout.numIndices)) {}

  void run(const KernelIO& io) override {
    readIndices(description_, io.in(1), l_.axisDim, indices_);
    HostTensor& out = io.out(0);
    out.fillZero();
    const float* dy = io.in(0).data<float>();
    float* y = out.data<float>();
    const int64_t inner = l_.inner;
    for (int64_t g = 0; g < l_.groups; ++g) {
      const int64_t* idx = indices_.data() + g * l_.numIndices;
      for (int64_t o = 0; o < l_.outer; ++o) {
        float* dst = y + (g * l_.outer + o) * l_.axisDim * inner;
        for (int64_t j = 0; j < l_.numIndices; ++j) {
          float* row = dst + idx[j] * inner;
          for (int64_t t = 0; t < inner; ++t) row[t] += dy[t];
          dy += inner;
        }
      }
    }
  }

 private:
  std::string description_;
  GatherLayout l_;
  std::vector<int64_t> indices_;
};

XT_REGISTER_KERNEL("ai.xtrain", "GatherGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const TensorInfo& out = spec.outputs.at(0);
                     if (out.dataType() != DataType::FLOAT)
                       spec.fail("only FLOAT is supported, not {}", out.toString());
                     const GatherLayout l = gatherLayout(
                         spec, out.shape(), spec.attrs.getInt("axis"), spec.inputs.at(1));
                     return std::make_unique<GatherGradKernel>(spec.description, l);
                   });

XT_REGISTER_KERNEL("ai.graphcore", "GroupedGather",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const TensorInfo& data = spec.inputs.at(0);
                     const size_t esize = dataTypeSize(data.dataType());
                     if (esize == 0)
                       spec.fail("element type of {} cannot be copied", data.toString());
                     const GatherLayout l = groupedLayout(spec, data.shape(), spec.inputs.at(1));
                     return std::make_unique<GatherKernel>(spec.description, l, esize);
                   });

XT_REGISTER_KERNEL("ai.xtrain", "GroupedGatherGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const TensorInfo& out = spec.outputs.at(0);
                     if (out.dataType() != DataType::FLOAT)
                       spec.fail("only FLOAT is supported, not {}", out.toString());
                     const GatherLayout l = groupedLayout(spec, out.shape(), spec.inputs.at(1));
                     return std::make_unique<GatherGradKernel>(spec.description, l);
                   });

}  // namespace
}  // namespace xtrain::device
