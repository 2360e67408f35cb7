// `xtrain` with model parallelism as a user runs it (docs/model-parallelism.md,
// docs/pipelining.md): the built-in example (an unannotated model) split by --virtual-graph-mode
// auto over 2 and 4 IPUs per replica, pipelined, with off-chip storage, an annotated model in
// manual mode, the same under xrun --ipus-per-replica, and the bad input, each refused with exit
// code 2 naming the flag. The session guarantees the results of a split and of pipelining: the same
// weights, bit for bit.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "checkpoint/dataset_reader.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::testing {
namespace {

// A few steps of the built-in example; small batches keep each run well under a second.
const std::string kExample = "./xtrain --steps 4 --micro-batch-size 8 --lr 0.05 --seed 3";

class XtrainModelParallel : public ScratchDirTest {
 protected:
  // Runs `command` + --save-model NAME.onnx and expects it to succeed.
  CommandResult train(const std::string& command, const std::string& name) {
    CommandResult r = runCommand(command + " --save-model " + path(name + ".onnx"));
    EXPECT_EQ(r.exitCode, 0) << command << "\n" << r.output;
    return r;
  }

  // A 4-8-2 MLP whose forward ops carry __ipu_number 0 (the first layer) and 1 (the second and
  // the loss), as a PopART-annotated model does, and a data set of 64 samples for it.
  void writeAnnotatedModelAndData() {
    auto b = Builder::create();
    auto onnx = b->aiOnnxOpset13();
    auto x = b->addInputTensor(TensorInfo(DataType::FLOAT, {8, 4}), "x");
    auto y = b->addInputTensor(TensorInfo(DataType::INT32, {8}), "y");
    std::vector<float> w1(4 * 8), w2(8 * 2);
    for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.05f * static_cast<float>(i % 7) - 0.15f;
    for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.04f * static_cast<float>(i % 5) - 0.08f;
    auto w1t = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({4, 8}, w1), "W1");
    auto w2t = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({8, 2}, w2), "W2");
    auto h = onnx.matmul({x, w1t});
    auto r = onnx.relu({h});
    for (const auto& id : {h, r}) b->virtualGraph(id, 0);
    auto logits = onnx.matmul({r, w2t});
    auto loss = onnx.softmaxcrossentropyloss({logits, y}, 1, std::nullopt, "mean", "loss")[0];
    for (const auto& id : {logits, loss}) b->virtualGraph(id, 1);
    b->addOutputTensor(loss);
    loss_ = loss;
    b->saveModelProto(path("annotated.onnx"));

    const int64_t n = 64;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::vector<float> xs(static_cast<size_t>(n * 4));
    std::vector<int32_t> ys(static_cast<size_t>(n));
    for (auto& v : xs) v = normal(rng);
    for (int64_t i = 0; i < n; ++i) ys[static_cast<size_t>(i)] = xs[i * 4] > xs[i * 4 + 1];
    checkpoint::DatasetWriter writer(path("data.h5"));
    writer.write("x", TensorInfo(DataType::FLOAT, {n, 4}), xs.data());
    writer.write("y", TensorInfo(DataType::INT32, {n}), ys.data());
  }

  TensorId loss_;  // the annotated model's loss
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Auto splits the unannotated example over 2 and 4 IPUs per replica, with one and two replicas:
// the same weights as one IPU per replica, bit for bit, and the start-up lines say the layout.
TEST_F(XtrainModelParallel, AutoSplitReachesTheWeightsOfOneIpu) {
  train(kExample, "one");
  CommandResult r = train(kExample + " --ipus-per-replica 2 --virtual-graph-mode auto", "two");
  EXPECT_TRUE(contains(r.output, "virtual graphs auto, 2 IPUs per replica, not pipelined"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "IPU 0 of a replica: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "IPU 1 of a replica: ")) << r.output;
  EXPECT_FALSE(contains(r.output, "IPU 2 of a replica")) << r.output;
  expectSameInitializers(path("one.onnx"), path("two.onnx"), 0);
  train(kExample + " --ipus-per-replica 4 --virtual-graph-mode auto", "four");
  expectSameInitializers(path("one.onnx"), path("four.onnx"), 0);

  train(kExample + " --replicas 2", "replicas");
  train(kExample + " --replicas 2 --ipus-per-replica 2 --virtual-graph-mode auto", "replicas-two");
  expectSameInitializers(path("replicas.onnx"), path("replicas-two.onnx"), 0);
}

// Pipelined over 2 stages (and with each stage's forward recomputed) the weights are those of
// gradient accumulation on one IPU.
TEST_F(XtrainModelParallel, PipelinedReachesTheWeightsOfAccumulation) {
  const std::string af = kExample + " --accumulation-factor 4";
  train(af, "accumulated");
  const std::string pipelined =
      af + " --ipus-per-replica 2 --virtual-graph-mode auto --enable-pipelining";
  CommandResult r = train(pipelined, "pipelined");
  EXPECT_TRUE(contains(r.output, "2 pipeline stages over the 4 micro-batches of each update"))
      << r.output;
  expectSameInitializers(path("accumulated.onnx"), path("pipelined.onnx"), 0);
  r = train(pipelined + " --recompute pipeline", "recomputed");
  EXPECT_TRUE(contains(r.output, "each stage's forward recomputed")) << r.output;
  expectSameInitializers(path("accumulated.onnx"), path("recomputed.onnx"), 0);
}

// --recompute standard is the session's Standard recomputation, without pipelining too.
TEST_F(XtrainModelParallel, StandardRecomputation) {
  train(kExample, "kept");
  CommandResult r = train(kExample + " --recompute standard", "recomputed");
  EXPECT_TRUE(contains(r.output, "autoRecomputation Standard")) << r.output;
  expectSameInitializers(path("kept.onnx"), path("recomputed.onnx"), 0);
}

// Off-chip weights, optimizer state and accumulators live in streaming memory and train the same.
TEST_F(XtrainModelParallel, OffChipStorageTrainsTheSame) {
  const std::string af = kExample + " --accumulation-factor 2";
  train(af, "onchip");
  CommandResult r = train(af + " --offchip accumulators,weights,optimizer-state", "offchip");
  EXPECT_TRUE(contains(r.output, "off chip: weights,optimizer-state,accumulators")) << r.output;
  EXPECT_TRUE(contains(r.output, "in streaming memory")) << r.output;
  expectSameInitializers(path("onchip.onnx"), path("offchip.onnx"), 0);
}

// A model annotated with __ipu_number trains in manual mode, plain and pipelined, to the weights
// of the same model with its annotations ignored (mode off).
TEST_F(XtrainModelParallel, AnnotatedModelInManualMode) {
  writeAnnotatedModelAndData();
  const std::string model = "./xtrain --model " + path("annotated.onnx") + " --data " +
                            path("data.h5") + " --loss " + loss_ +
                            " --steps 3 --micro-batch-size 8" + " --accumulation-factor 4 --lr 0.1";
  train(model, "off");
  CommandResult r = train(model + " --virtual-graph-mode manual --ipus-per-replica 2", "manual");
  EXPECT_TRUE(contains(r.output, "virtual graphs manual, 2 IPUs per replica")) << r.output;
  expectSameInitializers(path("off.onnx"), path("manual.onnx"), 0);
  r = train(model + " --virtual-graph-mode manual --ipus-per-replica 2 --enable-pipelining",
            "manual-pipelined");
  EXPECT_TRUE(contains(r.output, "2 pipeline stages")) << r.output;
  expectSameInitializers(path("off.onnx"), path("manual-pipelined.onnx"), 0);

  // Placed on 2 IPUs, run on 1: refused before the first step with the device that would work.
  r = runCommand(model + " --virtual-graph-mode manual");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "MatMul 'MatMul_1' is placed on virtual graph 1")) << r.output;
  EXPECT_TRUE(contains(r.output, "--ipus-per-replica 2")) << r.output;
  EXPECT_FALSE(contains(r.output, "step ")) << r.output;
}

// Under xrun the launcher's --ipus-per-replica gives each replica its IPUs: the same weights as
// one IPU per replica, and a different --ipus-per-replica of the trainer is refused.
TEST_F(XtrainModelParallel, XrunIpusPerReplica) {
  train(kExample, "one");
  train("./xrun -n 1 --ipus-per-replica 2 " + kExample + " --virtual-graph-mode auto", "xrun");
  expectSameInitializers(path("one.onnx"), path("xrun.onnx"), 0);

  CommandResult r = runCommand("./xrun -n 1 --ipus-per-replica 2 " + kExample +
                               " --virtual-graph-mode auto --ipus-per-replica 4");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "--ipus-per-replica 4 disagrees with the launcher, which gave "
                       "each replica 2 IPUs"))
      << r.output;
  r = runCommand("./xrun -n 1 --ipus-per-replica 2 " + kExample);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "2 IPUs per replica with --virtual-graph-mode off")) << r.output;
  r = runCommand("./xrun -n 1 --num-replicas 3 --ipus-per-replica 2 " + kExample +
                 " --virtual-graph-mode auto");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "use --num-replicas 2 or 4")) << r.output;
  EXPECT_FALSE(contains(r.output, "built-in example")) << "refused before any instance started\n"
                                                       << r.output;
}

// Each mistake exits with 2 before any step, naming the flag and what would work.
TEST_F(XtrainModelParallel, BadInputNamesTheFlag) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"--virtual-graph-mode sideways",
       {"--virtual-graph-mode must be off, manual or auto, got 'sideways'"}},
      {"--ipus-per-replica 0", {"--ipus-per-replica must be at least 1, got 0"}},
      {"--ipus-per-replica -2", {"--ipus-per-replica must be at least 1"}},
      {"--ipus-per-replica 99999999999", {"--ipus-per-replica must be at most"}},
      {"--ipus-per-replica 3 --virtual-graph-mode auto", {"not a power of two", "use 2 or 4"}},
      // A power of two no pool holds, whatever XTRAIN_NUM_IPUS is.
      {"--ipus-per-replica 1073741824 --virtual-graph-mode auto",
       {"--ipus-per-replica 1073741824 needs a device of 1073741824", "pool has"}},
      {"--ipus-per-replica 2",
       {"--virtual-graph-mode off would leave", "--virtual-graph-mode auto"}},
      {"--enable-pipelining --virtual-graph-mode auto --ipus-per-replica 2",
       {"needs gradient accumulation", "--accumulation-factor N", "got --accumulation-factor 1"}},
      {"--enable-pipelining --accumulation-factor 4",
       {"--enable-pipelining needs the ops placed", "--virtual-graph-mode manual"}},
      {"--enable-pipelining --accumulation-factor 4 --virtual-graph-mode auto",
       {"one stage", "--ipus-per-replica 2 or more"}},
      {"--enable-pipelining --accumulation-factor 2 --virtual-graph-mode auto "
       "--ipus-per-replica 4",
       {"over 4 IPUs per replica makes 4 stages", "--accumulation-factor at least 7", "got 2"}},
      {"--recompute pipeline", {"--recompute pipeline needs --enable-pipelining"}},
      {"--recompute everything", {"--recompute must be none, standard or pipeline"}},
      {"--offchip weights,gradients", {"--offchip does not know the tensor class 'gradients'"}},
      {"--offchip weights,", {"--offchip does not know the tensor class ''"}},
      {"--offchip weights,weights", {"--offchip names weights twice"}},
      {"--virtual-graph-mode manual", {"no Ops have been annotated"}},
  };
  for (const auto& [args, expected] : cases) {
    CommandResult r = runCommand(kExample + " " + args);
    EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.output;
    for (const auto& part : expected) {
      EXPECT_TRUE(contains(r.output, part)) << args << ": expected '" << part << "'\n" << r.output;
    }
    EXPECT_FALSE(contains(r.output, "step ")) << args << ": refused before any step\n" << r.output;
  }
}

}  // namespace
}  // namespace xtrain::testing
