// `xtrain` given what a hostile but fair user gives it (issue 13): absurd numbers, paths that are
// not plain files, wrong losses, damaged data. Each case once crashed, lost work or data, or
// reported the wrong culprit; each must now end with exit code 2 and a message naming the culprit,
// before any training where the mistake can be seen up front.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "checkpoint/dataset_reader.hpp"
#include "testing/file_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

CommandResult run(const std::string& args) {
  return runCommand("./xtrain " + args);
}

class XtrainHardening : public ScratchDirTest {
 protected:
  // x [8, 4] -> logits [8, 2] -> softmax cross-entropy "loss"; 64 samples of data, sample
  // `nanSample` holding a NaN in its third feature when >= 0.
  void writeModelAndData(int64_t nanSample = -1) {
    auto b = Builder::create();
    auto onnx = b->aiOnnxOpset13();
    auto x = b->addInputTensor(TensorInfo(DataType::FLOAT, {8, 4}), "x");
    auto y = b->addInputTensor(TensorInfo(DataType::INT32, {8}), "y");
    auto w = b->addInitializedInputTensor(
        ConstVoidData::fromVector<float>({4, 2}, std::vector<float>(8, 0.1f)), "W");
    logits_ = onnx.matmul({x, w}, "logits");
    loss_ = onnx.softmaxcrossentropyloss({logits_, y}, 1, std::nullopt, "mean", "loss")[0];
    inputMean_ = onnx.reducemean({x}, {}, 0, "xmean");  // a scalar no weight reaches
    b->addOutputTensor(loss_);
    b->addOutputTensor(inputMean_);
    b->saveModelProto(path("model.onnx"));
    const int64_t n = 64;
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    std::vector<float> xs(static_cast<size_t>(n * 4));
    std::vector<int32_t> ys(static_cast<size_t>(n));
    for (auto& v : xs) v = normal(rng);
    for (int64_t i = 0; i < n; ++i) ys[static_cast<size_t>(i)] = xs[static_cast<size_t>(4 * i)] > 0;
    if (nanSample >= 0) xs[static_cast<size_t>(4 * nanSample + 2)] = std::nanf("");
    checkpoint::DatasetWriter writer(path("data.h5"));
    writer.write("x", TensorInfo(DataType::FLOAT, {n, 4}), xs.data());
    writer.write("y", TensorInfo(DataType::INT32, {n}), ys.data());
  }
  std::string modelArgs(const std::string& loss = "") const {
    return "--model " + path("model.onnx") + " --data " + path("data.h5") + " --loss " +
           (loss.empty() ? loss_ : loss) + " --micro-batch-size 8 ";
  }

  TensorId logits_, loss_, inputMean_;
};

// Exit code 2 and every fragment in the output; no progress line when `beforeTraining`.
void expectBadInput(const CommandResult& r, const std::vector<std::string>& fragments,
                    bool beforeTraining = true) {
  EXPECT_EQ(r.exitCode, 2) << r.output;
  for (const auto& f : fragments) EXPECT_NE(r.output.find(f), std::string::npos) << r.output;
  if (beforeTraining) {
    EXPECT_FALSE(std::regex_search(r.output, std::regex("(^|\n)step +[0-9]"))) << r.output;
  }
}

TEST_F(XtrainHardening, SampleCountsThatOverflowAreBadUsage) {
  // Once wrapped to a small number, passed the size check and wrote past a buffer (SIGSEGV).
  expectBadInput(run("--accumulation-factor 4611686018427387904 --micro-batch-size 4"),
                 {"overflows", "--accumulation-factor 4611686018427387904"});
  // DataFlow counts batches in an int: once "got 0", or a wrapped positive count.
  expectBadInput(run("--batches-per-step 4611686018427387904"),
                 {"--batches-per-step must be at most 2147483647"});
  expectBadInput(run("--batches-per-step 2305843009213693953"), {"--batches-per-step"});
  expectBadInput(run("--replicas 4611686018427387904"), {"--replicas must be at most"});
  expectBadInput(run("--keep-last 4611686018427387904 --checkpoint-dir " + path("c")),
                 {"--keep-last"});
  writeModelAndData();
  // Once trained one step: epochs x samples wrapped.
  expectBadInput(run(modelArgs() + "--epochs 4611686018427387904"), {"--epochs", "overflows"});
}

TEST_F(XtrainHardening, AMicroBatchBeyondTheDataIsBadInputNotAFault) {
  // Once a SIGFPE inside oneDNN while making the MatMul primitive.
  expectBadInput(run("--micro-batch-size 4294967296"), {"fewer than one step needs"});
}

TEST_F(XtrainHardening, WrongLossesAreRefused) {
  writeModelAndData();
  expectBadInput(run(modelArgs(logits_) + "--steps 2"), {"must be a scalar", "FLOAT[8,2]"});
  expectBadInput(run(modelArgs(inputMean_) + "--steps 2"),
                 {"no trainable weight reaches the loss '" + inputMean_ + "'"});
  // Once reported as a problem with an anchor.
  expectBadInput(run(modelArgs("nosuch") + "--steps 2"), {"the loss 'nosuch' is not a tensor"});
}

TEST_F(XtrainHardening, OutputPathsAreCheckedBeforeTheFirstStep) {
  writeModelAndData();
  expectBadInput(run(modelArgs() + "--steps 2 --save-model " + path("missing/dir/out.onnx")),
                 {"--save-model", "does not exist"});
  std::ofstream(path("afile")) << "x";
  expectBadInput(run(modelArgs() + "--steps 2 --checkpoint-dir " + path("afile")),
                 {"--checkpoint-dir", "not a directory"});
  expectBadInput(run(modelArgs() + "--steps 2 --checkpoint-dir " + path("afile/sub")),
                 {"--checkpoint-dir"});
  expectBadInput(run(modelArgs() + "--steps 2 --save-model " + dir_.string()),
                 {"--save-model", "directory"});
}

// A bad environment switch read when data files are opened is refused at start on its own, not
// under the flag of whichever file is opened first (the built-in example opens none).
TEST_F(XtrainHardening, ABadResidentBytesSwitchIsRefusedOnItsOwn) {
  expectBadInput(runCommand("XTRAIN_DATA_RESIDENT_BYTES=1ZiB ./xtrain --steps 1"),
                 {"xtrain: XTRAIN_DATA_RESIDENT_BYTES='1ZiB'", "byte count"});
}

TEST_F(XtrainHardening, EmptyPathsAreBadUsage) {
  expectBadInput(run("--steps 2 --save-model ''"), {"--save-model needs a path"});
  expectBadInput(run("--steps 2 --checkpoint-dir ''"), {"--checkpoint-dir needs a path"});
  expectBadInput(run("--steps 2 --save-model="), {"--save-model needs a path"});
}

TEST_F(XtrainHardening, SaveModelFollowsSymlinksAndNeverReplacesADevice) {
  fs::create_directories(dir_ / "real");
  fs::create_symlink("real/out.onnx", dir_ / "link.onnx");
  CommandResult r = run("--steps 2 --save-model " + path("link.onnx"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.onnx"));
  EXPECT_GT(fs::file_size(dir_ / "real/out.onnx"), 0u);
  // A node of /dev/null's device in the scratch directory (the system's is never at risk).
  const std::string null = path("null");
  if (::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) GTEST_SKIP() << "not root";
  r = run("--steps 2 --save-model " + null);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  struct stat st {};
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced by a regular file";
}

TEST_F(XtrainHardening, NonFiniteDataNamesTheDatasetAndSample) {
  writeModelAndData(/*nanSample=*/37);
  // Once "the loss became nan ... (try a smaller --lr)".
  const CommandResult r = run(modelArgs() + "--epochs 1");
  expectBadInput(r, {"dataset 'x'", "data.h5", "sample 37", "nan"}, /*beforeTraining=*/false);
  EXPECT_EQ(r.output.find("smaller --lr"), std::string::npos) << r.output;
}

TEST_F(XtrainHardening, AnEndlessModelFileIsRefused) {
  writeModelAndData();
  // Once read until memory ran out (std::bad_alloc).
  expectBadInput(run("--model /dev/zero --data " + path("data.h5") + " --loss l"),
                 {"/dev/zero", "is a character device"});
}

TEST_F(XtrainHardening, AModelFifoIsReadWhenWrittenAndRefusedWhenNobodyWrites) {
  writeModelAndData();
  const std::string fifo = path("model.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Once blocked forever in open(2).
  expectBadInput(run("--model " + fifo + " --data " + path("data.h5") + " --loss " + loss_),
                 {"model.fifo", "FIFO that no process wrote to"});
  // As with process substitution: a writer feeds the FIFO.
  const CommandResult r = runCommand("cat " + path("model.onnx") + " > " + fifo + " & ./xtrain " +
                                     modelArgs() + "--steps 2 --model " + fifo);
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST_F(XtrainHardening, TwoJobsCannotWriteCheckpointsIntoOneDirectory) {
  // Both once passed the "directory holds checkpoints" refusal when started together into an empty
  // directory. Job A trains (saving only at its end) while job B starts into the same directory.
  const std::string ckpts = path("ckpts"), out = path("a.txt"), pidFile = path("a.pid");
  ASSERT_EQ(runCommand("./xtrain --steps 100000000 --checkpoint-dir " + ckpts + " > " + out +
                       " 2>&1 & echo $! > " + pidFile)
                .exitCode,
            0);
  const pid_t a = static_cast<pid_t>(std::stol(readFileBytes(pidFile)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (readFileBytes(out).find("step ") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const CommandResult b = run("--steps 2 --checkpoint-dir " + ckpts);
  const CommandResult resumed = run("--steps 2 --resume auto --checkpoint-dir " + ckpts);
  ::kill(a, SIGKILL);
  expectBadInput(b, {"in use by another xtrain job", "process " + std::to_string(a)});
  expectBadInput(resumed, {"in use by another xtrain job"});
  // Once A is gone, the kernel has released its lock.
  for (int attempt = 0; attempt < 100 && ::kill(a, 0) == 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(run("--steps 2 --checkpoint-dir " + ckpts).exitCode, 0);
}

TEST_F(XtrainHardening, ProgressReachesAFileAsItIsWritten) {
  // Block-buffered, a killed job left 0 bytes behind, "resumed from" and "saved checkpoint" lines
  // included. Start a long run with stdout in a file, wait for its first step line, kill it.
  const std::string out = path("out.txt"), pidFile = path("pid");
  CommandResult started =
      runCommand("./xtrain --steps 100000000 > " + out + " 2>&1 & echo $! > " + pidFile);
  ASSERT_EQ(started.exitCode, 0) << started.output;
  const pid_t pid = static_cast<pid_t>(std::stol(readFileBytes(pidFile)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool sawStep = false;
  while (!sawStep && std::chrono::steady_clock::now() < deadline) {
    sawStep = readFileBytes(out).find("step ") != std::string::npos;
    if (!sawStep) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  EXPECT_TRUE(sawStep) << "no progress line reached the file while xtrain ran: "
                       << readFileBytes(out);
}

}  // namespace
}  // namespace xtrain::testing
