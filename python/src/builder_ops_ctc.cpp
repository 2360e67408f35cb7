// The Python op builders of src/ir/builder/opsets_ctc_multiconv.cpp (ctcloss, _ctcloss,
// ctcbeamsearchdecoder, multiconv), with PopART's keyword arguments and defaults (note
// ctcbeamsearchdecoder's snake_case beam_width, top_paths and debug_context, as in PopART).
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "builder_ops_misc.hpp"

namespace py = pybind11;

namespace xtrain::python {

void bindAiGraphcoreCtcMultiConv(py::class_<AiGraphcoreOpset1>& c) {
  using G = AiGraphcoreOpset1;
  using Lists = std::vector<std::vector<int64_t>>;
  c.def("ctcloss", &G::ctcloss, py::arg("args"), py::arg("reduction") = ReductionType::Mean,
        py::arg("blank") = 0, py::arg("outDataType") = "UNDEFINED", py::arg("zeroInfinity") = false,
        py::arg("debugContext") = "");
  c.def("_ctcloss", &G::_ctcloss, py::arg("args"), py::arg("reduction") = ReductionType::Mean,
        py::arg("blank") = 0, py::arg("outDataType") = "UNDEFINED", py::arg("zeroInfinity") = false,
        py::arg("debugContext") = "");
  c.def("ctcbeamsearchdecoder", &G::ctcbeamsearchdecoder, py::arg("args"), py::arg("blank") = 0,
        py::arg("beam_width") = 100, py::arg("top_paths") = 1, py::arg("debug_context") = "");
  c.def("multiconv", &G::multiconv, py::arg("args"), py::arg("dilations") = Lists{},
        py::arg("inDilations") = Lists{}, py::arg("pads") = Lists{}, py::arg("outPads") = Lists{},
        py::arg("strides") = Lists{}, py::arg("availableMemoryProportions") = std::vector<float>{},
        py::arg("partialsTypes") = std::vector<std::string>{},
        py::arg("planType") = std::optional<std::string>{},
        py::arg("perConvReservedTiles") = std::optional<int>{},
        py::arg("cycleBackOff") = std::optional<float>{},
        py::arg("enableConvDithering") = std::vector<int64_t>{}, py::arg("debugContext") = "");
}

}  // namespace xtrain::python
