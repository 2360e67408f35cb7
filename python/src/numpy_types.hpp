// NumPy dtype <-> xtrain::DataType, for every binding that takes or returns arrays (the Builder's
// initializers and constants, the sessions' PyStepIO and PyWeightsIO buffers).
//
//   uint8 UINT8, int8 INT8, uint16 UINT16, int16 INT16, int32 INT32, int64 INT64, uint32 UINT32,
//   uint64 UINT64, bool BOOL, float16 FLOAT16, float32 FLOAT, float64 DOUBLE, complex64 COMPLEX64,
//   complex128 COMPLEX128.
//
// BFLOAT16, FLOAT8_143, FLOAT8_152, STRING and UNDEFINED have no NumPy dtype. Only native byte
// order is accepted (xtrain reads the buffers as they are).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "xtrain/datatype.hpp"
#include "xtrain/names.hpp"

namespace xtrain::python {

// The DataType of a NumPy dtype, or nullopt when xtrain has none for it.
inline std::optional<DataType> tryDataTypeFromNumpy(const pybind11::dtype& dt) {
  // '=' native, '|' not applicable (one byte), '<' or '>' explicit.
  const char order = dt.byteorder();
  const bool native = order == '=' || order == '|' ||
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                      order == '<';
#else
                      order == '>';
#endif
  if (!native) return std::nullopt;
  const auto size = dt.itemsize();
  switch (dt.kind()) {
    case 'b': return size == 1 ? std::optional(DataType::BOOL) : std::nullopt;
    case 'u':
      switch (size) {
        case 1: return DataType::UINT8;
        case 2: return DataType::UINT16;
        case 4: return DataType::UINT32;
        case 8: return DataType::UINT64;
        default: return std::nullopt;
      }
    case 'i':
      switch (size) {
        case 1: return DataType::INT8;
        case 2: return DataType::INT16;
        case 4: return DataType::INT32;
        case 8: return DataType::INT64;
        default: return std::nullopt;
      }
    case 'f':
      switch (size) {
        case 2: return DataType::FLOAT16;
        case 4: return DataType::FLOAT;
        case 8: return DataType::DOUBLE;
        default: return std::nullopt;
      }
    case 'c':
      switch (size) {
        case 8: return DataType::COMPLEX64;
        case 16: return DataType::COMPLEX128;
        default: return std::nullopt;
      }
    default: return std::nullopt;
  }
}

// The dtypes tryDataTypeFromNumpy accepts, for messages.
inline constexpr const char* kNumpyDtypeNames =
    "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64, "
    "complex64, complex128, in native byte order";

// The DataType of a NumPy dtype. Throws TypeError naming `what` (e.g. "Builder.addInitializedInput
// Tensor: initVal") and the dtype when xtrain has none for it.
inline DataType dataTypeFromNumpy(const pybind11::dtype& dt, const std::string& what) {
  if (auto t = tryDataTypeFromNumpy(dt)) return *t;
  throw pybind11::type_error(
      what + ": NumPy dtype '" +
      pybind11::str(static_cast<const pybind11::handle&>(dt)).cast<std::string>() +
      "' has no xtrain DataType (expected one of " + kNumpyDtypeNames + ")");
}

// The NumPy dtype of a DataType, or nullopt when NumPy has none (BFLOAT16, FLOAT8_*, STRING,
// UNDEFINED).
inline std::optional<pybind11::dtype> tryNumpyDtypeOf(DataType t) {
  switch (t) {
    case DataType::UINT8: return pybind11::dtype("uint8");
    case DataType::INT8: return pybind11::dtype("int8");
    case DataType::UINT16: return pybind11::dtype("uint16");
    case DataType::INT16: return pybind11::dtype("int16");
    case DataType::INT32: return pybind11::dtype("int32");
    case DataType::INT64: return pybind11::dtype("int64");
    case DataType::UINT32: return pybind11::dtype("uint32");
    case DataType::UINT64: return pybind11::dtype("uint64");
    case DataType::BOOL: return pybind11::dtype("bool");
    case DataType::FLOAT: return pybind11::dtype("float32");
    case DataType::FLOAT16: return pybind11::dtype("float16");
    case DataType::DOUBLE: return pybind11::dtype("float64");
    case DataType::COMPLEX64: return pybind11::dtype("complex64");
    case DataType::COMPLEX128: return pybind11::dtype("complex128");
    default: return std::nullopt;
  }
}

// The NumPy dtype of a DataType. Throws TypeError naming `what` and the type when NumPy has none.
inline pybind11::dtype numpyDtypeOf(DataType t, const std::string& what) {
  if (auto d = tryNumpyDtypeOf(t)) return *d;
  throw pybind11::type_error(what + ": DataType " + dataTypeName(t) + " has no NumPy dtype");
}

// PopART's lower-case type names (TensorInfo.data_type_lcase, Builder.getTensorDtypeString):
// NumPy's names where NumPy has the type ("float32", "float64", "int32", ...).
inline std::string dataTypeLowerName(DataType t) {
  if (t == DataType::FLOAT) return "float32";
  if (t == DataType::DOUBLE) return "float64";
  std::string s = dataTypeName(t);
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// ---- Python values -> DataType and Shape (TensorInfo, the Builder, the sessions) ----

// The DataType names, for messages: "UINT8, INT8, ..., UNDEFINED".
inline std::string dataTypeNames() {
  std::string s;
  for (int i = 0; i <= static_cast<int>(DataType::UNDEFINED); ++i) {
    if (i) s += ", ";
    s += dataTypeName(static_cast<DataType>(i));
  }
  return s;
}

// A DataType from a type name ("FLOAT", "INT32", ...; as dataTypeFromName, also "float32"), a
// DataType, a NumPy dtype or a NumPy scalar type (numpy.float32). Throws ValueError for an unknown
// name and TypeError for anything else, naming `what` and the value.
inline DataType dataTypeFromPy(pybind11::handle h, const std::string& what) {
  namespace py = pybind11;
  if (py::isinstance<py::str>(h)) {
    const auto name = h.cast<std::string>();
    try {
      return dataTypeFromName(name);
    } catch (const std::exception&) {
      throw py::value_error(what + ": unknown data type '" + name + "' (expected one of " +
                            dataTypeNames() + ")");
    }
  }
  try {
    return h.cast<DataType>();
  } catch (const py::cast_error&) {
  }
  if (py::isinstance<py::dtype>(h) || py::isinstance<py::type>(h)) {
    py::dtype dt;
    try {
      dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(h));
    } catch (const py::error_already_set&) {
      throw py::type_error(what + ": " + py::repr(h).cast<std::string>() +
                           " is not a data type (expected a name such as \"FLOAT\", a "
                           "DataType or a NumPy dtype)");
    }
    return dataTypeFromNumpy(dt, what);
  }
  throw py::type_error(what + ": " + py::repr(h).cast<std::string>() +
                       " is not a data type (expected a name such as \"FLOAT\", a DataType or a "
                       "NumPy dtype)");
}

// A Shape from a sequence of non-negative integers (list, tuple, NumPy integer array). Throws
// TypeError when it is not one and ValueError for a negative dimension, naming `what`.
inline Shape shapeFromPy(pybind11::handle h, const std::string& what) {
  namespace py = pybind11;
  if (py::isinstance<py::str>(h) || py::isinstance<py::bytes>(h) ||
      !py::isinstance<py::sequence>(h)) {
    if (!py::isinstance<py::array>(h)) {
      throw py::type_error(what + ": the shape " + py::repr(h).cast<std::string>() +
                           " is not a sequence of integers");
    }
  }
  Shape shape;
  for (py::handle d : py::reinterpret_borrow<py::iterable>(h)) {
    if (py::isinstance<py::bool_>(d) || !py::hasattr(d, "__index__")) {
      throw py::type_error(what + ": the shape " + py::repr(h).cast<std::string>() +
                           " has a dimension " + py::repr(d).cast<std::string>() +
                           " that is not an integer");
    }
    const auto v = py::reinterpret_steal<py::object>(PyNumber_Index(d.ptr()));
    if (!v) throw py::error_already_set();
    const int64_t n = v.cast<int64_t>();
    if (n < 0) {
      throw py::value_error(what + ": the shape " + py::repr(h).cast<std::string>() +
                            " has a negative dimension " + std::to_string(n));
    }
    shape.push_back(n);
  }
  return shape;
}

}  // namespace xtrain::python
