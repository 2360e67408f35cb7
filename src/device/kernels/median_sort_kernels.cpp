// Kernels of ai.graphcore ReduceMedian, Sort and Bucketize (FLOAT, INT32, INT64, UINT32; FLOAT16
// runs promoted, which is exact: they only select and compare values) and ai.xtrain
// ReduceMedianGrad (FLOAT, INT32). Semantics: src/ir/ops/median_sort_ops.cpp.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/copy_util.hpp"

namespace xtrain::device {
namespace {

using copyutil::stridesOf;

// Value order of the sorting kernels: NaN above every number; equal values by position.
template <typename T>
struct Entry {
  T v;
  int64_t i;
};

template <typename T>
bool ascendingBefore(const Entry<T>& a, const Entry<T>& b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool an = std::isnan(a.v), bn = std::isnan(b.v);
    if (an != bn) return bn;
    if (an) return a.i < b.i;
  }
  if (a.v != b.v) return a.v < b.v;
  return a.i < b.i;
}

template <typename T>
bool descendingBefore(const Entry<T>& a, const Entry<T>& b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool an = std::isnan(a.v), bn = std::isnan(b.v);
    if (an != bn) return an;
    if (an) return a.i < b.i;
  }
  if (a.v != b.v) return a.v > b.v;
  return a.i < b.i;
}

// Calls f(T{}) with the element type of `info` among the sortable types. FLOAT16 is refused, so
// that it runs promoted to FLOAT.
template <typename F>
std::unique_ptr<Kernel> byValueType(const KernelSpec& spec, const TensorInfo& info, F&& f) {
  switch (info.dataType()) {
    case DataType::FLOAT: return f(float{});
    case DataType::INT32: return f(int32_t{});
    case DataType::INT64: return f(int64_t{});
    case DataType::UINT32: return f(uint32_t{});
    default: spec.fail("input {} must be FLOAT, INT32, INT64 or UINT32", info.toString());
  }
}

// ---- ReduceMedian
// ----------------------------------------------------------------------------------

// Where the reduced sets lie in the input: set o starts at base[o] (o row-major over the kept
// axes) and its element j (row-major over the reduced axes) is at base[o] + offset[j].
struct MedianLayout {
  std::vector<int64_t> base, offset;
};

MedianLayout medianLayout(const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : axes) reduced.at(static_cast<size_t>(a)) = true;
  const std::vector<int64_t> strides = stridesOf(shape);
  MedianLayout l;
  l.base = {0};
  l.offset = {0};
  // Row-major over a subset of the axes: extend the list axis by axis, the last axis fastest.
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<int64_t>& list = reduced[d] ? l.offset : l.base;
    std::vector<int64_t> next;
    next.reserve(list.size() * static_cast<size_t>(shape[d]));
    for (int64_t start : list) {
      for (int64_t k = 0; k < shape[d]; ++k) next.push_back(start + k * strides[d]);
    }
    list = std::move(next);
  }
  return l;
}

template <typename T>
std::unique_ptr<Kernel> medianKernel(MedianLayout l) {
  std::vector<Entry<T>> buf(l.offset.size());
  return makeKernel([l = std::move(l), buf = std::move(buf)](const KernelIO& io) mutable {
    const T* x = reinterpret_cast<const T*>(io.in(0).raw());
    T* values = reinterpret_cast<T*>(io.out(0).raw());
    int32_t* indices = io.hasOut(1) ? io.out(1).data<int32_t>() : nullptr;
    const size_t n = l.offset.size();
    if (n == 0) return;  // no sets (infer refuses an empty set with an output)
    const auto mid = static_cast<std::ptrdiff_t>((n - 1) / 2);
    for (size_t o = 0; o < l.base.size(); ++o) {
      const T* src = x + l.base[o];
      for (size_t j = 0; j < n; ++j) buf[j] = {src[l.offset[j]], static_cast<int64_t>(j)};
      std::nth_element(buf.begin(), buf.begin() + mid, buf.end(), ascendingBefore<T>);
      values[o] = buf[static_cast<size_t>(mid)].v;
      if (indices != nullptr) indices[o] = static_cast<int32_t>(buf[static_cast<size_t>(mid)].i);
    }
  });
}

XT_REGISTER_KERNEL(
    "ai.graphcore", "ReduceMedian", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      const TensorInfo& x = spec.inputs.at(0);
      MedianLayout l = medianLayout(x.shape(), spec.attrs.getInts("axes"));
      if (l.offset.size() > static_cast<size_t>(INT32_MAX)) {
        spec.fail("a reduced set of {} elements has indices beyond INT32", l.offset.size());
      }
      return byValueType(spec, x, [&](auto t) { return medianKernel<decltype(t)>(std::move(l)); });
    });

// ReduceMedianGrad(gy, indices): dx zero but for gy[o] at element indices[o] of set o. FLOAT, or
// INT32 (an INT32 loss differentiates an integer graph).
template <typename T>
std::unique_ptr<Kernel> medianGradKernel(MedianLayout l, std::string description) {
  return makeKernel([l = std::move(l), description = std::move(description)](const KernelIO& io) {
    const T* gy = io.in(0).data<T>();
    const int32_t* idx = io.in(1).data<int32_t>();
    HostTensor& out = io.out(0);
    out.fillZero();
    T* dx = out.data<T>();
    const auto n = static_cast<int64_t>(l.offset.size());
    for (size_t o = 0; o < l.base.size(); ++o) {
      const int64_t j = idx[o];
      if (j < 0 || j >= n) {
        throw runtime_error(
            "{}: index {} (element {} of the indices) is out of range for a set of {} elements",
            description, j, o, n);
      }
      dx[l.base[o] + l.offset[static_cast<size_t>(j)]] = gy[o];
    }
  });
}

XT_REGISTER_KERNEL("ai.xtrain", "ReduceMedianGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const DataType t = spec.inputs.at(0).dataType();
                     if (t != DataType::FLOAT && t != DataType::INT32) {
                       spec.fail("gy {} must be FLOAT or INT32", spec.inputs[0].toString());
                     }
                     MedianLayout l =
                         medianLayout(spec.outputs.at(0).shape(), spec.attrs.getInts("axes"));
                     if (t == DataType::INT32) {
                       return medianGradKernel<int32_t>(std::move(l), spec.description);
                     }
                     return medianGradKernel<float>(std::move(l), spec.description);
                   });

// ---- Sort
// ------------------------------------------------------------------------------------------

struct AxisLayout {
  int64_t outer = 1, n = 0, inner = 1;
};

AxisLayout axisLayout(const Shape& shape, int64_t axis) {
  const auto rank = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += rank;
  AxisLayout l;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) l.outer *= shape[static_cast<size_t>(d)];
    if (d > axis) l.inner *= shape[static_cast<size_t>(d)];
  }
  l.n = shape.at(static_cast<size_t>(axis));
  return l;
}

template <typename T>
std::unique_ptr<Kernel> sortKernel(AxisLayout l, bool descending) {
  std::vector<Entry<T>> buf(static_cast<size_t>(l.n));
  return makeKernel([l, descending, buf = std::move(buf)](const KernelIO& io) mutable {
    const T* x = reinterpret_cast<const T*>(io.in(0).raw());
    T* values = reinterpret_cast<T*>(io.out(0).raw());
    int32_t* indices = io.out(1).data<int32_t>();
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t i = 0; i < l.inner; ++i) {
        const int64_t start = o * l.n * l.inner + i;
        for (int64_t j = 0; j < l.n; ++j) buf[static_cast<size_t>(j)] = {x[start + j * l.inner], j};
        std::sort(buf.begin(), buf.end(), descending ? descendingBefore<T> : ascendingBefore<T>);
        for (int64_t j = 0; j < l.n; ++j) {
          values[start + j * l.inner] = buf[static_cast<size_t>(j)].v;
          indices[start + j * l.inner] = static_cast<int32_t>(buf[static_cast<size_t>(j)].i);
        }
      }
    }
  });
}

XT_REGISTER_KERNEL("ai.graphcore", "Sort", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& x = spec.inputs.at(0);
  if (x.rank() == 0) spec.fail("input {} is a scalar", x.toString());
  const AxisLayout l = axisLayout(x.shape(), spec.attrs.getInt("axis", -1));
  if (l.n > INT32_MAX) spec.fail("an axis of {} elements has indices beyond INT32", l.n);
  const bool descending = spec.attrs.getInt("descending", 0) != 0;
  return byValueType(spec, x, [&](auto t) { return sortKernel<decltype(t)>(l, descending); });
});

// ---- Bucketize
// -------------------------------------------------------------------------------------

// Sorted boundaries (checked each run: they are an input): a binary search. Otherwise PopART's
// rule, the smallest i >= 1 with x in (b[i-1], b[i]] (right: [b[i-1], b[i])), else 0 when x is at
// most b[0] (right: below it), else len(b). The two agree on sorted boundaries.
template <typename T>
std::unique_ptr<Kernel> bucketizeKernel(bool right) {
  return makeKernel([right](const KernelIO& io) {
    const T* x = reinterpret_cast<const T*>(io.in(0).raw());
    const T* b = reinterpret_cast<const T*>(io.in(1).raw());
    int32_t* y = io.out(0).data<int32_t>();
    const int64_t n = io.in(0).nelms();
    const int64_t len = io.in(1).nelms();
    const bool sorted = std::is_sorted(b, b + len) && std::none_of(b, b + len, [](T v) {
                          if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
                          return false;
                        });
    for (int64_t k = 0; k < n; ++k) {
      const T v = x[k];
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(v)) {
          y[k] = static_cast<int32_t>(len);
          continue;
        }
      }
      if (sorted) {
        const T* at = right ? std::upper_bound(b, b + len, v) : std::lower_bound(b, b + len, v);
        y[k] = static_cast<int32_t>(at - b);
        continue;
      }
      int64_t bucket = (right ? v < b[0] : v <= b[0]) ? 0 : len;
      for (int64_t i = 1; i < len; ++i) {
        const bool inside = right ? (b[i - 1] <= v && v < b[i]) : (b[i - 1] < v && v <= b[i]);
        if (inside) {
          bucket = i;
          break;
        }
      }
      y[k] = static_cast<int32_t>(bucket);
    }
  });
}

XT_REGISTER_KERNEL("ai.graphcore", "Bucketize",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const TensorInfo& x = spec.inputs.at(0);
                     if (spec.inputs.at(1).dataType() != x.dataType()) {
                       spec.fail("boundaries {} must have the input's type {}",
                                 spec.inputs[1].toString(), dataTypeName(x.dataType()));
                     }
                     if (spec.inputs[1].nelms() > INT32_MAX) spec.fail("too many boundaries");
                     const bool right = spec.attrs.getInt("right", 0) != 0;
                     switch (x.dataType()) {
                       case DataType::FLOAT: return bucketizeKernel<float>(right);
                       case DataType::INT32: return bucketizeKernel<int32_t>(right);
                       case DataType::UINT32: return bucketizeKernel<uint32_t>(right);
                       default: spec.fail("input {} must be FLOAT, INT32 or UINT32", x.toString());
                     }
                   });

}  // namespace
}  // namespace xtrain::device
