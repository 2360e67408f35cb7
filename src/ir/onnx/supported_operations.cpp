// OpManager (xtrain/opmanager.hpp): the op registry's ops, each at the versions its ONNX schemas
// give it, and their definitions from those schemas. Here because the versions and definitions are
// ONNX's: only src/ir/onnx reads ONNX's schema registry.
#include "xtrain/opmanager.hpp"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "ir/graph.hpp"
#include "ir/onnx/onnx_import.hpp"
#include "ir/onnx/onnx_proto_utils.hpp"
#include "ir/op_registry.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

namespace {

// The ops the importer turns into something else itself rather than through the registry
// (onnx_import.cpp, control_flow_import.cpp, import_expansions.cpp): a model may use them all the
// same.
const std::vector<std::pair<const char*, const char*>> kImportedOps = {
    {ir::kOnnxDomain, "Constant"}, {ir::kOnnxDomain, "If"},   {ir::kOnnxDomain, "Loop"},
    {ir::kOnnxDomain, "Scan"},     {ir::kGraphcoreDomain, "Call"},
    {ir::kGraphcoreDomain, "PackedDataBlock"},
    {ir::kGraphcoreDomain, "LSTM"}};

// ONNX's schema registry names ai.onnx "".
std::string schemaDomain(const std::string& domain) {
  return domain == ir::kOnnxDomain ? std::string() : domain;
}

struct Entry {
  OperatorIdentifier id;
  const onnx::OpSchema* schema = nullptr;  // null for ops without one (xtrain's internal ops)
  const ir::OpDef* def = nullptr;          // null for kImportedOps
};

// ai.onnx: the version of each schema in force at some opset from kMinOnnxOpset to kMaxOnnxOpset.
// Other domains: the newest schema's version (a custom op's registered version), else 1.
void addVersions(const std::string& domain, const std::string& type, const ir::OpDef* def,
                 std::vector<Entry>& out) {
  if (domain == ir::kOnnxDomain) {
    std::set<int> seen;
    for (int opset = ir::kMinOnnxOpset; opset <= ir::kMaxOnnxOpset; ++opset) {
      const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(type, opset, "");
      if (s == nullptr || !seen.insert(s->SinceVersion()).second) continue;
      out.push_back({OperatorIdentifier(domain, type, s->SinceVersion()), s, def});
    }
    return;
  }
  const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(type, INT_MAX, schemaDomain(domain));
  out.push_back({OperatorIdentifier(domain, type, s != nullptr ? s->SinceVersion() : 1), s, def});
}

std::vector<Entry> entries(bool includePrivate) {
  ir::onnxutil::registerGraphcoreSchemas();
  std::vector<Entry> out;
  for (const auto& name : ir::OpRegistry::instance().knownOps()) {
    const size_t sep = name.find("::");
    const std::string domain = name.substr(0, sep);
    const std::string type = name.substr(sep + 2);
    if (domain == ir::kXtrainDomain && !includePrivate) continue;
    addVersions(domain, type, ir::OpRegistry::instance().find(domain, type), out);
  }
  for (const auto& [domain, type] : kImportedOps) addVersions(domain, type, nullptr, out);
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.id < b.id; });
  return out;
}

std::optional<DataType> dataTypeOfOnnxName(const std::string& t) {
  static const std::map<std::string, DataType> kTypes = {
      {"tensor(float)", DataType::FLOAT},     {"tensor(float16)", DataType::FLOAT16},
      {"tensor(double)", DataType::DOUBLE},   {"tensor(bfloat16)", DataType::BFLOAT16},
      {"tensor(int8)", DataType::INT8},       {"tensor(int16)", DataType::INT16},
      {"tensor(int32)", DataType::INT32},     {"tensor(int64)", DataType::INT64},
      {"tensor(uint8)", DataType::UINT8},     {"tensor(uint16)", DataType::UINT16},
      {"tensor(uint32)", DataType::UINT32},   {"tensor(uint64)", DataType::UINT64},
      {"tensor(bool)", DataType::BOOL},       {"tensor(string)", DataType::STRING},
      {"tensor(complex64)", DataType::COMPLEX64}, {"tensor(complex128)", DataType::COMPLEX128}};
  const auto it = kTypes.find(t);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

std::vector<DataType> typesOf(const onnx::OpSchema::FormalParameter& p) {
  std::vector<DataType> types;
  for (const auto* t : p.GetTypes()) {
    if (auto d = dataTypeOfOnnxName(*t)) types.push_back(*d);
  }
  std::sort(types.begin(), types.end());
  return types;
}

OpDefinition definitionOf(const Entry& e) {
  OpDefinition d;
  if (e.schema != nullptr) {
    for (const auto& in : e.schema->inputs()) d.inputs.push_back({in.GetName(), typesOf(in), false});
    for (const auto& o : e.schema->outputs()) d.outputs.push_back({o.GetName(), typesOf(o)});
    for (const auto& [name, attr] : e.schema->attributes()) d.attributes[name] = {".*"};
    return d;
  }
  // No schema: the counts the registry gives, without types (the op's kernels decide them).
  const int inputs = e.def->maxInputs >= 0 ? e.def->maxInputs : e.def->minInputs;
  for (int i = 0; i < inputs; ++i) d.inputs.push_back({"input" + std::to_string(i), {}, false});
  for (int i = 0; i < e.def->maxOutputs; ++i) d.outputs.push_back({"output" + std::to_string(i), {}});
  return d;
}

}  // namespace

std::vector<OperatorIdentifier> OpManager::getSupportedOperations(bool includePrivate) {
  std::vector<OperatorIdentifier> ids;
  for (const auto& e : entries(includePrivate)) ids.push_back(e.id);
  return ids;
}

std::vector<OperatorIdentifier> OpManager::getUnsupportedOperations(int opsetVersion) {
  if (opsetVersion < ir::kMinOnnxOpset || opsetVersion > ir::kMaxOnnxOpset) {
    throw error("getUnsupportedOperations: opset {} is not one xtrain reads (ai.onnx {} to {})",
                opsetVersion, ir::kMinOnnxOpset, ir::kMaxOnnxOpset);
  }
  std::set<std::string> supported;
  for (const auto& e : entries(false)) {
    if (e.id.domain == ir::kOnnxDomain) supported.insert(e.id.type);
  }
  std::vector<OperatorIdentifier> out;
  for (const auto& s : onnx::OpSchemaRegistry::get_all_schemas()) {
    if (!s.domain().empty() || supported.count(s.Name()) != 0) continue;
    // The version in force at opsetVersion, once per op (get_all_schemas has the newest only).
    const onnx::OpSchema* atOpset = onnx::OpSchemaRegistry::Schema(s.Name(), opsetVersion, "");
    if (atOpset == nullptr || atOpset->Deprecated()) continue;
    out.emplace_back(ir::kOnnxDomain, s.Name(), atOpset->SinceVersion());
  }
  std::sort(out.begin(), out.end());
  return out;
}

OpDefinitions OpManager::getSupportedOperationsDefinition(bool includePrivate) {
  OpDefinitions out;
  for (const auto& e : entries(includePrivate)) out.emplace(e.id, definitionOf(e));
  return out;
}

}  // namespace xtrain
