// AnchorReturnTypeId, AnchorReturnType, DataFlow, InputShapeInfo, ReplicatedStreamMode and
// InputSettings (PopART's names, keyword arguments and defaults; differences in docs/python.md).
#include "xtrain/dataflow.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "xtrain/inputsettings.hpp"
#include "xtrain/session.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

std::string reprOf(py::handle h) {
  return py::repr(h).cast<std::string>();
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// PopART's TileSet and ExchangeStrategy select IO tiles and overlapped host exchanges, which the
// simulated IPUs do not have: only their defaults (or None) are accepted.
void checkDefaultOnly(const py::object& value, const char* what, const char* name,
                      const char* defaultName) {
  if (value.is_none()) return;
  if (py::hasattr(value, "name") &&
      py::str(value.attr("name")).cast<std::string>() == defaultName) {
    return;
  }
  throw py::value_error(std::string(what) + ": " + name + " " + reprOf(value) +
                        " is not implemented by xtrain (only " + name + "=" + defaultName +
                        ", the default, is accepted)");
}

AnchorReturnType makeArt(const std::string& name, std::optional<int> returnPeriod,
                         const py::object& tileSet, const py::object& exchangeStrategy) {
  checkDefaultOnly(tileSet, "AnchorReturnType", "tileSet", "Compute");
  checkDefaultOnly(exchangeStrategy, "AnchorReturnType", "exchangeStrategy", "JustInTime");
  // PopART's exceptions (popart_exception) with PopART's messages, which its programs compare.
  const std::string u = upper(name);  // PopART's names are case-insensitive
  if (u != "ALL" && u != "FINAL" && u != "SUM" && u != "EVERYN") {
    throw error("Invalid anchor return type ID supplied: {}", name);
  }
  if (u == "EVERYN") {
    if (!returnPeriod) throw error("Must specify return period with option 'EVERYN'");
    if (*returnPeriod <= 0) throw error("Anchor return period must be greater than zero");
    return AnchorReturnType(u, *returnPeriod);
  }
  if (returnPeriod) {
    throw error("A return period should not be supplied for this anchor return type");
  }
  return AnchorReturnType(u);
}

std::string artRepr(const AnchorReturnType& a) {
  if (a.id() == AnchorReturnTypeId::EveryN) {
    return "AnchorReturnType(\"EVERYN\", " + std::to_string(a.rp()) + ")";
  }
  return "AnchorReturnType(\"" + a.str() + "\")";
}

std::string tensorIdOf(py::handle h, const std::string& what) {
  if (!py::isinstance<py::str>(h)) {
    throw py::type_error(what + ": the tensor id " + reprOf(h) + " is not a str");
  }
  return h.cast<std::string>();
}

std::map<TensorId, AnchorReturnType> anchorMap(const py::dict& anchors) {
  std::map<TensorId, AnchorReturnType> out;
  for (auto [k, v] : anchors) {
    const auto id = tensorIdOf(k, "DataFlow: anchorTensors");
    if (!py::isinstance<AnchorReturnType>(v)) {
      throw py::type_error("DataFlow: anchorTensors['" + id + "'] is " + reprOf(v) +
                           ", expected an AnchorReturnType such as AnchorReturnType(\"ALL\")");
    }
    out.emplace(id, v.cast<AnchorReturnType>());
  }
  return out;
}

std::vector<TensorId> idList(const py::object& ids, const std::string& what) {
  if (py::isinstance<py::str>(ids) || !py::isinstance<py::sequence>(ids)) {
    throw py::type_error(what + ": " + reprOf(ids) + " is not a list of tensor ids");
  }
  std::vector<TensorId> out;
  for (py::handle h : ids) out.push_back(tensorIdOf(h, what));
  return out;
}

}  // namespace

void bindDataFlow(py::module_& m) {
  py::enum_<AnchorReturnTypeId>(m, "AnchorReturnTypeId")
      .value("Final", AnchorReturnTypeId::Final)
      .value("EveryN", AnchorReturnTypeId::EveryN)
      .value("All", AnchorReturnTypeId::All)
      .value("Sum", AnchorReturnTypeId::Sum);

  py::class_<AnchorReturnType>(m, "AnchorReturnType",
                               "Which values of an anchor come back to the host: "
                               "AnchorReturnType(\"ALL\"), (\"FINAL\"), (\"SUM\") or "
                               "(\"EVERYN\", returnPeriod).")
      // (name, returnPeriod) first: with the other first, an int period would be taken as tileSet.
      .def(py::init([](const std::string& s, int returnPeriod, const py::object& tileSet,
                       const py::object& exchangeStrategy) {
             return makeArt(s, returnPeriod, tileSet, exchangeStrategy);
           }),
           py::arg("anchorReturnTypeString"), py::arg("returnPeriod"),
           py::arg("tileSet") = py::none(), py::arg("exchangeStrategy") = py::none())
      .def(py::init([](const std::string& s, const py::object& tileSet,
                       const py::object& exchangeStrategy) {
             return makeArt(s, std::nullopt, tileSet, exchangeStrategy);
           }),
           py::arg("anchorReturnTypeString"), py::arg("tileSet") = py::none(),
           py::arg("exchangeStrategy") = py::none())
      .def("id", &AnchorReturnType::id)
      .def("rp", &AnchorReturnType::rp)
      .def("str", &AnchorReturnType::str)
      .def("__eq__", [](const AnchorReturnType& a,
                        const AnchorReturnType& b) { return a.id() == b.id() && a.rp() == b.rp(); })
      .def("__repr__", &artRepr);

  py::class_<DataFlow>(m, "DataFlow",
                       "How many batches one run executes (batchesPerStep) and which tensors "
                       "return to the host (the anchors).")
      .def(py::init([](int batchesPerStep, const py::dict& anchorTensors) {
             return DataFlow(batchesPerStep, anchorMap(anchorTensors));
           }),
           py::arg("batchesPerStep"), py::arg("anchorTensors"))
      .def(py::init([](int batchesPerStep, const py::object& anchorIds,
                       const AnchorReturnType& anchorReturnType) {
             return DataFlow(batchesPerStep, idList(anchorIds, "DataFlow: anchorIds"),
                             anchorReturnType);
           }),
           py::arg("batchesPerStep"), py::arg("anchorIds"),
           py::arg("anchorReturnType") = AnchorReturnType("ALL"))
      .def("isAnchored", &DataFlow::isAnchored)
      .def("nAnchors", [](const DataFlow& d) { return d.anchors().size(); })
      .def("batchesPerStep", &DataFlow::batchesPerStep)
      .def("anchors", [](const DataFlow& d) { return d.anchors(); })
      .def("art",
           [](const DataFlow& d, const std::string& id) {
             if (!d.isAnchored(id)) {
               throw py::key_error("DataFlow.art: '" + id + "' is not an anchor (anchors: " +
                                   reprOf(py::cast(d.anchors())) + ")");
             }
             return d.art(id);
           })
      .def("setBatchesPerStep",
           [](DataFlow& d, int batchesPerStep) {
             std::map<TensorId, AnchorReturnType> arts;
             for (const auto& id : d.anchors()) arts.emplace(id, d.art(id));
             d = DataFlow(batchesPerStep, arts);
           })
      .def("__repr__", [](const DataFlow& d) {
        std::string s = "DataFlow(" + std::to_string(d.batchesPerStep()) + ", {";
        bool first = true;
        for (const auto& id : d.anchors()) {
          s += (first ? "" : ", ") + reprOf(py::str(id)) + ": " + artRepr(d.art(id));
          first = false;
        }
        return s + "})";
      });

  py::class_<InputShapeInfo>(m, "InputShapeInfo",
                             "Shapes for graph inputs whose shape the model leaves open.")
      .def(py::init<>())
      .def("add", &InputShapeInfo::add)
      .def("get",
           [](const InputShapeInfo& i, const std::string& id) {
             if (!i.has(id)) {
               throw py::key_error("InputShapeInfo.get: no TensorInfo for '" + id + "'");
             }
             return i.get(id);
           })
      .def("has", &InputShapeInfo::has);

  py::enum_<ReplicatedStreamMode>(m, "ReplicatedStreamMode")
      .value("Replicate", ReplicatedStreamMode::Replicate)
      .value("Broadcast", ReplicatedStreamMode::Broadcast);

  py::class_<InputSettings>(m, "InputSettings", "How the host feeds a model input to the replicas.")
      // PopART's keyword is spelled "relicatedStreamMode"; both spellings are accepted.
      .def(py::init<ReplicatedStreamMode>(),
           py::arg("relicatedStreamMode") = ReplicatedStreamMode::Replicate)
      .def(py::init<ReplicatedStreamMode>(), py::arg("replicatedStreamMode"))
      .def(py::init([](const py::object& tileSet, const py::object& exchangeStrategy) {
             checkDefaultOnly(tileSet, "InputSettings", "tileSet", "Compute");
             checkDefaultOnly(exchangeStrategy, "InputSettings", "exchangeStrategy", "JustInTime");
             return InputSettings();
           }),
           py::arg("tileSet"), py::arg("exchangeStrategy") = py::none())
      .def("replicatedStreamMode", &InputSettings::replicatedStreamMode)
      .def("setReplicatedStreamMode", &InputSettings::setReplicatedStreamMode);
}

}  // namespace xtrain::python
