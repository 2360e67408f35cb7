#include "options.hpp"

#include <limits>
#include <set>

#include "model_parallel_flags.hpp"
#include "optimizer_flags.hpp"
#include "output_paths.hpp"
#include "xtrain/error.hpp"

namespace xtrain::tools {

const char* usageText() {
  static const std::string text = R"(usage: xtrain [options]

Trains an ONNX model on an HDF5 data set on a simulated IPU; with no --model, trains a built-in example
(an MLP on a deterministic synthetic classification set).

)" + trainFlags().usage() + R"(
SIGUSR1 or SIGTERM (a scheduler's preemption warning; xrun passes both on) stops every instance
after the same step; with --checkpoint-dir they write a checkpoint of it first. The same command
with --resume auto continues.

Under xrun --min-instances, a job that runs on fewer instances than it started with
(XTRAIN_ORIGINAL_NUM_INSTANCES) keeps its global batch by raising --accumulation-factor or
--micro-batch-size (XTRAIN_KEEP_GLOBAL_BATCH; docs/launcher-environment.md, "Shrinking").

Exit codes: 0 success, 2 bad usage or bad input, 1 runtime failure, 75 preempted.
)";
  return text.c_str();
}

namespace {

// Counts that become an `int` in the library (DataFlow's batches per step, replicas, anchor
// periods).
constexpr int64_t kMaxIntCount = std::numeric_limits<int>::max();

}  // namespace

TrainOptions parseOptions(const std::vector<std::string>& args) {
  TrainOptions o = trainFlags().parse(args);
  if (o.help) return o;
  if (o.steps && o.epochs) throw UsageError("give --steps or --epochs, not both");
  if (o.reduction != "sum" && o.reduction != "mean") {
    throw UsageError("--reduction must be sum or mean, got '" + o.reduction + "'");
  }
  resolveOptimizerOptions(o);
  checkModelParallelOptions(o);
  if (o.warmupSteps < 0) throw UsageError("--warmup-steps must be >= 0");
  if (!o.model.empty()) {
    if (o.data.empty()) throw UsageError("--model needs --data (the HDF5 data set to train on)");
    if (o.loss.empty())
      throw UsageError("--model needs --loss (the name of the model's loss tensor)");
  } else if (!o.data.empty() || !o.loss.empty()) {
    throw UsageError(
        "--data and --loss need --model (without --model xtrain trains its built-in example)");
  }
  if (o.valEvery > 0 && o.valData.empty()) {
    throw UsageError("--val-every needs --val-data (the held-out data set to evaluate)");
  }
  if (o.checkpointEvery < 0) throw UsageError("--checkpoint-every must be >= 0");
  if (o.keepLast < 0 || o.keepLast > kMaxIntCount) {
    throw UsageError("--keep-last must be between 0 and " + std::to_string(kMaxIntCount));
  }
  if (o.checkpointDir.empty() && (o.checkpointEvery > 0 || o.keepLast > 0 || o.checkpointAsync)) {
    throw UsageError(
        "--checkpoint-every, --keep-last and --checkpoint-async need --checkpoint-dir");
  }
  if (o.overwriteCheckpoints && o.checkpointDir.empty()) {
    throw UsageError("--overwrite-checkpoints needs --checkpoint-dir");
  }
  if (o.resume == "auto" && o.checkpointDir.empty()) {
    throw UsageError("--resume auto needs --checkpoint-dir (where to look for checkpoints)");
  }
  if (o.traceSteps && o.trace.empty()) {
    throw UsageError("--trace-steps needs --trace (the file to record the timeline to)");
  }
  checkOutputsSpareInputs(o);
  std::set<std::string> seen;
  for (const auto& a : o.anchors) {
    if (!seen.insert(a.tensor).second) throw UsageError("--anchor " + a.tensor + " is given twice");
  }
  return o;
}

}  // namespace xtrain::tools
