// Kernels of GatherElements, ScatterElements, GatherElementsGrad, GatherND, ScatterND,
// GatherNDGrad, TopK, ArgMax and ArgMin. Gathers and plain scatters copy whole elements of any
// type; scatter reductions compute in FLOAT, INT32 or INT64 (FLOAT16 runs promoted). Every index is
// checked: one out of range is a runtime error naming the op, the index and its position.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "device/kernel.hpp"
#include "device/kernels/copy_util.hpp"

namespace xtrain::device {
namespace {

using copyutil::bySize;
using copyutil::elementSize;
using copyutil::readIndexTensor;
using copyutil::stridesOf;

[[noreturn]] void indexOutOfRange(const std::string& description, int64_t value, int64_t position,
                                  int64_t dim) {
  throw runtime_error(
      "{}: index {} (element {} of the indices) is out of range for an axis of size {} (expected "
      "{} to {})",
      description, value, position, dim, -dim, dim - 1);
}

// Normalises every index against dim in place; fails on the first out of range.
void normalizeIndices(const std::string& description, std::vector<int64_t>& idx, int64_t dim) {
  for (size_t j = 0; j < idx.size(); ++j) {
    const int64_t v = idx[j];
    const int64_t k = v < 0 ? v + dim : v;
    if (k < 0 || k >= dim) indexOutOfRange(description, v, static_cast<int64_t>(j), dim);
    idx[j] = k;
  }
}

// ---- GatherElements / ScatterElements -------------------------------------------------------

// The data offset (in elements) of every element of indices, except for the axis term, precomputed
// per row: the indices are walked as rows along their last dimension.
struct ElementsPlan {
  std::string description;
  Shape indices;
  std::vector<int64_t> dataStrides;
  int64_t axis = 0;
  int64_t axisDim = 0;
  int64_t axisStride = 0;
  bool axisLast = false;
};

ElementsPlan elementsPlan(const KernelSpec& spec, const Shape& data, const Shape& indices) {
  ElementsPlan p;
  p.description = spec.description;
  p.indices = indices;
  p.dataStrides = stridesOf(data);
  const auto rank = static_cast<int64_t>(data.size());
  int64_t axis = spec.attrs.getInt("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || indices.size() != data.size()) {
    spec.fail("axis {} or indices {} do not fit data {}", axis, shapeToString(indices),
              shapeToString(data));
  }
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d]) {
      spec.fail("indices {} exceed data {}", shapeToString(indices), shapeToString(data));
    }
  }
  p.axis = axis;
  p.axisDim = data[static_cast<size_t>(axis)];
  p.axisStride = p.dataStrides[static_cast<size_t>(axis)];
  p.axisLast = axis == rank - 1;
  return p;
}

// Calls f(dataOffset, indexPosition) for every element of indices; idx holds normalised indices.
template <typename F>
void forEachElement(const ElementsPlan& p, const std::vector<int64_t>& idx, F&& f) {
  const size_t rank = p.indices.size();
  const int64_t n = static_cast<int64_t>(idx.size());
  if (n == 0) return;
  const int64_t cols = p.indices[rank - 1];
  const int64_t rows = n / cols;
  std::vector<int64_t> pos(rank - 1, 0);
  int64_t base = 0;  // data offset of the row without the axis term
  const int64_t colStep = p.axisLast ? 0 : 1;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* ix = idx.data() + r * cols;
    for (int64_t j = 0; j < cols; ++j) f(base + j * colStep + ix[j] * p.axisStride, r * cols + j);
    for (size_t d = rank - 1; d-- > 0;) {
      const bool isAxis = static_cast<int64_t>(d) == p.axis;
      if (++pos[d] < p.indices[d]) {
        if (!isAxis) base += p.dataStrides[d];
        break;
      }
      if (!isAxis) base -= (p.indices[d] - 1) * p.dataStrides[d];
      pos[d] = 0;
    }
  }
}

XT_REGISTER_KERNEL(
    "ai.onnx", "GatherElements", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      const TensorInfo& data = spec.inputs.at(0);
      ElementsPlan plan = elementsPlan(spec, data.shape(), spec.inputs.at(1).shape());
      return bySize(spec, elementSize(spec, data), [&](auto t) -> std::unique_ptr<Kernel> {
        using T = decltype(t);
        return makeKernel([p = plan, idx = std::vector<int64_t>()](const KernelIO& io) mutable {
          readIndexTensor(io.in(1), idx);
          normalizeIndices(p.description, idx, p.axisDim);
          const T* x = reinterpret_cast<const T*>(io.in(0).raw());
          T* y = reinterpret_cast<T*>(io.out(0).raw());
          forEachElement(p, idx, [&](int64_t off, int64_t j) { y[j] = x[off]; });
        });
      });
    });

// The scatter-add gradients compute in FLOAT (FLOAT16 runs promoted); input 1 holds indices.
void requireFloatGradient(const KernelSpec& spec) {
  if (spec.inputs.at(0).dataType() != DataType::FLOAT) {
    spec.fail("the gradient {} must be FLOAT", spec.inputs[0].toString());
  }
}

enum class Reduction { None, Add, Mul };

Reduction reductionOf(const KernelSpec& spec) {
  const std::string r = spec.attrs.getString("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  spec.fail("reduction '{}' is not supported", r);
}

// Calls f(T{}) with the arithmetic type of a reducing scatter; FLOAT16 is refused (runs promoted).
template <typename F>
std::unique_ptr<Kernel> byArithmetic(const KernelSpec& spec, DataType t, F&& f) {
  switch (t) {
    case DataType::FLOAT: return f(float{});
    case DataType::INT32: return f(int32_t{});
    case DataType::INT64: return f(int64_t{});
    default: spec.fail("reduction needs FLOAT, INT32 or INT64 data, not {}", dataTypeName(t));
  }
}

// Where the update of each element of indices is in an updates tensor of shape `updates` (PopART's
// Scatter takes updates larger than the indices, as torch.scatter_ does: the leading corner is
// used); empty when updates has the indices' shape.
std::vector<int64_t> updatesOffsets(const Shape& indices, const Shape& updates) {
  if (indices == updates) return {};
  const std::vector<int64_t> st = stridesOf(updates);
  int64_t n = 1;
  for (int64_t d : indices) n *= d;
  std::vector<int64_t> off(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    int64_t rest = j, o = 0;
    for (size_t d = indices.size(); d-- > 0;) {
      o += (rest % indices[d]) * st[d];
      rest /= indices[d];
    }
    off[static_cast<size_t>(j)] = o;
  }
  return off;
}

template <typename T>
std::unique_ptr<Kernel> scatterElementsKernel(ElementsPlan plan, Reduction r, bool zeroData,
                                              std::vector<int64_t> updOff = {}) {
  return makeKernel(
      [p = std::move(plan), r, zeroData, updOff = std::move(updOff),
       idx = std::vector<int64_t>()](const KernelIO& io) mutable {
        // zeroData: GatherElementsGrad (dy, indices) -> zeros + dy scattered.
        const size_t updatesInput = zeroData ? 0 : 2;
        const size_t indicesInput = 1;
        readIndexTensor(io.in(indicesInput), idx);
        normalizeIndices(p.description, idx, p.axisDim);
        HostTensor& out = io.out(0);
        if (zeroData) {
          out.fillZero();
        } else if (out.nbytes() != 0) {
          std::memcpy(out.raw(), io.in(0).raw(), out.nbytes());
        }
        const T* u = reinterpret_cast<const T*>(io.in(updatesInput).raw());
        T* y = reinterpret_cast<T*>(out.raw());
        if constexpr (std::is_arithmetic_v<T>) {
          if (r == Reduction::Add) {
            forEachElement(p, idx, [&](int64_t off, int64_t j) { y[off] += u[j]; });
            return;
          }
          if (r == Reduction::Mul) {
            forEachElement(p, idx, [&](int64_t off, int64_t j) { y[off] *= u[j]; });
            return;
          }
        }
        if (!updOff.empty()) {
          forEachElement(p, idx, [&](int64_t off, int64_t j) {
            y[off] = u[updOff[static_cast<size_t>(j)]];
          });
          return;
        }
        forEachElement(p, idx, [&](int64_t off, int64_t j) { y[off] = u[j]; });
      });
}

XT_REGISTER_KERNEL(
    "ai.onnx", "ScatterElements", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      const TensorInfo& data = spec.inputs.at(0);
      ElementsPlan plan = elementsPlan(spec, data.shape(), spec.inputs.at(1).shape());
      const Reduction r = reductionOf(spec);
      if (r == Reduction::None) {
        std::vector<int64_t> updOff =
            updatesOffsets(spec.inputs.at(1).shape(), spec.inputs.at(2).shape());
        return bySize(spec, elementSize(spec, data), [&](auto t) -> std::unique_ptr<Kernel> {
          return scatterElementsKernel<decltype(t)>(std::move(plan), r, false, std::move(updOff));
        });
      }
      if (spec.inputs.at(1).shape() != spec.inputs.at(2).shape()) {
        spec.fail("updates {} larger than the indices {} need reduction 'none'",
                  spec.inputs[2].toString(), spec.inputs[1].toString());
      }
      return byArithmetic(spec, data.dataType(), [&](auto t) -> std::unique_ptr<Kernel> {
        return scatterElementsKernel<decltype(t)>(std::move(plan), r, false);
      });
    });

XT_REGISTER_KERNEL("ai.xtrain", "GatherElementsGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloatGradient(spec);
                     const TensorInfo& out = spec.outputs.at(0);
                     return scatterElementsKernel<float>(
                         elementsPlan(spec, out.shape(), spec.inputs.at(1).shape()), Reduction::Add,
                         true);
                   });

// ---- GatherND / ScatterND -------------------------------------------------------------------

// data viewed as [batch, ...indexed dims (k), slice], indices as [batch, tuples, k].
struct NDPlan {
  std::string description;
  int64_t batch = 1;
  int64_t tuples = 0;  // per batch
  int64_t k = 0;
  int64_t slice = 1;                   // elements per slice
  int64_t batchBlock = 0;              // data elements per batch
  std::vector<int64_t> dims, strides;  // of the k indexed dimensions
};

NDPlan ndPlan(const KernelSpec& spec, const Shape& data, const Shape& indices, int64_t b) {
  NDPlan p;
  p.description = spec.description;
  if (indices.empty() || b < 0 || static_cast<size_t>(b) >= std::min(data.size(), indices.size())) {
    spec.fail("indices {} do not fit data {}", shapeToString(indices), shapeToString(data));
  }
  p.k = indices.back();
  if (b + p.k > static_cast<int64_t>(data.size())) spec.fail("indices tuples are too long");
  const std::vector<int64_t> st = stridesOf(data);
  for (int64_t d = 0; d < b; ++d) p.batch *= data[static_cast<size_t>(d)];
  for (int64_t d = b; d < b + p.k; ++d) {
    p.dims.push_back(data[static_cast<size_t>(d)]);
    p.strides.push_back(st[static_cast<size_t>(d)]);
  }
  for (size_t d = static_cast<size_t>(b + p.k); d < data.size(); ++d) p.slice *= data[d];
  int64_t nTuples = 1;
  for (size_t d = static_cast<size_t>(b); d + 1 < indices.size(); ++d) nTuples *= indices[d];
  p.tuples = nTuples;
  p.batchBlock = 1;
  for (size_t d = static_cast<size_t>(b); d < data.size(); ++d) p.batchBlock *= data[d];
  return p;
}

// Element offsets (into data) of every tuple's slice, checked.
void tupleOffsets(const NDPlan& p, const std::vector<int64_t>& idx, std::vector<int64_t>& offs) {
  offs.resize(static_cast<size_t>(p.batch * p.tuples));
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t t = 0; t < p.tuples; ++t) {
      const int64_t pos = (b * p.tuples + t) * p.k;
      int64_t off = b * p.batchBlock;
      for (int64_t c = 0; c < p.k; ++c) {
        const int64_t v = idx[static_cast<size_t>(pos + c)];
        const int64_t dim = p.dims[static_cast<size_t>(c)];
        const int64_t i = v < 0 ? v + dim : v;
        if (i < 0 || i >= dim) indexOutOfRange(p.description, v, pos + c, dim);
        off += i * p.strides[static_cast<size_t>(c)];
      }
      offs[static_cast<size_t>(b * p.tuples + t)] = off;
    }
  }
}

XT_REGISTER_KERNEL("ai.onnx", "GatherND", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& data = spec.inputs.at(0);
  const size_t esize = elementSize(spec, data);
  return makeKernel([p = ndPlan(spec, data.shape(), spec.inputs.at(1).shape(),
                                spec.attrs.getInt("batch_dims", 0)),
                     esize, idx = std::vector<int64_t>(),
                     offs = std::vector<int64_t>()](const KernelIO& io) mutable {
    readIndexTensor(io.in(1), idx);
    tupleOffsets(p, idx, offs);
    const std::byte* x = io.in(0).raw();
    std::byte* y = io.out(0).raw();
    const size_t sliceBytes = static_cast<size_t>(p.slice) * esize;
    if (sliceBytes == 0) return;
    for (int64_t off : offs) {
      std::memcpy(y, x + static_cast<size_t>(off) * esize, sliceBytes);
      y += sliceBytes;
    }
  });
});

// ScatterND and GatherNDGrad (zeroData: zeros + dy's slices added).
template <typename T>
std::unique_ptr<Kernel> scatterNDKernel(NDPlan plan, Reduction r, bool zeroData) {
  return makeKernel([p = std::move(plan), r, zeroData, idx = std::vector<int64_t>(),
                     offs = std::vector<int64_t>()](const KernelIO& io) mutable {
    readIndexTensor(io.in(1), idx);
    tupleOffsets(p, idx, offs);
    HostTensor& out = io.out(0);
    if (zeroData) {
      out.fillZero();
    } else if (out.nbytes() != 0) {
      std::memcpy(out.raw(), io.in(0).raw(), out.nbytes());
    }
    const T* u = reinterpret_cast<const T*>(io.in(zeroData ? 0 : 2).raw());
    T* y = reinterpret_cast<T*>(out.raw());
    const int64_t s = p.slice;
    for (size_t t = 0; t < offs.size(); ++t) {
      T* __restrict dst = y + offs[t];
      const T* __restrict src = u + static_cast<int64_t>(t) * s;
      if constexpr (std::is_arithmetic_v<T>) {
        if (r == Reduction::Add) {
          for (int64_t i = 0; i < s; ++i) dst[i] += src[i];
          continue;
        }
        if (r == Reduction::Mul) {
          for (int64_t i = 0; i < s; ++i) dst[i] *= src[i];
          continue;
        }
      }
      if (s > 0) std::memcpy(dst, src, static_cast<size_t>(s) * sizeof(T));
    }
  });
}

XT_REGISTER_KERNEL("ai.onnx", "ScatterND", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& data = spec.inputs.at(0);
  NDPlan plan = ndPlan(spec, data.shape(), spec.inputs.at(1).shape(), 0);
  const Reduction r = reductionOf(spec);
  if (r == Reduction::None) {
    return bySize(spec, elementSize(spec, data), [&](auto t) -> std::unique_ptr<Kernel> {
      return scatterNDKernel<decltype(t)>(std::move(plan), r, false);
    });
  }
  return byArithmetic(spec, data.dataType(), [&](auto t) -> std::unique_ptr<Kernel> {
    return scatterNDKernel<decltype(t)>(std::move(plan), r, false);
  });
});

XT_REGISTER_KERNEL("ai.xtrain", "GatherNDGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFloatGradient(spec);
                     const TensorInfo& out = spec.outputs.at(0);
                     return scatterNDKernel<float>(
                         ndPlan(spec, out.shape(), spec.inputs.at(1).shape(),
                                spec.attrs.getInt("batch_dims", 0)),
                         Reduction::Add, true);
                   });

// ScatterMulUpdatesGrad(dy, data, indices, updates): per data position the product of its nonzero
// updates and the count of its zero updates, then per update dy * data * (product of the others).
class ScatterMulUpdatesGrad final : public Kernel {
 public:
  explicit ScatterMulUpdatesGrad(const KernelSpec& spec) {
    const TensorInfo& data = spec.inputs.at(1);
    elements_ = spec.attrs.getString("kind") == "ScatterElements";
    if (elements_) {
      ep_ = elementsPlan(spec, data.shape(), spec.inputs.at(2).shape());
    } else {
      np_ = ndPlan(spec, data.shape(), spec.inputs.at(2).shape(), 0);
    }
    prod_.resize(static_cast<size_t>(data.nelms()));
    zeros_.resize(static_cast<size_t>(data.nelms()));
  }

  void run(const KernelIO& io) override {
    const float* dy = io.in(0).data<float>();
    const float* data = io.in(1).data<float>();
    const float* u = io.in(3).data<float>();
    float* g = io.out(0).data<float>();
    std::fill(prod_.begin(), prod_.end(), 1.0f);
    std::fill(zeros_.begin(), zeros_.end(), 0);
    auto accumulate = [&](int64_t off, int64_t j) {
      if (u[j] == 0.0f) {
        ++zeros_[static_cast<size_t>(off)];
      } else {
        prod_[static_cast<size_t>(off)] *= u[j];
      }
    };
    auto grad = [&](int64_t off, int64_t j) {
      const auto o = static_cast<size_t>(off);
      float others = 0.0f;
      if (u[j] != 0.0f) {
        others = zeros_[o] == 0 ? prod_[o] / u[j] : 0.0f;
      } else {
        others = zeros_[o] == 1 ? prod_[o] : 0.0f;
      }
      g[j] = dy[off] * data[off] * others;
    };
    if (elements_) {
      copyutil::readIndexTensor(io.in(2), idx_);
      normalizeIndices(ep_.description, idx_, ep_.axisDim);
      forEachElement(ep_, idx_, accumulate);
      forEachElement(ep_, idx_, grad);
    } else {
      copyutil::readIndexTensor(io.in(2), idx_);
      tupleOffsets(np_, idx_, offs_);
      for (int pass = 0; pass < 2; ++pass) {
        for (size_t t = 0; t < offs_.size(); ++t) {
          for (int64_t i = 0; i < np_.slice; ++i) {
            const int64_t j = static_cast<int64_t>(t) * np_.slice + i;
            if (pass == 0) {
              accumulate(offs_[t] + i, j);
            } else {
              grad(offs_[t] + i, j);
            }
          }
        }
      }
    }
  }

 private:
  bool elements_ = true;
  ElementsPlan ep_;
  NDPlan np_;
  std::vector<float> prod_;
  std::vector<int32_t> zeros_;
  std::vector<int64_t> idx_, offs_;
};

XT_REGISTER_KERNEL("ai.xtrain", "ScatterMulUpdatesGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     for (size_t i : {0, 1, 3}) {  // a refused FLOAT16 spec runs promoted
                       if (spec.inputs.at(i).dataType() != DataType::FLOAT) {
                         spec.fail("input {} is {}; only FLOAT is supported", i,
                                   spec.inputs[i].toString());
                       }
                     }
                     return std::make_unique<ScatterMulUpdatesGrad>(spec);
                   });

// ---- TopK, ArgMax, ArgMin -------------------------------------------------------------------

struct AxisLayout {
  int64_t outer = 1, n = 0, inner = 1;
};

AxisLayout axisLayout(const KernelSpec& spec, const Shape& shape, int64_t axis) {
  const auto rank = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) spec.fail("axis {} is out of range for rank {}", axis, rank);
  AxisLayout l;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) l.outer *= shape[static_cast<size_t>(d)];
    if (d > axis) l.inner *= shape[static_cast<size_t>(d)];
  }
  l.n = shape[static_cast<size_t>(axis)];
  return l;
}

// TopK: per (outer, inner) position the n values along the axis are copied with their indices
// and partially sorted. NaN counts as larger than every number; equal values keep index order.
template <typename T>
std::unique_ptr<Kernel> topKKernel(AxisLayout l, int64_t k, bool largest) {
  struct Entry {
    T v;
    int64_t i;
  };
  return makeKernel([l, k, largest, buf = std::vector<Entry>(static_cast<size_t>(l.n))](
                        const KernelIO& io) mutable {
    const T* x = reinterpret_cast<const T*>(io.in(0).raw());
    T* values = reinterpret_cast<T*>(io.out(0).raw());
    int64_t* indices = io.out(1).data<int64_t>();
    if (k == 0) return;
    auto before = [largest](const Entry& a, const Entry& b) {
      if constexpr (std::is_floating_point_v<T>) {
        const bool an = std::isnan(a.v), bn = std::isnan(b.v);
        if (an != bn) return largest ? an : bn;
        if (an) return a.i < b.i;
      }
      if (a.v != b.v) return largest ? a.v > b.v : a.v < b.v;
      return a.i < b.i;
    };
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t i = 0; i < l.inner; ++i) {
        const T* src = x + o * l.n * l.inner + i;
        for (int64_t j = 0; j < l.n; ++j) buf[static_cast<size_t>(j)] = {src[j * l.inner], j};
        if (k == 1) {
          auto best = std::min_element(buf.begin(), buf.end(), before);
          std::swap(buf[0], *best);
        } else {
          std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), before);
        }
        T* vdst = values + o * k * l.inner + i;
        int64_t* idst = indices + o * k * l.inner + i;
        for (int64_t j = 0; j < k; ++j) {
          vdst[j * l.inner] = buf[static_cast<size_t>(j)].v;
          idst[j * l.inner] = buf[static_cast<size_t>(j)].i;
        }
      }
    }
  });
}

XT_REGISTER_KERNEL("ai.onnx", "TopK", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& x = spec.inputs.at(0);
  const AxisLayout l = axisLayout(spec, x.shape(), spec.attrs.getInt("axis", -1));
  const int64_t k = spec.attrs.getInt("k");
  if (k < 0 || k > l.n) spec.fail("k {} is out of range for an axis of {}", k, l.n);
  const bool largest = spec.attrs.getInt("largest", 1) != 0;
  switch (x.dataType()) {
    case DataType::FLOAT: return topKKernel<float>(l, k, largest);
    case DataType::INT32: return topKKernel<int32_t>(l, k, largest);
    case DataType::INT64: return topKKernel<int64_t>(l, k, largest);
    default: spec.fail("input {} must be FLOAT, INT32 or INT64", x.toString());
  }
});

// ArgMax/ArgMin over [outer, n, inner]: a running best per inner position, so the inner loop runs
// over contiguous memory. INT32 indices (PopART's); the IR keeps an axis within INT32.
template <typename T, bool Max>
std::unique_ptr<Kernel> argKernel(AxisLayout l, bool last) {
  return makeKernel(
      [l, last, best = std::vector<T>(static_cast<size_t>(l.inner))](const KernelIO& io) mutable {
        const T* x = reinterpret_cast<const T*>(io.in(0).raw());
        int32_t* y = io.out(0).data<int32_t>();
        if (io.out(0).nelms() == 0) return;
        for (int64_t o = 0; o < l.outer; ++o) {
          const T* src = x + o * l.n * l.inner;
          int32_t* dst = y + o * l.inner;
          std::copy(src, src + l.inner, best.begin());
          std::fill(dst, dst + l.inner, 0);
          for (int64_t j = 1; j < l.n; ++j) {
            const T* row = src + j * l.inner;
            for (int64_t i = 0; i < l.inner; ++i) {
              const T v = row[i];
              const T b = best[static_cast<size_t>(i)];
              const bool better = Max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
              if (better) {
                best[static_cast<size_t>(i)] = v;
                dst[i] = static_cast<int32_t>(j);
              }
            }
          }
        }
      });
}

template <bool Max>
KernelFactory argFactory() {
  return [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    const TensorInfo& in = spec.inputs.at(0);
    const AxisLayout l = axisLayout(spec, in.shape(), spec.attrs.getInt("axis", 0));
    if (l.n == 0) spec.fail("the axis is empty");
    if (l.n > INT32_MAX) spec.fail("an axis of {} elements has indices beyond INT32", l.n);
    const bool last = spec.attrs.getInt("select_last_index", 0) != 0;
    switch (in.dataType()) {
      case DataType::FLOAT: return argKernel<float, Max>(l, last);
      case DataType::INT32: return argKernel<int32_t, Max>(l, last);
      case DataType::INT64: return argKernel<int64_t, Max>(l, last);
      default: spec.fail("input {} must be FLOAT, INT32 or INT64", in.toString());
    }
  };
}

XT_REGISTER_KERNEL("ai.onnx", "ArgMax", argFactory<true>());
XT_REGISTER_KERNEL("ai.onnx", "ArgMin", argFactory<false>());

}  // namespace
}  // namespace xtrain::device
