// Kernels for Add, Sub, Mul, Div (numpy broadcasting), Sum, ReduceSumToShape and BroadcastToShape.
// FLOAT, INT32 and INT64; a fast path for equal shapes and for a scalar operand.
#include <cstring>

#include "device/kernel.hpp"
#include "device/kernels/broadcast.hpp"

namespace xtrain::device {
namespace {

template <typename T, typename Op>
void binaryTyped(const HostTensor& a, const HostTensor& b, HostTensor& y, Op op) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* py = y.data<T>();
  const int64_t n = y.nelms();
  if (a.shape() == y.shape() && b.shape() == y.shape()) {
    for (int64_t i = 0; i < n; ++i) py[i] = op(pa[i], pb[i]);
  } else if (a.shape() == y.shape() && b.nelms() == 1) {
    const T s = pb[0];
    for (int64_t i = 0; i < n; ++i) py[i] = op(pa[i], s);
  } else if (b.shape() == y.shape() && a.nelms() == 1) {
    const T s = pa[0];
    for (int64_t i = 0; i < n; ++i) py[i] = op(s, pb[i]);
  } else {
    forEachBroadcast2(y.shape(), broadcastStrides(a.shape(), y.shape()),
                      broadcastStrides(b.shape(), y.shape()),
                      [&](int64_t o, int64_t ia, int64_t ib) { py[o] = op(pa[ia], pb[ib]); });
  }
}

template <typename Op>
KernelFactory binaryFactory(Op op) {
  return [op](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    const DataType t = spec.outputs.at(0).dataType();
    switch (t) {
      case DataType::FLOAT:
        return makeKernel([op](const KernelIO& io) {
          binaryTyped<float>(io.in(0), io.in(1), io.out(0), op);
        });
      case DataType::INT32:
        return makeKernel([op](const KernelIO& io) {
          binaryTyped<int32_t>(io.in(0), io.in(1), io.out(0), op);
        });
      case DataType::INT64:
        return makeKernel([op](const KernelIO& io) {
          binaryTyped<int64_t>(io.in(0), io.in(1), io.out(0), op);
        });
      default: spec.fail("element type {} is not supported (FLOAT, INT32, INT64)", dataTypeName(t));
    }
  };
}

XT_REGISTER_KERNEL("ai.onnx", "Add", binaryFactory([](auto a, auto b) { return a + b; }));
XT_REGISTER_KERNEL("ai.onnx", "Sub", binaryFactory([](auto a, auto b) { return a - b; }));
XT_REGISTER_KERNEL("ai.onnx", "Mul", binaryFactory([](auto a, auto b) { return a * b; }));
XT_REGISTER_KERNEL("ai.onnx", "Div", binaryFactory([](auto a, auto b) { return a / b; }));

// Sums every input (broadcasting) into the output, FLOAT only.
XT_REGISTER_KERNEL("ai.onnx", "Sum", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  if (spec.outputs.at(0).dataType() != DataType::FLOAT) spec.fail("only FLOAT is supported");
  return makeKernel([](const KernelIO& io) {
    HostTensor& y = io.out(0);
    float* py = y.data<float>();
    const int64_t n = y.nelms();
    std::memset(py, 0, static_cast<size_t>(n) * sizeof(float));
    for (size_t k = 0; k < io.inputs.size(); ++k) {
      const HostTensor& x = io.in(k);
      const float* px = x.data<float>();
      if (x.shape() == y.shape()) {
        for (int64_t i = 0; i < n; ++i) py[i] += px[i];
      } else {
        forEachBroadcast2(y.shape(), broadcastStrides(x.shape(), y.shape()),
                          std::vector<int64_t>(y.shape().size(), 0),
                          [&](int64_t o, int64_t ix, int64_t) { py[o] += px[ix]; });
      }
    }
  });
});

// Sums x over broadcast dimensions down to the output's shape: each input element adds into the output
// element it was broadcast from.
XT_REGISTER_KERNEL("ai.xtrain", "ReduceSumToShape", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  if (spec.outputs.at(0).dataType() != DataType::FLOAT) spec.fail("only FLOAT is supported");
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

XT_REGISTER_KERNEL("ai.xtrain", "BroadcastToShape", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  const DataType t = spec.outputs.at(0).dataType();
  const size_t esize = dataTypeSize(t);
  return makeKernel([esize](const KernelIO& io) {
    const HostTensor& x = io.in(0);
    HostTensor& y = io.out(0);
    const std::byte* px = x.raw();
    std::byte* py = y.raw();
    forEachBroadcast2(y.shape(), broadcastStrides(x.shape(), y.shape()),
                      std::vector<int64_t>(y.shape().size(), 0), [&](int64_t o, int64_t i, int64_t) {
                        std::memcpy(py + o * static_cast<int64_t>(esize),
                                    px + i * static_cast<int64_t>(esize), esize);
                      });
  });
});

}  // namespace
}  // namespace xtrain::device
