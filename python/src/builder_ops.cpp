// The op builders of popart.Builder (popart.AiOnnxOpset11..17, popart.AiGraphcoreOpset1), with
// PopART's names, keyword arguments and defaults; builder.cpp binds the Builder that returns them.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "builder_ops_misc.hpp"
#include "builder_ops_more.hpp"
#include "builder_ops_unary.hpp"
#include "builder_support.hpp"
#include "numpy_types.hpp"
#include "xtrain/builder.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

// Conv, MaxPool and AveragePool. auto_pad is keyword-only, after debugContext: PopART's Builder
// does not offer the deprecated attribute, and PopART's positional calls must keep their meaning.
void bindWindowOps(py::class_<AiOnnxOpset11>& c) {
  using O = AiOnnxOpset11;
  c.def("conv", &O::conv, py::arg("args"), py::arg("dilations") = std::vector<int64_t>(),
        py::arg("group") = 1, py::arg("kernel_shape") = std::vector<int64_t>(),
        py::arg("pads") = std::vector<int64_t>(), py::arg("strides") = std::vector<int64_t>(),
        py::arg("debugContext") = "", py::kw_only(), py::arg("auto_pad") = "NOTSET");
  c.def("maxpool", &O::maxpool, py::arg("args"), py::arg("num_outputs"), py::arg("kernel_shape"),
        py::arg("ceil_mode") = 0, py::arg("dilations") = std::vector<int64_t>(),
        py::arg("pads") = std::vector<int64_t>(), py::arg("storage_order") = 0,
        py::arg("strides") = std::vector<int64_t>(), py::arg("debugContext") = "", py::kw_only(),
        py::arg("auto_pad") = "NOTSET");
  c.def("averagepool", &O::averagepool, py::arg("args"), py::arg("kernel_shape"),
        py::arg("ceil_mode") = 0, py::arg("count_include_pad") = 0,
        py::arg("pads") = std::vector<int64_t>(), py::arg("strides") = std::vector<int64_t>(),
        py::arg("debugContext") = "", py::kw_only(), py::arg("auto_pad") = "NOTSET");
}

// The ops of ai.onnx opset 11, inherited by the later opsets.
void bindAiOnnx11(py::module_& m) {
  using O = AiOnnxOpset11;
  using Ids = std::vector<TensorId>;
  py::class_<O> c(m, "AiOnnxOpset11", "The ai.onnx opset 11 op builder (Builder.aiOnnxOpset11).");
  c.def("getOpsetVersion", &O::getOpsetVersion);
#define XTRAIN_UNARY(name)                                                                \
  c.def(                                                                                  \
      #name, [](O& o, const Ids& args, const std::string& d) { return o.name(args, d); }, \
      py::arg("args"), py::arg("debugContext") = "")
  XTRAIN_UNARY(add);
  XTRAIN_UNARY(sub);
  XTRAIN_UNARY(mul);
  XTRAIN_UNARY(div);
  XTRAIN_UNARY(pow);
  XTRAIN_UNARY(sum);
  XTRAIN_UNARY(neg);
  XTRAIN_UNARY(exp);
  XTRAIN_UNARY(log);
  XTRAIN_UNARY(sqrt);
  XTRAIN_UNARY(abs);
  XTRAIN_UNARY(relu);
  XTRAIN_UNARY(sigmoid);
  XTRAIN_UNARY(tanh);
  XTRAIN_UNARY(identity);
  XTRAIN_UNARY(matmul);
  XTRAIN_UNARY(reshape);
  XTRAIN_UNARY(globalaveragepool);
  XTRAIN_UNARY(globalmaxpool);
#undef XTRAIN_UNARY
  c.def(
      "cast",
      [](O& o, const Ids& args, const std::string& to, const std::string& d) {
        dataTypeFromPy(py::str(to), "aiOnnx.cast: to");  // a ValueError naming an unknown type
        return o.cast(args, to, d);
      },
      py::arg("args"), py::arg("to"), py::arg("debugContext") = "");
  // ONNX moved Softmax's default axis from 1 to -1 at opset 13: AiOnnxOpset13 redefines these.
  c.def("softmax", &O::softmax, py::arg("args"), py::arg("axis") = 1, py::arg("debugContext") = "");
  c.def("logsoftmax", &O::logsoftmax, py::arg("args"), py::arg("axis") = 1,
        py::arg("debugContext") = "");
  c.def("gemm", &O::gemm, py::arg("args"), py::arg("alpha") = 1.0f, py::arg("beta") = 1.0f,
        py::arg("transA") = 0, py::arg("transB") = 0, py::arg("debugContext") = "");
  c.def("flatten", &O::flatten, py::arg("args"), py::arg("axis") = 1, py::arg("debugContext") = "");
  c.def("transpose", &O::transpose, py::arg("args"), py::arg("perm") = std::vector<int64_t>(),
        py::arg("debugContext") = "");
  c.def("concat", &O::concat, py::arg("args"), py::arg("axis"), py::arg("debugContext") = "");
  c.def("split", &O::split, py::arg("args"), py::arg("num_outputs"), py::arg("axis") = 0,
        py::arg("split") = std::vector<int64_t>(), py::arg("debugContext") = "");
  c.def(
      "slice", [](O& o, const Ids& args, const std::string& d) { return o.slice(args, d); },
      py::arg("args"), py::arg("debugContext") = "");
  c.def(
      "slice",
      [](O& o, const Ids& args, const std::vector<int64_t>& starts,
         const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
         const std::vector<int64_t>& steps,
         const std::string& d) { return o.slice(args, starts, ends, axes, steps, d); },
      py::arg("args"), py::arg("starts"), py::arg("ends"), py::arg("axes") = std::vector<int64_t>(),
      py::arg("steps") = std::vector<int64_t>(), py::arg("debugContext") = "");
  c.def("squeeze", &O::squeeze, py::arg("args"), py::arg("axes") = std::vector<int64_t>(),
        py::arg("debugContext") = "");
  c.def("unsqueeze", &O::unsqueeze, py::arg("args"), py::arg("axes"), py::arg("debugContext") = "");
  c.def("gather", &O::gather, py::arg("args"), py::arg("axis") = 0, py::arg("debugContext") = "");
  c.def(
      "reducesum",
      [](O& o, const Ids& args, const std::optional<std::vector<int64_t>>& axes, int64_t keepdims,
         const std::string& d) {
        // axes [] (not None): no axis, as in PopART; a sum or mean of one element is itself.
        if (axes && axes->empty()) return o.identity(args, d);
        return o.reducesum(args, axes.value_or(std::vector<int64_t>{}), keepdims, d);
      },
      py::arg("args"), py::arg("axes") = py::none(), py::arg("keepdims") = 1,
      py::arg("debugContext") = "");
  c.def(
      "reducemean",
      [](O& o, const Ids& args, const std::optional<std::vector<int64_t>>& axes, int64_t keepdims,
         const std::string& d) {
        // axes [] (not None): no axis, as in PopART; a sum or mean of one element is itself.
        if (axes && axes->empty()) return o.identity(args, d);
        return o.reducemean(args, axes.value_or(std::vector<int64_t>{}), keepdims, d);
      },
      py::arg("args"), py::arg("axes") = py::none(), py::arg("keepdims") = 1,
      py::arg("debugContext") = "");
  c.def("batchnormalization", &O::batchnormalization, py::arg("args"), py::arg("num_outputs"),
        py::arg("epsilon") = 1e-05f, py::arg("momentum") = 0.9f, py::arg("debugContext") = "");
  bindWindowOps(c);
  c.def("dropout", &O::dropout, py::arg("args"), py::arg("num_outputs"), py::arg("ratio") = 0.5f,
        py::arg("debugContext") = "");
  c.def(
      "constant",
      [](O& o, const py::object& value, bool is_value_sparse, const std::string& d) {
        if (is_value_sparse) notImplemented("constant(is_value_sparse=True)");
        py::object keep;
        return o.constant(arrayData(value, "constant: value", keep), d);
      },
      py::arg("value"), py::arg("is_value_sparse") = false, py::arg("debugContext") = "");
  // constant(value, "name"), as PopART's own reshape_const calls it.
  c.def(
      "constant",
      [](O& o, const py::object& value, const std::string& d) {
        py::object keep;
        return o.constant(arrayData(value, "constant: value", keep), d);
      },
      py::arg("value"), py::arg("debugContext"));
  bindAiOnnx11More(c);
  bindAiOnnx11Unary(c);
  bindAiOnnx11Misc(c);
}

// Opsets 12 to 17: what each adds to or changes in the one before.
void bindAiOnnxLaterOpsets(py::module_& m) {
  using O = AiOnnxOpset11;
  py::class_<AiOnnxOpset12, AiOnnxOpset11> c12(m, "AiOnnxOpset12",
                                               "The ai.onnx opset 12 op builder.");
  c12.def("softmaxcrossentropyloss", &AiOnnxOpset12::softmaxcrossentropyloss, py::arg("args"),
          py::arg("num_outputs") = 1, py::arg("ignore_index") = py::none(),
          py::arg("reduction") = "mean", py::arg("debugContext") = "");
  bindAiOnnx12More(c12);
  py::class_<AiOnnxOpset13, AiOnnxOpset12>(m, "AiOnnxOpset13", "The ai.onnx opset 13 op builder.")
      .def("softmax", &O::softmax, py::arg("args"), py::arg("axis") = -1,
           py::arg("debugContext") = "")
      .def("logsoftmax", &O::logsoftmax, py::arg("args"), py::arg("axis") = -1,
           py::arg("debugContext") = "");
  py::class_<AiOnnxOpset14, AiOnnxOpset13> c14(m, "AiOnnxOpset14",
                                               "The ai.onnx opset 14 op builder.");
  bindAiOnnx14More(c14);
  py::class_<AiOnnxOpset15, AiOnnxOpset14> c15(m, "AiOnnxOpset15",
                                               "The ai.onnx opset 15 op builder.");
  bindAiOnnx15More(c15);
  py::class_<AiOnnxOpset16, AiOnnxOpset15>(m, "AiOnnxOpset16", "The ai.onnx opset 16 op builder.");
  py::class_<AiOnnxOpset17, AiOnnxOpset16>(m, "AiOnnxOpset17", "The ai.onnx opset 17 op builder.")
      .def("layernormalization", &AiOnnxOpset17::layernormalization, py::arg("args"),
           py::arg("num_outputs") = 1, py::arg("axis") = -1, py::arg("epsilon") = 1e-05f,
           py::arg("stash_type") = 1, py::arg("debugContext") = "");
}

// A CommGroup or ReplicaGrouping argument of the replicated collectives (None: all replicas).
template <typename F>
TensorId withGroup(const py::object& group, const std::string& what, F&& f) {
  if (group.is_none()) return f(CommGroup());
  try {
    return f(group.cast<CommGroup>());
  } catch (const py::cast_error&) {
  }
  try {
    return f(group.cast<ReplicaGrouping>());
  } catch (const py::cast_error&) {
  }
  throw py::type_error(what + ": commGroup " + reprOf(group) +
                       " is not a CommGroup or a ReplicaGrouping");
}

CollectiveOperator collectiveOf(const py::object& op, const std::string& what) {
  if (op.is_none()) return CollectiveOperator::Add;
  try {
    return op.cast<CollectiveOperator>();
  } catch (const py::cast_error&) {
    throw py::type_error(what + ": collectiveOperator " + reprOf(op) +
                         " is not a CollectiveOperator");
  }
}

void bindAiGraphcore(py::module_& m) {
  using G = AiGraphcoreOpset1;
  using Ids = std::vector<TensorId>;
  py::class_<G> c(m, "AiGraphcoreOpset1",
                  "The ai.graphcore opset 1 op builder (Builder.aiGraphcore).");
  c.def("getOpsetVersion", &G::getOpsetVersion);
  c.def("identityloss", &G::identityloss, py::arg("args"),
        py::arg("reduction") = ReductionType::Mean, py::arg("debugContext") = "");
  c.def("nllloss", &G::nllloss, py::arg("args"), py::arg("reduction") = ReductionType::Mean,
        py::arg("ignoreIndex") = py::none(), py::arg("inputIsLogProbability") = false,
        py::arg("debugContext") = "");
  c.def("l1loss", &G::l1loss, py::arg("args"), py::arg("lambda"),
        py::arg("reduction") = ReductionType::Mean, py::arg("debugContext") = "");
#define XTRAIN_UNARY(name)                                                                \
  c.def(                                                                                  \
      #name, [](G& o, const Ids& args, const std::string& d) { return o.name(args, d); }, \
      py::arg("args"), py::arg("debugContext") = "")
  XTRAIN_UNARY(gelu);
  XTRAIN_UNARY(detach);
  XTRAIN_UNARY(nop);
  XTRAIN_UNARY(remainder);
  XTRAIN_UNARY(fmod);
  XTRAIN_UNARY(round);
#undef XTRAIN_UNARY
  c.def("scale", &G::scale, py::arg("args"), py::arg("scale"), py::arg("debugContext") = "");
  c.def("scaledadd", &G::scaledadd, py::arg("args"), py::arg("scale0") = 1.0f,
        py::arg("scale1") = 1.0f, py::arg("debugContext") = "");
  c.def("dynamicslice", &G::dynamicslice, py::arg("args"), py::arg("axes"), py::arg("sizes"),
        py::arg("noOverlap") = 0, py::arg("debugContext") = "");
  c.def("dynamicupdate", &G::dynamicupdate, py::arg("args"), py::arg("axes"), py::arg("sizes"),
        py::arg("noOverlap") = 0, py::arg("debugContext") = "");
  c.def("dynamiczero", &G::dynamiczero, py::arg("args"), py::arg("axes"), py::arg("sizes"),
        py::arg("debugContext") = "");
  c.def("dynamicadd", &G::dynamicadd, py::arg("args"), py::arg("axes"), py::arg("sizes"),
        py::arg("debugContext") = "");
  c.def(
      "init",
      [](G& o, const py::object& shape, int64_t data_type, int64_t init_type, int64_t batch_axis,
         const std::string& d) {
        return o.init(shapeFromPy(shape, "aiGraphcore.init: shape"), data_type, init_type,
                      batch_axis, d);
      },
      py::arg("shape"), py::arg("data_type"), py::arg("init_type"), py::arg("batch_axis"),
      py::arg("debugContext") = "");
  c.def(
      "init",
      [](G& o, const py::object& shape, int64_t data_type, int64_t init_type,
         const std::string& d) {
        return o.init(shapeFromPy(shape, "aiGraphcore.init: shape"), data_type, init_type, d);
      },
      py::arg("shape"), py::arg("data_type"), py::arg("init_type"), py::arg("debugContext") = "");
  c.def(
      "printtensor",
      [](G& o, const Ids& args, int64_t print_gradient, const std::string& d,
         const std::string& title, int summariseThreshold, int edgeItems, int maxLineWidth,
         int digits, int floatFormat, const std::string& separator, const std::string& openBracket,
         const std::string& closeBracket) {
        const auto oneChar = [](const std::string& v, const char* name) {
          if (v.size() != 1) {
            throw py::value_error(std::string("aiGraphcore.printtensor: ") + name + " '" + v +
                                  "' is not one character");
          }
          return v[0];
        };
        return o.printtensor(args, print_gradient, d, title, summariseThreshold, edgeItems,
                             maxLineWidth, digits, floatFormat, oneChar(separator, "separator"),
                             oneChar(openBracket, "openBracket"),
                             oneChar(closeBracket, "closeBracket"));
      },
      py::arg("args"), py::arg("print_gradient") = 1, py::arg("debugContext") = "",
      py::arg("title") = "", py::arg("summariseThreshold") = 1000, py::arg("edgeItems") = 3,
      py::arg("maxLineWidth") = 75, py::arg("digits") = 8, py::arg("floatFormat") = 0,
      py::arg("separator") = " ", py::arg("openBracket") = "[", py::arg("closeBracket") = "]");
  c.def("reverse", &G::reverse, py::arg("args"), py::arg("dimensions"),
        py::arg("debugContext") = "");
  c.def("abort", &G::abort, py::arg("args") = std::vector<TensorId>(),
        py::arg("debugContext") = "");
  c.def("groupnormalization", &G::groupnormalization, py::arg("args"), py::arg("num_groups"),
        py::arg("epsilon") = 1e-05f, py::arg("debugContext") = "");
  c.def(
      "replicatedallreduce",
      [](G& o, const Ids& args, const py::object& op, const py::object& group,
         const std::string& d) {
        const auto cop = collectiveOf(op, "replicatedallreduce");
        return withGroup(group, "replicatedallreduce",
                         [&](const auto& g) { return o.replicatedallreduce(args, cop, g, d); });
      },
      py::arg("args"), py::arg("collectiveOperator") = py::none(),
      py::arg("commGroup") = py::none(), py::arg("debugContext") = "");
  c.def(
      "replicatedreducescatter",
      [](G& o, const Ids& args, const py::object& op, const py::object& group,
         const std::string& d) {
        const auto cop = collectiveOf(op, "replicatedreducescatter");
        return withGroup(group, "replicatedreducescatter",
                         [&](const auto& g) { return o.replicatedreducescatter(args, cop, g, d); });
      },
      py::arg("args"), py::arg("collectiveOperator") = py::none(),
      py::arg("commGroup") = py::none(), py::arg("debugContext") = "");
  c.def(
      "replicatedallgather",
      [](G& o, const Ids& args, const py::object& group, const std::string& d) {
        return withGroup(group, "replicatedallgather",
                         [&](const auto& g) { return o.replicatedallgather(args, g, d); });
      },
      py::arg("args"), py::arg("commGroup") = py::none(), py::arg("debugContext") = "");
  bindAiGraphcoreUnary(c);
  bindAiGraphcoreMisc(c);
  bindAiGraphcoreCtcMultiConv(c);
}

}  // namespace

void bindOpBuilders(py::module_& m) {
  // Enums the op builders take, unless an earlier piece has bound them already.
  if (!py::detail::get_type_info(typeid(ReductionType))) {
    py::enum_<ReductionType>(m, "ReductionType")
        .value("Sum", ReductionType::Sum)
        .value("Mean", ReductionType::Mean)
        .value("NoReduction", ReductionType::NoReduction);
  }
  if (!py::detail::get_type_info(typeid(CollectiveOperator))) {
    py::enum_<CollectiveOperator>(m, "CollectiveOperator")
        .value("Add", CollectiveOperator::Add)
        .value("Mean", CollectiveOperator::Mean)
        .value("Mul", CollectiveOperator::Mul)
        .value("Min", CollectiveOperator::Min)
        .value("Max", CollectiveOperator::Max)
        .value("LogicalAnd", CollectiveOperator::LogicalAnd)
        .value("LogicalOr", CollectiveOperator::LogicalOr)
        .value("SquareAdd", CollectiveOperator::SquareAdd)
        .value("Local", CollectiveOperator::Local);
  }
  if (!py::detail::get_type_info(typeid(InitType))) {
    py::enum_<InitType>(m, "InitType")
        .value("NoInit", InitType::NoInit)
        .value("Zero", InitType::Zero);
  }
  bindAiOnnx11(m);
  bindAiOnnxLaterOpsets(m);
  bindAiGraphcore(m);
  bindReduceRandomOps(m);
}

}  // namespace xtrain::python
