// Kernels of the data movement ops: Reshape, Flatten, Squeeze, Unsqueeze (a memcpy, or nothing when
// the output shares the input's bytes), Transpose, Concat, Split, Slice (ai.onnx and ai.graphcore),
// ai.graphcore Subsample (a Slice), SliceGrad and Expand. They
// copy bytes, so every element type with a size works; the layout work (collapsing dimensions,
// strides, chunk sizes) is done once in the factory.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "device/kernel.hpp"
#include "device/kernels/broadcast.hpp"
#include "device/kernels/copy_util.hpp"

namespace xtrain::device {
namespace {

using copyutil::bySize;
using copyutil::elementSize;
using copyutil::stridesOf;

// Runs f(offsetA, offsetB) over the loop nest n (outermost first) with strides sa and sb; idx is
// scratch of n.size() entries, so the call allocates nothing.
template <typename F>
void forEachNest(const std::vector<int64_t>& n, const std::vector<int64_t>& sa,
                 const std::vector<int64_t>& sb, std::vector<int64_t>& idx, F&& f) {
  const size_t rank = n.size();
  for (int64_t v : n) {
    if (v == 0) return;
  }
  if (rank == 0) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  std::fill(idx.begin(), idx.end(), 0);
  int64_t a = 0, b = 0;
  for (;;) {
    f(a, b);
    size_t d = rank - 1;
    for (;;) {
      ++idx[d];
      a += sa[d];
      b += sb[d];
      if (idx[d] < n[d]) break;
      a -= sa[d] * n[d];
      b -= sb[d] * n[d];
      idx[d] = 0;
      if (d == 0) return;
      --d;
    }
  }
}

KernelFactory copyFactory() {
  return [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    elementSize(spec, spec.inputs.at(0));
    return makeKernel([](const KernelIO& io) {
      // The session's buffer plan may put the output over the input's bytes: nothing to copy.
      const size_t n = io.out(0).nbytes();
      if (n != 0 && io.out(0).raw() != io.in(0).raw())
        std::memcpy(io.out(0).raw(), io.in(0).raw(), n);
    });
  };
}

XT_REGISTER_KERNEL("ai.onnx", "Reshape", copyFactory());
XT_REGISTER_KERNEL("ai.onnx", "Flatten", copyFactory());
XT_REGISTER_KERNEL("ai.onnx", "Squeeze", copyFactory());
XT_REGISTER_KERNEL("ai.onnx", "Unsqueeze", copyFactory());

// Transpose. The factory drops size-1 dimensions and merges dimensions that stay adjacent, so e.g.
// a [N,C,H,W]->[N,H,W,C] transpose becomes a batch of 2-D transposes [C,HW]->[HW,C]. Then either
//  - the innermost dimension is unchanged: copy rows, or
//  - walk the output in tiles over (the output dimension that is innermost in the input, the
//  innermost
//    output dimension), so that both reads and writes stay within a few cache lines.
template <typename T>
class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(const Shape& inShape, const std::vector<int64_t>& perm) {
    // Drop size-1 dimensions.
    std::vector<int64_t> newIndex(inShape.size(), -1);
    Shape s;
    for (size_t k = 0; k < inShape.size(); ++k) {
      if (inShape[k] != 1) {
        newIndex[k] = static_cast<int64_t>(s.size());
        s.push_back(inShape[k]);
      }
    }
    std::vector<int64_t> p;
    for (int64_t d : perm) {
      if (newIndex[static_cast<size_t>(d)] >= 0) p.push_back(newIndex[static_cast<size_t>(d)]);
    }
    // Merge runs of output dimensions that are consecutive input dimensions.
    struct Group {
      int64_t inStart, len;
    };
    std::vector<Group> groups;
    for (size_t d = 0; d < p.size(); ++d) {
      if (d > 0 && p[d] == p[d - 1] + 1) {
        ++groups.back().len;
      } else {
        groups.push_back({p[d], 1});
      }
    }
    std::vector<size_t> byInput(groups.size());
    std::iota(byInput.begin(), byInput.end(), 0);
    std::sort(byInput.begin(), byInput.end(),
              [&](size_t a, size_t b) { return groups[a].inStart < groups[b].inStart; });
    const size_t rank = groups.size();
    Shape mergedIn(rank);
    std::vector<size_t> mergedPerm(rank);
    for (size_t k = 0; k < rank; ++k) {
      const Group& g = groups[byInput[k]];
      mergedIn[k] = 1;
      for (int64_t i = 0; i < g.len; ++i) mergedIn[k] *= s[static_cast<size_t>(g.inStart + i)];
      mergedPerm[byInput[k]] = k;
    }
    total_ = shapeNelms(inShape);
    copy_ = rank <= 1;
    if (copy_) return;

    const std::vector<int64_t> inStrides = stridesOf(mergedIn);
    Shape outShape(rank);
    std::vector<int64_t> inStrideOfOut(rank);
    for (size_t d = 0; d < rank; ++d) {
      outShape[d] = mergedIn[mergedPerm[d]];
      inStrideOfOut[d] = inStrides[mergedPerm[d]];
    }
    const std::vector<int64_t> outStrides = stridesOf(outShape);
    const size_t last = rank - 1;
    if (mergedPerm[last] == last) {
      rowLen_ = outShape[last];
      for (size_t d = 0; d < last; ++d) addLoop(outShape[d], outStrides[d], inStrideOfOut[d]);
    } else {
      tiled_ = true;
      const size_t q = static_cast<size_t>(std::find(mergedPerm.begin(), mergedPerm.end(), last) -
                                           mergedPerm.begin());
      ni_ = outShape[q];
      outStrideI_ = outStrides[q];
      nj_ = outShape[last];
      inStrideJ_ = inStrideOfOut[last];
      for (size_t d = 0; d < last; ++d) {
        if (d != q) addLoop(outShape[d], outStrides[d], inStrideOfOut[d]);
      }
    }
    idx_.resize(n_.size());
  }

  void run(const KernelIO& io) override {
    const T* x = reinterpret_cast<const T*>(io.in(0).raw());
    T* y = reinterpret_cast<T*>(io.out(0).raw());
    if (total_ == 0) return;
    if (copy_) {
      std::memcpy(y, x, static_cast<size_t>(total_) * sizeof(T));
    } else if (!tiled_) {
      const size_t rowBytes = static_cast<size_t>(rowLen_) * sizeof(T);
      forEachNest(n_, outStrides_, inStrides_, idx_,
                  [&](int64_t o, int64_t i) { std::memcpy(y + o, x + i, rowBytes); });
    } else {
      forEachNest(n_, outStrides_, inStrides_, idx_,
                  [&](int64_t o, int64_t i) { tile(x + i, y + o); });
    }
  }

 private:
  static constexpr int64_t kBlock = sizeof(T) <= 4 ? 32 : 16;

  void addLoop(int64_t n, int64_t outStride, int64_t inStride) {
    n_.push_back(n);
    outStrides_.push_back(outStride);
    inStrides_.push_back(inStride);
  }

  // y[i*outStrideI + j] = x[i + j*inStrideJ] for i < ni, j < nj, in square blocks.
  void tile(const T* x, T* y) const {
    for (int64_t i0 = 0; i0 < ni_; i0 += kBlock) {
      const int64_t ie = std::min(i0 + kBlock, ni_);
      for (int64_t j0 = 0; j0 < nj_; j0 += kBlock) {
        const int64_t je = std::min(j0 + kBlock, nj_);
        for (int64_t i = i0; i < ie; ++i) {
          T* dst = y + i * outStrideI_;
          const T* src = x + i;
          for (int64_t j = j0; j < je; ++j) dst[j] = src[j * inStrideJ_];
        }
      }
    }
  }

  int64_t total_ = 0;
  bool copy_ = true;  // the permutation only moves size-1 dimensions
  bool tiled_ = false;
  int64_t rowLen_ = 0;
  int64_t ni_ = 0, nj_ = 0, outStrideI_ = 0, inStrideJ_ = 0;
  std::vector<int64_t> n_, outStrides_, inStrides_;
  std::vector<int64_t> idx_;
};

XT_REGISTER_KERNEL("ai.onnx", "Transpose", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& in = spec.inputs.at(0);
  const std::vector<int64_t>& perm = spec.attrs.getInts("perm");
  return bySize(spec, elementSize(spec, in), [&](auto t) -> std::unique_ptr<Kernel> {
    return std::make_unique<TransposeKernel<decltype(t)>>(in.shape(), perm);
  });
});

int64_t normalizedAxis(const KernelSpec& spec, int64_t axis, int64_t rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) spec.fail("axis {} is out of range for rank {}", axis, rank);
  return a;
}

// Concat and Split: per index of the dimensions before the axis, each part is one contiguous chunk.
struct ChunkPlan {
  int64_t outer = 1;
  std::vector<size_t> chunkBytes;  // one per part
};

ChunkPlan chunkPlan(const Shape& whole, int64_t axis, const std::vector<int64_t>& partSizes,
                    size_t esize) {
  ChunkPlan plan;
  size_t inner = esize;
  for (size_t k = 0; k < whole.size(); ++k) {
    if (static_cast<int64_t>(k) < axis) plan.outer *= whole[k];
    if (static_cast<int64_t>(k) > axis) inner *= static_cast<size_t>(whole[k]);
  }
  for (int64_t s : partSizes) plan.chunkBytes.push_back(static_cast<size_t>(s) * inner);
  return plan;
}

XT_REGISTER_KERNEL("ai.onnx", "Concat", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& out = spec.outputs.at(0);
  const size_t esize = elementSize(spec, out);
  const int64_t axis = normalizedAxis(spec, spec.attrs.getInt("axis"), out.rank());
  std::vector<int64_t> sizes;
  for (const auto& in : spec.inputs) sizes.push_back(in.shape().at(static_cast<size_t>(axis)));
  return makeKernel([plan = chunkPlan(out.shape(), axis, sizes, esize)](const KernelIO& io) {
    std::byte* dst = io.out(0).raw();
    for (int64_t o = 0; o < plan.outer; ++o) {
      for (size_t k = 0; k < plan.chunkBytes.size(); ++k) {
        const size_t c = plan.chunkBytes[k];
        if (c == 0) continue;
        std::memcpy(dst, io.in(k).raw() + static_cast<size_t>(o) * c, c);
        dst += c;
      }
    }
  });
});

XT_REGISTER_KERNEL("ai.onnx", "Split", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& in = spec.inputs.at(0);
  const size_t esize = elementSize(spec, in);
  const int64_t axis = normalizedAxis(spec, spec.attrs.getInt("axis", 0), in.rank());
  const int64_t dim = in.shape()[static_cast<size_t>(axis)];
  const auto n = static_cast<int64_t>(spec.outputs.size());
  // Absent outputs have no info, so the sizes come from the attribute (or the equal split).
  std::vector<int64_t> sizes =
      spec.attrs.getInts("split", std::vector<int64_t>(spec.outputs.size(), dim / n));
  return makeKernel([plan = chunkPlan(in.shape(), axis, sizes, esize)](const KernelIO& io) {
    const std::byte* src = io.in(0).raw();
    for (int64_t o = 0; o < plan.outer; ++o) {
      for (size_t k = 0; k < plan.chunkBytes.size(); ++k) {
        const size_t c = plan.chunkBytes[k];
        if (c == 0) continue;
        if (io.hasOut(k)) std::memcpy(io.out(k).raw() + static_cast<size_t>(o) * c, src, c);
        src += c;
      }
    }
  });
});

// Slice and SliceGrad: the sliced region as a loop nest of contiguous chunks. Trailing dimensions
// taken whole merge into the chunk, and so does the last partially taken one when its step is 1.
class SliceKernel final : public Kernel {
 public:
  // `full` is the shape of the sliced tensor (Slice's input, SliceGrad's output); scatter:
  // SliceGrad.
  SliceKernel(const KernelSpec& spec, const Shape& full, size_t esize, bool scatter)
      : scatter_(scatter) {
    const auto& starts = spec.attrs.getInts("starts");
    const auto& ends = spec.attrs.getInts("ends");
    const auto& axes = spec.attrs.getInts("axes");
    const auto& steps = spec.attrs.getInts("steps");
    const auto rank = static_cast<int64_t>(full.size());
    std::vector<int64_t> start(full.size(), 0), step(full.size(), 1),
        count(full.begin(), full.end());
    for (size_t i = 0; i < starts.size(); ++i) {
      // Same rules as the IR's shape inference, which has validated the attributes.
      const auto a = static_cast<size_t>(normalizedAxis(spec, axes.at(i), rank));
      const int64_t dim = full[a];
      int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
      int64_t e = ends.at(i) < 0 ? ends[i] + dim : ends[i];
      const int64_t t = steps.at(i);
      if (t == 0) spec.fail("step 0 for axis {}", axes[i]);
      if (t > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        count[a] = e > s ? (e - s + t - 1) / t : 0;
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        count[a] = s > e ? (s - e - t - 1) / -t : 0;
      }
      start[a] = s;
      step[a] = t;
    }
    for (int64_t c : count) empty_ = empty_ || c == 0;
    if (empty_) return;
    const std::vector<int64_t> inStrides = stridesOf(full);
    int64_t k = rank - 1;
    chunk_ = esize;
    while (k >= 0) {
      const auto u = static_cast<size_t>(k);
      if (start[u] != 0 || step[u] != 1 || count[u] != full[u]) break;
      chunk_ *= static_cast<size_t>(full[u]);
      --k;
    }
    int64_t loops = k + 1;
    if (k >= 0 && step[static_cast<size_t>(k)] == 1) {
      chunk_ *= static_cast<size_t>(count[static_cast<size_t>(k)]);
      loops = k;
    }
    Shape outShape(count.begin(), count.end());
    const std::vector<int64_t> outStrides = stridesOf(outShape);
    const auto es = static_cast<int64_t>(esize);
    for (size_t d = 0; d < full.size(); ++d) base_ += start[d] * inStrides[d] * es;
    for (int64_t d = 0; d < loops; ++d) {
      const auto u = static_cast<size_t>(d);
      n_.push_back(count[u]);
      fullStrides_.push_back(step[u] * inStrides[u] * es);
      slicedStrides_.push_back(outStrides[u] * es);
    }
    idx_.resize(n_.size());
  }

  void run(const KernelIO& io) override {
    if (scatter_) {
      HostTensor& y = io.out(0);
      if (y.nbytes() != 0) y.fillZero();
      if (empty_) return;
      std::byte* full = y.raw() + base_;
      const std::byte* sliced = io.in(0).raw();
      forEachNest(n_, fullStrides_, slicedStrides_, idx_,
                  [&](int64_t f, int64_t s) { std::memcpy(full + f, sliced + s, chunk_); });
    } else {
      if (empty_) return;
      const std::byte* full = io.in(0).raw() + base_;
      std::byte* sliced = io.out(0).raw();
      forEachNest(n_, fullStrides_, slicedStrides_, idx_,
                  [&](int64_t f, int64_t s) { std::memcpy(sliced + s, full + f, chunk_); });
    }
  }

 private:
  bool scatter_;
  bool empty_ = false;
  size_t chunk_ = 0;
  int64_t base_ = 0;  // byte offset of the first element in the full tensor
  std::vector<int64_t> n_, fullStrides_, slicedStrides_, idx_;
};

std::unique_ptr<Kernel> sliceKernel(const KernelSpec& spec) {
  const TensorInfo& in = spec.inputs.at(0);
  return std::make_unique<SliceKernel>(spec, in.shape(), elementSize(spec, in), false);
}

XT_REGISTER_KERNEL("ai.onnx", "Slice", sliceKernel);
// PopART's attribute-only Slice: the same canonical attributes.
XT_REGISTER_KERNEL("ai.graphcore", "Slice", sliceKernel);

// Subsample with attribute strides is Slice with every axis taken whole at those steps.
Attributes subsampleAsSlice(const Attributes& attrs, size_t rank) {
  Attributes a;
  std::vector<int64_t> axes(rank);
  for (size_t i = 0; i < rank; ++i) axes[i] = static_cast<int64_t>(i);
  a.set("starts", std::vector<int64_t>(rank, 0));
  a.set("ends", std::vector<int64_t>(rank, std::numeric_limits<int64_t>::max()));
  a.set("axes", std::move(axes));
  a.set("steps", attrs.getInts("strides"));
  return a;
}

XT_REGISTER_KERNEL("ai.graphcore", "Subsample",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     KernelSpec s = spec;
                     s.attrs = subsampleAsSlice(spec.attrs, spec.inputs.at(0).shape().size());
                     return sliceKernel(s);
                   });

XT_REGISTER_KERNEL("ai.xtrain", "SliceGrad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& out = spec.outputs.at(0);
  return std::make_unique<SliceKernel>(spec, out.shape(), elementSize(spec, out), true);
});

// Expand: numpy broadcast of the input to the output's shape, element by element.
XT_REGISTER_KERNEL("ai.onnx", "Expand", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& in = spec.inputs.at(0);
  const TensorInfo& out = spec.outputs.at(0);
  return bySize(spec, elementSize(spec, in), [&](auto t) -> std::unique_ptr<Kernel> {
    using T = decltype(t);
    return makeKernel([outShape = out.shape(), strides = broadcastStrides(in.shape(), out.shape()),
                       zeros = std::vector<int64_t>(out.shape().size(), 0)](const KernelIO& io) {
      const T* x = reinterpret_cast<const T*>(io.in(0).raw());
      T* y = reinterpret_cast<T*>(io.out(0).raw());
      forEachBroadcast2(outShape, strides, zeros,
                        [&](int64_t o, int64_t i, int64_t) { y[o] = x[i]; });
    });
  });
});

}  // namespace
}  // namespace xtrain::device
