// The pieces of the `_xtrain` extension module, one per file, each binding one area of the public
// API (include/xtrain/) under the names of PopART's Python module (popart-python-api.txt).
// module.cpp calls them in this order: a type used as a default argument or in a signature must be
// bound by an earlier piece.
#pragma once

#include <pybind11/pybind11.h>

namespace xtrain::python {

void bindErrors(pybind11::module_& m);   // error classes as Python exceptions (errors.cpp)
void bindLogging(pybind11::module_& m);  // getLogger, logging levels (logging.cpp)
void bindTensors(pybind11::module_& m);  // DataType, TensorInfo (tensors.cpp)
void bindDataFlow(
    pybind11::module_& m);  // AnchorReturnType, DataFlow, InputShapeInfo (dataflow.cpp)
void bindOptions(pybind11::module_& m);      // SessionOptions and its settings, CommGroup,
                                             // ReplicaGrouping, VariableSettings (options.cpp)
void bindOptimizers(pybind11::module_& m);   // SGD, ConstSGD, Adam, Adaptive, ClipNormSettings
                                             // (optimizers.cpp)
void bindGraphTransformer(pybind11::module_& m);  // GraphTransformer (graphtransformer.cpp)
void bindOpManager(pybind11::module_& m);    // getSupportedOperations etc. (opmanager.cpp)
void bindTensorNames(pybind11::module_& m);  // reservedGradientPrefix() etc. (tensornames.cpp)
void bindPatterns(pybind11::module_& m);     // PatternsLevel, Patterns (patterns.cpp)
void bindBuilder(pybind11::module_& m);      // Builder and its op builders (builder.cpp)
void bindDevices(pybind11::module_& m);      // DeviceManager, DeviceInfo (devices.cpp)
void bindSessions(pybind11::module_& m);     // TrainingSession, InferenceSession, PyStepIO,
                                             // PyWeightsIO (sessions.cpp)
void bindDist(pybind11::module_& m);         // the submodule xtrain.dist (dist.cpp)

}  // namespace xtrain::python
