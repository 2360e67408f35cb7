#include "bindings.hpp"

namespace xtrain::python {

void bindLogging(pybind11::module_& /*m*/) {}

}  // namespace xtrain::python
