// Builder::saveInitializersExternally (PopART's): initializers' data moved to a file of their own
// (ONNX's external data), and the check that a loaded model's external data files exist. The
// import reads such data back (onnxutil::tensorFromProto); as in PopART, a relative location is
// relative to the working directory. Messages are PopART's.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/builder/builder_impl.hpp"

namespace xtrain {

namespace {

std::string externalLocation(const onnx::TensorProto& t) {
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") return kv.value();
  }
  return {};
}

}  // namespace

void BuilderImpl::saveInitializersExternally(const std::vector<TensorId>& ids,
                                             const std::string& filename) {
  std::vector<onnx::TensorProto*> tensors;
  for (const auto& id : ids) {
    onnx::TensorProto* found = nullptr;
    for (auto& init : *model_.mutable_graph()->mutable_initializer()) {
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
    const HostTensor value = ir::onnxutil::tensorFromProto(*t, "initializer '" + t->name() + "'");
    out.write(reinterpret_cast<const char*>(value.raw()),
              static_cast<std::streamsize>(value.nbytes()));
    const TensorInfo info = value.info();
    ir::onnxutil::setTensorProto(*t, nullptr, TensorInfo(info.dataType(), {0}));
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
  ++generation_;
}

void BuilderImpl::checkExternalData() const {
  for (const auto& init : model_.graph().initializer()) {
    if (init.data_location() != onnx::TensorProto::EXTERNAL) continue;
    const std::string location = externalLocation(init);
    if (location.empty() || !std::ifstream(location, std::ios::binary)) {
      throw error(
          "Data of TensorProto ( tensor name: {}) should be stored in {}, but it doesn't exist or "
          "is not accessible.",
          init.name(), location);
    }
  }
}

void Builder::saveInitializersExternally(const std::vector<TensorId>& ids,
                                         const std::string& filename) {
  impl_->saveInitializersExternally(ids, filename);
}

}  // namespace xtrain
