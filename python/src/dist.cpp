#include "bindings.hpp"

namespace xtrain::python {

void bindDist(pybind11::module_& /*m*/) {}

}  // namespace xtrain::python
