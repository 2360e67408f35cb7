#include "ir/onnx/onnx_export.hpp"

#include <set>

#include "ir/onnx/onnx_proto_utils.hpp"
#include "xtrain/tensornames.hpp"

namespace xtrain::ir {

namespace {

// The weight whose optimizer state `id` is (PopART's optimizer-state prefixes), or "".
std::string optimizerStateWeight(const TensorId& id) {
  for (const char* prefix : {reservedAcclPrefix(), reservedAccl1Prefix(), reservedAccl2Prefix(),
                             reservedAccl3Prefix(), reservedStepPrefix()}) {
    const std::string p(prefix);
    if (id.size() > p.size() && id.compare(0, p.size(), p) == 0) return id.substr(p.size());
  }
  return "";
}

}  // namespace

std::string updateOnnxInitializers(const std::string& modelBytes,
                                   const std::map<TensorId, HostTensor>& values,
                                   const std::map<TensorId, HostTensor>& extraInitializers,
                                   const std::map<std::string, std::string>& metadata) {
  onnx::ModelProto model = onnxutil::parseModelBytes(
      modelBytes, "ONNX model bytes (" + std::to_string(modelBytes.size()) + " bytes)");
  onnx::GraphProto* g = model.mutable_graph();

  std::map<std::string, onnx::TensorProto*> initializers;
  for (auto& init : *g->mutable_initializer()) initializers[init.name()] = &init;

  for (const auto& [id, value] : values) {
    auto it = initializers.find(id);
    if (it == initializers.end()) {
      std::vector<std::string> names;
      for (const auto& [n, p] : initializers) names.push_back(n);
      throw error(
          "cannot update initializer '{}': the model has no such initializer (initializers: {})",
          id, names);
    }
    onnx::TensorProto& t = *it->second;
    const TensorInfo have = onnxutil::tensorProtoInfo(t, "initializer '" + id + "'");
    if (have != value.info()) {
      throw error("cannot update initializer '{}': the model holds {}, the new value is {}", id,
                  have.toString(), value.info().toString());
    }
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      // Stored in a file of its own: the new value goes back there (as PopART writes it).
      onnxutil::writeExternalData(t, value, "initializer '" + id + "'");
      continue;
    }
    onnxutil::setTensorProto(t, value.raw(), value.info(), onnxutil::dataFieldOf(t));
  }

  std::set<std::string> used;
  for (const auto& in : g->input()) used.insert(in.name());
  for (const auto& node : g->node()) used.insert(node.output().begin(), node.output().end());
  for (const auto& [id, value] : extraInitializers) {
    if (initializers.count(id) || used.count(id) || values.count(id)) {
      throw error("cannot add initializer '{}': the model already has a tensor of that name", id);
    }
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(id);
    // In the typed field, as PopART adds its optimizer state (programs read float_data back).
    onnxutil::setTensorProto(*t, value.raw(), value.info(), onnxutil::TensorDataField::Typed);
    // A weight's optimizer state goes to the weight's external data file, if it has one.
    if (const std::string weight = optimizerStateWeight(id); !weight.empty()) {
      onnxutil::saveBesideExternalInitializer(model, *t, value, weight);
    }
    if (model.ir_version() < 4) {
      // Before IR version 4 every initializer must also be a graph input.
      onnx::ValueInfoProto* in = g->add_input();
      in->set_name(id);
      *in->mutable_type() = onnxutil::tensorTypeProto(value.info());
    }
    used.insert(id);
  }

  for (const auto& [key, value] : metadata) onnxutil::setMetadataProp(model, key, value);
  return onnxutil::serializeModel(model, "the updated model");
}

}  // namespace xtrain::ir
