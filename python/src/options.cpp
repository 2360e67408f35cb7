#include "bindings.hpp"

namespace xtrain::python {

void bindOptions(pybind11::module_& /*m*/) {}

}  // namespace xtrain::python
