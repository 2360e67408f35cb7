// PopART's reserved tensor-name prefixes as module functions (popart.reservedGradientPrefix(), ...;
// xtrain/tensornames.hpp says which name xtrain's tensors).
#include "xtrain/tensornames.hpp"

#include <pybind11/pybind11.h>

#include "bindings.hpp"

namespace py = pybind11;

namespace xtrain::python {

void bindTensorNames(py::module_& m) {
  constexpr std::pair<const char*, const char* (*)()> kPrefixes[] = {
      {"reservedGradientPrefix", &reservedGradientPrefix},
      {"reservedUpdatedVarPrefix", &reservedUpdatedVarPrefix},
      {"reservedAccumPrefix", &reservedAccumPrefix},
      {"reservedAcclPrefix", &reservedAcclPrefix},
      {"reservedAccl1Prefix", &reservedAccl1Prefix},
      {"reservedAccl2Prefix", &reservedAccl2Prefix},
      {"reservedAccl3Prefix", &reservedAccl3Prefix},
      {"reservedStepPrefix", &reservedStepPrefix},
      {"reservedAcclToReducePrefix", &reservedAcclToReducePrefix},
      {"reservedAcclToUpdatePrefix", &reservedAcclToUpdatePrefix},
      {"reservedAcclFinalOutPrefix", &reservedAcclFinalOutPrefix},
      {"reservedFinalReducedGradPrefix", &reservedFinalReducedGradPrefix},
      {"reservedAdamUpdaterPrefix", &reservedAdamUpdaterPrefix},
      {"reservedLambR1SqPrefix", &reservedLambR1SqPrefix},
      {"reservedLambR2SqPrefix", &reservedLambR2SqPrefix},
      {"reservedStashedPrefix", &reservedStashedPrefix},
      {"reservedRestoredPrefix", &reservedRestoredPrefix},
      {"reservedLossScalingPrefix", &reservedLossScalingPrefix},
      {"reservedRandomSeedPrefix", &reservedRandomSeedPrefix},
      {"reservedSeedModifierPrefix", &reservedSeedModifierPrefix},
      {"reservedRemoteArgPrefix", &reservedRemoteArgPrefix},
  };
  for (const auto& [name, prefix] : kPrefixes) {
    m.def(name, [prefix = prefix] { return std::string(prefix()); });
  }
}

}  // namespace xtrain::python
