#include "bindings.hpp"

namespace xtrain::python {

void bindOptimizers(pybind11::module_& /*m*/) {}

}  // namespace xtrain::python
