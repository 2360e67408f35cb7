// The Python op builders of src/ir/builder/opsets_misc.cpp, with PopART's names, keyword arguments
// and defaults (PopART's Python defaults differ from its C++ ones in places: sequenceslice's
// zeroUnused = 0, normalize_image's scale = 1.0, and args = [] for groupedgather, swish and
// incrementmod).
#include "builder_ops_misc.hpp"

#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace py = pybind11;

namespace xtrain::python {

void bindAiOnnx11Misc(py::class_<AiOnnxOpset11>& c) {
  c.def("mean", &AiOnnxOpset11::mean, py::arg("args"), py::arg("debugContext") = "");
}

void bindAiGraphcoreMisc(py::class_<AiGraphcoreOpset1>& c) {
  using G = AiGraphcoreOpset1;
  using Ids = std::vector<TensorId>;
  c.def("atan2", &G::atan2, py::arg("args"), py::arg("debugContext") = "");
  c.def("geluerf", &G::geluerf, py::arg("args"), py::arg("debugContext") = "");
  c.def("nearbyint", &G::nearbyint, py::arg("args"), py::arg("debugContext") = "");
  c.def("swish", &G::swish, py::arg("args") = Ids{}, py::arg("debugContext") = "");
  c.def("incrementmod", &G::incrementmod, py::arg("args") = Ids{}, py::arg("increment"),
        py::arg("modulus"), py::arg("debugContext") = "");
  // axes has no default in PopART's Python binding.
  c.def("slice", &G::slice, py::arg("args"), py::arg("ends"), py::arg("starts"), py::arg("axes"),
        py::arg("debugContext") = "");
  c.def("batchnormalization", &G::batchnormalization, py::arg("args"), py::arg("num_outputs"),
        py::arg("epsilon") = 1e-05f, py::arg("momentum") = 0.9f, py::arg("debugContext") = "");
  c.def("lstm", &G::lstm, py::arg("args"), py::arg("outputFullSequence") = 1,
        py::arg("debugContext") = "");
  c.def("reshape", &G::reshape, py::arg("args"), py::arg("shape"), py::arg("debugContext") = "");
  c.def("subsample", &G::subsample, py::arg("args"), py::arg("strides"),
        py::arg("debugContext") = "");
  c.def("groupedgather", &G::groupedgather, py::arg("args") = Ids{}, py::arg("axis") = 0,
        py::arg("group_size") = 1, py::arg("debugContext") = "");
  c.def("sequenceslice", &G::sequenceslice, py::arg("args"), py::arg("zeroUnused") = 0,
        py::arg("debugContext") = "");
  c.def("normalize_image", &G::normalize_image, py::arg("args"), py::arg("scale") = 1.0f,
        py::arg("debugContext") = "");
}

}  // namespace xtrain::python
