// GraphTransformer (xtrain/graphtransformer.hpp): edits of a ModelProto. Every edit works on a copy
// that replaces the model only when the whole edit succeeded.
#include "xtrain/graphtransformer.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "ir/onnx/onnx_proto_utils.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

struct GraphTransformer::Impl {
  onnx::ModelProto model;
};

namespace {

using TensorVisit = std::function<void(onnx::TensorProto&, const std::string& where)>;
using ValueInfoVisit = std::function<void(onnx::ValueInfoProto&)>;

// Every tensor of the graph (initializers, tensors in node attributes) and every value_info
// (inputs, outputs, value_info), in subgraphs too.
void visitGraph(onnx::GraphProto& g, const TensorVisit& tensor, const ValueInfoVisit& valueInfo) {
  for (auto& init : *g.mutable_initializer()) tensor(init, "initializer '" + init.name() + "'");
  for (auto& node : *g.mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      const std::string where = "attribute '" + a.name() + "' of node '" + node.name() + "' (" +
                                node.op_type() + ")";
      if (a.has_t()) tensor(*a.mutable_t(), where);
      for (auto& t : *a.mutable_tensors()) tensor(t, where);
      if (a.has_g()) visitGraph(*a.mutable_g(), tensor, valueInfo);
      for (auto& sub : *a.mutable_graphs()) visitGraph(sub, tensor, valueInfo);
    }
  }
  for (auto* list : {g.mutable_input(), g.mutable_output(), g.mutable_value_info()}) {
    for (auto& vi : *list) valueInfo(vi);
  }
}

// `v`'s values as `to`: integers range-checked (or clipped), floating point rounded.
HostTensor convertValues(const HostTensor& v, DataType to, bool clip, const std::string& where) {
  const DataType from = v.info().dataType();
  if (from == DataType::BFLOAT16) {  // FLOAT's upper 16 bits
    HostTensor out(TensorInfo(DataType::FLOAT, v.info().shape()));
    for (int64_t i = 0; i < v.info().nelms(); ++i) {
      uint16_t bits = 0;
      std::memcpy(&bits, v.raw() + i * 2, sizeof bits);
      const uint32_t word = static_cast<uint32_t>(bits) << 16;
      std::memcpy(out.raw() + i * 4, &word, sizeof word);
    }
    return out;
  }
  if (to != DataType::INT32) return v.castTo(to);
  HostTensor out(TensorInfo(DataType::INT32, v.info().shape()));
  constexpr double lo = std::numeric_limits<int32_t>::min();
  constexpr double hi = std::numeric_limits<int32_t>::max();
  for (int64_t i = 0; i < v.info().nelms(); ++i) {
    double x = v.getAsDouble(i);
    if (x < lo || x > hi) {
      if (!clip) {
        throw error(
            "In convertINT64TensorToINT32, cannot cast int64 to int32: number is too large. If "
            "you are sure you want still want to convert your tensor data, you can set 'clip' to "
            "'true'. ({}: element {} is {})",
            where, i, static_cast<int64_t>(x));
      }
      x = std::fmax(lo, std::fmin(hi, x));
    }
    out.setFromDouble(i, x);
  }
  return out;
}

// Every `from` of the model becomes `to`.
void convertType(onnx::ModelProto& model, DataType from, DataType to, bool clip = false) {
  const int fromOnnx = dataTypeToOnnx(from);
  const int toOnnx = dataTypeToOnnx(to);
  onnx::ModelProto edited = model;
  visitGraph(
      *edited.mutable_graph(),
      [&](onnx::TensorProto& t, const std::string& where) {
        if (t.data_type() != fromOnnx) return;
        if (t.data_location() == onnx::TensorProto::EXTERNAL) {
          throw error(
              "GraphTransformer: {} holds {} data in an external file: convert the model before "
              "saving initializers externally",
              where, dataTypeName(from));
        }
        const HostTensor value = ir::onnxutil::tensorFromProto(t, where);
        const HostTensor converted = convertValues(value, to, clip, where);
        ir::onnxutil::setTensorProto(t, converted.raw(), converted.info(),
                                     ir::onnxutil::TensorDataField::Typed);
      },
      [&](onnx::ValueInfoProto& vi) {
        if (!vi.has_type() || !vi.type().has_tensor_type()) return;
        auto* tt = vi.mutable_type()->mutable_tensor_type();
        if (tt->elem_type() == fromOnnx) tt->set_elem_type(toOnnx);
      });
  model = std::move(edited);
}

bool isFixedPointOnnx(int elemType) {
  switch (elemType) {
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

}  // namespace

GraphTransformer::GraphTransformer(const std::string& modelProtoOrFilename)
    : impl_(std::make_unique<Impl>()) {
  impl_->model = ir::onnxutil::parseModel(ir::onnxutil::loadModelSource(modelProtoOrFilename));
}

GraphTransformer::~GraphTransformer() = default;

std::string GraphTransformer::getModelProto() const {
  return ir::onnxutil::serializeModel(impl_->model, "the GraphTransformer's model");
}

void GraphTransformer::removeUnusedInputs() {
  onnx::GraphProto& g = *impl_->model.mutable_graph();
  std::set<std::string> read;
  for (const auto& node : g.node()) read.insert(node.input().begin(), node.input().end());
  for (const auto& out : g.output()) read.insert(out.name());  // an input passed straight out
  auto* inputs = g.mutable_input();
  for (int i = inputs->size(); i-- > 0;) {
    if (read.count(inputs->Get(i).name()) == 0) inputs->DeleteSubrange(i, 1);
  }
  std::set<std::string> kept;
  for (const auto& in : g.input()) kept.insert(in.name());
  auto* inits = g.mutable_initializer();
  for (int i = inits->size(); i-- > 0;) {
    // An initializer that is not a graph input (IR version 4 and later) is kept when it is read.
    const std::string& name = inits->Get(i).name();
    if (kept.count(name) == 0 && read.count(name) == 0) inits->DeleteSubrange(i, 1);
  }
}

void GraphTransformer::prepareNodesForTraining() {
  onnx::GraphProto& g = *impl_->model.mutable_graph();
  std::set<std::string> taken;
  for (const auto& node : g.node()) taken.insert(node.output().begin(), node.output().end());
  for (const auto& in : g.input()) taken.insert(in.name());
  for (auto& node : *g.mutable_node()) {
    if (node.op_type() != "BatchNormalization") continue;
    // Training's outputs: Y, running mean and variance, saved mean and variance.
    for (int k = node.output_size(); k < 5; ++k) {
      std::string name = node.op_type() + "_" + node.name() + "_oi" + std::to_string(k);
      for (int n = 1; taken.count(name) != 0; ++n) {
        name = node.op_type() + "_" + node.name() + "_oi" + std::to_string(k) + "_" +
               std::to_string(n);
      }
      taken.insert(name);
      node.add_output(name);
    }
  }
}

void GraphTransformer::convertFloatsToHalfs() {
  convertType(impl_->model, DataType::FLOAT, DataType::FLOAT16);
}
void GraphTransformer::convertDoublesToHalfs() {
  convertType(impl_->model, DataType::DOUBLE, DataType::FLOAT16);
}
void GraphTransformer::convertDoublesToFloats() {
  convertType(impl_->model, DataType::DOUBLE, DataType::FLOAT);
}
void GraphTransformer::convertBFloats16ToFloat32() {
  convertType(impl_->model, DataType::BFLOAT16, DataType::FLOAT);
}
void GraphTransformer::convertUINT8ToINT32() {
  convertType(impl_->model, DataType::UINT8, DataType::INT32);
}
void GraphTransformer::convertUINT16ToINT32() {
  convertType(impl_->model, DataType::UINT16, DataType::INT32);
}
void GraphTransformer::convertINT8ToINT32() {
  convertType(impl_->model, DataType::INT8, DataType::INT32);
}
void GraphTransformer::convertINT16ToINT32() {
  convertType(impl_->model, DataType::INT16, DataType::INT32);
}
void GraphTransformer::convertINT64ToINT32(bool clip) {
  convertType(impl_->model, DataType::INT64, DataType::INT32, clip);
}

void GraphTransformer::convertInitializersToConstants(const std::vector<std::string>& ids) {
  onnx::ModelProto edited = impl_->model;
  onnx::GraphProto& g = *edited.mutable_graph();
  std::map<std::string, int> index;
  for (int i = 0; i < g.initializer_size(); ++i) index[g.initializer(i).name()] = i;
  for (const auto& id : ids) {
    if (index.count(id) == 0) throw error("TensorId {} not in the model initalizers", id);
  }
  // The Constant nodes go first, before any reader.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  const std::set<std::string> chosen(ids.begin(), ids.end());
  for (const auto& id : chosen) {
    onnx::NodeProto* node = nodes.Add();
    node->set_name(id);
    node->set_op_type("Constant");
    node->add_output(id);
    onnx::AttributeProto* value = node->add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    *value->mutable_t() = g.initializer(index.at(id));
  }
  nodes.MergeFrom(g.node());
  g.mutable_node()->Swap(&nodes);
  auto* inits = g.mutable_initializer();
  for (int i = inits->size(); i-- > 0;) {
    if (chosen.count(inits->Get(i).name()) != 0) inits->DeleteSubrange(i, 1);
  }
  auto* inputs = g.mutable_input();
  for (int i = inputs->size(); i-- > 0;) {
    if (chosen.count(inputs->Get(i).name()) != 0) inputs->DeleteSubrange(i, 1);
  }
  impl_->model = std::move(edited);
}

void GraphTransformer::convertAllFixedPointInitializersToConstants() {
  std::vector<std::string> ids;
  for (const auto& init : impl_->model.graph().initializer()) {
    if (isFixedPointOnnx(init.data_type())) ids.push_back(init.name());
  }
  convertInitializersToConstants(ids);
}

void GraphTransformer::saveInitializersExternally(const std::vector<std::string>& ids,
                                                  const std::string& filename) {
  onnx::ModelProto edited = impl_->model;
  ir::onnxutil::saveInitializersExternally(edited, ids, filename);
  impl_->model = std::move(edited);
}

}  // namespace xtrain
