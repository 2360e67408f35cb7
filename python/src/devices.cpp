#include "bindings.hpp"

namespace xtrain::python {

void bindDevices(pybind11::module_& /*m*/) {}

}  // namespace xtrain::python
