// Initializers' data moved to a file of their own (ONNX's external data), as PopART's
// Builder::saveInitializersExternally and GraphTransformer::saveInitializersExternally do it, with
// PopART's messages. The import reads such data back (tensorFromProto).
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "ir/onnx/onnx_proto_utils.hpp"

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
