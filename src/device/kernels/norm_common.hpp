// What the LayerNorm and BatchNorm kernels (layer_norm_kernels.cpp, batch_norm_kernels.cpp) share:
// the FLOAT check of their factories and 1 / sqrt(var + eps) rounded once. Internal to
// src/device/kernels.
#pragma once
#pragma GCC visibility push(default)

#include <cmath>
#include <memory>
#include <vector>

#include "device/kernel.hpp"

namespace xtrain::device::norm {

inline void requireFloat(const KernelSpec& spec, const std::vector<size_t>& inputs) {
  for (size_t i : inputs) {
    if (spec.hasInput(i) && spec.inputs[i].dataType() != DataType::FLOAT) {
      spec.fail("input {} is {}; only FLOAT is supported", i, spec.inputs[i].toString());
    }
  }
}

inline float invStd(double var, float eps) {
  return static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
}

// The factory of kernel K(spec), after checking that the inputs `floats` (where present) are
// FLOAT.
template <typename K>
KernelFactory floatKernel(std::vector<size_t> floats) {
  return [floats](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
    requireFloat(spec, floats);
    return std::make_unique<K>(spec);
  };
}

}  // namespace xtrain::device::norm

#pragma GCC visibility pop
