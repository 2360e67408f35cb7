#include "bindings.hpp"

namespace xtrain::python {

void bindDataFlow(pybind11::module_& /*m*/) {}

}  // namespace xtrain::python
