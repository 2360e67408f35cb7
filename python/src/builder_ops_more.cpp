// More ai.onnx op builders (the C++ methods of src/ir/builder/opsets_more.cpp), with PopART's
// names, keyword arguments and defaults; builder_ops.cpp binds the opset classes and calls these.
#include "builder_ops_more.hpp"

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "builder_support.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

using Ids = std::vector<TensorId>;
using Floats = std::vector<float>;
using Strings = std::vector<std::string>;

template <class O>
void bindRecurrent(py::class_<O>& c) {
  const auto common = [](const char* name) {
    return std::vector<py::arg_v>{py::arg_v("activation_alpha", Floats()),
                                  py::arg_v("activation_beta", Floats()),
                                  py::arg_v("activations", Strings()),
                                  py::arg_v("clip", py::none()),
                                  py::arg_v("direction", "forward"),
                                  py::arg_v("hidden_size", py::none()),
                                  py::arg_v(name, 0)};
  };
  const auto gru = common("linear_before_reset");
  c.def("gru", &O::gru, py::arg("args"), py::arg("num_outputs"), gru[0], gru[1], gru[2], gru[3],
        gru[4], gru[5], gru[6], py::arg("debugContext") = "");
  const auto lstm = common("input_forget");
  c.def("lstm", &O::lstm, py::arg("args"), py::arg("num_outputs"), lstm[0], lstm[1], lstm[2],
        lstm[3], lstm[4], lstm[5], lstm[6], py::arg("debugContext") = "");
  c.def("rnn", &O::rnn, py::arg("args"), py::arg("num_outputs"), gru[0], gru[1], gru[2], gru[3],
        gru[4], gru[5], py::arg("debugContext") = "");
}

}  // namespace

void bindAiOnnx11More(py::class_<AiOnnxOpset11>& c) {
  using O = AiOnnxOpset11;
#define XTRAIN_PLAIN(name)                                                                \
  c.def(                                                                                  \
      #name, [](O& o, const Ids& args, const std::string& d) { return o.name(args, d); }, \
      py::arg("args"), py::arg("debugContext") = "")
  XTRAIN_PLAIN(ceil);
  XTRAIN_PLAIN(floor);
  XTRAIN_PLAIN(cos);
  XTRAIN_PLAIN(sin);
  XTRAIN_PLAIN(erf);
  XTRAIN_PLAIN(reciprocal);
  XTRAIN_PLAIN(sign);
  XTRAIN_PLAIN(softplus);
  XTRAIN_PLAIN(softsign);
  XTRAIN_PLAIN(logical_not);
  XTRAIN_PLAIN(clip);
  XTRAIN_PLAIN(logical_and);
  XTRAIN_PLAIN(logical_or);
  XTRAIN_PLAIN(logical_xor);
  XTRAIN_PLAIN(equal);
  XTRAIN_PLAIN(greater);
  XTRAIN_PLAIN(less);
  XTRAIN_PLAIN(max);
  XTRAIN_PLAIN(min);
  XTRAIN_PLAIN(prelu);
  XTRAIN_PLAIN(where);
  XTRAIN_PLAIN(gathernd);
  XTRAIN_PLAIN(scatternd);
  XTRAIN_PLAIN(shape);
  XTRAIN_PLAIN(size);
  XTRAIN_PLAIN(expand);
  XTRAIN_PLAIN(tile);
  XTRAIN_PLAIN(range);
#undef XTRAIN_PLAIN
  c.def("elu", &O::elu, py::arg("args"), py::arg("alpha") = 1.0f, py::arg("debugContext") = "");
  c.def("leakyrelu", &O::leakyrelu, py::arg("args"), py::arg("alpha") = 0.01f,
        py::arg("debugContext") = "");
  c.def("thresholdedrelu", &O::thresholdedrelu, py::arg("args"), py::arg("alpha") = 1.0f,
        py::arg("debugContext") = "");
  c.def("selu", &O::selu, py::arg("args"), py::arg("alpha") = 1.67326f, py::arg("gamma") = 1.0507f,
        py::arg("debugContext") = "");
  c.def("hardsigmoid", &O::hardsigmoid, py::arg("args"), py::arg("alpha") = 0.2f,
        py::arg("beta") = 0.5f, py::arg("debugContext") = "");
  c.def("mod", &O::mod, py::arg("args"), py::arg("fmod") = 0, py::arg("debugContext") = "");
  c.def("argmax", &O::argmax, py::arg("args"), py::arg("axis") = 0, py::arg("keepdims") = 1,
        py::arg("debugContext") = "");
  c.def("argmin", &O::argmin, py::arg("args"), py::arg("axis") = 0, py::arg("keepdims") = 1,
        py::arg("debugContext") = "");
  // axes None: all axes; [] none (PopART's distinction).
#define XTRAIN_REDUCE(name)                                                                      \
  c.def(#name, &O::name, py::arg("args"), py::arg("axes") = py::none(), py::arg("keepdims") = 1, \
        py::arg("debugContext") = "")
  XTRAIN_REDUCE(reducel1);
  XTRAIN_REDUCE(reducel2);
  XTRAIN_REDUCE(reducelogsum);
  XTRAIN_REDUCE(reducelogsumexp);
  XTRAIN_REDUCE(reducemax);
  XTRAIN_REDUCE(reducemin);
  XTRAIN_REDUCE(reduceprod);
  XTRAIN_REDUCE(reducesumsquare);
#undef XTRAIN_REDUCE
  c.def("cumsum", &O::cumsum, py::arg("args"), py::arg("exclusive") = 0, py::arg("reverse") = 0,
        py::arg("debugContext") = "");
  c.def("topk", &O::topk, py::arg("args"), py::arg("axis") = -1, py::arg("largest") = 1,
        py::arg("sorted") = 1, py::arg("debugContext") = "");
  c.def("onehot", &O::onehot, py::arg("args"), py::arg("axis") = -1, py::arg("debugContext") = "");
  c.def("gatherelements", &O::gatherelements, py::arg("args"), py::arg("axis") = 0,
        py::arg("debugContext") = "");
  c.def("scatter", &O::scatter, py::arg("args"), py::arg("axis") = 0, py::arg("debugContext") = "");
  c.def("scatterelements", &O::scatterelements, py::arg("args"), py::arg("axis") = 0,
        py::arg("debugContext") = "");
  c.def(
      "constantofshape",
      [](O& o, const Ids& args, const py::object& value, const std::string& d) {
        py::object keep;
        return o.constantofshape(args, arrayData(value, "constantofshape: value", keep), d);
      },
      py::arg("args"), py::arg("value"), py::arg("debugContext") = "");
  c.def("pad", &O::pad, py::arg("args"), py::arg("mode") = "constant",
        py::arg("debugContext") = "");
  c.def("resize", &O::resize, py::arg("args"),
        py::arg("coordinate_transformation_mode") = "half_pixel", py::arg("cubic_coeff_a") = -0.75f,
        py::arg("exclude_outside") = 0, py::arg("extrapolation_value") = 0.0f,
        py::arg("mode") = "nearest", py::arg("nearest_mode") = "round_prefer_floor",
        py::arg("debugContext") = "");
  c.def("upsample", &O::upsample, py::arg("args"), py::arg("mode") = "nearest",
        py::arg("debugContext") = "");
  const std::vector<int64_t> none;
  c.def("convtranspose", &O::convtranspose, py::arg("args"), py::arg("dilations") = none,
        py::arg("group") = 1, py::arg("kernel_shape") = none, py::arg("output_padding") = none,
        py::arg("output_shape") = none, py::arg("pads") = none, py::arg("strides") = none,
        py::arg("debugContext") = "");
  c.def("instancenormalization", &O::instancenormalization, py::arg("args"),
        py::arg("epsilon") = 1e-05f, py::arg("debugContext") = "");
  bindRecurrent(c);
}

void bindAiOnnx12More(py::class_<AiOnnxOpset12, AiOnnxOpset11>& c) {
  using O = AiOnnxOpset12;
  c.def("celu", &O::celu, py::arg("args"), py::arg("alpha") = 1.0f, py::arg("debugContext") = "");
  c.def("einsum", &O::einsum, py::arg("args"), py::arg("equation"), py::arg("debugContext") = "");
  c.def("greaterorequal", &O::greaterorequal, py::arg("args"), py::arg("debugContext") = "");
  c.def("lessorequal", &O::lessorequal, py::arg("args"), py::arg("debugContext") = "");
  c.def("negativeloglikelihoodloss", &O::negativeloglikelihoodloss, py::arg("args"),
        py::arg("ignore_index") = py::none(), py::arg("reduction") = "mean",
        py::arg("debugContext") = "");
}

void bindAiOnnx14More(py::class_<AiOnnxOpset14, AiOnnxOpset13>& c) {
  using O = AiOnnxOpset14;
  c.def("hardswish", &O::hardswish, py::arg("args"), py::arg("debugContext") = "");
  c.def("trilu", &O::trilu, py::arg("args"), py::arg("upper") = 1, py::arg("debugContext") = "");
}

void bindAiOnnx15More(py::class_<AiOnnxOpset15, AiOnnxOpset14>& c) {
  using O = AiOnnxOpset15;
  c.def("castlike", &O::castlike, py::arg("args"), py::arg("debugContext") = "");
  // Shape 15: start and end (None: the rank).
  c.def(
      "shape",
      [](O& o, const Ids& args, int64_t start, std::optional<int64_t> end, const std::string& d) {
        return o.shape(args, start, end, d);
      },
      py::arg("args"), py::arg("start") = 0, py::arg("end") = py::none(),
      py::arg("debugContext") = "");
}

}  // namespace xtrain::python
