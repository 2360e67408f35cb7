// Tests of Python values shared by the bindings that convert them (options.cpp, optimizers.cpp,
// sessions.cpp): the type's name for messages, and what counts as a bool and as a real number
// (NumPy's scalars included, as PopART's bindings accept them).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace xtrain::python {

// The name of v's type ("float", "ndarray", "bool_"), for error messages.
inline std::string typeName(pybind11::handle v) {
  return pybind11::str(pybind11::type::handle_of(v).attr("__name__")).cast<std::string>();
}

// bool or numpy.bool_.
inline bool isBool(pybind11::handle v) {
  if (PyBool_Check(v.ptr())) return true;
  const std::string t = typeName(v);
  return t == "bool_" || t == "bool";
}

// A real number: float, int, or a NumPy scalar of either kind (not bool, complex or str).
inline bool isReal(pybind11::handle v) {
  if (isBool(v) || PyComplex_Check(v.ptr()) || PyUnicode_Check(v.ptr())) return false;
  if (PyFloat_Check(v.ptr()) || PyIndex_Check(v.ptr())) return true;
  auto* nb = Py_TYPE(v.ptr())->tp_as_number;
  return nb != nullptr && nb->nb_float != nullptr;
}

}  // namespace xtrain::python
