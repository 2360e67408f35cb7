// Op builders of the random ops (aiOnnx.randomnormal, randomuniform, randomnormallike,
// randomuniformlike) and of PopART's aiGraphcore.reducemedian, sort, bucketize and shapeddropout,
// with PopART's keyword arguments and defaults. They are added to the classes builder_ops.cpp
// binds (AiOnnxOpset11, which the later opsets inherit, and AiGraphcoreOpset1).
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "builder_support.hpp"

namespace py = pybind11;

namespace xtrain::python {

void bindReduceRandomOps(py::module_& m) {
  using Ids = std::vector<TensorId>;
  using Ints = std::vector<int64_t>;
  {
    using O = AiOnnxOpset11;
    auto c = py::reinterpret_borrow<py::class_<O>>(m.attr("AiOnnxOpset11"));
    c.def("randomnormal", &O::randomnormal, py::arg("shape"), py::arg("dtype") = 1,
          py::arg("mean") = 0.0f, py::arg("scale") = 1.0f, py::arg("seed") = py::none(),
          py::arg("debugContext") = "");
    c.def("randomuniform", &O::randomuniform, py::arg("shape"), py::arg("dtype") = 1,
          py::arg("high") = 1.0f, py::arg("low") = 0.0f, py::arg("seed") = py::none(),
          py::arg("debugContext") = "");
    c.def("randomnormallike", &O::randomnormallike, py::arg("args"), py::arg("dtype") = py::none(),
          py::arg("mean") = 0.0f, py::arg("scale") = 1.0f, py::arg("seed") = py::none(),
          py::arg("debugContext") = "");
    c.def("randomuniformlike", &O::randomuniformlike, py::arg("args"),
          py::arg("dtype") = py::none(), py::arg("high") = 1.0f, py::arg("low") = 0.0f,
          py::arg("seed") = py::none(), py::arg("debugContext") = "");
  }
  using G = AiGraphcoreOpset1;
  auto c = py::reinterpret_borrow<py::class_<G>>(m.attr("AiGraphcoreOpset1"));
  // axes None: every axis; an empty list or tuple: none.
  c.def(
      "reducemedian",
      [](G& o, const Ids& args, const std::optional<Ints>& axes, int64_t keepdims,
         const std::string& d) { return o.reducemedian(args, axes, keepdims, d); },
      py::arg("args"), py::arg("axes") = py::none(), py::arg("keepdims") = 1,
      py::arg("debugContext") = "");
  c.def("sort", &G::sort, py::arg("args") = Ids(), py::arg("axis") = -1, py::arg("descending") = 0,
        py::arg("stable") = 0, py::arg("debugContext") = "");
  c.def("bucketize", &G::bucketize, py::arg("args") = Ids(), py::arg("right") = 0,
        py::arg("debugContext") = "");
  c.def("shapeddropout", &G::shapeddropout, py::arg("args"), py::arg("shape"),
        py::arg("ratio") = 0.5f, py::arg("debugContext") = "");
}

}  // namespace xtrain::python
