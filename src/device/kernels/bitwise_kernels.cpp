// Kernels of src/ir/ops/bitwise_ops.cpp: the bits of every integer type are handled through the
// unsigned type of its size (signed and unsigned tensors of one size give the same bits), with
// numpy broadcasting through elementwise.hpp.
#include <cstdint>

#include "device/kernel.hpp"
#include "device/kernels/elementwise.hpp"

namespace xtrain::device {
namespace {

// Calls make<U>() with the unsigned type U of the integer type t's size.
template <template <typename> class Make>
std::unique_ptr<Kernel> bySize(const KernelSpec& spec, DataType t) {
  if (!isInteger(t)) spec.fail("element type {} is not an integer type", dataTypeName(t));
  switch (dataTypeSize(t)) {
    case 1: return Make<uint8_t>::make();
    case 2: return Make<uint16_t>::make();
    case 4: return Make<uint32_t>::make();
    case 8: return Make<uint64_t>::make();
    default: spec.fail("element type {} is not supported", dataTypeName(t));
  }
}

template <typename U>
struct NotKernel {
  static std::unique_ptr<Kernel> make() {
    return makeKernel([](const KernelIO& io) {
      const U* __restrict x = elems<U>(io.in(0));
      U* __restrict y = elems<U>(io.out(0));
      const int64_t n = io.out(0).nelms();
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<U>(~x[i]);
    });
  }
};

XT_REGISTER_KERNEL("ai.graphcore", "BitwiseNot",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     return bySize<NotKernel>(spec, spec.inputs.at(0).dataType());
                   });

template <typename Op>
struct Binary {
  template <typename U>
  struct Kernel {
    static std::unique_ptr<device::Kernel> make() {
      return makeKernel([](const KernelIO& io) {
        broadcastBinary<U, U, U>(io.in(0), io.in(1), io.out(0),
                                 [](U a, U b) { return static_cast<U>(Op{}(a, b)); });
      });
    }
  };
};

struct And {
  template <typename U>
  U operator()(U a, U b) const {
    return a & b;
  }
};
struct Or {
  template <typename U>
  U operator()(U a, U b) const {
    return a | b;
  }
};
struct Xor {
  template <typename U>
  U operator()(U a, U b) const {
    return a ^ b;
  }
};
struct Xnor {
  template <typename U>
  U operator()(U a, U b) const {
    return static_cast<U>(~(a ^ b));
  }
};

template <typename Op>
std::unique_ptr<Kernel> binaryFactory(const KernelSpec& spec) {
  const DataType t = spec.inputs.at(0).dataType();
  if (spec.inputs.at(1).dataType() != t) {
    spec.fail("inputs are {} and {}, expected one type", spec.inputs[0].toString(),
              spec.inputs[1].toString());
  }
  return bySize<Binary<Op>::template Kernel>(spec, t);
}

XT_REGISTER_KERNEL("ai.graphcore", "BitwiseAnd", binaryFactory<And>);
XT_REGISTER_KERNEL("ai.graphcore", "BitwiseOr", binaryFactory<Or>);
XT_REGISTER_KERNEL("ai.graphcore", "BitwiseXor", binaryFactory<Xor>);
XT_REGISTER_KERNEL("ai.graphcore", "BitwiseXnor", binaryFactory<Xnor>);

}  // namespace
}  // namespace xtrain::device
