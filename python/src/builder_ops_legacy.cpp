// popart.AiOnnxOpset6..10 (Builder.aiOnnxOpset6..10, and Builder.aiOnnx by default: PopART's
// default ai.onnx opset is 10): opset 11's op builder with the signatures PopART's opsets 6 to 10
// have where they differ (xtrain/builder_opsets_legacy.hpp).
#include <pybind11/stl.h>

#include <cfloat>
#include <optional>
#include <string>
#include <vector>

#include "builder_support.hpp"
#include "numpy_types.hpp"
#include "xtrain/builder.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

using Ids = std::vector<TensorId>;
using Ints = std::vector<int64_t>;

void bindOpset10(py::module_& m) {
  using O = AiOnnxOpset10;
  py::class_<O, AiOnnxOpset11> c(m, "AiOnnxOpset10", "The ai.onnx opset 10 op builder.");
  c.def("clip", &O::clip, py::arg("args"), py::arg("max") = FLT_MAX, py::arg("min") = -FLT_MAX,
        py::arg("debugContext") = "");
  c.def("pad", &O::pad, py::arg("args"), py::arg("pads"), py::arg("mode") = "constant",
        py::arg("value") = 0.0f, py::arg("debugContext") = "");
  c.def(
      "topk",
      [](O& o, const Ids& args, int64_t axis, const std::string& d) {
        return o.topk(args, axis, d);
      },
      py::arg("args"), py::arg("axis") = -1, py::arg("debugContext") = "");
  c.def(
      "resize",
      [](O& o, const Ids& args, const std::string& mode, const std::string& d) {
        return o.resize(args, mode, d);
      },
      py::arg("args"), py::arg("mode") = "nearest", py::arg("debugContext") = "");
  c.def(
      "upsample",
      [](O& o, const Ids& args, const std::string& mode, const std::string& d) {
        return o.upsample(args, mode, d);
      },
      py::arg("args"), py::arg("mode") = "nearest", py::arg("debugContext") = "");
  c.def("scatter", &O::scatter, py::arg("args"), py::arg("axis") = 0, py::arg("debugContext") = "");
  // PopART's constant before opset 11 has no is_value_sparse: constant(value, "name").
  c.def(
      "constant",
      [](O& o, const py::object& value, const std::string& d) {
        py::object keep;
        return o.constant(arrayData(value, "constant: value", keep), d);
      },
      py::arg("value"), py::arg("debugContext") = "");
}

void bindOpset9(py::module_& m) {
  using O = AiOnnxOpset9;
  py::class_<O, AiOnnxOpset10> c(m, "AiOnnxOpset9", "The ai.onnx opset 9 op builder.");
  c.def(
      "slice",
      [](O& o, const Ids& args, const Ints& ends, const Ints& starts, const Ints& axes,
         const std::string& d) { return o.slice(args, ends, starts, axes, d); },
      py::arg("args"), py::arg("ends"), py::arg("starts"), py::arg("axes") = Ints(),
      py::arg("debugContext") = "");
  c.def(
      "topk",
      [](O& o, const Ids& args, int64_t k, int64_t axis, const std::string& d) {
        return o.topk(args, k, axis, d);
      },
      py::arg("args"), py::arg("k"), py::arg("axis") = -1, py::arg("debugContext") = "");
  c.def(
      "upsample",
      [](O& o, const Ids& args, const std::string& mode, const std::string& d) {
        return o.upsample(args, mode, d);
      },
      py::arg("args"), py::arg("mode") = "nearest", py::arg("debugContext") = "");
  c.def(
      "maxpool",
      [](O& o, const Ids& args, unsigned n, const Ints& kernel, const Ints& pads,
         int64_t storage_order, const Ints& strides, const std::string& d) {
        return o.maxpool(args, n, kernel, pads, storage_order, strides, d);
      },
      py::arg("args"), py::arg("num_outputs"), py::arg("kernel_shape"), py::arg("pads") = Ints(),
      py::arg("storage_order") = 0, py::arg("strides") = Ints(), py::arg("debugContext") = "");
  c.def(
      "averagepool",
      [](O& o, const Ids& args, const Ints& kernel, int64_t count_include_pad, const Ints& pads,
         const Ints& strides, const std::string& d) {
        return o.averagepool(args, kernel, count_include_pad, pads, strides, d);
      },
      py::arg("args"), py::arg("kernel_shape"), py::arg("count_include_pad") = 0,
      py::arg("pads") = Ints(), py::arg("strides") = Ints(), py::arg("debugContext") = "");
}

void bindOpsets8And7(py::module_& m) {
  using O8 = AiOnnxOpset8;
  py::class_<O8, AiOnnxOpset9> c8(m, "AiOnnxOpset8", "The ai.onnx opset 8 op builder.");
  c8.def(
      "batchnormalization",
      [](O8& o, const Ids& args, unsigned n, float epsilon, float momentum, int64_t spatial,
         const std::string& d) {
        return o.batchnormalization(args, n, epsilon, momentum, spatial, d);
      },
      py::arg("args"), py::arg("num_outputs"), py::arg("epsilon") = 1e-05f,
      py::arg("momentum") = 0.9f, py::arg("spatial") = 1, py::arg("debugContext") = "");
  c8.def(
      "upsample",
      [](O8& o, const Ids& args, const std::vector<float>& scales, const std::string& mode,
         const std::string& d) { return o.upsample(args, scales, mode, d); },
      py::arg("args"), py::arg("scales"), py::arg("mode") = "nearest",
      py::arg("debugContext") = "");
  using O7 = AiOnnxOpset7;
  py::class_<O7, AiOnnxOpset8> c7(m, "AiOnnxOpset7", "The ai.onnx opset 7 op builder.");
  c7.def(
      "maxpool",
      [](O7& o, const Ids& args, const Ints& kernel, const Ints& pads, const Ints& strides,
         const std::string& d) { return o.maxpool(args, kernel, pads, strides, d); },
      py::arg("args"), py::arg("kernel_shape"), py::arg("pads") = Ints(),
      py::arg("strides") = Ints(), py::arg("debugContext") = "");
}

void bindOpset6(py::module_& m) {
  using O = AiOnnxOpset6;
  py::class_<O, AiOnnxOpset7> c(m, "AiOnnxOpset6", "The ai.onnx opset 6 op builder.");
#define XTRAIN_BINARY6(name)                                                    \
  c.def(                                                                        \
      #name,                                                                    \
      [](O& o, const Ids& args, std::optional<int64_t> axis, int64_t broadcast, \
         const std::string& d) { return o.name(args, axis, broadcast, d); },    \
      py::arg("args"), py::arg("axis") = py::none(), py::arg("broadcast") = 0,  \
      py::arg("debugContext") = "")
  XTRAIN_BINARY6(add);
  XTRAIN_BINARY6(sub);
  XTRAIN_BINARY6(mul);
  XTRAIN_BINARY6(div);
  XTRAIN_BINARY6(pow);
#undef XTRAIN_BINARY6
  c.def(
      "batchnormalization",
      [](O& o, const Ids& args, unsigned n, float epsilon, int64_t is_test, float momentum,
         int64_t spatial, const std::string& d) {
        return o.batchnormalization(args, n, epsilon, is_test, momentum, spatial, d);
      },
      py::arg("args"), py::arg("num_outputs"), py::arg("epsilon") = 1e-05f, py::arg("is_test") = 0,
      py::arg("momentum") = 0.9f, py::arg("spatial") = 1, py::arg("debugContext") = "");
  c.def(
      "dropout",
      [](O& o, const Ids& args, unsigned n, int64_t is_test, float ratio, const std::string& d) {
        return o.dropout(args, n, is_test, ratio, d);
      },
      py::arg("args"), py::arg("num_outputs"), py::arg("is_test") = 0, py::arg("ratio") = 0.5f,
      py::arg("debugContext") = "");
  c.def(
      "gemm",
      [](O& o, const Ids& args, float alpha, float beta, int64_t broadcast, int64_t transA,
         int64_t transB,
         const std::string& d) { return o.gemm(args, alpha, beta, broadcast, transA, transB, d); },
      py::arg("args"), py::arg("alpha") = 1.0f, py::arg("beta") = 1.0f, py::arg("broadcast") = 0,
      py::arg("transA") = 0, py::arg("transB") = 0, py::arg("debugContext") = "");
  c.def(
      "averagepool",
      [](O& o, const Ids& args, const Ints& kernel, const Ints& pads, const Ints& strides,
         const std::string& d) { return o.averagepool(args, kernel, pads, strides, d); },
      py::arg("args"), py::arg("kernel_shape"), py::arg("pads") = Ints(),
      py::arg("strides") = Ints(), py::arg("debugContext") = "");
}

}  // namespace

void bindLegacyOpBuilders(py::module_& m) {
  // str(builder.aiOnnx) is PopART's Python class name, "AiOnnx9" (its tests compare it).
  py::object base = m.attr("AiOnnxOpset11");
  py::setattr(
      base, "__str__",
      py::cpp_function(
          [](const AiOnnxOpset11& o) { return "AiOnnx" + std::to_string(o.getOpsetVersion()); },
          py::name("__str__"), py::is_method(base)));
  bindOpset10(m);
  bindOpset9(m);
  bindOpsets8And7(m);
  bindOpset6(m);
}

}  // namespace xtrain::python
