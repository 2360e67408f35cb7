// Checks the reference-data reader (tests/testing/reference_data.*) and the files in tests/data.
#include "testing/reference_data.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

namespace xtrain::testing {
namespace {

std::string dataFile(const std::string& name) {
  return std::string(XTRAIN_TEST_DATA_DIR) + "/" + name;
}

struct ModelSpec {
  std::string file;
  std::vector<std::pair<std::string, Shape>> weights;
  Shape x;
  int64_t numClasses;
};

void expectReferenceFile(const ModelSpec& spec) {
  SCOPED_TRACE(spec.file);
  const ReferenceData ref = loadReferenceData(dataFile(spec.file));
  EXPECT_EQ(ref.hyper.at("lr"), "0.05");
  EXPECT_EQ(ref.hyper.at("momentum"), "0.9");
  EXPECT_EQ(std::stod(ref.hyper.at("dampening")), 0.0);
  EXPECT_EQ(ref.hyper.at("weight_decay"), "0.01");
  EXPECT_EQ(ref.hyper.at("nesterov"), "0");
  ASSERT_EQ(ref.hyper.at("steps"), "5");
  for (const auto& [name, shape] : spec.weights) {
    for (const std::string prefix : {"", "final/", "velocity/"}) {
      const HostTensor& t = ref.at(prefix + name);
      EXPECT_EQ(t.dataType(), DataType::FLOAT) << prefix + name;
      EXPECT_EQ(t.shape(), shape) << prefix + name;
    }
  }
  for (int k = 0; k < 5; ++k) {
    const std::string step = "/step" + std::to_string(k);
    const HostTensor& x = ref.at("x" + step);
    EXPECT_EQ(x.dataType(), DataType::FLOAT);
    EXPECT_EQ(x.shape(), spec.x);
    const HostTensor& labels = ref.at("labels" + step);
    ASSERT_EQ(labels.dataType(), DataType::INT64);
    EXPECT_EQ(labels.shape(), Shape{spec.x[0]});
    for (int64_t l : labels.span<int64_t>()) {
      EXPECT_GE(l, 0);
      EXPECT_LT(l, spec.numClasses);
    }
    const HostTensor& loss = ref.at("loss" + step);
    ASSERT_EQ(loss.dataType(), DataType::FLOAT);
    EXPECT_EQ(loss.shape(), Shape{});
    const float v = loss.data<float>()[0];
    EXPECT_TRUE(std::isfinite(v)) << "loss" << step;
    EXPECT_GT(v, 0.0f) << "loss" << step;
  }
  // 4 initial + 5 * (x, labels, loss) + 4 final + 4 velocity.
  EXPECT_EQ(ref.tensors.size(), 27u);
}

TEST(ReferenceData, MlpFileHasEveryTensor) {
  expectReferenceFile({"sgd_reference_mlp.txt",
                       {{"W1", {6, 5}}, {"b1", {5}}, {"W2", {5, 4}}, {"b2", {4}}},
                       {8, 6},
                       4});
}

TEST(ReferenceData, CnnFileHasEveryTensor) {
  expectReferenceFile({"sgd_reference_cnn.txt",
                       {{"Wc", {3, 1, 3, 3}}, {"bc", {3}}, {"W3", {27, 5}}, {"b3", {5}}},
                       {4, 1, 6, 6},
                       5});
}

class ReferenceDataParse : public ::testing::Test {
 protected:
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  std::string write(const std::string& text) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = (std::filesystem::temp_directory_path() /
             ("xtrain_reference_data_" + std::string(info->name()) + "_" +
              std::to_string(::getpid()) + ".txt"))
                .string();
    std::ofstream(path_) << text;
    return path_;
  }
  // Expects loading to fail with "<path>:<line>:" and the given fragment in the message.
  void expectError(const std::string& text, int line, const std::string& fragment) {
    const std::string path = write(text);
    try {
      loadReferenceData(path);
      FAIL() << "expected an error for:\n" << text;
    } catch (const error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path + ":" + std::to_string(line) + ":"), std::string::npos) << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << what;
    }
  }
  std::string path_;
};

TEST_F(ReferenceDataParse, ReadsExactValues) {
  const std::string path = write(
      "# comment\n"
      "hyper lr=0.05 steps=5\n"
      "\n"
      "tensor w FLOAT 2 2 2\n"
      "0.1 -2.5 3.40282347e+38 1.17549435e-38\n"
      "tensor s FLOAT 0\n"
      "0.0500000007\n"
      "tensor l INT64 1 3\n"
      "0 -1 9223372036854775807\n");
  const ReferenceData ref = loadReferenceData(path);
  EXPECT_EQ(ref.hyper.at("lr"), "0.05");
  EXPECT_EQ(ref.hyper.at("steps"), "5");
  EXPECT_EQ(ref.at("w").toVector<float>(),
            (std::vector<float>{0.1f, -2.5f, 3.40282347e+38f, 1.17549435e-38f}));
  EXPECT_EQ(ref.at("s").shape(), Shape{});
  EXPECT_EQ(ref.at("s").data<float>()[0], 0.05f);
  EXPECT_EQ(ref.at("l").toVector<int64_t>(), (std::vector<int64_t>{0, -1, INT64_MAX}));
}

TEST_F(ReferenceDataParse, MissingTensorNamesIt) {
  const ReferenceData ref = loadReferenceData(write("tensor a FLOAT 1 1\n1\n"));
  try {
    ref.at("final/W9");
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("final/W9"), std::string::npos) << e.what();
  }
}

TEST_F(ReferenceDataParse, MalformedFilesNameFileAndLine) {
  expectError("# ok\ntensor a FLOAT 1 3\n1 2\n", 3, "needs 3 values");
  expectError("tensor a FLOAT 1 2\n1 x\n", 2, "'x'");
  expectError("# c\n\nbogus line\n", 3, "bogus");
  expectError("tensor a DOUBLE 1 1\n1\n", 1, "DOUBLE");
  expectError("tensor a FLOAT 2 1\n1\n", 1, "rank");
  expectError("hyper lr=1\nhyper lr=2\n", 2, "duplicate hyper key 'lr'");
  expectError("hyper novalue\n", 1, "novalue");
  expectError("tensor a INT64 1 1\n1\ntensor a INT64 1 1\n1\n", 3, "duplicate tensor 'a'");
  expectError("tensor a INT64 1 1\n1.5\n", 2, "1.5");
  expectError("# c\ntensor a FLOAT 1 1\n", 2, "no values line");
}

TEST(ReferenceDataLoad, MissingFileNamesIt) {
  try {
    loadReferenceData("/nonexistent/dir/ref.txt");
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/ref.txt"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace xtrain::testing
