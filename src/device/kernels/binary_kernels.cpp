// Kernels for Add, Sub, Mul, Div (numpy broadcasting), Sum, ReduceSumToShape and BroadcastToShape.
// FLOAT, INT32 and INT64 (integer division by zero is an error); fast paths for equal shapes, a
// scalar operand and a repeated row (a bias), split over the kernel threads (elementwise.hpp).
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/broadcast.hpp"
#include "device/kernels/elementwise.hpp"

namespace xtrain::device {
namespace {

// Integer arithmetic wraps around (two's complement, as numpy) instead of overflowing.
template <typename T, typename F>
T wrapping(T a, T b, F f) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(f(static_cast<U>(a), static_cast<U>(b)));
}

struct AddOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return wrapping(a, b, [](auto x, auto y) { return x + y; });
    } else {
      return a + b;
    }
  }
};
struct SubOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return wrapping(a, b, [](auto x, auto y) { return x - y; });
    } else {
      return a - b;
    }
  }
};
struct MulOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return wrapping(a, b, [](auto x, auto y) { return x * y; });
    } else {
      return a * b;
    }
  }
};
// Integer division truncates toward zero (C++, and ONNX Div as onnxruntime computes it); the
// kernel checks for a zero divisor first. INT_MIN / -1 wraps to INT_MIN instead of trapping.
struct DivOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == -1) return wrapping(T{0}, a, [](auto x, auto y) { return x - y; });
      return a / b;
    } else {
      return a / b;
    }
  }
};

template <typename T, typename Op>
std::unique_ptr<Kernel> binaryKernel(const KernelSpec& spec, Op op) {
  const bool checkZero = std::is_integral_v<T> && std::is_same_v<Op, DivOp>;
  return makeKernel([op, checkZero, d = spec.description](const KernelIO& io) {
    if (checkZero) requireNoZeroDivisor<T>(d, io.in(1));
    broadcastBinary<T, T, T>(io.in(0), io.in(1), io.out(0), op);
  });
}

template <typename Op>
KernelFactory binaryFactory(Op op) {
  return [op](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    const DataType t = spec.outputs.at(0).dataType();
    for (size_t i = 0; i < 2; ++i) {
      if (spec.inputs.at(i).dataType() != t) {
        spec.fail("input {} is {}, expected {}", i, spec.inputs[i].toString(), dataTypeName(t));
      }
    }
    switch (t) {
      case DataType::FLOAT: return binaryKernel<float>(spec, op);
      case DataType::INT32: return binaryKernel<int32_t>(spec, op);
      case DataType::INT64: return binaryKernel<int64_t>(spec, op);
      default:
        // The IR takes 8-bit operands, as PopART's does (an 8-bit host stream); the device has no
        // 8-bit arithmetic, as Poplar has none: cast first.
        spec.failType(
            "element type {} is not supported by the device's kernel (FLOAT, FLOAT16, INT32, "
            "INT64); cast the operands first",
            dataTypeName(t));
    }
  };
}

XT_REGISTER_KERNEL("ai.onnx", "Add", binaryFactory(AddOp{}));
XT_REGISTER_KERNEL("ai.onnx", "Sub", binaryFactory(SubOp{}));
XT_REGISTER_KERNEL("ai.onnx", "Mul", binaryFactory(MulOp{}));
XT_REGISTER_KERNEL("ai.onnx", "Div", binaryFactory(DivOp{}));

// Sums every input (broadcasting) into the output, in input order: y = ((0 + x0) + x1) + ...
// The leading inputs of the output's shape (all of them for a gradient sum) are added chunk by
// chunk, split over the kernel threads, so each output element is written once per chunk while
// it is in cache; the others follow one by one, broadcasting.
template <typename T>
void sumTyped(const KernelIO& io) {
  HostTensor& y = io.out(0);
  T* py = y.data<T>();
  const int64_t n = y.nelms();
  std::vector<const T*> full;
  while (full.size() < io.inputs.size() && io.in(full.size()).shape() == y.shape()) {
    full.push_back(io.in(full.size()).template data<T>());
  }
  if (full.empty()) {
    if (y.nbytes() != 0) std::memset(py, 0, y.nbytes());
  } else {
    forChunks(n, [&full, py](int64_t b, int64_t e) {
      const T* x0 = full[0];
      for (int64_t i = b; i < e; ++i) py[i] = AddOp{}(T{0}, x0[i]);
      for (size_t k = 1; k < full.size(); ++k) {
        const T* __restrict xk = full[k];
        for (int64_t i = b; i < e; ++i) py[i] = AddOp{}(py[i], xk[i]);
      }
    });
  }
  for (size_t k = full.size(); k < io.inputs.size(); ++k) {
    const HostTensor& x = io.in(k);
    const T* px = x.data<T>();
    if (x.shape() == y.shape()) {
      forChunks(n, [px, py](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = AddOp{}(py[i], px[i]);
      });
    } else {
      forEachBroadcast2(y.shape(), broadcastStrides(x.shape(), y.shape()),
                        std::vector<int64_t>(y.shape().size(), 0),
                        [&](int64_t o, int64_t ix, int64_t) { py[o] = AddOp{}(py[o], px[ix]); });
    }
  }
}

// Sums every input (broadcasting) into the output: FLOAT, INT32, INT64 (wrapping).
XT_REGISTER_KERNEL("ai.onnx", "Sum", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const DataType t = spec.outputs.at(0).dataType();
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (spec.inputs[i].dataType() != t) {
      spec.fail("input {} is {}, expected {}", i, spec.inputs[i].toString(), dataTypeName(t));
    }
  }
  switch (t) {
    case DataType::FLOAT: return makeKernel(sumTyped<float>);
    case DataType::INT32: return makeKernel(sumTyped<int32_t>);
    case DataType::INT64: return makeKernel(sumTyped<int64_t>);
    default: spec.fail("element type {} is not supported (FLOAT, INT32, INT64)", dataTypeName(t));
  }
});

// Mean: Sum's loop, then the sum divided by n, as ONNX's reference computes it (FLOAT; FLOAT16
// runs promoted).
XT_REGISTER_KERNEL("ai.onnx", "Mean", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  return makeKernel([](const KernelIO& io) {
    sumTyped<float>(io);
    HostTensor& y = io.out(0);
    float* py = y.data<float>();
    const float n = static_cast<float>(io.inputs.size());
    forChunks(y.nelms(), [py, n](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) py[i] /= n;
    });
  });
});

// Sums x over broadcast dimensions down to the output's shape: each input element adds into the
// output element it was broadcast from.
XT_REGISTER_KERNEL("ai.xtrain", "ReduceSumToShape",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     if (spec.outputs.at(0).dataType() != DataType::FLOAT)
                       spec.fail("only FLOAT is supported");
                     return makeKernel([](const KernelIO& io) {
                       const HostTensor& x = io.in(0);
                       HostTensor& y = io.out(0);
                       float* py = y.data<float>();
                       const float* px = x.data<float>();
                       y.fillZero();
                       if (y.nelms() == 1) {
                         double s = 0;
                         for (int64_t i = 0; i < x.nelms(); ++i) s += px[i];
                         py[0] = static_cast<float>(s);
                         return;
                       }
                       forEachBroadcast2(x.shape(), broadcastStrides(y.shape(), x.shape()),
                                         std::vector<int64_t>(x.shape().size(), 0),
                                         [&](int64_t i, int64_t o, int64_t) { py[o] += px[i]; });
                     });
                   });

XT_REGISTER_KERNEL("ai.xtrain", "BroadcastToShape",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     const DataType t = spec.outputs.at(0).dataType();
                     const size_t esize = dataTypeSize(t);
                     return makeKernel([esize](const KernelIO& io) {
                       const HostTensor& x = io.in(0);
                       HostTensor& y = io.out(0);
                       const std::byte* px = x.raw();
                       std::byte* py = y.raw();
                       // x repeated along y's leading dimensions: one copy per row.
                       if (const int64_t row = repeatedRowLength(x.shape(), y.shape()); row > 0) {
                         const size_t rowBytes = static_cast<size_t>(row) * esize;
                         const int64_t rows = y.nelms() / row;
                         for (int64_t r = 0; r < rows; ++r) {
                           std::memcpy(py + static_cast<size_t>(r) * rowBytes, px, rowBytes);
                         }
                         return;
                       }
                       forEachBroadcast2(y.shape(), broadcastStrides(x.shape(), y.shape()),
                                         std::vector<int64_t>(y.shape().size(), 0),
                                         [&](int64_t o, int64_t i, int64_t) {
                                           std::memcpy(py + o * static_cast<int64_t>(esize),
                                                       px + i * static_cast<int64_t>(esize), esize);
                                         });
                     });
                   });

}  // namespace
}  // namespace xtrain::device
