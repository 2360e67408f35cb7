// What the Builder (builder.cpp) and its op builders (builder_ops.cpp) share: messages naming
// Python values, numpy arrays as the C++ Builder's ConstVoidData, and the op builders' binding.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <functional>
#include <string>

#include "numpy_types.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::python {

inline std::string reprOf(pybind11::handle h) {
  return pybind11::repr(h).cast<std::string>();
}

[[noreturn]] inline void notImplemented(const std::string& what) {
  PyErr_SetString(PyExc_NotImplementedError, (what + " is not implemented by xtrain").c_str());
  throw pybind11::error_already_set();
}

// A numpy array as a ConstVoidData (a C-contiguous copy when needed, kept alive by `keep`).
inline ConstVoidData arrayData(const pybind11::object& value, const std::string& what,
                               pybind11::object& keep) {
  namespace py = pybind11;
  if (!py::isinstance<py::array>(value)) {
    throw py::type_error(what + ": " + reprOf(py::type::of(value)) +
                         " is not a numpy.ndarray (expected an array, e.g. numpy.zeros([2, 3], "
                         "numpy.float32))");
  }
  const auto arr = py::reinterpret_borrow<py::array>(value);
  const DataType t = dataTypeFromNumpy(arr.dtype(), what);
  keep = py::module_::import("numpy").attr("ascontiguousarray")(arr);
  const auto c = py::reinterpret_borrow<py::array>(keep);
  // The shape of the array given: ascontiguousarray turns a 0-d array (a scalar) into shape [1].
  Shape shape(arr.shape(), arr.shape() + arr.ndim());
  return ConstVoidData(c.data(), TensorInfo(t, shape));
}

// The op builders' classes (AiOnnxOpset11..17, AiGraphcoreOpset1) and the enums they take
// (ReductionType, CollectiveOperator, InitType): builder_ops.cpp. Called by bindBuilder before it
// binds the Builder, whose properties return them.
void bindOpBuilders(pybind11::module_& m);
// The random ops, reducemedian, sort, bucketize and shapeddropout, added to the classes
// bindOpBuilders binds (builder_ops_reduce_random.cpp).
void bindReduceRandomOps(pybind11::module_& m);
// popart.AiOnnxOpset6..10 (builder_ops_legacy.cpp), after bindOpBuilders.
void bindLegacyOpBuilders(pybind11::module_& m);
// Builder's node attribute methods (builder_node_attributes.cpp) on the class `cls`, whose
// instances `core` turns into the C++ Builder.
void bindNodeAttributes(pybind11::object cls,
                        const std::function<Builder&(pybind11::handle)>& core);

}  // namespace xtrain::python
