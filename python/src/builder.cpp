#include "bindings.hpp"

namespace xtrain::python {

void bindBuilder(pybind11::module_& /*m*/) {}

}  // namespace xtrain::python
