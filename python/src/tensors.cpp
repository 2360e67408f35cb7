// DataType and TensorInfo (popart.DataType, popart.TensorInfo).
#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>

#include "bindings.hpp"
#include "numpy_types.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/tensorinfo.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

// PopART's C++ stream form: the type name padded to 8 characters, then "[2 3]".
std::string popartString(const TensorInfo& info) {
  std::ostringstream os;
  std::string name = dataTypeName(info.dataType());
  if (name.size() < 8) name.resize(8, ' ');
  os << name << '[';
  for (size_t i = 0; i < info.shape().size(); ++i) os << (i ? " " : "") << info.shape()[i];
  os << ']';
  return os.str();
}

std::string reprString(const TensorInfo& info) {
  std::ostringstream os;
  os << "TensorInfo(\"" << dataTypeName(info.dataType()) << "\", [";
  for (size_t i = 0; i < info.shape().size(); ++i) os << (i ? ", " : "") << info.shape()[i];
  os << "])";
  return os.str();
}

TensorInfo makeInfo(py::handle dataType, py::handle shape) {
  return TensorInfo(dataTypeFromPy(dataType, "TensorInfo: dataType"),
                    shapeFromPy(shape, "TensorInfo: shape"));
}

}  // namespace

void bindTensors(py::module_& m) {
  py::enum_<DataType>(m, "DataType")
      .value("UINT8", DataType::UINT8)
      .value("INT8", DataType::INT8)
      .value("UINT16", DataType::UINT16)
      .value("INT16", DataType::INT16)
      .value("INT32", DataType::INT32)
      .value("INT64", DataType::INT64)
      .value("UINT32", DataType::UINT32)
      .value("UINT64", DataType::UINT64)
      .value("BOOL", DataType::BOOL)
      .value("FLOAT", DataType::FLOAT)
      .value("FLOAT16", DataType::FLOAT16)
      .value("BFLOAT16", DataType::BFLOAT16)
      .value("FLOAT8_143", DataType::FLOAT8_143)
      .value("FLOAT8_152", DataType::FLOAT8_152)
      .value("DOUBLE", DataType::DOUBLE)
      .value("COMPLEX64", DataType::COMPLEX64)
      .value("COMPLEX128", DataType::COMPLEX128)
      .value("STRING", DataType::STRING)
      .value("UNDEFINED", DataType::UNDEFINED);

  py::class_<TensorInfo>(m, "TensorInfo",
                         "The data type and shape of a tensor: TensorInfo(dataType, shape) with "
                         "dataType a name (\"FLOAT\"), a DataType or a NumPy dtype, or "
                         "TensorInfo(numpy.ndarray).")
      .def(py::init<>())
      .def(py::init(&makeInfo), py::arg("dataType"), py::arg("shape"))
      .def(py::init([](const py::array& a) {
             Shape shape(a.shape(), a.shape() + a.ndim());
             return TensorInfo(dataTypeFromNumpy(a.dtype(), "TensorInfo: the array"), shape);
           }),
           py::arg("array"))
      .def(
          "set",
          [](TensorInfo& self, py::handle dataType, py::handle shape) {
            self = makeInfo(dataType, shape);
          },
          py::arg("dataType"), py::arg("shape"))
      .def("dataType", &TensorInfo::dataType)
      .def("data_type", [](const TensorInfo& t) { return std::string(dataTypeName(t.dataType())); })
      .def("data_type_lcase", [](const TensorInfo& t) { return dataTypeLowerName(t.dataType()); })
      .def("shape", [](const TensorInfo& t) { return t.shape(); })
      .def("rank", &TensorInfo::rank)
      .def("dim", &TensorInfo::dim, py::arg("i"))
      .def("nelms", &TensorInfo::nelms)
      .def("nbytes", &TensorInfo::nbytes)
      .def(py::self == py::self)
      .def(py::self != py::self)
      .def("__str__", &popartString)
      .def("__repr__", &reprString)
      .def(py::pickle([](const TensorInfo& t) { return py::make_tuple(t.dataType(), t.shape()); },
                      [](const py::tuple& s) {
                        if (s.size() != 2) throw py::value_error("TensorInfo: bad pickled state");
                        return TensorInfo(s[0].cast<DataType>(), s[1].cast<Shape>());
                      }));
}

}  // namespace xtrain::python
