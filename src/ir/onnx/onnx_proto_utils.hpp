// Protobuf-facing helpers shared by the ONNX importer, the exporter and the Builder.
//
// This header includes ONNX's generated protobuf classes: include it only from src/ir/onnx/ and
// src/ir/builder/ (ONNX and protobuf are private dependencies of the ir module).
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "common/host_tensor.hpp"
#include "xtrain/tensorinfo.hpp"

#pragma GCC visibility push(default)

namespace xtrain::ir::onnxutil {

// What a caller gave as "model": a file's contents, or the serialized bytes themselves.
struct ModelSource {
  std::string bytes;
  // Names the source in messages: "ONNX model file 'm.onnx'" or "ONNX model bytes (1234 bytes)".
  std::string description;
  bool fromFile = false;
};

// Like PopART: a file path if such a file exists, else serialized ModelProto bytes. Throws
// xtrain::error when the path is a directory or the file cannot be read.
ModelSource loadModelSource(const std::string& pathOrBytes);

// Parses a ModelProto; throws xtrain::error "<source> is not an ONNX model (failed to parse
// ModelProto...)" when the bytes are not a model (also when they parse but hold no graph).
onnx::ModelProto parseModel(const ModelSource& source);
onnx::ModelProto parseModelBytes(const std::string& bytes, const std::string& what);

// Serializes; throws xtrain::error naming `what` on failure (e.g. a model over 2 GB).
std::string serializeModel(const onnx::ModelProto& model, const std::string& what);

// ai.onnx's opset version as the model imports it (domain "" or "ai.onnx"), 0 when absent.
int onnxOpsetOf(const onnx::ModelProto& model);
// Domain of a node or opset_import entry with "" spelled "ai.onnx".
std::string canonicalDomain(const std::string& domain);
// Opset versions by canonical domain.
std::map<std::string, int> opsetImports(const onnx::ModelProto& model);

// The tensor TypeProto (element type and fixed dims) of a value of `info`.
onnx::TypeProto tensorTypeProto(const TensorInfo& info);
// The element type and shape of an initializer / tensor attribute. `what` names it in errors.
TensorInfo tensorProtoInfo(const onnx::TensorProto& t, const std::string& what);
// The value of a TensorProto (raw_data or the typed fields). Throws xtrain::error naming `what` for
// external data, strings, segments and element counts that do not match the shape.
HostTensor tensorFromProto(const onnx::TensorProto& t, const std::string& what);
// Where setTensorProto puts the values: raw_data, or the element type's typed field for FLOAT
// (float_data), INT32 (int32_data) and INT64 (int64_data) — as PopART's Builder writes
// initializers, which PopART programs read back field by field — and raw_data for other types.
enum class TensorDataField { Raw, Typed };

// Sets t's type, dims and data from data laid out as info says; other data fields are cleared.
void setTensorProto(onnx::TensorProto& t, const void* data, const TensorInfo& info,
                    TensorDataField field = TensorDataField::Raw);

// The field an existing tensor's values are in (Typed when it has no raw_data): an updated
// initializer keeps its field.
TensorDataField dataFieldOf(const onnx::TensorProto& t);

// Moves the data of the initializers `ids` (in that order) to the file `filename` and marks them
// EXTERNAL, with PopART's errors (not an initializer, already external, parent directory missing,
// not writable). external_data.cpp.
void saveInitializersExternally(onnx::ModelProto& model, const std::vector<std::string>& ids,
                                const std::string& filename);

// Where an externally stored tensor's data is (external_data entries; length -1 when not given).
struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
};
ExternalRef externalRef(const onnx::TensorProto& t);

// Writes `value` over the bytes of the externally stored tensor t in its file (offset and length
// as t's external_data say; the file must exist), leaving t's reference as it is: how an updated
// weight goes back to the file it came from. external_data.cpp.
void writeExternalData(const onnx::TensorProto& t, const HostTensor& value,
                       const std::string& what);

// When the initializer `besideId` of `model` is stored externally, stores t (holding `value`) in
// the same file, after every byte range of that file the model's initializers use, and returns
// true; else returns false and leaves t alone. As PopART saves a weight's optimizer state beside
// it. external_data.cpp.
bool saveBesideExternalInitializer(const onnx::ModelProto& model, onnx::TensorProto& t,
                                   const HostTensor& value, const std::string& besideId);

// Sets (or replaces) a metadata_props entry.
void setMetadataProp(onnx::ModelProto& model, const std::string& key, const std::string& value);
std::map<std::string, std::string> metadataProps(const onnx::ModelProto& model);

// "INT", "FLOATS", "TENSOR", ... for messages.
const char* attributeTypeName(int type);

// Registers ONNX schemas (checker + shape inference) for the ai.graphcore ops the Builder emits:
// IdentityLoss, Nll, L1, Gelu and the replicated collectives (ReplicatedAllReduce,
// ReplicatedReduceScatter, ReplicatedAllGather). Idempotent and thread-safe.
void registerGraphcoreSchemas();

}  // namespace xtrain::ir::onnxutil

#pragma GCC visibility pop
