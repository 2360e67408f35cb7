#include "ir/onnx/onnx_proto_utils.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "ir/graph.hpp"
#include "ir/onnx/model_file.hpp"
#include "xtrain/error.hpp"

namespace xtrain::ir::onnxutil {

namespace {

// A string short and printable enough that the user probably meant it as a path.
bool looksLikePath(const std::string& s) {
  if (s.empty() || s.size() > 4096) return false;
  for (unsigned char c : s) {
    if (!std::isprint(c)) return false;
  }
  return true;
}

template <typename T>
size_t fieldCount(const T& field) {
  return static_cast<size_t>(field.size());
}

// The typed field an element type's values travel in when there is no raw_data (onnx.proto), with
// its number of values and the values per element (2 for complex types); empty for other types.
// tensorFromProto reads each Field one way, whatever the element type.
enum class Field { Float, Double, Int64, Uint64, Int32 };
struct TypedField {
  Field field;
  const char* name;
  size_t count;
  size_t perElement;
};

std::optional<TypedField> typedFieldOf(const onnx::TensorProto& t, DataType type) {
  switch (type) {
    case DataType::FLOAT:
      return TypedField{Field::Float, "float_data", fieldCount(t.float_data()), 1};
    case DataType::COMPLEX64:
      return TypedField{Field::Float, "float_data", fieldCount(t.float_data()), 2};
    case DataType::DOUBLE:
      return TypedField{Field::Double, "double_data", fieldCount(t.double_data()), 1};
    case DataType::COMPLEX128:
      return TypedField{Field::Double, "double_data", fieldCount(t.double_data()), 2};
    case DataType::INT64:
      return TypedField{Field::Int64, "int64_data", fieldCount(t.int64_data()), 1};
    case DataType::UINT32:
    case DataType::UINT64:
      return TypedField{Field::Uint64, "uint64_data", fieldCount(t.uint64_data()), 1};
    case DataType::INT32:
    case DataType::INT16:
    case DataType::INT8:
    case DataType::UINT16:
    case DataType::UINT8:
    case DataType::BOOL:
    case DataType::FLOAT16:
    case DataType::BFLOAT16:
      return TypedField{Field::Int32, "int32_data", fieldCount(t.int32_data()), 1};
    default: return std::nullopt;
  }
}

}  // namespace

ModelSource loadModelSource(const std::string& pathOrBytes) {
  namespace fs = std::filesystem;
  ModelSource src;
  std::error_code ec;
  const bool candidate = looksLikePath(pathOrBytes);
  if (candidate && fs::exists(pathOrBytes, ec)) {
    if (fs::is_directory(pathOrBytes, ec)) {
      throw error(
          "cannot load ONNX model: '{}' is a directory, expected a model file or serialized "
          "ModelProto bytes",
          pathOrBytes);
    }
    src.bytes = readModelFile(pathOrBytes);
    src.description = "ONNX model file '" + pathOrBytes + "'";
    src.fromFile = true;
    return src;
  }
  src.bytes = pathOrBytes;
  if (candidate && pathOrBytes.size() < 256) {
    src.description =
        "'" + pathOrBytes + "' (no such file, so it was read as serialized ModelProto bytes)";
  } else {
    src.description = "ONNX model bytes (" + std::to_string(pathOrBytes.size()) + " bytes)";
  }
  return src;
}

// PopART's closing sentence of a failed model load (programs match on its start and end).
constexpr const char* kLoadAdvice =
    "Check that it is either a valid path to an existing onnx model file, or is a valid onnx "
    "ModelProto string.";

onnx::ModelProto parseModelBytes(const std::string& bytes, const std::string& what) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw error(
        "Failed to load a ModelProto from the string given: {} is not an ONNX model (failed to "
        "parse ModelProto: the bytes are not a valid protobuf message, e.g. a truncated file or "
        "another file format). {}",
        what, kLoadAdvice);
  }
  if (!model.has_graph() || model.ir_version() <= 0) {
    throw error(
        "Failed to load a ModelProto from the string given: {} is not an ONNX model (failed to "
        "parse ModelProto: it decodes as protobuf but has {}; expected an ONNX ModelProto with "
        "ir_version and graph). {}",
        what, model.has_graph() ? "no ir_version" : "no graph", kLoadAdvice);
  }
  return model;
}

onnx::ModelProto parseModel(const ModelSource& source) {
  return parseModelBytes(source.bytes, source.description);
}

std::string serializeModel(const onnx::ModelProto& model, const std::string& what) {
  std::string out;
  if (!model.SerializeToString(&out)) {
    throw error("cannot serialize {} as an ONNX ModelProto (protobuf limits a message to 2 GB)",
                what);
  }
  return out;
}

std::string canonicalDomain(const std::string& domain) {
  return domain.empty() ? std::string(kOnnxDomain) : domain;
}

std::map<std::string, int> opsetImports(const onnx::ModelProto& model) {
  std::map<std::string, int> out;
  for (const auto& o : model.opset_import()) {
    out[canonicalDomain(o.domain())] = static_cast<int>(o.version());
  }
  return out;
}

int onnxOpsetOf(const onnx::ModelProto& model) {
  const auto imports = opsetImports(model);
  auto it = imports.find(kOnnxDomain);
  return it == imports.end() ? 0 : it->second;
}

onnx::TypeProto tensorTypeProto(const TensorInfo& info) {
  onnx::TypeProto t;
  auto* tt = t.mutable_tensor_type();
  tt->set_elem_type(dataTypeToOnnx(info.dataType()));
  auto* shape = tt->mutable_shape();
  for (int64_t d : info.shape()) shape->add_dim()->set_dim_value(d);
  return t;
}

TensorInfo tensorProtoInfo(const onnx::TensorProto& t, const std::string& what) {
  DataType type;
  try {
    type = dataTypeFromOnnx(t.data_type());
  } catch (const error&) {
    throw error("{} has ONNX element type {}, which xtrain does not support", what, t.data_type());
  }
  if (type == DataType::UNDEFINED) throw error("{} has no element type (data_type is 0)", what);
  Shape shape;
  for (int64_t d : t.dims()) {
    if (d < 0) throw error("{} has a negative dimension in dims {}", what, t.dims());
    shape.push_back(d);
  }
  try {
    return TensorInfo(type, shape);
  } catch (const size_overflow_error& e) {
    throw size_overflow_error("{}: {}", what, e.what());  // names the initializer
  }
}

namespace {

// Copies the n elements of a typed field into `value` (its size checked by the caller).
void copyTypedField(const onnx::TensorProto& t, const TypedField& field, size_t n,
                    HostTensor& value) {
  const size_t elemSize = dataTypeSize(value.dataType());
  std::byte* out = value.raw();
  switch (field.field) {
    case Field::Float:
      if (n != 0) std::memcpy(out, t.float_data().data(), n * field.perElement * sizeof(float));
      break;
    case Field::Double:
      if (n != 0) std::memcpy(out, t.double_data().data(), n * field.perElement * sizeof(double));
      break;
    case Field::Int64:
      if (n != 0) std::memcpy(out, t.int64_data().data(), n * sizeof(int64_t));
      break;
    case Field::Uint64:
      for (size_t i = 0; i < n; ++i) {
        const uint64_t v = t.uint64_data(static_cast<int>(i));
        if (value.dataType() == DataType::UINT32) {
          const auto v32 = static_cast<uint32_t>(v);
          std::memcpy(out + i * 4, &v32, 4);
        } else {
          std::memcpy(out + i * 8, &v, 8);
        }
      }
      break;
    case Field::Int32:
      // Narrow types travel widened to int32; FLOAT16/BFLOAT16 as their bit patterns in the low 16
      // bits.
      for (size_t i = 0; i < n; ++i) {
        const int32_t v = t.int32_data(static_cast<int>(i));
        switch (elemSize) {
          case 4: std::memcpy(out + i * 4, &v, 4); break;
          case 2: {
            const auto v16 = static_cast<uint16_t>(static_cast<uint32_t>(v) & 0xFFFFu);
            std::memcpy(out + i * 2, &v16, 2);
            break;
          }
          default: {
            const auto v8 = static_cast<uint8_t>(static_cast<uint32_t>(v) & 0xFFu);
            std::memcpy(out + i, &v8, 1);
            break;
          }
        }
      }
      break;
  }
}

}  // namespace

namespace {

// A tensor whose data is in another file (ONNX's external data: keys location, offset, length).
// As PopART, a relative location is relative to the working directory.
HostTensor externalTensor(const onnx::TensorProto& t, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = std::stoll(kv.value());
    if (kv.key() == "length") length = std::stoll(kv.value());
  }
  const TensorInfo info = tensorProtoInfo(t, what);
  if (length < 0) length = info.nbytes();
  if (location.empty() || length != info.nbytes() || offset < 0) {
    throw error(
        "{} ({}) has external data at '{}', offset {}, length {}; expected a location and "
        "{} bytes",
        what, info.toString(), location, offset, length, info.nbytes());
  }
  std::ifstream in(location, std::ios::binary);
  if (!in) {
    throw error("{} stores its external data in {}, but it doesn't exist or is not accessible",
                what, location);
  }
  HostTensor value(info);
  in.seekg(offset);
  in.read(reinterpret_cast<char*>(value.raw()), static_cast<std::streamsize>(length));
  if (!in) {
    throw error("{} ({}): its external data file {} has fewer than {} bytes after offset {}", what,
                info.toString(), location, length, offset);
  }
  return value;
}

// True when a FLOAT16 or BFLOAT16 tensor's int32_data holds its values packed two to an entry
// (PopART's layout): ceil(n/2) entries for n > 1 elements (one per element is onnx.proto's).
bool packedHalves(const onnx::TensorProto& t, const TensorInfo& info) {
  if (info.dataType() != DataType::FLOAT16 && info.dataType() != DataType::BFLOAT16) return false;
  const auto n = static_cast<size_t>(info.nelms());
  return n > 1 && static_cast<size_t>(t.int32_data_size()) == (n + 1) / 2;
}

}  // namespace

HostTensor tensorFromProto(const onnx::TensorProto& t, const std::string& what) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return externalTensor(t, what);
  if (t.has_segment()) throw error("{} is segmented, which xtrain does not support", what);
  const TensorInfo info = tensorProtoInfo(t, what);
  if (info.dataType() == DataType::STRING) {
    throw error("{} is a STRING tensor, which xtrain does not support", what);
  }
  const size_t n = static_cast<size_t>(info.nelms());
  // Typed fields: each element type has its field (ONNX's onnx.proto comments).
  auto checkCount = [&](size_t have, size_t perElement, const char* field) {
    if (have != n * perElement) {
      if (have == 0) {
        throw error("{} ({}) has no data: expected {} values in raw_data or {}", what,
                    info.toString(), n * perElement, field);
      }
      throw error("{} ({}) has {} values in {}, expected {}", what, info.toString(), have, field,
                  n * perElement);
    }
  };
  // The data present is checked against the dims before the tensor is allocated: dims that claim
  // far more elements than the model holds are reported as such, not as an allocation failure.
  const std::optional<TypedField> field = typedFieldOf(t, info.dataType());
  if (t.has_raw_data()) {
    if (t.raw_data().size() != static_cast<size_t>(info.nbytes())) {
      throw error("{} ({}) has {} bytes of raw_data, expected {}", what, info.toString(),
                  t.raw_data().size(), info.nbytes());
    }
  } else if (field && packedHalves(t, info)) {
    // PopART's Builder and modelToHost write FLOAT16 values two to an int32_data entry (their
    // bytes in order), not one per entry as onnx.proto asks: such a model is read as written.
    HostTensor value(info);
    if (value.nbytes() != 0) std::memcpy(value.raw(), t.int32_data().data(), value.nbytes());
    return value;
  } else if (field) {
    checkCount(field->count, field->perElement, field->name);
  } else {
    throw error("{} has element type {}, which has no ONNX data field xtrain can read", what,
                dataTypeName(info.dataType()));
  }
  HostTensor value(info);
  if (t.has_raw_data()) {
    if (value.nbytes() != 0) std::memcpy(value.raw(), t.raw_data().data(), value.nbytes());
    return value;
  }
  copyTypedField(t, *field, n, value);
  return value;
}

TensorDataField dataFieldOf(const onnx::TensorProto& t) {
  return t.has_raw_data() ? TensorDataField::Raw : TensorDataField::Typed;
}

void setTensorProto(onnx::TensorProto& t, const void* data, const TensorInfo& info,
                    TensorDataField field) {
  if (info.dataType() == DataType::STRING || info.dataType() == DataType::UNDEFINED) {
    throw error("cannot store a {} tensor in an ONNX initializer", dataTypeName(info.dataType()));
  }
  t.set_data_type(dataTypeToOnnx(info.dataType()));
  t.clear_dims();
  for (int64_t d : info.shape()) t.add_dims(d);
  t.clear_float_data();
  t.clear_int32_data();
  t.clear_string_data();
  t.clear_int64_data();
  t.clear_double_data();
  t.clear_uint64_data();
  t.clear_external_data();
  t.clear_data_location();
  t.clear_segment();
  const auto bytes = static_cast<size_t>(info.nbytes());
  if (bytes != 0 && data == nullptr) {
    throw error("no data given for a {} tensor ({} bytes expected)", info.toString(), bytes);
  }
  t.clear_raw_data();
  const auto n = static_cast<int>(info.nelms());
  if (field == TensorDataField::Typed && info.dataType() == DataType::FLOAT) {
    t.mutable_float_data()->Resize(n, 0.0f);
    if (bytes != 0) std::memcpy(t.mutable_float_data()->mutable_data(), data, bytes);
  } else if (field == TensorDataField::Typed && info.dataType() == DataType::INT32) {
    t.mutable_int32_data()->Resize(n, 0);
    if (bytes != 0) std::memcpy(t.mutable_int32_data()->mutable_data(), data, bytes);
  } else if (field == TensorDataField::Typed && info.dataType() == DataType::INT64) {
    t.mutable_int64_data()->Resize(n, 0);
    if (bytes != 0) std::memcpy(t.mutable_int64_data()->mutable_data(), data, bytes);
  } else {
    t.set_raw_data(bytes == 0 ? std::string() : std::string(static_cast<const char*>(data), bytes));
  }
}

void setMetadataProp(onnx::ModelProto& model, const std::string& key, const std::string& value) {
  for (auto& p : *model.mutable_metadata_props()) {
    if (p.key() == key) {
      p.set_value(value);
      return;
    }
  }
  auto* p = model.add_metadata_props();
  p->set_key(key);
  p->set_value(value);
}

std::map<std::string, std::string> metadataProps(const onnx::ModelProto& model) {
  std::map<std::string, std::string> out;
  for (const auto& p : model.metadata_props()) out[p.key()] = p.value();
  return out;
}

const char* attributeTypeName(int type) {
  switch (type) {
    case onnx::AttributeProto::FLOAT: return "FLOAT";
    case onnx::AttributeProto::INT: return "INT";
    case onnx::AttributeProto::STRING: return "STRING";
    case onnx::AttributeProto::TENSOR: return "TENSOR";
    case onnx::AttributeProto::GRAPH: return "GRAPH";
    case onnx::AttributeProto::SPARSE_TENSOR: return "SPARSE_TENSOR";
    case onnx::AttributeProto::TYPE_PROTO: return "TYPE_PROTO";
    case onnx::AttributeProto::FLOATS: return "FLOATS";
    case onnx::AttributeProto::INTS: return "INTS";
    case onnx::AttributeProto::STRINGS: return "STRINGS";
    case onnx::AttributeProto::TENSORS: return "TENSORS";
    case onnx::AttributeProto::GRAPHS: return "GRAPHS";
    case onnx::AttributeProto::SPARSE_TENSORS: return "SPARSE_TENSORS";
    case onnx::AttributeProto::TYPE_PROTOS: return "TYPE_PROTOS";
    default: return "UNDEFINED";
  }
}

}  // namespace xtrain::ir::onnxutil
