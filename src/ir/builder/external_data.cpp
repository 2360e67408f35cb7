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
  ir::onnxutil::saveInitializersExternally(model_, ids, filename);
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
