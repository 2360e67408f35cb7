// popart.getSupportedOperations, getUnsupportedOperations and getSupportedOperationsDefinition,
// with PopART's OperatorIdentifier and OpDefinition classes (xtrain/opmanager.hpp).
#include "xtrain/opmanager.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"

namespace py = pybind11;

namespace xtrain::python {

void bindOpManager(py::module_& m) {
  py::class_<OperatorIdentifier>(m, "OperatorIdentifier")
      .def(py::init<std::string, std::string, int>(), py::arg("domain"), py::arg("type"),
           py::arg("version"))
      .def_readonly("domain", &OperatorIdentifier::domain)
      .def_readonly("type", &OperatorIdentifier::type)
      .def_readonly("version", &OperatorIdentifier::version)
      .def("__eq__", &OperatorIdentifier::operator==)
      .def("__lt__", &OperatorIdentifier::operator<)
      .def("__hash__",
           [](const OperatorIdentifier& id) { return py::hash(py::str(id.toString())); })
      .def("__repr__", [](const OperatorIdentifier& id) {
        return "OperatorIdentifier(" + id.toString() + ")";
      });
  // PopART's Python names of the nested classes.
  py::class_<OpDefinition::Input>(m, "OpDefinition::Input")
      .def_readonly("name", &OpDefinition::Input::name)
      .def_readonly("supportedTensors", &OpDefinition::Input::supportedTensors)
      .def_readonly("constant", &OpDefinition::Input::constant);
  py::class_<OpDefinition::Output>(m, "OpDefinition::Output")
      .def_readonly("name", &OpDefinition::Output::name)
      .def_readonly("supportedTensors", &OpDefinition::Output::supportedTensors);
  py::class_<OpDefinition::Attribute>(m, "OpDefinition::Attribute")
      .def_readonly("supportedValuesRegex", &OpDefinition::Attribute::supportedValuesRegex);
  py::class_<OpDefinition>(m, "OpDefinition")
      .def_readonly("inputs", &OpDefinition::inputs)
      .def_readonly("outputs", &OpDefinition::outputs)
      .def_readonly("attributes", &OpDefinition::attributes);
  m.def("getSupportedOperations", &OpManager::getSupportedOperations, py::arg("includeInternal"));
  m.def("getUnsupportedOperations", &OpManager::getUnsupportedOperations,
        py::arg("opsetVersion"));
  m.def("getSupportedOperationsDefinition", &OpManager::getSupportedOperationsDefinition,
        py::arg("includeInternal"));
}

}  // namespace xtrain::python
