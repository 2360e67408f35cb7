// ONNX export: new initializer values, extra initializers and metadata written back into the model.
#include "ir/onnx/onnx_export.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/output_file.hpp"
#include "ir/onnx/onnx_import.hpp"
#include "ir/op_registry.hpp"
#include "testing/error_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain {
namespace {

using xtrain::testing::expectError;

namespace fs = std::filesystem;

fs::path tempPath(const std::string& name) {
  static int counter = 0;
  return fs::temp_directory_path() / ("xtrain_onnx_export_" + std::to_string(::getpid()) + "_" +
                                      std::to_string(counter++) + "_" + name);
}

// x [2,2] + w [2,2] -> y, w a weight, b an INT32 constant initializer, h a FLOAT16 weight.
std::string smallModel() {
  auto builder = Builder::create();
  auto onnx = builder->aiOnnxOpset13();
  const TensorId x = builder->addInputTensor(TensorInfo("FLOAT", {2, 2}), "x");
  const TensorId w = builder->addInitializedInputTensor(
      ConstVoidData::fromVector<float>({2, 2}, {1, 2, 3, 4}), "w");
  builder->addInitializedInputTensor(ConstVoidData::fromVector<int32_t>({2}, {5, 6}), "b");
  builder->addInitializedInputTensor(
      ConstVoidData::fromVector<uint16_t>({2}, {floatToHalf(1.0f), floatToHalf(2.0f)}), "h");
  builder->addOutputTensor(onnx.add({x, w}, "y"));
  return builder->getModelProto();
}

bool haveAdd() {
  return ir::OpRegistry::instance().find(ir::kOnnxDomain, "Add") != nullptr;
}

TEST(OnnxExport, UpdatedInitializerSurvivesWriteAndReimport) {
  if (!haveAdd()) GTEST_SKIP() << "Add not registered yet";
  const std::string original = smallModel();
  std::map<TensorId, HostTensor> values;
  values.emplace("w", HostTensor::fromVector<float>({2, 2}, {10, 20, 30, 40}));
  values.emplace("h",
                 HostTensor::fromVector<uint16_t>({2}, {floatToHalf(-1.5f), floatToHalf(0.25f)}));
  std::map<TensorId, HostTensor> extra;
  extra.emplace("Accl___w", HostTensor::fromVector<float>({2, 2}, {0.5f, 0.5f, 0.5f, 0.5f}));
  const std::string updated = ir::updateOnnxInitializers(
      original, values, extra, {{"__replicationFactor", "2"}, {"k", "v"}});

  const fs::path path = tempPath("trained.onnx");
  writeOutputFile(path.string(), updated, "test");
  ir::OnnxModel m = ir::importOnnxModel(path.string());
  fs::remove(path);
  const ir::Graph& g = *m.graph;
  EXPECT_EQ(g.tensor("w").value->toVector<float>(), (std::vector<float>{10, 20, 30, 40}));
  EXPECT_EQ(g.tensor("w").kind, ir::TensorKind::Variable);
  EXPECT_EQ(g.tensor("b").value->toVector<int32_t>(), (std::vector<int32_t>{5, 6}));
  EXPECT_FLOAT_EQ(static_cast<float>(g.tensor("h").value->getAsDouble(0)), -1.5f);
  EXPECT_EQ(g.tensor("Accl___w").value->toVector<float>(), std::vector<float>(4, 0.5f));
  EXPECT_EQ(m.metadata.at("__replicationFactor"), "2");
  EXPECT_EQ(m.metadata.at("k"), "v");
  EXPECT_EQ(g.inputs(), std::vector<TensorId>{"x"});
  EXPECT_EQ(g.ops().size(), 1u);

  // The original model still holds the old value.
  ir::OnnxModel before = ir::importOnnxModel(original);
  EXPECT_EQ(before.graph->tensor("w").value->toVector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(OnnxExport, ReplacesExistingMetadata) {
  const std::string once = ir::updateOnnxInitializers(smallModel(), {}, {}, {{"k", "1"}});
  const std::string twice = ir::updateOnnxInitializers(once, {}, {}, {{"k", "2"}});
  if (!haveAdd()) GTEST_SKIP() << "Add not registered yet";
  EXPECT_EQ(ir::importOnnxModel(twice).metadata.at("k"), "2");
}

TEST(OnnxExport, Errors) {
  const std::string model = smallModel();
  {
    std::map<TensorId, HostTensor> values;
    values.emplace("nope", HostTensor::fromVector<float>({1}, {1}));
    expectError([&] { ir::updateOnnxInitializers(model, values); },
                {"'nope'", "no such initializer", "w"});
  }
  {
    std::map<TensorId, HostTensor> values;
    values.emplace("w", HostTensor::fromVector<float>({4}, {1, 2, 3, 4}));
    expectError([&] { ir::updateOnnxInitializers(model, values); },
                {"'w'", "FLOAT[2,2]", "FLOAT[4]"});
  }
  {
    std::map<TensorId, HostTensor> values;
    values.emplace("b", HostTensor::fromVector<float>({2}, {1, 2}));
    expectError([&] { ir::updateOnnxInitializers(model, values); },
                {"'b'", "INT32[2]", "FLOAT[2]"});
  }
  {
    std::map<TensorId, HostTensor> extra;
    extra.emplace("x", HostTensor::fromVector<float>({2, 2}, {1, 2, 3, 4}));
    expectError([&] { ir::updateOnnxInitializers(model, {}, extra); }, {"'x'", "already has"});
  }
  expectError([&] { ir::updateOnnxInitializers("not a model", {}); }, {"is not an ONNX model"});
}

TEST(OnnxExport, WriteFileErrors) {
  const fs::path dir = tempPath("dir");
  fs::create_directories(dir);
  expectError([&] { writeOutputFile(dir.string(), "x", "test"); },
              {dir.string(), "is a directory"});
  const std::string deep = (dir / "missing" / "m.onnx").string();
  expectError([&] { writeOutputFile(deep, "x", "test"); }, {deep, "cannot"});
  const std::string ok = (dir / "m.onnx").string();
  writeOutputFile(ok, "abc", "test");
  std::ifstream in(ok, std::ios::binary);
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(back, "abc");
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xtrain
