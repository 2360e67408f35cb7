#include "bindings.hpp"

namespace xtrain::python {

void bindTensors(pybind11::module_& /*m*/) {}

}  // namespace xtrain::python
