// The Python op builders of the elementwise and layout ops (src/ir/builder/opsets_unary.cpp), with
// PopART's names, keyword arguments and defaults.
#include "builder_ops_unary.hpp"

#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace py = pybind11;

namespace xtrain::python {

void bindAiOnnx11Unary(py::class_<AiOnnxOpset11>& c) {
  using O = AiOnnxOpset11;
  using Ids = std::vector<TensorId>;
#define XTRAIN_PLAIN(name)                                                                \
  c.def(                                                                                  \
      #name, [](O& o, const Ids& args, const std::string& d) { return o.name(args, d); }, \
      py::arg("args"), py::arg("debugContext") = "")
  XTRAIN_PLAIN(asin);
  XTRAIN_PLAIN(acos);
  XTRAIN_PLAIN(atan);
  XTRAIN_PLAIN(sinh);
  XTRAIN_PLAIN(cosh);
  XTRAIN_PLAIN(tan);
  XTRAIN_PLAIN(asinh);
  XTRAIN_PLAIN(acosh);
  XTRAIN_PLAIN(atanh);
  XTRAIN_PLAIN(round);
  XTRAIN_PLAIN(isnan);
#undef XTRAIN_PLAIN
  c.def("isinf", &O::isinf, py::arg("args"), py::arg("detect_negative") = 1,
        py::arg("detect_positive") = 1, py::arg("debugContext") = "");
  c.def("shrink", &O::shrink, py::arg("args"), py::arg("bias") = 0.0f, py::arg("lambd") = 0.5f,
        py::arg("debugContext") = "");
  c.def("lrn", &O::lrn, py::arg("args"), py::arg("size"), py::arg("alpha") = 0.0001f,
        py::arg("beta") = 0.75f, py::arg("bias") = 1.0f, py::arg("debugContext") = "");
  c.def("depthtospace", &O::depthtospace, py::arg("args"), py::arg("blocksize"),
        py::arg("mode") = "DCR", py::arg("debugContext") = "");
  c.def("spacetodepth", &O::spacetodepth, py::arg("args"), py::arg("blocksize"),
        py::arg("debugContext") = "");
}

void bindAiGraphcoreUnary(py::class_<AiGraphcoreOpset1>& c) {
  using G = AiGraphcoreOpset1;
  using Ids = std::vector<TensorId>;
#define XTRAIN_PLAIN(name)                                                                \
  c.def(                                                                                  \
      #name, [](G& o, const Ids& args, const std::string& d) { return o.name(args, d); }, \
      py::arg("args"), py::arg("debugContext") = "")
  XTRAIN_PLAIN(expm1);
  XTRAIN_PLAIN(log1p);
  XTRAIN_PLAIN(bitwisenot);
  XTRAIN_PLAIN(bitwiseand);
  XTRAIN_PLAIN(bitwiseor);
  XTRAIN_PLAIN(bitwisexor);
  XTRAIN_PLAIN(bitwisexnor);
#undef XTRAIN_PLAIN
  // mode has no default in PopART's Python binding.
  c.def("depthtospace", &G::depthtospace, py::arg("args"), py::arg("blocksize"), py::arg("mode"),
        py::arg("debugContext") = "");
}

}  // namespace xtrain::python
