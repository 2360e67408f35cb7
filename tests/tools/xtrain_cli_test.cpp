// The `xtrain` program as a user runs it: the built-in example, an ONNX model with HDF5 data, and
// bad input (exit code 2 with a message naming the culprit).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <regex>

#include "checkpoint/dataset_reader.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::testing {
namespace {

// Runs xtrain with `args` (bounded) and captures stdout and stderr.
CommandResult run(const std::string& args) {
  return runCommand("./xtrain " + args);
}

std::pair<double, double> firstAndLastLoss(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("loss ([0-9.naif]+) -> ([0-9.naif]+)")))
    return {0, 0};
  return {std::stod(m[1]), std::stod(m[2])};
}

class XtrainCli : public ScratchDirTest {
 protected:
  // A 4-feature, 2-class MLP with a batch dimension of 8 and a data set where the class is x0 > x1.
  void writeModelAndData(const Shape& xSampleShape = {4}) {
    auto b = Builder::create();
    auto onnx = b->aiOnnxOpset13();
    auto x = b->addInputTensor(TensorInfo(DataType::FLOAT, {8, 4}), "x");
    auto y = b->addInputTensor(TensorInfo(DataType::INT32, {8}), "y");
    std::vector<float> w(4 * 2, 0.1f), bias(2, 0.0f);
    w[1] = -0.1f;
    auto wt = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({4, 2}, w), "W");
    auto bt = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({2}, bias), "B");
    auto logits = onnx.add({onnx.matmul({x, wt}), bt});
    auto loss = onnx.softmaxcrossentropyloss({logits, y}, 1, std::nullopt, "mean", "loss")[0];
    b->addOutputTensor(loss);
    loss_ = loss;
    b->saveModelProto((dir_ / "model.onnx").string());

    const int64_t n = 256;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    int64_t per = 1;
    for (auto d : xSampleShape) per *= d;
    std::vector<float> xs(static_cast<size_t>(n * per));
    std::vector<int32_t> ys(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t f = 0; f < per; ++f) xs[static_cast<size_t>(i * per + f)] = normal(rng);
      ys[static_cast<size_t>(i)] =
          xs[static_cast<size_t>(i * per)] > xs[static_cast<size_t>(i * per + 1)];
    }
    Shape xShape{n};
    xShape.insert(xShape.end(), xSampleShape.begin(), xSampleShape.end());
    checkpoint::DatasetWriter writer((dir_ / "data.h5").string());  // closed when this returns
    writer.write("x", TensorInfo(DataType::FLOAT, xShape), xs.data());
    writer.write("y", TensorInfo(DataType::INT32, {n}), ys.data());
  }

  TensorId loss_;
};

TEST_F(XtrainCli, BuiltInExampleLossFalls) {
  CommandResult r = run("--steps 40");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  auto [first, last] = firstAndLastLoss(r.output);
  EXPECT_LT(last, first * 0.5) << r.output;
  EXPECT_NE(r.output.find("samples/s"), std::string::npos);
}

// XTRAIN_PROFILE_OPS=1: the run ends with where the steps went (phases, op types, slowest ops);
// without it, nothing of the kind is printed.
TEST_F(XtrainCli, ProfileOpsPrintsWhereTheStepGoes) {
  CommandResult r = runCommand("XTRAIN_PROFILE_OPS=1 ./xtrain --steps 3");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const size_t at = r.output.find("xtrain: execution profile: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_LT(r.output.find("trained 3 steps"), at) << r.output;
  EXPECT_NE(r.output.find("by phase:  ", at), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Forward", at), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("by op type:  ", at), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("SGDUpdate", at), std::string::npos) << r.output;
  CommandResult plain = run("--steps 3");
  ASSERT_EQ(plain.exitCode, 0) << plain.output;
  EXPECT_EQ(plain.output.find("execution profile"), std::string::npos) << plain.output;
}

TEST_F(XtrainCli, TrainsAnOnnxModelOnHdf5DataAndSavesIt) {
  writeModelAndData();
  CommandResult r =
      run("--model " + path("model.onnx") + " --data " + path("data.h5") + " --loss " + loss_ +
          " --micro-batch-size 8 --epochs 4 --lr 0.1 --save-model " + path("out.onnx") +
          " --anchor " + loss_ + ":FINAL");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  auto [first, last] = firstAndLastLoss(r.output);
  EXPECT_LT(last, first) << r.output;
  EXPECT_TRUE(std::filesystem::exists(path("out.onnx"))) << r.output;
}

TEST_F(XtrainCli, SameSeedGivesTheSameRun) {
  writeModelAndData();
  const std::string args = "--model " + path("model.onnx") + " --data " + path("data.h5") +
                           " --loss " + loss_ + " --micro-batch-size 8 --steps 20 --seed 3";
  CommandResult a = run(args), b = run(args);
  ASSERT_EQ(a.exitCode, 0) << a.output;
  EXPECT_EQ(firstAndLastLoss(a.output), firstAndLastLoss(b.output));
}

TEST_F(XtrainCli, MissingDatasetIsBadInput) {
  writeModelAndData();
  {
    checkpoint::DatasetWriter writer(path("other.h5"));  // closed before xtrain reads it
    std::vector<float> v(16);
    writer.write("x", TensorInfo(DataType::FLOAT, {4, 4}), v.data());
  }
  CommandResult r =
      run("--model " + path("model.onnx") + " --data " + path("other.h5") + " --loss " + loss_);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("no dataset 'y'"), std::string::npos) << r.output;
}

TEST_F(XtrainCli, MisShapedDatasetNamesBothShapes) {
  writeModelAndData({5});
  CommandResult r = run("--model " + path("model.onnx") + " --data " + path("data.h5") +
                        " --loss " + loss_ + " --micro-batch-size 8");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("[5]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[4]"), std::string::npos) << r.output;
}

TEST_F(XtrainCli, DatasetOfAnotherRankNamesBothShapes) {
  writeModelAndData({2, 2});
  CommandResult r = run("--model " + path("model.onnx") + " --data " + path("data.h5") +
                        " --loss " + loss_ + " --micro-batch-size 8");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("input 'x'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[8,4]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[256,2,2]"), std::string::npos) << r.output;
}

TEST_F(XtrainCli, BadUsageAndBadFilesExitWithTwo) {
  EXPECT_EQ(run("--no-such-option").exitCode, 2);
  EXPECT_EQ(run("--steps 0").exitCode, 2);
  EXPECT_EQ(run("--steps 10 --epochs 1").exitCode, 2);
  EXPECT_EQ(run("--model m.onnx").exitCode, 2);
  std::FILE* f = std::fopen(path("notamodel.onnx").c_str(), "w");
  std::fputs("hello", f);
  std::fclose(f);
  writeModelAndData();
  CommandResult r =
      run("--model " + path("notamodel.onnx") + " --data " + path("data.h5") + " --loss l");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("notamodel.onnx"), std::string::npos) << r.output;
  CommandResult h = run("--help");
  EXPECT_EQ(h.exitCode, 0);
  EXPECT_NE(h.output.find("--micro-batch-size"), std::string::npos);
}

// A model file that does not parse is named in the message, and a file of text is not taken for
// the name of another model file (as it would be were its bytes handed to the importer).
TEST_F(XtrainCli, BadModelFilesAreNamed) {
  writeModelAndData();
  std::FILE* f = std::fopen(path("garbage.onnx").c_str(), "wb");
  const unsigned char garbage[] = {0x08, 0xff, 0xff, 0x3a, 0x99, 0x00, 0x12};
  std::fwrite(garbage, 1, sizeof garbage, f);
  std::fclose(f);
  CommandResult r =
      run("--model " + path("garbage.onnx") + " --data " + path("data.h5") + " --loss " + loss_);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("ONNX model file '" + path("garbage.onnx") + "' is not an ONNX model"),
            std::string::npos)
      << r.output;
  f = std::fopen(path("pointer.onnx").c_str(), "w");
  std::fputs(path("model.onnx").c_str(), f);
  std::fclose(f);
  r = run("--model " + path("pointer.onnx") + " --data " + path("data.h5") + " --loss " + loss_ +
          " --steps 1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("pointer.onnx' is not an ONNX model"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace xtrain::testing
