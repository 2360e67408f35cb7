// temporary: replaced by P1/P2's bindings at merge (the lead deletes this file and its call in
// module.cpp). Minimal bindings of the types the sessions take, so that P3's branch builds and its
// tests run: DataType, TensorInfo, AnchorReturnType, DataFlow, InputShapeInfo (P1), SessionOptions,
// Optimizer, SGD (P2).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "xtrain/dataflow.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/optimizer.hpp"
#include "xtrain/session.hpp"
#include "xtrain/sessionoptions.hpp"
#include "xtrain/tensorinfo.hpp"

namespace py = pybind11;

namespace xtrain::python {

void bindStandIns(py::module_& m) {
  py::enum_<DataType> dt(m, "DataType");
  for (int i = 0; i <= static_cast<int>(DataType::UNDEFINED); ++i) {
    dt.value(dataTypeName(static_cast<DataType>(i)), static_cast<DataType>(i));
  }
  py::class_<TensorInfo>(m, "TensorInfo")
      .def(py::init<>())
      .def(py::init<const std::string&, Shape>(), py::arg("dataType"), py::arg("shape"))
      .def(py::init<DataType, Shape>(), py::arg("dataType"), py::arg("shape"))
      .def("data_type_lcase",
           [](const TensorInfo& i) {
             std::string s = dataTypeName(i.dataType());
             for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
             return s;
           })
      .def("dataType", &TensorInfo::dataType)
      .def("shape", &TensorInfo::shape)
      .def("nelms", &TensorInfo::nelms)
      .def("__eq__", [](const TensorInfo& a, const TensorInfo& b) { return a == b; })
      .def("__repr__", &TensorInfo::toString);
  py::class_<AnchorReturnType>(m, "AnchorReturnType")
      .def(py::init<const std::string&>(), py::arg("artId") = "ALL")
      .def(py::init<const std::string&, int>(), py::arg("artId"), py::arg("returnPeriod"));
  py::class_<DataFlow>(m, "DataFlow")
      .def(py::init<>())
      .def(py::init<int, const std::map<TensorId, AnchorReturnType>&>(), py::arg("batchesPerStep"),
           py::arg("anchorTensors"))
      .def("batchesPerStep", &DataFlow::batchesPerStep)
      .def("anchors", &DataFlow::anchors);
  py::class_<InputShapeInfo>(m, "InputShapeInfo")
      .def(py::init<>())
      .def("add", &InputShapeInfo::add)
      .def("get", &InputShapeInfo::get)
      .def("has", &InputShapeInfo::has);
  py::class_<SessionOptions>(m, "SessionOptions")
      .def(py::init<>())
      .def_readwrite("enableReplicatedGraphs", &SessionOptions::enableReplicatedGraphs)
      .def_readwrite("replicatedGraphCount", &SessionOptions::replicatedGraphCount)
      .def_readwrite("enableDistributedReplicatedGraphs",
                     &SessionOptions::enableDistributedReplicatedGraphs)
      .def_readwrite("globalReplicationFactor", &SessionOptions::globalReplicationFactor)
      .def_readwrite("globalReplicaOffset", &SessionOptions::globalReplicaOffset)
      .def_readwrite("enableGradientAccumulation", &SessionOptions::enableGradientAccumulation)
      .def_readwrite("accumulationFactor", &SessionOptions::accumulationFactor);
  py::class_<Optimizer>(m, "Optimizer");
  py::class_<SGD, Optimizer>(m, "SGD")
      .def(py::init<const std::map<std::string, std::pair<float, bool>>&>(), py::arg("params"))
      .def(py::init([](float lr) { return SGD(OptimizerValue(lr, false)); }),
           py::arg("learning_rate"));
}

}  // namespace xtrain::python
