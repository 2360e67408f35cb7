// popart.GraphTransformer (xtrain/graphtransformer.hpp). getModelProto returns bytes, as PopART's.
#include "xtrain/graphtransformer.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"

namespace py = pybind11;

namespace xtrain::python {

void bindGraphTransformer(py::module_& m) {
  using G = GraphTransformer;
  py::class_<G>(m, "GraphTransformer")
      .def(py::init([](const py::object& model) {
             // A path (str) or the model's bytes.
             return std::make_unique<G>(py::isinstance<py::bytes>(model)
                                            ? std::string(model.cast<py::bytes>())
                                            : model.cast<std::string>());
           }),
           py::arg("modelProtoOrFilename"))
      .def("getModelProto", [](const G& g) { return py::bytes(g.getModelProto()); })
      .def("removeUnusedInputs", &G::removeUnusedInputs)
      .def("prepareNodesForTraining", &G::prepareNodesForTraining)
      .def("convertFloatsToHalfs", &G::convertFloatsToHalfs)
      .def("convertDoublesToHalfs", &G::convertDoublesToHalfs)
      .def("convertDoublesToFloats", &G::convertDoublesToFloats)
      .def("convertBFloats16ToFloat32", &G::convertBFloats16ToFloat32)
      .def("convertUINT8ToINT32", &G::convertUINT8ToINT32)
      .def("convertUINT16ToINT32", &G::convertUINT16ToINT32)
      .def("convertINT8ToINT32", &G::convertINT8ToINT32)
      .def("convertINT16ToINT32", &G::convertINT16ToINT32)
      .def("convertINT64ToINT32", &G::convertINT64ToINT32, py::arg("clip") = false)
      .def("convertInitializersToConstants", &G::convertInitializersToConstants, py::arg("ids"))
      .def("convertAllFixedPointInitializersToConstants",
           &G::convertAllFixedPointInitializersToConstants)
      .def("saveInitializersExternally", &G::saveInitializersExternally, py::arg("ids"),
           py::arg("filename"));
}

}  // namespace xtrain::python
