// Builder (popart.Builder), with PopART's names, keyword arguments and defaults; its op builders
// (popart.AiOnnxOpset11..17, popart.AiGraphcoreOpset1) are in builder_ops.cpp. Virtual graphs,
// pipeline stages and execution phases are written on the nodes (the C++ Builder's placement); the
// other attribute annotations the C++ Builder does not have (partials types, ...) are accepted and
// recorded here without effect on the model; docs/python.md ("## Builder") lists them.
#include "xtrain/builder.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "bindings.hpp"
#include "builder_subgraph.hpp"
#include "builder_support.hpp"
#include "numpy_types.hpp"
#include "xtrain/patterns.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

constexpr int kDefaultAiOnnxOpset = 10;  // PopART's defaultAiOnnxOpset
constexpr int kMinAiOnnxOpset = 6;
constexpr int kMaxAiOnnxOpset = 17;

// The Python-side Builder: the C++ Builder plus the state PopART's Python Builder keeps (the chosen
// ai.onnx version) and the annotations accepted without effect.
struct PyBuilder {
  std::unique_ptr<Builder> core;
  // A subgraph Builder (createSubgraphBuilder): owned by its parent's C++ Builder, which `parent`
  // (the parent's Python object) keeps alive.
  Builder* child = nullptr;
  py::object parent;
  int onnxVersion = 0;  // 0: not chosen yet
  // Attribute context managers (virtualGraph(1), pipelineStage(0), ...): name -> stack of values.
  std::map<std::string, std::vector<py::object>> scopes;
  // Per-node annotations (virtualGraph(id, 1), setPartialsType(id, "HALF"), ...):
  // name -> tensor id -> value.
  std::map<std::string, std::map<TensorId, py::object>> nodeAttrs;

  Builder& b() { return child != nullptr ? *child : *core; }

  void checkTensor(const TensorId& id, const std::string& what) const {
    if (!(child != nullptr ? *child : *core).hasTensor(id)) {
      // popart_exception as PopART raises (its message: "... is not an input or output tensor"),
      // and a KeyError.
      const py::object cls = py::module_::import("xtrain._xtrain").attr("unknown_tensor_error");
      PyErr_SetObject(cls.ptr(), cls(what + ": '" + id + "' is not a tensor of this model").ptr());
      throw py::error_already_set();
    }
  }
};

// ---- context managers ----

// `with builder.nameScope("x"):` pushes a name scope on entry and pops it on exit.
struct NameContextManager {
  PyBuilder* builder;
  std::string name;
};

// `with builder.virtualGraph(1):` and the other attribute context managers: recorded on the
// Builder's stacks (getVirtualGraph() reads them), no effect on the model.
struct AttributeContextManager {
  PyBuilder* builder;
  std::string attribute;
  py::object value;
};

py::object current(PyBuilder& b, const std::string& attribute, const char* what) {
  const auto it = b.scopes.find(attribute);
  if (it == b.scopes.end() || it->second.empty()) {
    // PopART's sentence, which programs match on, then ours naming the context manager.
    const char* popartPhrase = attribute == "virtualGraph"    ? "Virtual graph"
                               : attribute == "pipelineStage" ? "Pipeline stage"
                                                              : "Execution phase";
    throw xtrain::error(
        "{} not set in current scope. Builder.{}: no {} context is active (enter "
        "one with 'with builder.{}(value):')",
        popartPhrase, what, attribute, attribute);
  }
  return it->second.back();
}

bool has(PyBuilder& b, const std::string& attribute) {
  const auto it = b.scopes.find(attribute);
  return it != b.scopes.end() && !it->second.empty();
}

// The attribute scopes that write an ONNX node attribute on every node created inside them, as
// PopART's do (docs/model-parallelism.md): the innermost value is the C++ Builder's scope.
const char* nodeAttributeOfScope(const std::string& attribute) {
  if (attribute == "virtualGraph") return "__ipu_number";
  if (attribute == "pipelineStage") return "__pipeline_stage";
  if (attribute == "executionPhase") return "__execution_phase";
  if (attribute == "recomputeOutput") return "__recompute_output_in_backward_pass";
  return nullptr;
}

void syncNodeAttributeScope(PyBuilder& b, const std::string& attribute) {
  const char* name = nodeAttributeOfScope(attribute);
  if (name == nullptr) return;
  if (b.b().hasAttribute(name)) b.b().clearAttribute(name);
  const auto& stack = b.scopes[attribute];
  if (!stack.empty()) b.b().setAttribute(name, stack.back().cast<int64_t>());
}

AttributeContextManager attributeScope(PyBuilder& b, const std::string& attribute,
                                       py::object value) {
  return AttributeContextManager{&b, attribute, std::move(value)};
}

// The tensor ids of a nodeOutputNames argument: a str, or a set or list of str.
std::vector<TensorId> outputNames(PyBuilder& b, const py::object& names, const std::string& what) {
  std::vector<TensorId> ids;
  if (py::isinstance<py::str>(names)) {
    ids.push_back(names.cast<std::string>());
  } else if (py::isinstance<py::set>(names) || py::isinstance<py::list>(names) ||
             py::isinstance<py::tuple>(names) || py::isinstance<py::frozenset>(names)) {
    for (py::handle h : names) {
      if (!py::isinstance<py::str>(h)) {
        throw py::type_error(what + ": nodeOutputNames holds " + reprOf(h) +
                             ", which is not a tensor id (str)");
      }
      ids.push_back(h.cast<std::string>());
    }
  } else {
    throw py::type_error(what + ": nodeOutputNames " + reprOf(names) +
                         " is not a tensor id or a set of tensor ids");
  }
  for (const auto& id : ids) b.checkTensor(id, what);
  return ids;
}

void setNodeAttr(PyBuilder& b, const std::string& attribute, const py::object& names,
                 const py::object& value, const std::string& what) {
  for (const auto& id : outputNames(b, names, what)) b.nodeAttrs[attribute][id] = value;
}

py::object getNodeAttr(PyBuilder& b, const std::string& attribute, const py::object& names,
                       const std::string& what) {
  const auto ids = outputNames(b, names, what);
  const auto& attrs = b.nodeAttrs[attribute];
  for (const auto& id : ids) {
    const auto it = attrs.find(id);
    if (it != attrs.end()) return it->second;
  }
  throw py::key_error(what + ": no " + attribute + " was set for " + reprOf(names));
}

// setSerializeMatMul writes PopART's node attributes into the model, as PopART's Builder does:
// the MatMul checks the factor against its shapes when the session is made (matmul_ops.cpp); the
// serialisation itself has no effect here (docs/python.md).
void writeSerializeMatMul(PyBuilder& b, const py::object& names, const std::string& mode,
                          int64_t factor, bool keepPrecision) {
  const auto ids = outputNames(b, names, "Builder.setSerializeMatMul");
  const std::set<TensorId> set(ids.begin(), ids.end());
  const std::pair<const char*, std::variant<std::string, int64_t>> attrs[] = {
      {"__serialize_matmul_mode", mode},
      {"__serialize_matmul_factor", factor},
      {"__serialize_matmul_precision", int64_t{keepPrecision ? 1 : 0}}};
  for (const auto& [name, value] : attrs) {
    if (b.b().nodeHasAttribute(name, set)) b.b().removeNodeAttribute(name, set);
    std::visit([&](const auto& v) { b.b().addNodeAttribute(name, v, set); }, value);
  }
}

// setPartialsType writes PopART's node attribute into the model: a FLOAT16 MatMul honours it
// (device/kernels/matmul_half_partials.hpp); a Conv keeps it without effect (docs/python.md).
void writePartialsType(PyBuilder& b, const TensorId& nodeOutputName, const std::string& type) {
  const std::set<TensorId> node{nodeOutputName};
  if (b.b().nodeHasAttribute("__partials_type", node)) {
    b.b().removeNodeAttribute("__partials_type", node);
  }
  b.b().addNodeAttribute("__partials_type", type, node);
}

// ---- the Builder ----

// Selects the ai.onnx version of the model (PopART: the first opset asked for, or the opsets
// argument). Returns the op builder.
py::object onnxOpset(PyBuilder& b, int version) {
  if (version < kMinAiOnnxOpset || version > kMaxAiOnnxOpset) {
    throw py::value_error("Builder: ai.onnx opset " + std::to_string(version) +
                          " is not supported (xtrain has opsets " +
                          std::to_string(kMinAiOnnxOpset) + " to " +
                          std::to_string(kMaxAiOnnxOpset) + ")");
  }
  if (b.onnxVersion != 0 && b.onnxVersion != version) {
    // PopART's class and words (its tests compare them).
    PyErr_SetString(
        PyExc_RuntimeError,
        ("Invalid opset 'aiOnnxOpset" + std::to_string(version) +
         "' selected. Opset for domain ai.onnx already defined as " + std::to_string(b.onnxVersion))
            .c_str());
    throw py::error_already_set();
  }
  py::object ops;
  switch (version) {
    case 6: ops = py::cast(b.b().aiOnnxOpset6()); break;
    case 7: ops = py::cast(b.b().aiOnnxOpset7()); break;
    case 8: ops = py::cast(b.b().aiOnnxOpset8()); break;
    case 9: ops = py::cast(b.b().aiOnnxOpset9()); break;
    case 10: ops = py::cast(b.b().aiOnnxOpset10()); break;
    case 11: ops = py::cast(b.b().aiOnnxOpset11()); break;
    case 12: ops = py::cast(b.b().aiOnnxOpset12()); break;
    case 13: ops = py::cast(b.b().aiOnnxOpset13()); break;
    case 14: ops = py::cast(b.b().aiOnnxOpset14()); break;
    case 15: ops = py::cast(b.b().aiOnnxOpset15()); break;
    case 16: ops = py::cast(b.b().aiOnnxOpset16()); break;
    default: ops = py::cast(b.b().aiOnnxOpset17()); break;
  }
  b.onnxVersion = version;
  return ops;
}

// Builder.aiOnnx: the chosen version; else, for a model given to the constructor, its version;
// else PopART's default (10).
py::object defaultOnnxOpset(PyBuilder& b) {
  if (b.onnxVersion != 0) return onnxOpset(b, b.onnxVersion);
  try {
    return onnxOpset(b, kDefaultAiOnnxOpset);
  } catch (const std::exception&) {
    for (int v = kMinAiOnnxOpset; v <= kMaxAiOnnxOpset; ++v) {
      try {
        return onnxOpset(b, v);
      } catch (const std::exception&) {
      }
    }
    throw;
  }
}

std::unique_ptr<PyBuilder> makeBuilder(const py::object& modelProtoOrFilename,
                                       const py::object& opsets, const py::object& builderCore) {
  if (!builderCore.is_none()) notImplemented("Builder(builderCore=...) (subgraph builders)");
  auto b = std::make_unique<PyBuilder>();
  if (modelProtoOrFilename.is_none()) {
    b->core = Builder::create();
  } else if (py::isinstance<py::bytes>(modelProtoOrFilename) ||
             py::isinstance<py::str>(modelProtoOrFilename)) {
    b->core = Builder::createFromOnnxModel(modelProtoOrFilename.cast<std::string>());
  } else if (py::hasattr(modelProtoOrFilename, "__fspath__")) {
    b->core = Builder::createFromOnnxModel(
        py::str(modelProtoOrFilename.attr("__fspath__")()).cast<std::string>());
  } else {
    throw py::type_error("Builder: modelProtoOrFilename " +
                         reprOf(py::type::of(modelProtoOrFilename)) +
                         " is not a file name (str) or a serialized ModelProto (bytes)");
  }
  if (!opsets.is_none()) {
    if (!py::isinstance<py::dict>(opsets)) {
      throw py::type_error("Builder: opsets " + reprOf(opsets) +
                           " is not a dict such as {\"ai.onnx\": 13, \"ai.graphcore\": 1}");
    }
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(opsets)) {
      const auto domain = py::str(k).cast<std::string>();
      if (!py::isinstance<py::int_>(v)) {
        throw py::type_error("Builder: opsets['" + domain + "'] " + reprOf(v) + " is not an int");
      }
      const int version = v.cast<int>();
      if (domain == "ai.onnx") {
        onnxOpset(*b, version);
      } else if (domain == "ai.onnx.ml") {
        // PopART's tests name it; xtrain has no ai.onnx.ml op, so nothing records it.
      } else if (domain == "ai.graphcore") {
        if (version != 1) {
          throw py::value_error("Builder: ai.graphcore opset " + std::to_string(version) +
                                " is not supported (xtrain has opset 1)");
        }
      } else {
        throw py::value_error("Builder: unknown opset domain '" + domain +
                              "' (expected \"ai.onnx\", \"ai.onnx.ml\" or \"ai.graphcore\")");
      }
    }
  }
  return b;
}

TensorId addInput(PyBuilder& b, const TensorInfo& info,
                  const std::optional<InputSettings>& settings, const std::string& debugContext) {
  if (!info.isSet()) {
    throw py::value_error("Builder.addInputTensor: the TensorInfo has no data type");
  }
  return settings ? b.b().addInputTensor(info, *settings, debugContext)
                  : b.b().addInputTensor(info, debugContext);
}

CustomOpAttribute customAttribute(const std::string& name, py::handle v) {
  const std::string what = "Builder.customOp: attribute '" + name + "'";
  if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<float>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    const auto seq = py::reinterpret_borrow<py::sequence>(v);
    bool allInt = true, allNumber = true, allStr = true;
    for (py::handle e : seq) {
      const bool isInt = py::isinstance<py::int_>(e);
      allInt = allInt && isInt;
      allNumber = allNumber && (isInt || py::isinstance<py::float_>(e));
      allStr = allStr && py::isinstance<py::str>(e);
    }
    if (allInt) return seq.cast<std::vector<int64_t>>();
    if (allNumber) return seq.cast<std::vector<float>>();
    if (allStr) return seq.cast<std::vector<std::string>>();
  }
  throw py::type_error(what + " = " + reprOf(v) +
                       " is not an int, a float, a str or a list of one of them");
}

// The context managers that Builder.nameScope and the attribute scopes return.
void bindContextManagers(py::module_& m) {
  py::class_<NameContextManager>(m, "NameContextManager")
      .def("__enter__",
           [](py::object self) {
             auto& c = self.cast<NameContextManager&>();
             c.builder->b().pushNameScope(c.name);
             return self;
           })
      .def("__exit__", [](NameContextManager& c, const py::args&) {
        c.builder->b().popNameScope();
        return false;
      });
  py::class_<AttributeContextManager>(m, "AttributeContextManager")
      .def("__enter__",
           [](py::object self) {
             auto& c = self.cast<AttributeContextManager&>();
             c.builder->scopes[c.attribute].push_back(c.value);
             syncNodeAttributeScope(*c.builder, c.attribute);
             return self;
           })
      .def("__exit__", [](AttributeContextManager& c, const py::args&) {
        auto& stack = c.builder->scopes[c.attribute];
        if (!stack.empty()) stack.pop_back();
        syncNodeAttributeScope(*c.builder, c.attribute);
        return false;
      });
}

// Op builders (kept alive with their Builder).
void bindOpsetProperties(py::class_<PyBuilder>& c) {
  c.def_property_readonly("aiOnnx", py::cpp_function(&defaultOnnxOpset, py::keep_alive<0, 1>()));
  for (int v = kMinAiOnnxOpset; v <= kMaxAiOnnxOpset; ++v) {
    c.def_property_readonly(
        ("aiOnnxOpset" + std::to_string(v)).c_str(),
        py::cpp_function([v](PyBuilder& b) { return onnxOpset(b, v); }, py::keep_alive<0, 1>()));
  }
  c.def(
      "aiOnnxOpsetVersion", [](PyBuilder& b, int version) { onnxOpset(b, version); },
      py::arg("version"));
  const auto graphcore = py::cpp_function([](PyBuilder& b) { return b.b().aiGraphcoreOpset1(); },
                                          py::keep_alive<0, 1>());
  c.def_property_readonly("aiGraphcore", graphcore);
  c.def_property_readonly("aiGraphcoreOpset1", graphcore);
}

// Inputs, initializers, outputs and custom ops.
void bindInputsAndOutputs(py::class_<PyBuilder>& c) {
  c.def(
      "addInputTensor",
      [](PyBuilder& b, const TensorInfo& tensorInfo, const std::string& debugContext) {
        return addInput(b, tensorInfo, std::nullopt, debugContext);
      },
      py::arg("tensorInfo"), py::arg("debugContext") = "");
  c.def(
      "addInputTensor",
      [](PyBuilder& b, const TensorInfo& tensorInfo, const InputSettings& settings,
         const std::string& debugContext) {
        return addInput(b, tensorInfo, settings, debugContext);
      },
      py::arg("tensorInfo"), py::arg("settings") = InputSettings(), py::arg("debugContext") = "");
  c.def(
      "addInputTensor",
      [](PyBuilder& b, const py::object& dataType, const py::object& shape,
         const std::string& debugContext) {
        const TensorInfo info(dataTypeFromPy(dataType, "Builder.addInputTensor: dataType"),
                              shapeFromPy(shape, "Builder.addInputTensor: shape"));
        return addInput(b, info, std::nullopt, debugContext);
      },
      py::arg("dataType"), py::arg("shape"), py::arg("debugContext") = "");
  c.def(
      "addInputTensor",
      [](PyBuilder& b, const py::object& dataType, const py::object& shape,
         const InputSettings& settings, const std::string& debugContext) {
        const TensorInfo info(dataTypeFromPy(dataType, "Builder.addInputTensor: dataType"),
                              shapeFromPy(shape, "Builder.addInputTensor: shape"));
        return addInput(b, info, settings, debugContext);
      },
      py::arg("dataType"), py::arg("shape"), py::arg("settings") = InputSettings(),
      py::arg("debugContext") = "");
  c.def(
      "addInitializedInputTensor",
      [](PyBuilder& b, const py::object& initVal, const std::string& debugContext) {
        py::object keep;
        return b.b().addInitializedInputTensor(
            arrayData(initVal, "Builder.addInitializedInputTensor: initVal", keep), debugContext);
      },
      py::arg("initVal"), py::arg("debugContext") = "");
  c.def(
      "addInitializedInputTensor",
      [](PyBuilder& b, const py::object& initVal, const VariableSettings& variableSettings,
         const std::string& debugContext) {
        py::object keep;
        return b.b().addInitializedInputTensor(
            arrayData(initVal, "Builder.addInitializedInputTensor: initVal", keep),
            variableSettings, debugContext);
      },
      py::arg("initVal"), py::arg("variableSettings"), py::arg("debugContext") = "");
  c.def(
      "addOutputTensor", [](PyBuilder& b, const TensorId& id) { b.b().addOutputTensor(id); },
      py::arg("outputName"));
  c.def(
      "customOp",
      [](PyBuilder& b, const std::string& opName, int opVersion, const std::string& domain,
         const std::vector<TensorId>& inputs, const py::dict& attributes, unsigned numOutputs,
         const std::string& name) {
        std::map<std::string, any> attrs;
        for (auto [k, v] : attributes) {
          const auto key = py::str(k).cast<std::string>();
          attrs.emplace(
              key, std::visit([](auto x) { return any(std::move(x)); }, customAttribute(key, v)));
        }
        return b.b().customOp(opName, opVersion, domain, inputs, attrs, numOutputs, name);
      },
      py::arg("opName"), py::arg("opVersion"), py::arg("domain"), py::arg("inputs"),
      py::arg("attributes"), py::arg("numOutputs") = 1, py::arg("name") = "");
  c.def(
      "reshape_const",
      [](PyBuilder& b, const py::object& aiOnnx, const std::vector<TensorId>& args,
         const py::object& shape, const std::string& debugContext) {
        if (args.empty()) {
          throw py::value_error("Builder.reshape_const: args is empty (expected [tensor id])");
        }
        // A shape of numbers with integral values (PopART's tests pass 4.0 from a division).
        auto np = py::module_::import("numpy");
        const py::object given = np.attr("array")(shape);
        const py::object asInt = given.attr("astype")(np.attr("int64"));
        if (given.attr("ndim").cast<int>() != 1 ||
            !np.attr("array_equal")(given, asInt).cast<bool>()) {
          throw py::value_error("Builder.reshape_const: shape " + reprOf(shape) +
                                " is not a list of integers");
        }
        const py::object newShape = aiOnnx.attr("constant")(asInt, debugContext + "_const");
        return aiOnnx.attr("reshape")(py::make_tuple(args[0], newShape), debugContext);
      },
      py::arg("aiOnnx"), py::arg("args"), py::arg("shape"), py::arg("debugContext") = "");
}

// The model and its tensors.
void bindModelQueries(py::class_<PyBuilder>& c) {
  c.def("getModelProto", [](PyBuilder& b) { return py::bytes(b.b().getModelProto()); });
  c.def(
      "saveModelProto",
      [](PyBuilder& b, const std::string& filename) { b.b().saveModelProto(filename); },
      py::arg("filename"));
  c.def("getInputTensorIds", [](PyBuilder& b) { return b.b().getInputTensorIds(); });
  c.def("getOutputTensorIds", [](PyBuilder& b) { return b.b().getOutputTensorIds(); });
  c.def("getTrainableTensorIds", [](PyBuilder& b) { return b.b().getTrainableTensorIds(); });
  c.def("getValueTensorIds", [](PyBuilder& b) { return b.b().getValueTensorIds(); });
  c.def(
      "isInitializer", [](PyBuilder& b, const TensorId& id) { return b.b().isInitializer(id); },
      py::arg("id"));
  c.def(
      "getTensorShape",
      [](PyBuilder& b, const TensorId& id) {
        b.checkTensor(id, "Builder.getTensorShape");
        return b.b().getTensorShape(id);
      },
      py::arg("id"));
  c.def(
      "getTensorDtypeString",
      [](PyBuilder& b, const TensorId& id) {
        b.checkTensor(id, "Builder.getTensorDtypeString");
        return dataTypeLowerName(b.b().getTensorDataType(id));
      },
      py::arg("id"));
  c.def(
      "getTensorInfo",
      [](PyBuilder& b, const TensorId& id) {
        b.checkTensor(id, "Builder.getTensorInfo");
        return b.b().getTensorInfo(id);
      },
      py::arg("id"));
  c.def(
      "hasTensor", [](PyBuilder& b, const TensorId& id) { return b.b().hasTensor(id); },
      py::arg("id"));
  c.def(
      "setGraphName", [](PyBuilder& b, const std::string& name) { b.b().setGraphName(name); },
      py::arg("name"));
  c.def(
      "embedReplicationFactor",
      [](PyBuilder& b, int replicationFactor) { b.b().embedReplicationFactor(replicationFactor); },
      py::arg("replicationFactor"));
  c.def(
      "setMetadata",
      [](PyBuilder& b, const std::string& key, const std::string& value) {
        b.b().setMetadata(key, value);
      },
      py::arg("key"), py::arg("value"));
}

// Name scopes.
void bindNameScopes(py::class_<PyBuilder>& c) {
  c.def(
      "nameScope",
      [](PyBuilder& b, const std::string& name) {
        if (name.empty()) throw py::value_error("Builder.nameScope: the name must not be empty");
        return NameContextManager{&b, name};
      },
      py::arg("name"), py::keep_alive<0, 1>());
  c.def(
      "getNameScope",
      [](PyBuilder& b, const std::string& name) { return b.b().getNameScope(name); },
      py::arg("name") = "");
}

// Placement annotations (virtualGraph, pipelineStage, executionPhase: written on the ONNX nodes,
// docs/model-parallelism.md) and the annotations without effect (docs/python.md "## Builder"):
// context managers, per-node setters and their getters.
void bindAttributeScopes(py::class_<PyBuilder>& c) {
  struct ScopedAttr {
    const char* method;     // virtualGraph
    const char* attribute;  // the key of the stacks and the node map
    const char* getter;     // getVirtualGraph
    const char* hasser;     // hasVirtualGraph
  };
  for (const ScopedAttr& a :
       {ScopedAttr{"virtualGraph", "virtualGraph", "getVirtualGraph", "hasVirtualGraph"},
        ScopedAttr{"pipelineStage", "pipelineStage", "getPipelineStage", "hasPipelineStage"},
        ScopedAttr{"executionPhase", "executionPhase", "getExecutionPhase", "hasExecutionPhase"}}) {
    const std::string attribute = a.attribute;
    const std::string method = std::string("Builder.") + a.method;
    // Context manager: with virtualGraph(value):
    // (PopART's executionPhase(value=0) has a default; virtualGraph and pipelineStage do not.)
    const auto scope = [attribute](PyBuilder& b, int64_t value) {
      return attributeScope(b, attribute, py::int_(value));
    };
    if (attribute == "executionPhase") {
      c.def(a.method, scope, py::arg("value") = 0, py::keep_alive<0, 1>());
    } else {
      c.def(a.method, scope, py::arg("value"), py::keep_alive<0, 1>());
    }
    // Per node: virtualGraph(nodeOutputNames, value=0), written on the node as the C++ Builder
    // writes it (__ipu_number, __pipeline_stage, __execution_phase).
    c.def(
        a.method,
        [attribute, method](PyBuilder& b, const py::object& nodeOutputNames, int64_t value) {
          if (py::isinstance<py::int_>(nodeOutputNames)) {
            throw py::type_error(method + ": nodeOutputNames is an int");
          }
          const auto ids = outputNames(b, nodeOutputNames, method);
          const std::set<TensorId> names(ids.begin(), ids.end());
          if (attribute == "virtualGraph") b.b().virtualGraph(names, value);
          if (attribute == "pipelineStage") b.b().pipelineStage(names, value);
          if (attribute == "executionPhase") b.b().executionPhase(names, value);
        },
        py::arg("nodeOutputNames"), py::arg("value") = 0);
    const std::string getter = a.getter;
    c.def(a.getter, [attribute, getter](PyBuilder& b) {
      return current(b, attribute, getter.c_str()).cast<int64_t>();
    });
    c.def(
        a.getter,
        [attribute, getter](PyBuilder& b, const py::object& nodeOutputNames) {
          const auto ids = outputNames(b, nodeOutputNames, "Builder." + getter);
          const std::set<TensorId> names(ids.begin(), ids.end());
          if (attribute == "virtualGraph") return b.b().getVirtualGraph(names);
          if (attribute == "pipelineStage") return b.b().getPipelineStage(names);
          return b.b().getExecutionPhase(names);
        },
        py::arg("nodeOutputNames"));
    c.def(a.hasser, [attribute](PyBuilder& b) { return has(b, attribute); });
  }
  c.def(
      "schedulePriority",
      [](PyBuilder& b, float value) {
        return attributeScope(b, "schedulePriority", py::float_(value));
      },
      py::arg("value"), py::keep_alive<0, 1>());
  c.def(
      "outlineAttributes",
      [](PyBuilder& b, const py::dict& attrs) {
        return attributeScope(b, "outlineAttributes", attrs);
      },
      py::arg("arg0"), py::keep_alive<0, 1>());
  c.def(
      "commGroup",
      [](PyBuilder& b, int64_t type, int64_t groupSize) {
        return attributeScope(b, "commGroup", py::make_tuple(type, groupSize));
      },
      py::arg("type") = 0, py::arg("groupSize") = 0, py::keep_alive<0, 1>());
}

// Per-node settings recorded on the outputs they name (docs/python.md "## Builder").
void bindNodeSettings(py::class_<PyBuilder>& c) {
  // Recomputation marks: node attributes, as the C++ Builder writes them (xtrain/builder.hpp).
  c.def(
      "recomputeOutputInBackwardPass",
      [](PyBuilder& b, const py::object& nodeOutputNames, RecomputeType value) {
        const auto ids = outputNames(b, nodeOutputNames, "Builder.recomputeOutputInBackwardPass");
        b.b().recomputeOutputInBackwardPass(std::set<TensorId>(ids.begin(), ids.end()), value);
      },
      py::arg("nodeOutputNames"), py::arg("value") = RecomputeType::Recompute);
  c.def(
      "getRecomputeOutputInBackwardPass",
      [](PyBuilder& b, const py::object& nodeOutputNames) {
        const auto ids =
            outputNames(b, nodeOutputNames, "Builder.getRecomputeOutputInBackwardPass");
        return b.b().getRecomputeOutputInBackwardPass(std::set<TensorId>(ids.begin(), ids.end()));
      },
      py::arg("nodeOutputNames"));
  c.def(
      "checkpointOutput",
      [](PyBuilder& b, const std::vector<TensorId>& nodeOutputNames) {
        return b.b().checkpointOutput(nodeOutputNames);
      },
      py::arg("nodeOutputNames"));
  // `with builder.recomputeOutput(RecomputeType.Recompute):` marks every node made inside it.
  c.def(
      "recomputeOutput",
      [](PyBuilder& b, RecomputeType value) {
        return attributeScope(b, "recomputeOutput", py::int_(static_cast<int64_t>(value)));
      },
      py::arg("value"), py::keep_alive<0, 1>());
  c.def(
      "setAvailableMemoryProportion",
      [](PyBuilder& b, const py::object& nodeOutputNames, float availableMemoryProportion) {
        if (!(availableMemoryProportion > 0.0f && availableMemoryProportion <= 1.0f)) {
          throw py::value_error("Builder.setAvailableMemoryProportion: availableMemoryProportion " +
                                std::to_string(availableMemoryProportion) + " is not in (0, 1]");
        }
        setNodeAttr(b, "availableMemoryProportion", nodeOutputNames,
                    py::float_(availableMemoryProportion), "Builder.setAvailableMemoryProportion");
      },
      py::arg("nodeOutputNames"), py::arg("availableMemoryProportion"));
  c.def(
      "setPartialsType",
      [](PyBuilder& b, const TensorId& nodeOutputName, const std::string& partialsType) {
        if (partialsType != "FLOAT" && partialsType != "HALF" && partialsType != "float" &&
            partialsType != "half") {
          throw py::value_error("Builder.setPartialsType: partialsType '" + partialsType +
                                "' is not FLOAT or HALF");
        }
        setNodeAttr(b, "partialsType", py::str(nodeOutputName), py::str(partialsType),
                    "Builder.setPartialsType");
        writePartialsType(b, nodeOutputName, partialsType);
      },
      py::arg("nodeOutputName"), py::arg("partialsType"));
  c.def(
      "getPartialsType",
      [](PyBuilder& b, const TensorId& nodeOutputName) {
        return getNodeAttr(b, "partialsType", py::str(nodeOutputName), "Builder.getPartialsType")
            .cast<std::string>();
      },
      py::arg("nodeOutputName"));
  c.def(
      "setSerializeMatMul",
      [](PyBuilder& b, const py::object& nodeOutputName, const std::string& mode, int64_t factor,
         bool keep_precision) {
        if (mode != "none" && mode != "input_channels" && mode != "reducing_dim" &&
            mode != "output_channels") {
          // PopART's exception and sentence first (its programs compare them), then ours.
          throw xtrain::error(
              "Unsupported mat mul serialization mode '{}'. Supported modes are "
              "'input_channels', 'reducing_dim', 'output_channels' or 'none' "
              "(Builder.setSerializeMatMul, output {})",
              mode, reprOf(nodeOutputName));
        }
        setNodeAttr(b, "serializeMatMul", nodeOutputName,
                    py::make_tuple(mode, factor, keep_precision), "Builder.setSerializeMatMul");
        if (mode != "none") writeSerializeMatMul(b, nodeOutputName, mode, factor, keep_precision);
      },
      py::arg("nodeOutputName"), py::arg("mode"), py::arg("factor") = 0,
      py::arg("keep_precision") = false);
  c.def(
      "setEnableConvDithering",
      [](PyBuilder& b, const TensorId& nodeOutputName, int64_t value) {
        b.checkTensor(nodeOutputName, "Builder.setEnableConvDithering");
        b.b().setEnableConvDithering(nodeOutputName, value);  // refuses a non-Conv, a non-bool
        setNodeAttr(b, "enableConvDithering", py::str(nodeOutputName), py::int_(value),
                    "Builder.setEnableConvDithering");
      },
      py::arg("nodeOutputName"), py::arg("enableConvDithering"));
  c.def(
      "setInplacePreferences",
      [](PyBuilder& b, const TensorId& nodeOutputName, const std::map<std::string, float>& prefs) {
        setNodeAttr(b, "inplacePreferences", py::str(nodeOutputName), py::cast(prefs),
                    "Builder.setInplacePreferences");
      },
      py::arg("nodeOutputName"), py::arg("prefs"));
  c.def(
      "excludePatterns",
      [](PyBuilder& b, const TensorId& nodeOutputName, const std::vector<std::string>& names) {
        // PopART checks the names when it makes the op; they are checked here, when given.
        const std::vector<std::string> known = Patterns::getAllPreAliasPatternNames();
        for (const auto& name : names) {
          if (name == "InPlace" || name == "UpdateInplacePrioritiesForIpu" ||
              std::find(known.begin(), known.end(), name) != known.end()) {
            continue;
          }
          throw error(
              "Invalid pattern name '{}' in Op::excludePatterns (Builder.excludePatterns for "
              "'{}': not a pattern name; Patterns.getAllPreAliasPatternNames() lists them)",
              name, nodeOutputName);
        }
        setNodeAttr(b, "excludePatterns", py::str(nodeOutputName), py::cast(names),
                    "Builder.excludePatterns");
      },
      py::arg("nodeOutputName"), py::arg("patternNames"));
}

// Subgraphs: child Builders for call, logical_if, loop and scan (builder_ops_subgraph.cpp binds
// those ops).
void bindSubgraphs(py::class_<PyBuilder>& c) {
  c.def("createSubgraphBuilder", [](py::object self) {
    PyBuilder& b = self.cast<PyBuilder&>();
    auto child = std::make_unique<PyBuilder>();
    child->child = &b.b().createSubgraphBuilder();
    child->parent = self;
    child->onnxVersion = b.onnxVersion;
    return child;
  });
  c.def(
      "addInputTensorFromParentGraph",
      [](PyBuilder& b, const std::string& tensorId) {
        b.b().addInputTensorFromParentGraph(tensorId);
      },
      py::arg("tensorId"));
  c.def(
      "addUntypedInputTensor",
      [](PyBuilder& b, const std::string& debugContext) {
        return b.b().addUntypedInputTensor(debugContext);
      },
      py::arg("debugContext") = "");
}

}  // namespace

Builder& coreBuilderOf(py::handle builder, const std::string& what) {
  try {
    return builder.cast<PyBuilder&>().b();
  } catch (const py::cast_error&) {
    throw py::type_error(what + ": " + reprOf(py::type::of(builder)) +
                         " is not a Builder (expected one from Builder.createSubgraphBuilder())");
  }
}

void bindBuilder(py::module_& m) {
  m.attr("defaultAiOnnxOpset") = kDefaultAiOnnxOpset;
  m.attr("defaultAiGraphcoreOpset") = 1;

  bindOpBuilders(m);
  bindLegacyOpBuilders(m);
  bindContextManagers(m);
  py::class_<PyBuilder> c(m, "Builder",
                          "Builds an ONNX model: Builder(), Builder(\"model.onnx\") or "
                          "Builder(modelProtoBytes).");
  c.def(py::init(&makeBuilder), py::arg("modelProtoOrFilename") = py::none(),
        py::arg("opsets") = py::none(), py::arg("builderCore") = py::none());
  bindOpsetProperties(c);
  bindInputsAndOutputs(c);
  bindModelQueries(c);
  bindNameScopes(c);
  bindAttributeScopes(c);
  bindNodeSettings(c);
  bindSubgraphs(c);
  bindSubgraphOps(m);
  bindNodeAttributes(c, [](py::handle h) -> Builder& { return h.cast<PyBuilder&>().b(); });
}

}  // namespace xtrain::python
