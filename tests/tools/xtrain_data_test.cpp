// `xtrain` on data files as users write them with h5py (tests/data/make_h5py_layouts.py), issue 27:
// chunked, compressed data trains exactly like contiguous data; a value so large that float
// arithmetic overflows on it is named when the loss goes bad, instead of the learning rate; a
// label that does not fit the model's label type is printed as stored.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "testing/file_testing.hpp"
#include "testing/h5py_files.hpp"
#include "testing/process_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::testing {
namespace {

class XtrainData : public ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    if (!h5pyAvailable()) GTEST_SKIP() << "/usr/bin/python3 has no h5py";
    ASSERT_TRUE(writeH5pyFiles(dir_.string()));
    // x [8, 4] -> logits [8, 2] -> softmax cross-entropy: the data files' x and y.
    auto b = Builder::create();
    auto onnx = b->aiOnnxOpset13();
    auto x = b->addInputTensor(TensorInfo(DataType::FLOAT, {8, 4}), "x");
    auto y = b->addInputTensor(TensorInfo(DataType::INT32, {8}), "y");
    auto w = b->addInitializedInputTensor(
        ConstVoidData::fromVector<float>({4, 2},
                                         {0.1f, -0.2f, 0.3f, 0.05f, -0.1f, 0.2f, 0.0f, 0.1f}),
        "W");
    loss_ = onnx.softmaxcrossentropyloss({onnx.matmul({x, w}), y}, 1, std::nullopt, "mean")[0];
    b->addOutputTensor(loss_);
    b->saveModelProto(path("model.onnx"));
  }
  CommandResult train(const std::string& data, const std::string& extra,
                      const std::string& env = "") const {
    return runCommand(env + " ./xtrain --model " + path("model.onnx") + " --data " + path(data) +
                      " --loss " + loss_ + " --micro-batch-size 8 " + extra);
  }
  TensorId loss_;
};

// The "loss X" of every progress line.
std::vector<std::string> losses(const std::string& output) {
  std::vector<std::string> out;
  const std::regex line("step +[0-9]+/[0-9]+ +epoch [0-9]+ +loss ([-0-9.e+na]+)");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
       it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

// Once exit 2, "its chunk index cannot be read: the file is damaged", for every chunked file.
TEST_F(XtrainData, GzipChunkedDataTrainsLikeContiguousData) {
  const std::string args = "--epochs 3 --lr 0.1 --seed 5 --save-model ";
  const CommandResult contiguous = train("train-contiguous.h5", args + path("contiguous.onnx"));
  ASSERT_EQ(contiguous.exitCode, 0) << contiguous.output;
  const CommandResult gzip = train("train-gzip.h5", args + path("gzip.onnx"));
  ASSERT_EQ(gzip.exitCode, 0) << gzip.output;
  // Read batch by batch from the chunks rather than whole into memory.
  const CommandResult batches =
      train("train-gzip.h5", args + path("batches.onnx"), "XTRAIN_DATA_RESIDENT_BYTES=0");
  ASSERT_EQ(batches.exitCode, 0) << batches.output;

  const std::vector<std::string> want = losses(contiguous.output);
  ASSERT_EQ(want.size(), 24u) << contiguous.output;  // 3 epochs of 64 samples in steps of 8
  EXPECT_EQ(losses(gzip.output), want) << gzip.output;
  EXPECT_EQ(losses(batches.output), want) << batches.output;
  const std::string weights = readFileBytes(path("contiguous.onnx"));
  ASSERT_FALSE(weights.empty());
  EXPECT_EQ(readFileBytes(path("gzip.onnx")), weights);
  EXPECT_EQ(readFileBytes(path("batches.onnx")), weights);
}

// 3e38 is finite, so it passes the data's NaN/Inf check; the loss it ruins once ended in
// "(try a smaller --lr)" with exit 1.
TEST_F(XtrainData, AValueThatOverflowsIsNamedNotTheLearningRate) {
  const CommandResult r = train("train-huge.h5", "--epochs 4 --lr 0.1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  for (const char* fragment : {"the loss became", "dataset 'x'", "train-huge.h5", "holds 3e+38",
                               "sample 37 (element 2 of the sample)", "overflows"}) {
    EXPECT_NE(r.output.find(fragment), std::string::npos) << fragment << "\n" << r.output;
  }
  EXPECT_EQ(r.output.find("try a smaller --lr"), std::string::npos) << r.output;
}

// Ordinary data and an absurd rate: the rate is still what the message suggests.
TEST_F(XtrainData, OrdinaryDataKeepsTheLearningRateHint) {
  const CommandResult r = train("train-contiguous.h5", "--epochs 4 --lr 1e38");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("the loss became"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("try a smaller --lr"), std::string::npos) << r.output;
}

// HDF5 clamped the uint64 label 2^63 + 5 to the INT32 input's maximum and the loss reported that;
// the stored value is named instead.
TEST_F(XtrainData, ALabelThatDoesNotFitIsPrintedAsStored) {
  const CommandResult r = train("train-biglabel.h5", "--epochs 1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  for (const char* fragment : {"dataset 'y'", "train-biglabel.h5",
                               "sample 3 holds 9223372036854775813", "does not fit in INT32"}) {
    EXPECT_NE(r.output.find(fragment), std::string::npos) << fragment << "\n" << r.output;
  }
  EXPECT_EQ(r.output.find("2147483647"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("9223372036854775807"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace xtrain::testing
