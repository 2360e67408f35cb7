// OpManager: the supported ops at ONNX's versions of them, the private ones on top, the
// unsupported ones of an opset disjoint from them, and definitions from the schemas.
#include "xtrain/opmanager.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

bool has(const std::vector<OperatorIdentifier>& ids, const std::string& domain,
         const std::string& type, int version) {
  return std::find(ids.begin(), ids.end(), OperatorIdentifier(domain, type, version)) != ids.end();
}

TEST(OpManager, ListsEachAiOnnxOpAtEveryVersionOnnxGaveIt) {
  const auto ids = OpManager::getSupportedOperations(false);
  // Add was redefined at opsets 6, 7, 13 and 14 (ONNX's changelog); 1 is before xtrain's range.
  for (int v : {6, 7, 13, 14}) EXPECT_TRUE(has(ids, "ai.onnx", "Add", v)) << v;
  EXPECT_FALSE(has(ids, "ai.onnx", "Add", 1));
  EXPECT_FALSE(has(ids, "ai.onnx", "Add", 8));
  // The importer's own ops and ai.graphcore's at version 1.
  EXPECT_TRUE(has(ids, "ai.onnx", "Constant", 13));
  EXPECT_TRUE(has(ids, "ai.onnx", "Loop", 16));
  EXPECT_TRUE(has(ids, "ai.graphcore", "Call", 1));
  EXPECT_TRUE(has(ids, "ai.graphcore", "Gelu", 1));
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  for (const auto& id : ids) EXPECT_NE(id.domain, "ai.xtrain") << id.toString();
}

TEST(OpManager, PrivateOpsAddXtrainsInternalOnes) {
  const auto pub = OpManager::getSupportedOperations(false);
  const auto all = OpManager::getSupportedOperations(true);
  EXPECT_GT(all.size(), pub.size());
  for (const auto& id : pub) EXPECT_TRUE(has(all, id.domain, id.type, id.version)) << id.toString();
  EXPECT_TRUE(std::any_of(all.begin(), all.end(),
                          [](const OperatorIdentifier& id) { return id.domain == "ai.xtrain"; }));
}

TEST(OpManager, UnsupportedOpsOfAnOpsetAreDisjointFromTheSupportedOnes) {
  const auto supported = OpManager::getSupportedOperations(false);
  std::set<std::string> supportedTypes;
  for (const auto& id : supported) supportedTypes.insert(id.type);
  for (int opset : {6, 10, 11, 13, 17}) {
    const auto unsupported = OpManager::getUnsupportedOperations(opset);
    EXPECT_FALSE(unsupported.empty()) << opset;
    for (const auto& id : unsupported) {
      EXPECT_EQ(id.domain, "ai.onnx");
      EXPECT_LE(id.version, opset) << id.toString();
      EXPECT_EQ(supportedTypes.count(id.type), 0u) << id.toString();
    }
  }
  // StringNormalizer (opset 10) computes on strings, which xtrain has no kernels for.
  EXPECT_TRUE(has(OpManager::getUnsupportedOperations(10), "ai.onnx", "StringNormalizer", 10));
  EXPECT_THROW(OpManager::getUnsupportedOperations(5), error);
  EXPECT_THROW(OpManager::getUnsupportedOperations(18), error);
}

TEST(OpManager, DefinitionsComeFromTheSchemas) {
  const OpDefinitions defs = OpManager::getSupportedOperationsDefinition(false);
  EXPECT_EQ(defs.size(), OpManager::getSupportedOperations(false).size());
  const OpDefinition& conv = defs.at(OperatorIdentifier("ai.onnx", "Conv", 11));
  ASSERT_EQ(conv.inputs.size(), 3u);
  EXPECT_EQ(conv.inputs[0].name, "X");
  const auto& types = conv.inputs[0].supportedTensors;
  EXPECT_NE(std::find(types.begin(), types.end(), DataType::FLOAT), types.end());
  EXPECT_EQ(std::find(types.begin(), types.end(), DataType::INT32), types.end());
  ASSERT_EQ(conv.outputs.size(), 1u);
  EXPECT_EQ(conv.attributes.count("kernel_shape"), 1u);
  EXPECT_EQ(conv.attributes.at("strides").supportedValuesRegex, ".*");
  EXPECT_GT(OpManager::getSupportedOperationsDefinition(true).size(), defs.size());
}

}  // namespace
}  // namespace xtrain
