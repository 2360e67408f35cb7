#include "bindings.hpp"

namespace xtrain::python {

void bindErrors(pybind11::module_& /*m*/) {}

}  // namespace xtrain::python
