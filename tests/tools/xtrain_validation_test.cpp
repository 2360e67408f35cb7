// `xtrain --val-data V.h5 [--val-every N]`: the held-out set's loss and top-1 accuracy with the
// current weights, checked against a double-precision reference; the same numbers from every job
// layout; and bad input (exit code 2 naming the culprit).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>

#include "checkpoint/dataset_reader.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::testing {
namespace {

constexpr int64_t kFeatures = 4, kClasses = 3, kBatch = 8;

struct Validation {
  int64_t step = 0;
  double loss = 0;
  bool hasAccuracy = false;
  int64_t correct = 0, counted = 0;
};

std::vector<Validation> validations(const std::string& output) {
  std::vector<Validation> out;
  const std::regex line(
      "validation  step ([0-9]+)  epoch [0-9.]+  loss ([0-9.]+)(  accuracy [0-9.]+% \\(([0-9]+)/"
      "([0-9]+)\\))?");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    Validation v;
    v.step = std::stoll(m[1]);
    v.loss = std::stod(m[2]);
    v.hasAccuracy = m[3].matched;
    if (v.hasAccuracy) {
      v.correct = std::stoll(m[4]);
      v.counted = std::stoll(m[5]);
    }
    out.push_back(v);
  }
  return out;
}

class XtrainValidation : public ScratchDirTest {
 protected:
  XtrainValidation() {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    w_.resize(kFeatures * kClasses);
    b_.resize(kClasses);
    for (auto& v : w_) v = normal(rng);
    for (auto& v : b_) v = 0.5f * normal(rng);
  }

  // x [kBatch, 4] -> logits = x W + b [kBatch, 3]; the loss by `kind`:
  //   "sce": SoftmaxCrossEntropyLoss(logits, y), mean
  //   "sce-behind-mean": Identity(ReduceMean(SoftmaxCrossEntropyLoss(logits, y), none))
  //   "nll": ai.graphcore Nll(Softmax(logits), y), mean, ignoreIndex 2
  //   "l1":  ai.graphcore L1(logits, 0.5), mean (no classifier)
  void writeModel(const std::string& kind) {
    auto b = Builder::create();
    auto onnx = b->aiOnnxOpset13();
    auto x = b->addInputTensor(TensorInfo(DataType::FLOAT, {kBatch, kFeatures}), "x");
    auto wt = b->addInitializedInputTensor(
        ConstVoidData::fromVector<float>({kFeatures, kClasses}, w_), "W");
    auto bt = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({kClasses}, b_), "B");
    auto logits = onnx.add({onnx.matmul({x, wt}), bt});
    if (kind == "l1") {
      loss_ = b->aiGraphcoreOpset1().l1loss({logits}, 0.5f, ReductionType::Mean, "loss");
    } else {
      auto y = b->addInputTensor(TensorInfo(DataType::INT32, {kBatch}), "y");
      if (kind == "sce") {
        loss_ = onnx.softmaxcrossentropyloss({logits, y}, 1, std::nullopt, "mean", "loss")[0];
      } else if (kind == "sce-behind-mean") {
        // As exporters write it: the per-sample loss, a mean and an Identity after it.
        auto each = onnx.softmaxcrossentropyloss({logits, y}, 1, std::nullopt, "none", "each")[0];
        loss_ = onnx.identity({onnx.reducemean({each}, {0}, 0)}, "loss");
      } else {
        loss_ = b->aiGraphcoreOpset1().nllloss({onnx.softmax({logits}, 1), y}, ReductionType::Mean,
                                               2, false, "loss");
      }
    }
    b->addOutputTensor(loss_);
    b->saveModelProto(path("model.onnx"));
  }

  // n samples of normal features; the label is the largest of the first three features.
  void writeData(const std::string& name, int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> xs(static_cast<size_t>(n * kFeatures));
    std::vector<int32_t> ys(static_cast<size_t>(n));
    for (auto& v : xs) v = normal(rng);
    for (int64_t i = 0; i < n; ++i) {
      const float* s = xs.data() + i * kFeatures;
      ys[static_cast<size_t>(i)] = static_cast<int32_t>(std::max_element(s, s + 3) - s);
    }
    checkpoint::DatasetWriter writer(path(name));
    writer.write("x", TensorInfo(DataType::FLOAT, {n, kFeatures}), xs.data());
    writer.write("y", TensorInfo(DataType::INT32, {n}), ys.data());
    if (name == "val.h5") {
      valX_ = xs;
      valY_ = ys;
    }
  }

  // Loss and accuracy of the initial weights on the validation set, in double precision: the mean
  // over the samples of the per-batch loss means, batches of kBatch and a last one of the rest.
  Validation reference(const std::string& kind) const {
    const int64_t n = static_cast<int64_t>(valY_.size());
    Validation r;
    double weighted = 0;
    for (int64_t start = 0; start < n; start += kBatch) {
      const int64_t end = std::min(n, start + kBatch);
      double batch = 0;
      int64_t kept = 0;
      for (int64_t i = start; i < end; ++i) {
        std::vector<double> z(kClasses);
        for (int64_t c = 0; c < kClasses; ++c) {
          z[c] = b_[c];
          for (int64_t f = 0; f < kFeatures; ++f) {
            z[c] += static_cast<double>(valX_[i * kFeatures + f]) * w_[f * kClasses + c];
          }
        }
        const int32_t y = valY_[static_cast<size_t>(i)];
        const int64_t best = std::max_element(z.begin(), z.end()) - z.begin();
        const double m = *std::max_element(z.begin(), z.end());
        double sum = 0;
        for (double v : z) sum += std::exp(v - m);
        if (kind == "l1") {
          for (double v : z) batch += 0.5 * std::abs(v) / kClasses;
          continue;
        }
        if (kind == "nll" && y == 2) continue;
        batch += -(z[y] - m - std::log(sum));
        ++kept;
        r.correct += best == y;
        ++r.counted;
      }
      const double mean = kind == "l1" ? batch / static_cast<double>(end - start)
                                       : batch / static_cast<double>(std::max<int64_t>(kept, 1));
      weighted += mean * static_cast<double>(end - start);
    }
    r.loss = weighted / static_cast<double>(n);
    r.hasAccuracy = kind != "l1";
    return r;
  }

  // xtrain on model.onnx with a learning rate too small to move a weight, so every evaluation
  // sees the initial weights.
  CommandResult train(const std::string& launcher, const std::string& extra) const {
    return runCommand(launcher + "./xtrain --model " + path("model.onnx") + " --data " +
                      path("train.h5") + " --loss " + loss_ + " --micro-batch-size " +
                      std::to_string(kBatch) + " --lr 1e-30 " + extra);
  }

  std::vector<float> w_, b_, valX_;
  std::vector<int32_t> valY_;
  TensorId loss_;
};

TEST_F(XtrainValidation, LossAndAccuracyMatchAReferenceOnEveryEpochAndAtTheEnd) {
  writeModel("sce");
  writeData("train.h5", 64, 1);
  writeData("val.h5", 21, 2);  // batches of 8, 8 and 5
  const CommandResult r = train("", "--epochs 3 --val-data " + path("val.h5"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto v = validations(r.output);
  ASSERT_EQ(v.size(), 3u) << r.output;  // the end of epochs 1 and 2, and the end (epoch 3)
  EXPECT_EQ(v[0].step, 8);
  EXPECT_EQ(v[1].step, 16);
  EXPECT_EQ(v[2].step, 24);
  const Validation want = reference("sce");
  for (const auto& got : v) {
    EXPECT_NEAR(got.loss, want.loss, 2e-6) << r.output;
    ASSERT_TRUE(got.hasAccuracy) << r.output;
    EXPECT_EQ(got.correct, want.correct) << r.output;
    EXPECT_EQ(got.counted, 21) << r.output;
  }
  EXPECT_GT(want.correct, 0);
  EXPECT_LT(want.correct, 21);
}

TEST_F(XtrainValidation, ValEveryEvaluatesEveryNStepsAndAtTheEnd) {
  writeModel("sce");
  writeData("train.h5", 64, 1);
  writeData("val.h5", 16, 2);
  const CommandResult r = train("", "--steps 10 --val-every 4 --val-data " + path("val.h5"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto v = validations(r.output);
  ASSERT_EQ(v.size(), 3u) << r.output;
  EXPECT_EQ(v[0].step, 4);
  EXPECT_EQ(v[1].step, 8);
  EXPECT_EQ(v[2].step, 10);
}

TEST_F(XtrainValidation, FindsTheClassifierBehindAMeanAndAnIdentity) {
  writeModel("sce-behind-mean");
  writeData("train.h5", 64, 1);
  writeData("val.h5", 21, 2);
  const CommandResult r = train("", "--steps 2 --val-data " + path("val.h5"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto v = validations(r.output);
  ASSERT_EQ(v.size(), 1u) << r.output;
  const Validation want = reference("sce");
  EXPECT_NEAR(v[0].loss, want.loss, 2e-6) << r.output;
  ASSERT_TRUE(v[0].hasAccuracy) << r.output;
  EXPECT_EQ(v[0].correct, want.correct) << r.output;
}

TEST_F(XtrainValidation, GraphcoreNllSkipsIgnoredLabels) {
  writeModel("nll");
  writeData("train.h5", 64, 1);
  writeData("val.h5", 29, 3);
  const CommandResult r = train("", "--steps 2 --val-data " + path("val.h5"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto v = validations(r.output);
  ASSERT_EQ(v.size(), 1u) << r.output;
  const Validation want = reference("nll");
  EXPECT_NEAR(v[0].loss, want.loss, 2e-6) << r.output;
  ASSERT_TRUE(v[0].hasAccuracy) << r.output;
  EXPECT_EQ(v[0].correct, want.correct);
  EXPECT_EQ(v[0].counted, want.counted);
  EXPECT_LT(want.counted, 29);  // some labels are the ignored class
}

TEST_F(XtrainValidation, ALossWithoutClassifierReportsTheLossOnly) {
  writeModel("l1");
  writeData("train.h5", 64, 1);
  writeData("val.h5", 13, 4);
  const CommandResult r = train("", "--steps 2 --val-data " + path("val.h5"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto v = validations(r.output);
  ASSERT_EQ(v.size(), 1u) << r.output;
  EXPECT_FALSE(v[0].hasAccuracy) << r.output;
  EXPECT_NEAR(v[0].loss, reference("l1").loss, 2e-6) << r.output;
}

// Every instance evaluates its share (here unequal: 3 batches over 2 or 4 instances) and instance
// 0 prints the combined result once: the numbers of a single process.
TEST_F(XtrainValidation, EveryJobLayoutGivesTheSameResultPrintedOnce) {
  writeModel("sce");
  writeData("train.h5", 64, 1);
  writeData("val.h5", 21, 2);
  const std::string args = "--steps 3 --val-data " + path("val.h5");
  const Validation want = reference("sce");
  for (const std::string launcher : {"", "./xrun -n 2 ", "./xrun -n 4 "}) {
    const CommandResult r = train(launcher, args);
    ASSERT_EQ(r.exitCode, 0) << launcher << r.output;
    const auto v = validations(r.output);
    // 3 steps of 8 samples per instance: epochs of train.h5 end on the way with 2 and 4 instances.
    ASSERT_FALSE(v.empty()) << launcher << r.output;
    EXPECT_EQ(v.back().step, 3) << launcher << r.output;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) {
        EXPECT_GT(v[i].step, v[i - 1].step) << "printed once: " << r.output;
      }
      EXPECT_NEAR(v[i].loss, want.loss, 2e-6) << launcher << r.output;
      EXPECT_EQ(v[i].correct, want.correct) << launcher << r.output;
      EXPECT_EQ(v[i].counted, 21) << launcher << r.output;
    }
  }
}

TEST_F(XtrainValidation, BuiltInExampleReportsAccuracy) {
  const int64_t n = 40;
  std::vector<float> xs(static_cast<size_t>(n * 32), 0.25f);
  std::vector<int32_t> ys(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ys[static_cast<size_t>(i)] = static_cast<int32_t>(i % 8);
  {
    checkpoint::DatasetWriter writer(path("val.h5"));
    writer.write("x", TensorInfo(DataType::FLOAT, {n, 32}), xs.data());
    writer.write("labels", TensorInfo(DataType::INT32, {n}), ys.data());
  }
  const CommandResult r = runCommand("./xtrain --steps 3 --val-data " + path("val.h5"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto v = validations(r.output);
  ASSERT_EQ(v.size(), 1u) << r.output;
  EXPECT_TRUE(v[0].hasAccuracy) << r.output;
  EXPECT_EQ(v[0].counted, n) << r.output;
  // All samples are the same image: one class is predicted for all of them.
  EXPECT_EQ(v[0].correct, n / 8) << r.output;
}

TEST_F(XtrainValidation, BadValidationInputIsExitCodeTwoNamingTheCulprit) {
  writeModel("sce");
  writeData("train.h5", 64, 1);
  auto expectBad = [&](const std::string& extra, const std::vector<std::string>& needles) {
    const CommandResult r = train("", "--steps 2 " + extra);
    EXPECT_EQ(r.exitCode, 2) << extra << "\n" << r.output;
    for (const auto& s : needles) {
      EXPECT_NE(r.output.find(s), std::string::npos) << "'" << s << "' in\n" << r.output;
    }
    EXPECT_TRUE(validations(r.output).empty()) << r.output;
  };
  expectBad("--val-data " + path("missing.h5"), {"--val-data", "missing.h5", "does not exist"});
  expectBad("--val-data " + path("val.h5") + " --val-every 0", {"--val-every", "greater than"});
  expectBad("--val-every 2", {"--val-every needs --val-data"});
  expectBad("--val-data=", {"--val-data needs a path"});
  expectBad("--val-data " + path("model.onnx"), {"--val-data", "model.onnx", "not an HDF5 file"});
  {
    checkpoint::DatasetWriter writer(path("wide.h5"));
    std::vector<float> xs(5 * 6);
    std::vector<int32_t> ys(5);
    writer.write("x", TensorInfo(DataType::FLOAT, {5, 6}), xs.data());
    writer.write("y", TensorInfo(DataType::INT32, {5}), ys.data());
  }
  expectBad("--val-data " + path("wide.h5"), {"--val-data", "wide.h5", "'x'", "[6]", "[4]"});
  {
    checkpoint::DatasetWriter writer(path("nolabels.h5"));
    std::vector<float> xs(5 * 4);
    writer.write("x", TensorInfo(DataType::FLOAT, {5, 4}), xs.data());
  }
  expectBad("--val-data " + path("nolabels.h5"), {"--val-data", "nolabels.h5", "no dataset 'y'"});
  {
    checkpoint::DatasetWriter writer(path("floatlabels.h5"));
    std::vector<float> xs(5 * 4), ys(5);
    writer.write("x", TensorInfo(DataType::FLOAT, {5, 4}), xs.data());
    writer.write("y", TensorInfo(DataType::FLOAT, {5}), ys.data());
  }
  expectBad("--val-data " + path("floatlabels.h5"), {"--val-data", "floatlabels.h5", "'y'"});
}

// Validation is collective (the instances combine their shares): a job whose instances disagree on
// it stops before the first step, on every instance.
TEST_F(XtrainValidation, InstancesMustAgreeOnValidation) {
  const int64_t n = 16;
  std::vector<float> xs(static_cast<size_t>(n * 32));
  std::vector<int32_t> ys(static_cast<size_t>(n));
  {
    checkpoint::DatasetWriter writer(path("val.h5"));
    writer.write("x", TensorInfo(DataType::FLOAT, {n, 32}), xs.data());
    writer.write("labels", TensorInfo(DataType::INT32, {n}), ys.data());
  }
  const CommandResult r = runCommand(
      "./xrun -n 2 --timeout 120 sh -c 'if [ \"$XTRAIN_INSTANCE_INDEX\" = 1 ]; then exec ./xtrain "
      "--steps 3; else exec ./xtrain --steps 3 --val-data " +
      path("val.h5") + "; fi'");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--val-data: instance 0 has (given), instance 1 has (none)"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(validations(r.output).empty()) << r.output;
}

}  // namespace
}  // namespace xtrain::testing
