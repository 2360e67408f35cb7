// ONNX export: the original model with new initializer values (how modelToHost(path) writes a
// trained model). Internal API (no protobuf here).
#pragma once
#pragma GCC visibility push(default)

#include <map>
#include <string>

#include "common/host_tensor.hpp"
#include "xtrain/names.hpp"

namespace xtrain::ir {

// Returns modelBytes (a serialized ModelProto) with:
//  - each initializer named in `values` holding the new value; its type and shape must equal the
//    initializer's, and every name must be an initializer (else xtrain::error naming it);
//  - `extraInitializers` appended (e.g. optimizer state); a name that is already an
//    initializer, graph input or node output is an error;
//  - `metadata` set in metadata_props (existing keys are replaced).
std::string updateOnnxInitializers(const std::string& modelBytes,
                                   const std::map<TensorId, HostTensor>& values,
                                   const std::map<TensorId, HostTensor>& extraInitializers = {},
                                   const std::map<std::string, std::string>& metadata = {});

// Session::updateExternallySavedTensorLocations: returns modelBytes with every initializer whose
// external data is in the file `fromLocation` moved to the new file `toLocation` (their current
// data copied there, in model order). PopART's runtime_errors when toLocation exists, when
// fromLocation does not, and when no initializer is stored in fromLocation.
std::string relocateExternalData(const std::string& modelBytes, const std::string& fromLocation,
                                 const std::string& toLocation);

}  // namespace xtrain::ir

#pragma GCC visibility pop
