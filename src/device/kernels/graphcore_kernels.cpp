// Kernels for the ai.graphcore utility ops (graphcore_ops.cpp): Detach, Nop, Scale, ScaledAdd,
// DynamicSlice/Update/Zero/Add, Init, PrintTensor, Remainder, Fmod, Reverse, Round, Abort, and the
// ai.xtrain grad ops DynamicSliceGrad and ModGradDivisor.
//
// Arithmetic is FLOAT (FLOAT16 runs promoted; Remainder and Fmod also INT32 and INT64); ops that
// only move data (Detach, Nop, the dynamic slice family but DynamicAdd, Init, PrintTensor, Reverse)
// work on any fixed-size element type.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <type_traits>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/broadcast.hpp"
#include "xtrain/application_error.hpp"

namespace xtrain::device {
namespace {

void requireFixedSize(const KernelSpec& spec, const TensorInfo& info, const char* what) {
  if (dataTypeSize(info.dataType()) == 0) {
    spec.fail("{} is {}; expected a tensor of a fixed-size element type", what, info.toString());
  }
}

void copyBytes(const KernelIO& io) {
  const size_t bytes = io.out(0).nbytes();
  if (bytes != 0) std::memcpy(io.out(0).raw(), io.in(0).raw(), bytes);
}

KernelFactory passThrough() {
  return [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    requireFixedSize(spec, spec.inputs.at(0), "input 0");
    return makeKernel(copyBytes);
  };
}

XT_REGISTER_KERNEL("ai.graphcore", "Detach", passThrough());
XT_REGISTER_KERNEL("ai.graphcore", "Nop", passThrough());
// CopyVarUpdate's output is its updater (input 1); the variable's write is a separate op.
XT_REGISTER_KERNEL("ai.graphcore", "CopyVarUpdate",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFixedSize(spec, spec.inputs.at(1), "input 1");
                     return makeKernel([](const KernelIO& io) {
                       const size_t bytes = io.out(0).nbytes();
                       if (bytes != 0) std::memcpy(io.out(0).raw(), io.in(1).raw(), bytes);
                     });
                   });

template <typename T>
std::unique_ptr<Kernel> integerScale(T s) {
  return makeKernel([s](const KernelIO& io) {
    const T* __restrict x = io.in(0).data<T>();
    T* __restrict y = io.out(0).data<T>();
    const int64_t n = io.out(0).nelms();
    using U = std::make_unsigned_t<T>;  // wraps around as numpy's integers do
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(static_cast<U>(x[i]) * static_cast<U>(s));
  });
}

XT_REGISTER_KERNEL("ai.graphcore", "Scale", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const float s = spec.attrs.getFloat("scale");
  const DataType t = spec.inputs.at(0).dataType();
  if (t == DataType::INT32) return integerScale(static_cast<int32_t>(s));
  if (t == DataType::INT64) return integerScale(static_cast<int64_t>(s));
  spec.requireFloatInputs();
  return makeKernel([s](const KernelIO& io) {
    const float* __restrict x = io.in(0).data<float>();
    float* __restrict y = io.out(0).data<float>();
    const int64_t n = io.out(0).nelms();
    for (int64_t i = 0; i < n; ++i) y[i] = s * x[i];
  });
});

// Calls f(outOffset, offsets of each input, inner count, inner strides) once per innermost row of
// `out`, each input given by its broadcast strides (broadcastStrides).
template <size_t N, typename F>
void forEachRow(const Shape& out, const std::array<std::vector<int64_t>, N>& strides, F&& f) {
  int64_t n = 1;
  for (auto d : out) n *= d;
  if (n == 0) return;
  const size_t rank = out.size();
  std::array<int64_t, N> off{};
  std::array<int64_t, N> inner{};
  if (rank == 0) {
    f(int64_t{0}, off, int64_t{1}, inner);
    return;
  }
  const int64_t len = out[rank - 1];
  for (size_t k = 0; k < N; ++k) inner[k] = strides[k][rank - 1];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t base = 0; base < n; base += len) {
    f(base, off, len, inner);
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      ++idx[u];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][u];
      if (idx[u] < out[u]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][u] * out[u];
      idx[u] = 0;
    }
  }
}

// Inputs 0 and 1 broadcast to output 0, all of element type T: run(io, f) sets y[o] = f(a[ia],
// b[ib]) in one flat loop when the shapes are equal, else innermost row by row (forEachRow).
class Broadcast2 {
 public:
  explicit Broadcast2(const KernelSpec& spec) : out_(spec.outputs.at(0).shape()) {
    const Shape& sa = spec.inputs.at(0).shape();
    const Shape& sb = spec.inputs.at(1).shape();
    same_ = sa == out_ && sb == out_;
    strides_ = {broadcastStrides(sa, out_), broadcastStrides(sb, out_)};
  }

  template <typename T, typename F>
  void run(const KernelIO& io, F f) const {
    const T* __restrict a = io.in(0).data<T>();
    const T* __restrict b = io.in(1).data<T>();
    T* __restrict y = io.out(0).data<T>();
    if (same_) {
      const int64_t n = io.out(0).nelms();
      for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
      return;
    }
    forEachRow<2>(out_, strides_, [&](int64_t o, const auto& off, int64_t len, const auto& st) {
      const T* ar = a + off[0];
      const T* br = b + off[1];
      for (int64_t j = 0; j < len; ++j) y[o + j] = f(ar[j * st[0]], br[j * st[1]]);
    });
  }

 private:
  Shape out_;
  bool same_ = false;
  std::array<std::vector<int64_t>, 2> strides_;
};

// ---- ScaledAdd

XT_REGISTER_KERNEL("ai.graphcore", "ScaledAdd",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     spec.requireFloatInputs();
                     const float s0 = spec.attrs.getFloat("scale0", 1.0f);
                     const float s1 = spec.attrs.getFloat("scale1", 1.0f);
                     return makeKernel([g = Broadcast2(spec), s0, s1](const KernelIO& io) {
                       const float a0 = io.hasIn(2) ? io.in(2).data<float>()[0] : s0;
                       const float a1 = io.hasIn(3) ? io.in(3).data<float>()[0] : s1;
                       g.run<float>(io, [a0, a1](float x, float z) { return a0 * x + a1 * z; });
                     });
                   });

// ---- Dynamic slice family

// The geometry of a slice of `sizes` along `axes` in a tensor of `shape`, as contiguous rows.
struct DynamicGeometry {
  Shape tensor;                   // the full tensor's shape
  Shape slice;                    // the slice's shape
  std::vector<int64_t> axes;      // sliced axes
  std::vector<int64_t> offsetAt;  // per axis of the tensor: index into the offset input, or -1
  size_t rowDim = 0;              // dims > rowDim are whole in the slice; rows span rowDim..end
  int64_t rowElems = 0;           // elements of one row
  int64_t rowStride = 1;          // elements of the tensor per unit of rowDim

  DynamicGeometry(const KernelSpec& spec, const Shape& tensorShape) : tensor(tensorShape) {
    axes = spec.attrs.getInts("axes");
    const auto& sizes = spec.attrs.getInts("sizes");
    const size_t rank = tensor.size();
    slice = tensor;
    offsetAt.assign(rank, -1);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = axes[i];
      if (a < 0 || static_cast<size_t>(a) >= rank || i >= sizes.size()) {
        spec.fail("axis {} is not an axis of {}", a, shapeToString(tensor));
      }
      slice[static_cast<size_t>(a)] = sizes[i];
      offsetAt[static_cast<size_t>(a)] = static_cast<int64_t>(i);
    }
    size_t k = rank;
    while (k > 0 && slice[k - 1] == tensor[k - 1]) --k;
    rowDim = k == 0 ? 0 : k - 1;
    rowStride = 1;
    for (size_t d = rowDim + 1; d < rank; ++d) rowStride *= tensor[d];
    rowElems = rank == 0 ? 1 : slice[rowDim] * rowStride;
  }

  // Offsets per tensor axis (0 where not sliced), each clamped into [0, dim - size].
  std::vector<int64_t> offsets(const HostTensor& offset) const {
    std::vector<int64_t> o(tensor.size(), 0);
    for (size_t d = 0; d < tensor.size(); ++d) {
      if (offsetAt[d] < 0) continue;
      const int64_t i = offsetAt[d];
      int64_t v = 0;
      switch (offset.dataType()) {
        case DataType::INT32: v = offset.data<int32_t>()[i]; break;
        case DataType::UINT32: v = offset.data<uint32_t>()[i]; break;
        default: v = offset.data<int64_t>()[i]; break;
      }
      o[d] = std::clamp<int64_t>(v, 0, tensor[d] - slice[d]);
    }
    return o;
  }

  // f(tensorElementOffset, sliceElementOffset) for every row of the slice.
  template <typename F>
  void forEachRow(const std::vector<int64_t>& off, F&& f) const {
    for (auto s : slice) {
      if (s == 0) return;
    }
    const size_t rank = tensor.size();
    if (rank == 0) {
      f(int64_t{0}, int64_t{0});
      return;
    }
    // Tensor strides.
    std::vector<int64_t> ts(rank, 1);
    for (size_t d = rank - 1; d > 0; --d) ts[d - 1] = ts[d] * tensor[d];
    int64_t base = 0;
    for (size_t d = 0; d < rank; ++d) base += off[d] * ts[d];
    std::vector<int64_t> idx(rowDim, 0);
    int64_t t = base;
    int64_t s = 0;
    while (true) {
      f(t, s);
      s += rowElems;
      int64_t d = static_cast<int64_t>(rowDim) - 1;
      for (; d >= 0; --d) {
        const size_t u = static_cast<size_t>(d);
        ++idx[u];
        t += ts[u];
        if (idx[u] < slice[u]) break;
        t -= ts[u] * slice[u];
        idx[u] = 0;
      }
      if (d < 0) return;
    }
  }
};

void requireOffsetType(const KernelSpec& spec) {
  const DataType t = spec.inputs.at(1).dataType();
  if (t != DataType::INT32 && t != DataType::INT64 && t != DataType::UINT32) {
    spec.fail("offset is {}, expected UINT32, INT32 or INT64", spec.inputs.at(1).toString());
  }
}

// The kernels of the family that move bytes (any fixed-size element type) over the geometry of a
// tensor of `tensorShape`: body(io, eachRow) does the kernel's work, where eachRow(f) calls
// f(t, s, n) for every row of the slice with t and s the row's byte offsets in the tensor and in
// the slice, and n its bytes (the offsets input is read when eachRow is called).
template <typename Body>
std::unique_ptr<Kernel> dynamicBytesKernel(const KernelSpec& spec, const Shape& tensorShape,
                                           Body body) {
  requireFixedSize(spec, spec.inputs.at(0), "input 0");
  requireOffsetType(spec);
  const DynamicGeometry g(spec, tensorShape);
  const size_t es = dataTypeSize(spec.inputs.at(0).dataType());
  return makeKernel([g, es, body](const KernelIO& io) {
    const size_t row = static_cast<size_t>(g.rowElems) * es;
    body(io, [&](auto&& f) {
      g.forEachRow(g.offsets(io.in(1)), [&](int64_t t, int64_t s) {
        f(static_cast<size_t>(t) * es, static_cast<size_t>(s) * es, row);
      });
    });
  });
}

XT_REGISTER_KERNEL("ai.graphcore", "DynamicSlice",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     return dynamicBytesKernel(
                         spec, spec.inputs.at(0).shape(), [](const KernelIO& io, auto eachRow) {
                           const std::byte* x = io.in(0).raw();
                           std::byte* y = io.out(0).raw();
                           eachRow(
                               [&](size_t t, size_t s, size_t n) { std::memcpy(y + s, x + t, n); });
                         });
                   });

XT_REGISTER_KERNEL("ai.xtrain", "DynamicSliceGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     return dynamicBytesKernel(spec, spec.outputs.at(0).shape(),
                                               [](const KernelIO& io, auto eachRow) {
                                                 const std::byte* gy = io.in(0).raw();
                                                 std::byte* gx = io.out(0).raw();
                                                 if (io.out(0).nbytes() != 0)
                                                   std::memset(gx, 0, io.out(0).nbytes());
                                                 eachRow([&](size_t t, size_t s, size_t n) {
                                                   std::memcpy(gx + t, gy + s, n);
                                                 });
                                               });
                   });

XT_REGISTER_KERNEL("ai.graphcore", "DynamicUpdate",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     return dynamicBytesKernel(spec, spec.inputs.at(0).shape(),
                                               [](const KernelIO& io, auto eachRow) {
                                                 copyBytes(io);
                                                 const std::byte* slice = io.in(2).raw();
                                                 std::byte* y = io.out(0).raw();
                                                 eachRow([&](size_t t, size_t s, size_t n) {
                                                   std::memcpy(y + t, slice + s, n);
                                                 });
                                               });
                   });

XT_REGISTER_KERNEL("ai.graphcore", "DynamicZero",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     return dynamicBytesKernel(
                         spec, spec.inputs.at(0).shape(), [](const KernelIO& io, auto eachRow) {
                           copyBytes(io);
                           std::byte* y = io.out(0).raw();
                           eachRow([&](size_t t, size_t, size_t n) { std::memset(y + t, 0, n); });
                         });
                   });

XT_REGISTER_KERNEL("ai.graphcore", "DynamicAdd",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     if (spec.inputs.at(0).dataType() != DataType::FLOAT ||
                         spec.inputs.at(2).dataType() != DataType::FLOAT) {
                       spec.fail("tensor and slice are {} and {}; only FLOAT is supported",
                                 spec.inputs.at(0).toString(), spec.inputs.at(2).toString());
                     }
                     requireOffsetType(spec);
                     const DynamicGeometry g(spec, spec.inputs.at(0).shape());
                     return makeKernel([g](const KernelIO& io) {
                       copyBytes(io);
                       const float* s = io.in(2).data<float>();
                       float* y = io.out(0).data<float>();
                       const int64_t row = g.rowElems;
                       g.forEachRow(g.offsets(io.in(1)), [&](int64_t t, int64_t k) {
                         float* __restrict dst = y + t;
                         const float* __restrict src = s + k;
                         for (int64_t j = 0; j < row; ++j) dst[j] += src[j];
                       });
                     });
                   });

// ---- Init

XT_REGISTER_KERNEL("ai.graphcore", "Init", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  requireFixedSize(spec, spec.outputs.at(0), "output 0");
  return makeKernel([](const KernelIO& io) { io.out(0).fillZero(); });
});

// ---- PrintTensor

struct PrintFormat {
  std::string title;
  int64_t summariseThreshold = 1000;
  int64_t edgeItems = 3;
  int64_t maxLineWidth = 75;
  int64_t digits = 8;
  int64_t floatFormat = 0;  // 0 auto, 1 fixed, 2 scientific, 3 none
  std::string separator = " ";
  std::string open = "[";
  std::string close = "]";
};

// Writes a tensor as nested brackets along its shape; with summarising, only edgeItems at each end
// of each dimension. Every value is right-aligned to the widest, so columns line up. Floats:
// fixed-point with `digits` digits in all, the integer digits of the largest magnitude included
// (digits 8: 1.0000000, 12.000000, 0.4000000); scientific with digits - 1 decimals; auto is fixed
// unless the largest magnitude needs more than `digits` integer digits or the smallest nonzero one
// is below 1e-4. A line longer than maxLineWidth (0: no limit) breaks before a value or an opening
// bracket, indented to the bracket depth.
class TensorPrinter {
 public:
  TensorPrinter(const HostTensor& t, const PrintFormat& f) : t_(t), f_(f) {}

  std::string print() {
    out_ = f_.title + ": ";
    lineStart_ = 0;
    summarise_ = f_.summariseThreshold > 0 && t_.nelms() > f_.summariseThreshold;
    chooseFloatFormat();
    // Columns as wide as the widest printed value: a summarised tensor formats only its edges.
    width_ = 0;
    measuring_ = true;
    dims(0, 0);
    measuring_ = false;
    out_ = f_.title + ": ";
    lineStart_ = 0;
    dims(0, 0);
    return out_;
  }

 private:
  enum class FloatStyle { Fixed, Scientific, Shortest };

  void chooseFloatFormat() {
    if (!isFloatingPoint(t_.dataType())) return;
    double largest = 0.0, smallestNonzero = 0.0;
    for (int64_t i = 0; i < t_.nelms(); ++i) {
      const double a = std::fabs(t_.getAsDouble(i));
      if (!std::isfinite(a)) continue;
      largest = std::max(largest, a);
      if (a > 0.0 && (smallestNonzero == 0.0 || a < smallestNonzero)) smallestNonzero = a;
    }
    const int64_t integerDigits =
        largest < 1.0 ? 1 : static_cast<int64_t>(std::floor(std::log10(largest))) + 1;
    switch (f_.floatFormat) {
      case 1: style_ = FloatStyle::Fixed; break;
      case 2: style_ = FloatStyle::Scientific; break;
      case 3: style_ = FloatStyle::Shortest; break;
      default:
        style_ = integerDigits > f_.digits || (smallestNonzero > 0.0 && smallestNonzero < 1e-4)
                     ? FloatStyle::Scientific
                     : FloatStyle::Fixed;
    }
    decimals_ = style_ == FloatStyle::Fixed ? std::max<int64_t>(0, f_.digits - integerDigits)
                                            : std::max<int64_t>(0, f_.digits - 1);
  }

  void token(const std::string& s, size_t depth, bool mayBreak) {
    const size_t line = out_.size() - lineStart_;
    if (mayBreak && f_.maxLineWidth > 0 && line > depth &&
        line + s.size() > static_cast<size_t>(f_.maxLineWidth)) {
      // Trailing separator spaces stay on the line they end.
      while (!out_.empty() && out_.back() == ' ') out_.pop_back();
      out_ += '\n';
      lineStart_ = out_.size();
      out_.append(depth, ' ');
    }
    out_ += s;
  }

  std::string value(int64_t i) const {
    const double v = t_.getAsDouble(i);
    std::ostringstream s;
    if (!isFloatingPoint(t_.dataType())) {
      s << static_cast<int64_t>(v);
      return s.str();
    }
    if (style_ != FloatStyle::Shortest) {
      s.precision(static_cast<int>(decimals_));
      s << (style_ == FloatStyle::Fixed ? std::fixed : std::scientific);
    }
    s << v;
    return s.str();
  }

  std::string padded(int64_t i) const {
    std::string v = value(i);
    if (v.size() < width_) v.insert(0, width_ - v.size(), ' ');
    return v;
  }

  // Walks the printed elements in order; while measuring_ it only records the widest value.
  void dims(size_t dim, int64_t base) {
    const Shape& shape = t_.shape();
    if (dim == shape.size()) {
      if (measuring_) {
        width_ = std::max(width_, value(base).size());
      } else {
        token(padded(base), dim, true);
      }
      return;
    }
    int64_t stride = 1;
    for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
    const int64_t n = shape[dim];
    token(f_.open, dim, true);
    for (int64_t i = 0; i < n; ++i) {
      if (summarise_ && n > 2 * f_.edgeItems && i == f_.edgeItems) {
        token("...", dim + 1, true);
        token(f_.separator, dim + 1, false);
        i = n - f_.edgeItems - 1;
        continue;
      }
      dims(dim + 1, base + i * stride);
      if (i + 1 < n) token(f_.separator, dim + 1, false);
    }
    token(f_.close, dim, false);
  }

  const HostTensor& t_;
  const PrintFormat& f_;
  std::string out_;
  size_t lineStart_ = 0;
  size_t width_ = 0;
  bool measuring_ = false;
  bool summarise_ = false;
  FloatStyle style_ = FloatStyle::Shortest;
  int64_t decimals_ = 0;
};

// What a PrintTensor prints goes to the process's standard error, whatever the log level: the
// user put the op in the model to see it (as PopART's PrintTensor prints through Poplar's engine).
// One write per tensor, under a lock, so replicas' prints do not interleave.
void writeToStandardError(const std::string& text) {
  static std::mutex mu;
  const std::lock_guard lock(mu);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

XT_REGISTER_KERNEL("ai.graphcore", "PrintTensor",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     requireFixedSize(spec, spec.inputs.at(0), "input 0");
                     PrintFormat f;
                     f.title = spec.attrs.getString("title", "");
                     f.summariseThreshold = spec.attrs.getInt("summariseThreshold", 1000);
                     f.edgeItems = spec.attrs.getInt("edgeItems", 3);
                     f.maxLineWidth = spec.attrs.getInt("maxLineWidth", 75);
                     f.digits = spec.attrs.getInt("digits", 8);
                     f.floatFormat = spec.attrs.getInt("floatFormat", 0);
                     f.separator = spec.attrs.getString("separator", " ");
                     f.open = spec.attrs.getString("openBracket", "[");
                     f.close = spec.attrs.getString("closeBracket", "]");
                     return makeKernel([f](const KernelIO& io) {
                       copyBytes(io);
                       writeToStandardError(TensorPrinter(io.in(0), f).print());
                     });
                   });

// ---- Remainder, Fmod, ModGradDivisor

// C's fmod, exactly, with a fast path: when |a/b| < 2^22 the double quotient truncates to the
// true integer quotient t, t*b is exact in double and so is a - t*b (the result is a float), so
// only larger quotients, infinities and NaNs take std::fmod (several times slower). The result
// has a's sign, zero included.
inline float fmodOf(float a, float b) {
  const double q = static_cast<double>(a) / static_cast<double>(b);
  // An infinite b gives q = 0 but 0 * b = NaN: it takes std::fmod too.
  if (!(std::fabs(q) < 4194304.0) || std::isinf(b)) return std::fmod(a, b);
  const double t = std::trunc(q);
  return std::copysign(static_cast<float>(static_cast<double>(a) - t * static_cast<double>(b)), a);
}

// Python's %: fmod moved into b's sign. Branch-free (random signs mispredict a branch).
inline float remainderOf(float a, float b) {
  const float r = fmodOf(a, b);
  const bool fix = (r != 0.0f) & ((r < 0.0f) != (b < 0.0f));
  return r + (fix ? b : 0.0f);
}

template <typename F>
KernelFactory binaryFloat(F f) {
  return [f](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    spec.requireFloatInputs();
    return makeKernel([g = Broadcast2(spec), f](const KernelIO& io) { g.run<float>(io, f); });
  };
}

// Integer remainders: b == 0 gives 0 (as numpy does), and b == -1 gives 0 without dividing (the
// most negative value % -1 traps on x86).
template <typename T, bool kFmod>
T intMod(T a, T b) {
  if (b == 0 || b == -1) return 0;
  T r = static_cast<T>(a % b);
  if (!kFmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
  return r;
}

// FLOAT through binaryFloat (FLOAT16 promoted), INT32 and INT64 through intMod.
template <bool kFmod, typename F>
KernelFactory modKernel(F f) {
  return [f](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    const DataType t = spec.inputs.at(0).dataType();
    if (t != DataType::INT32 && t != DataType::INT64) return binaryFloat(f)(spec);
    if (spec.inputs.at(1).dataType() != t) {
      spec.fail("A is {} and B is {}; expected one element type", spec.inputs.at(0).toString(),
                spec.inputs.at(1).toString());
    }
    auto make = [&]<typename T>(T) {
      return makeKernel([g = Broadcast2(spec)](const KernelIO& io) {
        g.run<T>(io, [](T a, T b) { return intMod<T, kFmod>(a, b); });
      });
    };
    if (t == DataType::INT32) return make(int32_t{});
    return make(int64_t{});
  };
}

XT_REGISTER_KERNEL("ai.graphcore", "Remainder",
                   modKernel<false>([](float a, float b) { return remainderOf(a, b); }));
XT_REGISTER_KERNEL("ai.graphcore", "Fmod",
                   modKernel<true>([](float a, float b) { return fmodOf(a, b); }));

XT_REGISTER_KERNEL(
    "ai.xtrain", "ModGradDivisor", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
      spec.requireFloatInputs();
      const bool fmod = spec.attrs.getInt("fmod", 0) != 0;
      const Shape out = spec.outputs.at(0).shape();
      const std::array<std::vector<int64_t>, 2> strides = {
          broadcastStrides(spec.inputs.at(1).shape(), out),
          broadcastStrides(spec.inputs.at(2).shape(), out)};
      return makeKernel([=](const KernelIO& io) {
        const float* __restrict gy = io.in(0).data<float>();
        const float* __restrict a = io.in(1).data<float>();
        const float* __restrict b = io.in(2).data<float>();
        float* __restrict gb = io.out(0).data<float>();
        forEachRow<2>(out, strides, [&](int64_t o, const auto& off, int64_t len, const auto& st) {
          for (int64_t j = 0; j < len; ++j) {
            const float q = a[off[0] + j * st[0]] / b[off[1] + j * st[1]];
            gb[o + j] = -gy[o + j] * (fmod ? std::trunc(q) : std::floor(q));
          }
        });
      });
    });

// ---- Reverse

template <typename T>
void reverseRows(const T* __restrict x, T* __restrict y, const Shape& shape,
                 const std::vector<bool>& rev) {
  const size_t rank = shape.size();
  int64_t n = 1;
  for (auto d : shape) n *= d;
  if (n == 0) return;
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  const int64_t len = shape[rank - 1];
  const bool innerRev = rev[rank - 1];
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) strides[d - 1] = strides[d] * shape[d];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t base = 0; base < n; base += len) {
    // Source row: reversed coordinates along the reversed outer dims.
    int64_t src = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      src += (rev[d] ? shape[d] - 1 - idx[d] : idx[d]) * strides[d];
    }
    const T* s = x + src;
    T* o = y + base;
    if (innerRev) {
      for (int64_t j = 0; j < len; ++j) o[j] = s[len - 1 - j];
    } else {
      std::memcpy(o, s, static_cast<size_t>(len) * sizeof(T));
    }
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      if (++idx[u] < shape[u]) break;
      idx[u] = 0;
    }
  }
}

XT_REGISTER_KERNEL("ai.graphcore", "Reverse",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const TensorInfo& in = spec.inputs.at(0);
                     requireFixedSize(spec, in, "input 0");
                     const Shape shape = in.shape();
                     std::vector<bool> rev(shape.size(), false);
                     for (int64_t d : spec.attrs.getInts("dimensions", {})) {
                       if (d < 0 || static_cast<size_t>(d) >= shape.size()) {
                         spec.fail("dimension {} is not an axis of {}", d, shapeToString(shape));
                       }
                       rev[static_cast<size_t>(d)] = true;
                     }
                     // Raw storage of the element's size: the element type does not matter to a
                     // copy.
                     auto make = [&]<typename T>(T) {
                       return makeKernel([shape, rev](const KernelIO& io) {
                         reverseRows(reinterpret_cast<const T*>(io.in(0).raw()),
                                     reinterpret_cast<T*>(io.out(0).raw()), shape, rev);
                       });
                     };
                     switch (dataTypeSize(in.dataType())) {
                       case 1: return make(uint8_t{});
                       case 2: return make(uint16_t{});
                       case 4: return make(uint32_t{});
                       case 8: return make(uint64_t{});
                       default:
                         spec.fail("element type {} is not supported", dataTypeName(in.dataType()));
                     }
                   });

// ---- Round, Abort

// std::nearbyint in the default rounding mode: halves to even, as ONNX Round.
XT_REGISTER_KERNEL("ai.graphcore", "Round", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  return makeKernel([](const KernelIO& io) {
    const float* __restrict x = io.in(0).data<float>();
    float* __restrict y = io.out(0).data<float>();
    const int64_t n = io.out(0).nelms();
    for (int64_t i = 0; i < n; ++i) y[i] = std::nearbyint(x[i]);
  });
});

XT_REGISTER_KERNEL("ai.graphcore", "Abort", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  if (spec.hasInput(0)) requireFixedSize(spec, spec.inputs.at(0), "input 0 (condition)");
  const std::string what = spec.description;
  return makeKernel([what](const KernelIO& io) {
    if (io.hasIn(0) && io.in(0).getAsDouble(0) == 0.0) return;
    throw application_runtime_error("{}: aborted: the model's Abort op ran{}", what,
                                    io.hasIn(0) ? " with a true condition" : "");
  });
});

}  // namespace
}  // namespace xtrain::device
