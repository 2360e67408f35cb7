// Builder.addNodeAttribute, get{Int64,Int64Vector,Float,FloatVector,String,StringVector}
// NodeAttribute, nodeHasAttribute, removeNodeAttribute and getAllNodeAttributeNames, with
// PopART's names and keyword arguments, over the C++ Builder's node attribute API.
#include <pybind11/stl.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "builder_support.hpp"
#include "xtrain/builder.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

// nodeOutputNames: a set (PopART's type), or a list or tuple, of tensor ids; or one id.
std::set<TensorId> outputSet(const py::handle& names, const char* method) {
  std::set<TensorId> ids;
  if (py::isinstance<py::str>(names)) {
    ids.insert(names.cast<std::string>());
    return ids;
  }
  if (!py::isinstance<py::set>(names) && !py::isinstance<py::frozenset>(names) &&
      !py::isinstance<py::list>(names) && !py::isinstance<py::tuple>(names)) {
    throw py::type_error(std::string("Builder.") + method + ": nodeOutputNames " + reprOf(names) +
                         " is not a set of tensor ids");
  }
  for (py::handle h : names) {
    if (!py::isinstance<py::str>(h)) {
      throw py::type_error(std::string("Builder.") + method + ": nodeOutputNames holds " +
                           reprOf(h) + ", which is not a tensor id (str)");
    }
    ids.insert(h.cast<std::string>());
  }
  return ids;
}

// Adds `value` as the attribute type its Python type says: bool and int an INT, float a FLOAT, str
// a STRING, and a list or tuple of one of them the vector kind (ints and floats mixed: FLOATS).
void addAttribute(Builder& b, const std::string& name, const py::handle& v,
                  const std::set<TensorId>& ids) {
  if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v)) {
    return b.addNodeAttribute(name, v.cast<int64_t>(), ids);
  }
  if (py::isinstance<py::float_>(v)) return b.addNodeAttribute(name, v.cast<float>(), ids);
  if (py::isinstance<py::str>(v)) return b.addNodeAttribute(name, v.cast<std::string>(), ids);
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    const auto seq = py::reinterpret_borrow<py::sequence>(v);
    bool allInt = true, allNumber = true, allStr = true;
    for (py::handle e : seq) {
      const bool isInt = py::isinstance<py::int_>(e);
      allInt = allInt && isInt;
      allNumber = allNumber && (isInt || py::isinstance<py::float_>(e));
      allStr = allStr && py::isinstance<py::str>(e);
    }
    if (allInt) return b.addNodeAttribute(name, seq.cast<std::vector<int64_t>>(), ids);
    if (allNumber) return b.addNodeAttribute(name, seq.cast<std::vector<float>>(), ids);
    if (allStr) return b.addNodeAttribute(name, seq.cast<std::vector<std::string>>(), ids);
  }
  throw py::type_error("Builder.addNodeAttribute: attributeValue " + reprOf(v) +
                       " is not an int, a float, a str or a list of one of them");
}

}  // namespace

void bindNodeAttributes(py::object cls, const std::function<Builder&(py::handle)>& core) {
  auto method = [&cls](const char* name, py::cpp_function f) { py::setattr(cls, name, f); };
  method("addNodeAttribute",
         py::cpp_function(
             [core](py::handle self, const std::string& attributeName,
                    const py::object& attributeValue, const py::object& nodeOutputNames) {
               addAttribute(core(self), attributeName, attributeValue,
                            outputSet(nodeOutputNames, "addNodeAttribute"));
             },
             py::name("addNodeAttribute"), py::is_method(cls), py::arg("attributeName"),
             py::arg("attributeValue"), py::arg("nodeOutputNames")));
#define XTRAIN_NODE_QUERY(fn)                                                             \
  method(#fn, py::cpp_function(                                                           \
                  [core](py::handle self, const std::string& attributeName,               \
                         const py::object& nodeOutputNames) {                             \
                    return core(self).fn(attributeName, outputSet(nodeOutputNames, #fn)); \
                  },                                                                      \
                  py::name(#fn), py::is_method(cls), py::arg("attributeName"),            \
                  py::arg("nodeOutputNames")))
  XTRAIN_NODE_QUERY(nodeHasAttribute);
  XTRAIN_NODE_QUERY(getInt64NodeAttribute);
  XTRAIN_NODE_QUERY(getInt64VectorNodeAttribute);
  XTRAIN_NODE_QUERY(getFloatNodeAttribute);
  XTRAIN_NODE_QUERY(getFloatVectorNodeAttribute);
  XTRAIN_NODE_QUERY(getStringNodeAttribute);
  XTRAIN_NODE_QUERY(getStringVectorNodeAttribute);
  XTRAIN_NODE_QUERY(getBoolNodeAttribute);
  XTRAIN_NODE_QUERY(removeNodeAttribute);
#undef XTRAIN_NODE_QUERY
  method(
      "saveInitializersExternally",
      py::cpp_function(
          [core](py::handle self, const std::vector<TensorId>& ids, const std::string& filename) {
            core(self).saveInitializersExternally(ids, filename);
          },
          py::name("saveInitializersExternally"), py::is_method(cls), py::arg("ids"),
          py::arg("filename")));
  method("getAllNodeAttributeNames",
         py::cpp_function(
             [core](py::handle self, const py::object& nodeOutputNames) {
               return core(self).getAllNodeAttributeNames(
                   outputSet(nodeOutputNames, "getAllNodeAttributeNames"));
             },
             py::name("getAllNodeAttributeNames"), py::is_method(cls), py::arg("nodeOutputNames")));
}

}  // namespace xtrain::python
