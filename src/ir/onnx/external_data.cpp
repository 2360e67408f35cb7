// Initializers' data moved to a file of their own (ONNX's external data), as PopART's
// Builder::saveInitializersExternally and GraphTransformer::saveInitializersExternally do it, with
// PopART's messages. The import reads such data back (tensorFromProto).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "ir/onnx/onnx_export.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"
#include "xtrain/format.hpp"

namespace xtrain::ir::onnxutil {

void saveInitializersExternally(onnx::ModelProto& model, const std::vector<std::string>& ids,
                                const std::string& filename) {
  std::vector<onnx::TensorProto*> tensors;
  for (const auto& id : ids) {
    onnx::TensorProto* found = nullptr;
    for (auto& init : *model.mutable_graph()->mutable_initializer()) {
      if (init.name() == id) found = &init;
    }
    if (found == nullptr) throw error("Tensor '{}' is not an initializer", id);
    if (found->data_location() == onnx::TensorProto::EXTERNAL) {
      throw error("Tensor '{}' already has an external data_location", id);
    }
    tensors.push_back(found);
  }
  const std::filesystem::path path(filename);
  if (path.has_parent_path() && !std::filesystem::is_directory(path.parent_path())) {
    throw error("Cannot save tensor data to '{}': its parent directory does not exist", filename);
  }
  std::ofstream out(filename, std::ios::binary | std::ios::trunc);
  if (!out) throw error("Cannot save tensor data to '{}': the file cannot be written", filename);
  int64_t offset = 0;
  for (onnx::TensorProto* t : tensors) {
    const HostTensor value = tensorFromProto(*t, "initializer '" + t->name() + "'");
    out.write(reinterpret_cast<const char*>(value.raw()),
              static_cast<std::streamsize>(value.nbytes()));
    const TensorInfo info = value.info();
    setTensorProto(*t, nullptr, TensorInfo(info.dataType(), {0}));
    t->clear_dims();
    for (int64_t d : info.shape()) t->add_dims(d);
    t->clear_raw_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : {std::pair<std::string, std::string>{"location", filename},
                               {"offset", std::to_string(offset)},
                               {"length", std::to_string(value.nbytes())}}) {
      auto* kv = t->add_external_data();
      kv->set_key(k);
      kv->set_value(v);
    }
    offset += value.nbytes();
  }
  if (!out.flush()) throw error("Cannot save tensor data to '{}': writing failed", filename);
}

}  // namespace xtrain::ir::onnxutil

namespace xtrain::ir::onnxutil {

ExternalRef externalRef(const onnx::TensorProto& t) {
  ExternalRef r;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") r.location = kv.value();
    if (kv.key() == "offset") r.offset = std::stoll(kv.value());
    if (kv.key() == "length") r.length = std::stoll(kv.value());
  }
  return r;
}

namespace {

// Writes `bytes` bytes at `offset` of the existing file `location`.
void writeAt(const std::string& location, int64_t offset, const void* data, int64_t bytes,
             const std::string& name, const std::string& what) {
  std::fstream f(location, std::ios::binary | std::ios::in | std::ios::out);
  if (!f) {
    throw error(
        "Unrecognised file name '{}' for externally stored tensor '{}': {} cannot be written "
        "there (the file doesn't exist or is not writable; a relative location is taken from the "
        "working directory; Session::updateExternallySavedTensorLocations moves the data)",
        location, name, what);
  }
  f.seekp(offset);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!f.flush()) {
    throw error("{}: writing {} bytes at offset {} of {} failed", what, bytes, offset, location);
  }
}

}  // namespace

void writeExternalData(const onnx::TensorProto& t, const HostTensor& value,
                       const std::string& what) {
  const ExternalRef r = externalRef(t);
  const int64_t nbytes = value.nbytes();
  if (r.location.empty() || r.offset < 0 || (r.length >= 0 && r.length != nbytes)) {
    throw error(
        "{} has external data at '{}', offset {}, length {}; expected a location and {} bytes",
        what, r.location, r.offset, r.length, nbytes);
  }
  writeAt(r.location, r.offset, value.raw(), nbytes, t.name(), what);
}

bool saveBesideExternalInitializer(const onnx::ModelProto& model, onnx::TensorProto& t,
                                   const HostTensor& value, const std::string& besideId) {
  const onnx::TensorProto* beside = nullptr;
  for (const auto& init : model.graph().initializer()) {
    if (init.name() == besideId) beside = &init;
  }
  if (beside == nullptr || beside->data_location() != onnx::TensorProto::EXTERNAL) return false;
  const std::string location = externalRef(*beside).location;
  // After every range the model uses in that file (so that writing the model again reuses the
  // same place rather than growing the file).
  int64_t end = 0;
  for (const auto& init : model.graph().initializer()) {
    if (init.data_location() != onnx::TensorProto::EXTERNAL || &init == &t) continue;
    const ExternalRef r = externalRef(init);
    if (r.location != location) continue;
    const std::string name = "initializer '" + init.name() + "'";
    const int64_t length = r.length >= 0 ? r.length : tensorProtoInfo(init, name).nbytes();
    end = std::max(end, r.offset + length);
  }
  const std::string what = "optimizer state '" + t.name() + "'";
  writeAt(location, end, value.raw(), value.nbytes(), t.name(), what);
  setTensorProto(t, nullptr, TensorInfo(value.info().dataType(), {0}));
  t.clear_dims();
  for (int64_t d : value.info().shape()) t.add_dims(d);
  t.clear_raw_data();
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [k, v] : {std::pair<std::string, std::string>{"location", location},
                             {"offset", std::to_string(end)},
                             {"length", std::to_string(value.nbytes())}}) {
    auto* kv = t.add_external_data();
    kv->set_key(k);
    kv->set_value(v);
  }
  return true;
}

}  // namespace xtrain::ir::onnxutil

namespace xtrain::ir {

std::string relocateExternalData(const std::string& modelBytes, const std::string& fromLocation,
                                 const std::string& toLocation) {
  const std::string what =
      format("Updating externally saved tensor location from file '{}' to file '{}'", fromLocation,
             toLocation);
  if (std::filesystem::exists(toLocation)) {
    throw runtime_error("{}, but file '{}' already exists", what, toLocation);
  }
  if (!std::filesystem::exists(fromLocation)) {
    throw runtime_error("{}, but file '{}' does not exist", what, fromLocation);
  }
  onnx::ModelProto model = onnxutil::parseModelBytes(modelBytes, "the session's model");
  std::vector<std::string> ids;
  for (const auto& init : model.graph().initializer()) {
    if (init.data_location() == onnx::TensorProto::EXTERNAL &&
        onnxutil::externalRef(init).location == fromLocation) {
      ids.push_back(init.name());
    }
  }
  if (ids.empty()) {
    throw runtime_error("No ONNX model initializers have external location set to '{}' ({})",
                        fromLocation, what);
  }
  // Each tensor's data read back into the model, then saved to the new file.
  for (auto& init : *model.mutable_graph()->mutable_initializer()) {
    if (std::find(ids.begin(), ids.end(), init.name()) == ids.end()) continue;
    const HostTensor value = onnxutil::tensorFromProto(init, "initializer '" + init.name() + "'");
    onnxutil::setTensorProto(init, value.raw(), value.info());
  }
  onnxutil::saveInitializersExternally(model, ids, toLocation);
  return onnxutil::serializeModel(model, "the session's model");
}

}  // namespace xtrain::ir
