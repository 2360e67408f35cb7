#include "bindings.hpp"

namespace xtrain::python {

void bindSessions(pybind11::module_& /*m*/) {}

}  // namespace xtrain::python
