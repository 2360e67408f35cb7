// `xtrain --batchnorm-running-var`: the running variance a BatchNormalization keeps in training,
// ONNX's population variance (the default) or PyTorch's unbiased one, as a user meets it: the
// saved model's running_var after one step, the refusal of one value per channel under PyTorch's
// convention (exit 2, as PyTorch refuses it), and a bad value (exit 2, naming the flag).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/dataset_reader.hpp"
#include "session/model_io.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::testing {
namespace {

constexpr int64_t kSamples = 8;   // one step of --micro-batch-size 8 sees every sample
constexpr int64_t kChannels = 4;  // x [N, 4]: M = N values per channel
constexpr float kMomentum = 0.9f;
constexpr float kInitialVar = 1.5f;

class XtrainBatchNormCli : public ScratchDirTest {
 protected:
  // x [N, 4] -> BatchNormalization (training, running_mean "mean", running_var "var") -> a linear
  // 2-class head -> softmax cross-entropy "loss"; data where x's channels have different spreads.
  void SetUp() override {
    ScratchDirTest::SetUp();
    auto b = Builder::create();
    auto onnx = b->aiOnnxOpset15();
    const TensorId x = b->addInputTensor(TensorInfo(DataType::FLOAT, {kSamples, kChannels}), "x");
    const TensorId y = b->addInputTensor(TensorInfo(DataType::INT32, {kSamples}), "y");
    std::vector<TensorId> bnArgs{x};
    const std::vector<std::pair<const char*, float>> stats = {
        {"scale", 1.0f}, {"bias", 0.0f}, {"mean", 0.0f}, {"var", kInitialVar}};
    for (const auto& [name, value] : stats) {
      bnArgs.push_back(b->addInitializedInputTensor(
          ConstVoidData::fromVector<float>({kChannels}, std::vector<float>(kChannels, value)),
          name));
    }
    const TensorId h = onnx.batchnormalization(bnArgs, 3, 1e-5f, kMomentum, "bn")[0];
    std::vector<float> w(kChannels * 2, 0.1f);
    w[1] = -0.1f;
    const TensorId wt =
        b->addInitializedInputTensor(ConstVoidData::fromVector<float>({kChannels, 2}, w), "W");
    const TensorId logits = onnx.matmul({h, wt});
    loss_ = onnx.softmaxcrossentropyloss({logits, y}, 1, std::nullopt, "mean", "loss")[0];
    b->addOutputTensor(loss_);
    b->saveModelProto(path("model.onnx"));

    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    xs_.resize(static_cast<size_t>(kSamples * kChannels));
    std::vector<int32_t> ys(static_cast<size_t>(kSamples));
    for (int64_t i = 0; i < kSamples; ++i) {
      for (int64_t c = 0; c < kChannels; ++c) {
        xs_[static_cast<size_t>(i * kChannels + c)] = static_cast<float>(c + 1) * normal(rng);
      }
      ys[static_cast<size_t>(i)] = xs_[static_cast<size_t>(i * kChannels)] > 0;
    }
    checkpoint::DatasetWriter writer(path("data.h5"));  // closed when this returns
    writer.write("x", TensorInfo(DataType::FLOAT, {kSamples, kChannels}), xs_.data());
    writer.write("y", TensorInfo(DataType::INT32, {kSamples}), ys.data());
  }

  CommandResult train(const std::string& flags, int64_t microBatch = kSamples) {
    return runCommand("./xtrain --model " + path("model.onnx") + " --data " + path("data.h5") +
                      " --loss " + loss_ + " --micro-batch-size " + std::to_string(microBatch) +
                      " --steps 1 --log-level warn --save-model " + path("out.onnx") + flags);
  }

  // running_var after one step over all the samples (the order within the batch does not change
  // a variance): momentum * 1.5 + (1 - momentum) * the batch variance, divided by M or M - 1.
  std::vector<double> expectedRunningVar(bool unbiased) const {
    std::vector<double> out;
    for (int64_t c = 0; c < kChannels; ++c) {
      double mean = 0, sq = 0;
      for (int64_t i = 0; i < kSamples; ++i) mean += xs_[static_cast<size_t>(i * kChannels + c)];
      mean /= kSamples;
      for (int64_t i = 0; i < kSamples; ++i) {
        const double d = xs_[static_cast<size_t>(i * kChannels + c)] - mean;
        sq += d * d;
      }
      const double batchVar = sq / static_cast<double>(unbiased ? kSamples - 1 : kSamples);
      const double m = kMomentum;
      out.push_back(m * kInitialVar + (1 - m) * batchVar);
    }
    return out;
  }

  void expectSavedRunningVar(const std::vector<double>& want) {
    const auto weights = session::readInitializers(path("out.onnx"));
    const HostTensor& var = weights.at("var");
    ASSERT_EQ(var.nelms(), kChannels);
    for (int64_t c = 0; c < kChannels; ++c) {
      EXPECT_NEAR(var.getAsDouble(c), want[static_cast<size_t>(c)],
                  1e-5 * want[static_cast<size_t>(c)])
          << "running_var[" << c << "]";
    }
  }

  TensorId loss_;
  std::vector<float> xs_;
};

TEST_F(XtrainBatchNormCli, DefaultKeepsOnnxPopulationVariance) {
  const CommandResult r = train("");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  expectSavedRunningVar(expectedRunningVar(false));
}

TEST_F(XtrainBatchNormCli, PyTorchKeepsTheUnbiasedVariance) {
  const CommandResult r = train(" --batchnorm-running-var pytorch");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  expectSavedRunningVar(expectedRunningVar(true));
}

// The Builder writes producer_name "xtrain": auto keeps ONNX's convention for it.
TEST_F(XtrainBatchNormCli, AutoKeepsOnnxForANonPyTorchModel) {
  const CommandResult r = train(" --batchnorm-running-var=auto");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  expectSavedRunningVar(expectedRunningVar(false));
}

TEST_F(XtrainBatchNormCli, OneValuePerChannelIsRefusedUnderPyTorchsConvention) {
  const CommandResult r = train(" --batchnorm-running-var pytorch", 1);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("'bn'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("one value per channel"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FLOAT[1,4]"), std::string::npos) << r.output;
  // ONNX's population variance of one value is 0: allowed.
  const CommandResult onnx = train(" --batchnorm-running-var onnx", 1);
  EXPECT_EQ(onnx.exitCode, 0) << onnx.output;
}

TEST_F(XtrainBatchNormCli, BadValueNamesTheFlag) {
  for (const char* bad : {"torch", "ONNX", "''"}) {
    const CommandResult r = train(std::string(" --batchnorm-running-var ") + bad);
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("--batchnorm-running-var must be onnx, pytorch or auto"),
              std::string::npos)
        << r.output;
  }
  const CommandResult help = runCommand("./xtrain --help");
  EXPECT_NE(help.output.find("--batchnorm-running-var"), std::string::npos);
}

}  // namespace
}  // namespace xtrain::testing
