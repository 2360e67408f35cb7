// The extension module `xtrain._xtrain`; `import xtrain` (xtrain/__init__.py) re-exports it.
#include <pybind11/pybind11.h>

#include "bindings.hpp"

PYBIND11_MODULE(_xtrain, m) {
  m.doc() = "xtrain: PopART's Python API over xtrain's C++ library";
  using namespace xtrain::python;
  bindErrors(m);
  bindLogging(m);
  bindTensors(m);
  bindDataFlow(m);
  bindOptions(m);
  bindOptimizers(m);
  bindTensorNames(m);
  bindOpManager(m);
  bindGraphTransformer(m);
  bindPatterns(m);
  bindBuilder(m);
  bindDevices(m);
  bindSessions(m);
  bindDist(m);
}
