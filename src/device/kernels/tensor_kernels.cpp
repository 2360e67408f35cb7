// Kernels of Shape, Size, ConstantOfShape, Range, Tile, Pad, PadGrad, OneHot, CumSum and Trilu.
// The movement kernels (Tile, Pad, OneHot, Trilu) copy whole elements of any type; CumSum computes
// in FLOAT, INT32 or INT64; PadGrad in FLOAT.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "device/kernel.hpp"
#include "device/kernels/copy_util.hpp"

namespace xtrain::device {
namespace {

using copyutil::bySize;
using copyutil::elementSize;
using copyutil::stridesOf;

// Kernels whose output never changes (Shape, Size, ConstantOfShape, Range): the value is made once
// in the factory and copied out on every run.
std::unique_ptr<Kernel> constantKernel(HostTensor value) {
  return makeKernel([v = std::move(value)](const KernelIO& io) {
    if (v.nbytes() != 0) std::memcpy(io.out(0).raw(), v.raw(), v.nbytes());
  });
}

XT_REGISTER_KERNEL("ai.onnx", "Shape", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const Shape& shape = spec.inputs.at(0).shape();
  const auto rank = static_cast<int64_t>(shape.size());
  int64_t start = spec.attrs.getInt("start", 0);
  int64_t end = spec.attrs.getInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(shape.begin() + start, shape.begin() + end);
  const auto n = static_cast<int64_t>(dims.size());
  return constantKernel(HostTensor::fromVector<int64_t>({n}, dims));
});

XT_REGISTER_KERNEL("ai.onnx", "Size", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  return constantKernel(HostTensor::fromVector<int64_t>({}, {spec.inputs.at(0).nelms()}));
});

// One element of `type` holding `value` (an int64 or float attribute), exact for integers.
HostTensor scalarOf(DataType type, const AttrValue& value) {
  HostTensor t(TensorInfo(type, {1}));
  if (const auto* i = std::get_if<int64_t>(&value)) {
    if (type == DataType::INT64) {
      t.data<int64_t>()[0] = *i;
    } else {
      t.setFromDouble(0, static_cast<double>(*i));
    }
  } else if (const auto* f = std::get_if<float>(&value)) {
    t.setFromDouble(0, static_cast<double>(*f));
  } else if (const auto* fs = std::get_if<std::vector<float>>(&value); fs && fs->size() == 1) {
    t.setFromDouble(0, static_cast<double>((*fs)[0]));
  } else if (const auto* is = std::get_if<std::vector<int64_t>>(&value); is && is->size() == 1) {
    t.setFromDouble(0, static_cast<double>((*is)[0]));
  } else {
    return HostTensor();
  }
  return t;
}

XT_REGISTER_KERNEL("ai.onnx", "ConstantOfShape",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const TensorInfo& out = spec.outputs.at(0);
                     HostTensor value(out);
                     const size_t esize = elementSize(spec, out);
                     if (spec.attrs.has("value") && out.nelms() > 0) {
                       HostTensor one = scalarOf(out.dataType(), spec.attrs.all().at("value"));
                       if (one.nelms() != 1) {
                         spec.fail("attribute 'value' must be one number");
                       }
                       for (int64_t i = 0; i < out.nelms(); ++i) {
                         std::memcpy(value.raw() + static_cast<size_t>(i) * esize, one.raw(),
                                     esize);
                       }
                     }
                     return constantKernel(std::move(value));
                   });

XT_REGISTER_KERNEL("ai.onnx", "Range", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& out = spec.outputs.at(0);
  HostTensor value(out);
  const int64_t n = out.nelms();
  switch (out.dataType()) {
    case DataType::INT64:
    case DataType::INT32:
    case DataType::INT16: {
      const int64_t start = spec.attrs.getInt("start");
      const int64_t delta = spec.attrs.getInt("delta");
      if (out.dataType() == DataType::INT64) {
        int64_t* p = value.data<int64_t>();
        for (int64_t i = 0; i < n; ++i) p[i] = start + i * delta;
      } else {
        for (int64_t i = 0; i < n; ++i)
          value.setFromDouble(i, static_cast<double>(start + i * delta));
      }
      break;
    }
    case DataType::FLOAT:
    case DataType::DOUBLE: {
      const double start = spec.attrs.getFloat("start");
      const double delta = spec.attrs.getFloat("delta");
      for (int64_t i = 0; i < n; ++i)
        value.setFromDouble(i, start + static_cast<double>(i) * delta);
      break;
    }
    default: spec.fail("output {} must be FLOAT, DOUBLE, INT16, INT32 or INT64", out.toString());
  }
  return constantKernel(std::move(value));
});

// Tile: every output row (all dimensions but the last) is the input row at the output coordinates
// modulo the input's dimensions, repeated along the last dimension.
XT_REGISTER_KERNEL("ai.onnx", "Tile", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& in = spec.inputs.at(0);
  const TensorInfo& out = spec.outputs.at(0);
  const size_t esize = elementSize(spec, in);
  return makeKernel([esize, inShape = in.shape(), outShape = out.shape(),
                     inStrides = stridesOf(in.shape())](const KernelIO& io) {
    const std::byte* x = io.in(0).raw();
    std::byte* y = io.out(0).raw();
    if (io.out(0).nelms() == 0) return;
    const size_t rank = outShape.size();
    if (rank == 0) {
      std::memcpy(y, x, esize);
      return;
    }
    const size_t rowBytes = static_cast<size_t>(inShape[rank - 1]) * esize;
    const int64_t reps = outShape[rank - 1] / inShape[rank - 1];
    std::vector<int64_t> idx(rank - 1, 0);
    int64_t src = 0;  // input row offset (elements) of the current output row
    const int64_t rows = io.out(0).nelms() / outShape[rank - 1];
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < reps; ++k) {
        std::memcpy(y, x + static_cast<size_t>(src) * esize, rowBytes);
        y += rowBytes;
      }
      for (size_t d = rank - 1; d-- > 0;) {
        ++idx[d];
        const bool wrapIn = idx[d] % inShape[d] == 0;
        src += wrapIn ? -(inShape[d] - 1) * inStrides[d] : inStrides[d];
        if (idx[d] < outShape[d]) break;
        idx[d] = 0;
      }
    }
  });
});

// Pad and PadGrad: per dimension, the input coordinate each output coordinate copies (-1: the pad
// value). Rows (all dimensions but the last) are walked with an index vector; along the last
// dimension the part inside the input is one memcpy, the padded edges are looked up.
struct PadPlan {
  Shape in, out;
  std::vector<std::vector<int64_t>> maps;  // per dimension, per output coordinate
  std::vector<int64_t> inStrides;
  int64_t lo = 0, hi = 0, srcLo = 0;  // last dimension: out [lo, hi) copies input [srcLo, ..)
};

PadPlan padPlan(const KernelSpec& spec, const Shape& in, const Shape& out) {
  const std::vector<int64_t>& pads = spec.attrs.getInts("pads");
  const std::string mode = spec.attrs.getString("mode", "constant");
  const size_t rank = in.size();
  if (pads.size() != 2 * rank) spec.fail("pads {} do not fit rank {}", pads, rank);
  PadPlan p;
  p.in = in;
  p.out = out;
  p.inStrides = stridesOf(in);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t b = pads[d], dim = in[d], n = out[d];
    if (n != dim + b + pads[d + rank]) spec.fail("pads {} do not give the output shape", pads);
    // The part of the input that survives negative pads: [cb, ce).
    const int64_t cb = std::max<int64_t>(-b, 0);
    const int64_t ce = dim - std::max<int64_t>(-pads[d + rank], 0);
    std::vector<int64_t> m(static_cast<size_t>(n));
    for (int64_t o = 0; o < n; ++o) {
      int64_t i = o - b;
      if (i < cb || i >= ce) {
        if (mode == "constant") {
          i = -1;
        } else if (mode == "edge") {
          i = std::clamp<int64_t>(i, cb, ce - 1);
        } else {  // reflect about the first and last kept elements
          const int64_t len = ce - cb;
          int64_t r = i - cb;
          if (len == 1) {
            r = 0;
          } else {
            const int64_t period = 2 * (len - 1);
            r = ((r % period) + period) % period;
            if (r >= len) r = period - r;
          }
          i = cb + r;
        }
        if (i != -1 && (i < 0 || i >= dim)) spec.fail("pads {} cannot be applied", pads);
      }
      m[static_cast<size_t>(o)] = i;
    }
    p.maps.push_back(std::move(m));
  }
  if (rank > 0) {
    const int64_t b = pads[rank - 1];
    const int64_t dim = in[rank - 1];
    p.lo = std::clamp<int64_t>(b, 0, out[rank - 1]);
    p.hi = std::clamp<int64_t>(b + dim - std::max<int64_t>(-pads[2 * rank - 1], 0), p.lo,
                               out[rank - 1]);
    p.srcLo = p.lo - b;
  }
  return p;
}

// Calls row(srcRowOffset or -1, outRowIndex) for every output row.
template <typename F>
void forEachPadRow(const PadPlan& p, F&& row) {
  const size_t rank = p.out.size();
  const int64_t rows = rank == 0 ? 0 : shapeNelms(Shape(p.out.begin(), p.out.end() - 1));
  std::vector<int64_t> idx(rank == 0 ? 0 : rank - 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t src = 0;
    for (size_t d = 0; d + 1 < rank && src >= 0; ++d) {
      const int64_t i = p.maps[d][static_cast<size_t>(idx[d])];
      src = i < 0 ? -1 : src + i * p.inStrides[d];
    }
    row(src, r);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < p.out[d]) break;
      idx[d] = 0;
    }
  }
}

template <typename T>
std::unique_ptr<Kernel> padKernel(PadPlan plan, T value) {
  return makeKernel([p = std::move(plan), value](const KernelIO& io) {
    const T* x = reinterpret_cast<const T*>(io.in(0).raw());
    T* y = reinterpret_cast<T*>(io.out(0).raw());
    if (io.out(0).nelms() == 0) return;
    if (p.out.empty()) {
      y[0] = x[0];
      return;
    }
    const int64_t n = p.out.back();
    const std::vector<int64_t>& m = p.maps.back();
    forEachPadRow(p, [&](int64_t src, int64_t r) {
      T* dst = y + r * n;
      if (src < 0) {
        std::fill(dst, dst + n, value);
        return;
      }
      const T* s = x + src;
      for (int64_t o = 0; o < p.lo; ++o)
        dst[o] = m[static_cast<size_t>(o)] < 0 ? value : s[m[static_cast<size_t>(o)]];
      if (p.hi > p.lo)
        std::memcpy(dst + p.lo, s + p.srcLo, static_cast<size_t>(p.hi - p.lo) * sizeof(T));
      for (int64_t o = p.hi; o < n; ++o)
        dst[o] = m[static_cast<size_t>(o)] < 0 ? value : s[m[static_cast<size_t>(o)]];
    });
  });
}

XT_REGISTER_KERNEL("ai.onnx", "Pad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& in = spec.inputs.at(0);
  const TensorInfo& out = spec.outputs.at(0);
  PadPlan plan = padPlan(spec, in.shape(), out.shape());
  HostTensor v = scalarOf(in.dataType(), AttrValue(spec.attrs.getFloat("value", 0.0f)));
  return bySize(spec, elementSize(spec, in), [&](auto t) -> std::unique_ptr<Kernel> {
    using T = decltype(t);
    T value;
    std::memcpy(&value, v.raw(), sizeof(T));
    return padKernel<T>(std::move(plan), value);
  });
});

XT_REGISTER_KERNEL("ai.xtrain", "PadGrad", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  const TensorInfo& dy = spec.inputs.at(0);
  const TensorInfo& dx = spec.outputs.at(0);
  return makeKernel([p = padPlan(spec, dx.shape(), dy.shape())](const KernelIO& io) {
    const float* gy = io.in(0).data<float>();
    HostTensor& out = io.out(0);
    out.fillZero();
    float* gx = out.data<float>();
    if (io.in(0).nelms() == 0 || out.nelms() == 0) return;
    if (p.out.empty()) {
      gx[0] = gy[0];
      return;
    }
    const int64_t n = p.out.back();
    const std::vector<int64_t>& m = p.maps.back();
    forEachPadRow(p, [&](int64_t src, int64_t r) {
      if (src < 0) return;
      const float* g = gy + r * n;
      float* d = gx + src;
      for (int64_t o = 0; o < p.lo; ++o) {
        if (m[static_cast<size_t>(o)] >= 0) d[m[static_cast<size_t>(o)]] += g[o];
      }
      float* __restrict di = d + p.srcLo;
      const float* __restrict gi = g + p.lo;
      for (int64_t o = 0; o < p.hi - p.lo; ++o) di[o] += gi[o];
      for (int64_t o = p.hi; o < n; ++o) {
        if (m[static_cast<size_t>(o)] >= 0) d[m[static_cast<size_t>(o)]] += g[o];
      }
    });
  });
});

// OneHot(indices, values): output [outer, depth, inner] (indices viewed as [outer, inner]) filled
// with values[0], and values[1] where the depth coordinate is the index.
template <typename S>
void indicesAsInt(const S* p, int64_t n, int64_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    const auto v = static_cast<double>(p[i]);
    // NaN and values beyond int64 map to an index that is out of range for any depth.
    out[i] = (v >= -9.0e18 && v <= 9.0e18) ? static_cast<int64_t>(v)
                                           : std::numeric_limits<int64_t>::min();
  }
}

void readAnyIndices(const HostTensor& t, std::vector<int64_t>& out) {
  const int64_t n = t.nelms();
  out.resize(static_cast<size_t>(n));
  switch (t.dataType()) {
    case DataType::INT64:
      if (n > 0) std::memcpy(out.data(), t.raw(), t.nbytes());
      break;
    case DataType::INT32: indicesAsInt(t.data<int32_t>(), n, out.data()); break;
    case DataType::INT16: indicesAsInt(t.data<int16_t>(), n, out.data()); break;
    case DataType::INT8: indicesAsInt(t.data<int8_t>(), n, out.data()); break;
    case DataType::UINT8: indicesAsInt(t.data<uint8_t>(), n, out.data()); break;
    case DataType::FLOAT: indicesAsInt(t.data<float>(), n, out.data()); break;
    case DataType::DOUBLE: indicesAsInt(t.data<double>(), n, out.data()); break;
    default:
      for (int64_t i = 0; i < n; ++i) {
        const double v = t.getAsDouble(i);
        out[static_cast<size_t>(i)] = (v >= -9.0e18 && v <= 9.0e18)
                                          ? static_cast<int64_t>(v)
                                          : std::numeric_limits<int64_t>::min();
      }
  }
}

XT_REGISTER_KERNEL("ai.onnx", "OneHot", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& indices = spec.inputs.at(0);
  const TensorInfo& out = spec.outputs.at(0);
  const int64_t depth = spec.attrs.getInt("depth");
  const bool negative = spec.attrs.getInt("negative_indices", 1) != 0;
  int64_t axis = spec.attrs.getInt("axis", -1);
  if (axis < 0) axis += out.rank();
  if (axis < 0 || axis >= out.rank()) spec.fail("axis is out of range for {}", out.toString());
  int64_t inner = 1;
  for (int64_t d = axis; d < indices.rank(); ++d) inner *= indices.shape()[static_cast<size_t>(d)];
  const int64_t outer = inner == 0 ? 0 : indices.nelms() / std::max<int64_t>(inner, 1);
  return bySize(spec, elementSize(spec, out), [&](auto t) -> std::unique_ptr<Kernel> {
    using T = decltype(t);
    return makeKernel([=, idx = std::vector<int64_t>()](const KernelIO& io) mutable {
      readAnyIndices(io.in(0), idx);
      const T* values = reinterpret_cast<const T*>(io.in(1).raw());
      const T off = values[0], on = values[1];
      T* y = reinterpret_cast<T*>(io.out(0).raw());
      if (io.out(0).nelms() == 0) return;
      std::fill(y, y + io.out(0).nelms(), off);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t k = idx[static_cast<size_t>(o * inner + i)];
          if (k < 0 && negative && k >= -depth) k += depth;
          if (k >= 0 && k < depth) y[(o * depth + k) * inner + i] = on;
        }
      }
    });
  });
});

// CumSum over [outer, n, inner]: rows of `inner` elements accumulate along n (vectorised across the
// row).
template <typename T>
std::unique_ptr<Kernel> cumSumKernel(int64_t outer, int64_t n, int64_t inner, bool exclusive,
                                     bool reverse) {
  return makeKernel([=](const KernelIO& io) {
    const T* x = reinterpret_cast<const T*>(io.in(0).raw());
    T* y = reinterpret_cast<T*>(io.out(0).raw());
    if (io.out(0).nelms() == 0) return;
    for (int64_t o = 0; o < outer; ++o) {
      const T* xs = x + o * n * inner;
      T* ys = y + o * n * inner;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t k = reverse ? n - 1 - s : s;
        T* __restrict row = ys + k * inner;
        if (s == 0) {
          if (exclusive) {
            std::fill(row, row + inner, T{0});
          } else {
            std::memcpy(row, xs + k * inner, static_cast<size_t>(inner) * sizeof(T));
          }
          continue;
        }
        const int64_t prev = reverse ? k + 1 : k - 1;
        const T* __restrict before = ys + prev * inner;
        const T* __restrict add = xs + (exclusive ? prev : k) * inner;
        for (int64_t i = 0; i < inner; ++i) row[i] = before[i] + add[i];
      }
    }
  });
}

XT_REGISTER_KERNEL("ai.onnx", "CumSum", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& in = spec.inputs.at(0);
  int64_t axis = spec.attrs.getInt("axis");
  if (axis < 0) axis += in.rank();
  if (axis < 0 || axis >= in.rank()) spec.fail("axis is out of range for {}", in.toString());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (d < axis) outer *= in.shape()[static_cast<size_t>(d)];
    if (d > axis) inner *= in.shape()[static_cast<size_t>(d)];
  }
  const int64_t n = in.shape()[static_cast<size_t>(axis)];
  const bool exclusive = spec.attrs.getInt("exclusive", 0) != 0;
  const bool reverse = spec.attrs.getInt("reverse", 0) != 0;
  switch (in.dataType()) {
    case DataType::FLOAT: return cumSumKernel<float>(outer, n, inner, exclusive, reverse);
    case DataType::INT32: return cumSumKernel<int32_t>(outer, n, inner, exclusive, reverse);
    case DataType::INT64: return cumSumKernel<int64_t>(outer, n, inner, exclusive, reverse);
    default: spec.fail("input {} must be FLOAT, INT32 or INT64", in.toString());
  }
});

// Trilu over [batch, rows, cols]: per row one kept range (memcpy) and one zeroed range (memset).
XT_REGISTER_KERNEL("ai.onnx", "Trilu", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const TensorInfo& in = spec.inputs.at(0);
  if (in.rank() < 2) spec.fail("input {} needs rank >= 2", in.toString());
  const size_t esize = elementSize(spec, in);
  const int64_t rows = in.shape()[static_cast<size_t>(in.rank() - 2)];
  const int64_t cols = in.shape()[static_cast<size_t>(in.rank() - 1)];
  const int64_t batch = rows * cols == 0 ? 0 : in.nelms() / (rows * cols);
  // Any k beyond the matrix gives the same result as one just outside it (and cannot overflow).
  const int64_t k = std::clamp<int64_t>(spec.attrs.getInt("k", 0), -rows - 1, cols + 1);
  const bool upper = spec.attrs.getInt("upper", 1) != 0;
  return makeKernel([=](const KernelIO& io) {
    const std::byte* x = io.in(0).raw();
    std::byte* y = io.out(0).raw();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < rows; ++i) {
        const size_t off = static_cast<size_t>((b * rows + i) * cols) * esize;
        // Upper keeps columns j >= i + k, lower keeps j <= i + k.
        const int64_t split = std::clamp<int64_t>(upper ? i + k : i + k + 1, 0, cols);
        const auto s = static_cast<size_t>(split) * esize;
        const size_t all = static_cast<size_t>(cols) * esize;
        if (upper) {
          std::memset(y + off, 0, s);
          std::memcpy(y + off + s, x + off + s, all - s);
        } else {
          std::memcpy(y + off, x + off, s);
          std::memset(y + off + s, 0, all - s);
        }
      }
    }
  });
});

}  // namespace
}  // namespace xtrain::device
