// PatternsLevel and Patterns (xtrain/patterns.hpp): PopART's pattern sets, accepted and checked as
// PopART checks them; they do not change what a session computes (docs/python.md, "Patterns").
#include "xtrain/patterns.hpp"

#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"

namespace py = pybind11;

namespace xtrain::python {
namespace {

// PopART's property names, each over the pattern it names ("SoftMaxGradDirect" is the pattern
// "SoftmaxGradDirect").
constexpr std::pair<const char*, const char*> kProperties[] = {
    {"PreUniRepl", "PreUniRepl"},
    {"PostNRepl", "PostNRepl"},
    {"SoftMaxGradDirect", "SoftmaxGradDirect"},
    {"NlllWithSoftMaxGradDirect", "NlllWithSoftmaxGradDirect"},
    {"SplitGather", "SplitGather"},
    {"OpToIdentity", "OpToIdentity"},
    {"UpsampleToResize", "UpsampleToResize"},
    {"SubtractArg1GradOp", "SubtractArg1GradOp"},
    {"MulArgGradOp", "MulArgGradOp"},
    {"ReciprocalGradOp", "ReciprocalGradOp"},
    {"Atan2Arg0GradOp", "Atan2Arg0GradOp"},
    {"Atan2Arg1GradOp", "Atan2Arg1GradOp"},
    {"DivArg0GradOp", "DivArg0GradOp"},
    {"DivArg1GradOp", "DivArg1GradOp"},
    {"PowArg0GradOp", "PowArg0GradOp"},
    {"PowArg1GradOp", "PowArg1GradOp"},
    {"SinGradOp", "SinGradOp"},
    {"CosGradOp", "CosGradOp"},
    {"InitAccumulate", "InitAccumulate"},
    {"MatMulOp", "MatMulOp"},
    {"MatMulLhsGradOp", "MatMulLhsGradOp"},
    {"MatMulRhsGradOp", "MatMulRhsGradOp"},
    {"InPlace", "InPlace"},
    {"UpdateInplacePrioritiesForIpu", "UpdateInplacePrioritiesForIpu"},
};

}  // namespace

void bindPatterns(py::module_& m) {
  py::enum_<PatternsLevel>(m, "PatternsLevel")
      .value("NoPatterns", PatternsLevel::NoPatterns)
      .value("Minimal", PatternsLevel::Minimal)
      .value("Default", PatternsLevel::Default)
      .value("All", PatternsLevel::All);

  py::class_<Patterns> patterns(m, "Patterns",
                                "PopART's pattern set; checked, with no effect on the numbers.");
  patterns.def(py::init<>())
      .def(py::init<PatternsLevel>(), py::arg("level"))
      .def(py::init<const std::vector<std::string>&>(), py::arg("patterns"))
      .def_static("create", &Patterns::create, py::arg("patterns"))
      .def("isPatternEnabled", &Patterns::isPatternEnabled, py::arg("pattern"))
      .def("enablePattern", &Patterns::enablePattern, py::arg("pattern"), py::arg("enabled"),
           py::return_value_policy::reference_internal)
      .def("enableRuntimeAsserts", &Patterns::enableRuntimeAsserts, py::arg("enabled"),
           py::return_value_policy::reference_internal)
      .def_property_readonly("runtimeAssertsOn", &Patterns::getRuntimeAssertsOn)
      .def("getRuntimeAssertsOn", &Patterns::getRuntimeAssertsOn)
      .def("enableInPlace", &Patterns::enableInPlace, py::arg("enabled"),
           py::return_value_policy::reference_internal)
      .def("isInPlaceEnabled", &Patterns::isInPlaceEnabled)
      .def_static("getAllPreAliasPatternNames", &Patterns::getAllPreAliasPatternNames)
      .def_static("isMandatory", &Patterns::isMandatory, py::arg("pattern"))
      .def(py::self == py::self)
      .def(py::self != py::self)
      .def("__repr__", [](const Patterns& p) {
        std::string out;
        for (const auto& name : p.enabledPatternNames()) out += name + " ";
        return out;
      });
  for (const auto& [property, name] : kProperties) {
    const std::string pattern = name;
    patterns.def_property(
        property, [pattern](const Patterns& p) { return p.isPatternEnabled(pattern); },
        [pattern](Patterns& p, bool on) { p.enablePattern(pattern, on); });
  }
}

}  // namespace xtrain::python
