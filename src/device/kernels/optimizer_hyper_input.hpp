// The optimizer kernels' factory check of their hyper tensor (input 2): a FLOAT tensor of exactly
// the family's element count (common/optimizer_hyper.hpp), so that the kernels' named reads stay
// inside it.
#pragma once
#pragma GCC visibility push(default)

#include "common/optimizer_hyper.hpp"
#include "device/kernel.hpp"

namespace xtrain::device {

template <class Slot>
void requireHyperInput(const KernelSpec& spec) {
  if (!spec.hasInput(2) || spec.inputs[2] != hyperTensorInfo<Slot>()) {
    spec.fail("hyperparameter tensor (input 2) is {}, expected FLOAT[{}] = {}",
              spec.hasInput(2) ? spec.inputs[2].toString() : std::string("absent"),
              kHyperSize<Slot>, hyperLayoutText<Slot>());
  }
}

}  // namespace xtrain::device

#pragma GCC visibility pop
