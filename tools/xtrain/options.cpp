#include "options.hpp"

#include <charconv>
#include <limits>
#include <set>

#include "common/timeline.hpp"
#include "optimizer_flags.hpp"
#include "output_paths.hpp"
#include "xtrain/error.hpp"

namespace xtrain::tools {

const char* usageText() {
  return R"(usage: xtrain [options]

Trains an ONNX model on an HDF5 data set on a simulated IPU; with no --model, trains a built-in example
(an MLP on a deterministic synthetic classification set).

  --model M.onnx            the model to train (graph inputs without initializers are fed from --data)
  --data D.h5               one dataset per graph input, named like the input, first dimension = samples
  --loss TENSOR             the loss tensor of the model (required with --model)
  --optimizer NAME          sgd, adam, adamw, lamb, adamax, adagrad, rmsprop, centered-rmsprop,
                            adadelta (sgd). adam and adamax add the weight decay to the gradient
                            (L2), adamw and lamb decay the weight (decoupled); the adaptive ones L2
  --lr X                    learning rate (sgd, adagrad, rmsprop, centered-rmsprop 0.01; adam,
                            adamw, lamb, adamax 0.001; adadelta 1.0)
  --weight-decay X          weight decay (0)
  --momentum X              sgd, adagrad, rmsprop, centered-rmsprop, adadelta (sgd 0.9, others 0)
  --dampening X             sgd: momentum dampening (0)
  --nesterov                sgd: Nesterov momentum
  --beta1 X, --beta2 X      adam, adamw, lamb, adamax: moment decay rates (0.9, 0.999)
  --eps X                   all but sgd: epsilon of the denominator (1e-6)
  --max-weight-norm X       lamb: the bound of the trust ratio's weight norm (10)
  --alpha X                 rmsprop, centered-rmsprop: the moving average's decay; adadelta: rho
                            (0.99; adadelta 0.9)
  --loss-scaling X          loss scaling factor (1)
  --clip-norm X             clip the global gradient norm over all weights to X (off)
  --lr-schedule S           constant, linear or cosine (constant); changes the learning rate
                            between runs, all --batches-per-step updates of a run share one rate
  --warmup-steps N          ramp the learning rate up linearly over the first N steps (0)
  --micro-batch-size N      samples per micro-batch per replica (32)
  --batches-per-step N      batches one run executes (1)
  --accumulation-factor N   micro-batches whose gradients are accumulated per update (1)
  --replicas N              local replicas, each on its own simulated IPU (1)
  --steps N | --epochs N    how long to train (default: 100 steps for the example, 1 epoch otherwise)
  --reduction sum|mean      how gradients are reduced over micro-batches and replicas (mean)
  --seed S                  seed of the sample order and of random ops (0)
  --batchnorm-running-var onnx|pytorch|auto
                            the running variance BatchNormalization keeps: onnx, the batch's
                            population variance as ONNX defines it (the default); pytorch, the
                            unbiased one as PyTorch keeps it (needs more than one value per
                            channel); auto, pytorch's for a model whose producer is pytorch
                            (torch.onnx.export), else onnx's (docs/onnx-import.md)
  --anchor NAME[:ALL|FINAL|SUM|EVERYN:k]   also fetch a tensor each step (repeatable)
  --save-model OUT.onnx     write the trained model
  --val-data V.h5           a held-out data set laid out like --data (the built-in example: x
                            [N,32] float, labels [N] int): prints its loss and, when the loss is
                            a classification loss, top-1 accuracy, with the current weights
  --val-every N             evaluate every N steps (default: at the end of every epoch); also at
                            the end of training
  --checkpoint-dir DIR      write checkpoints there (ckpt-<step>/, `latest`); at the end at least
  --checkpoint-every N      also every N steps
  --keep-last K             keep only the newest K checkpoints (0: all)
  --checkpoint-async        write checkpoints while training continues
  --resume auto|PATH        continue from a checkpoint: auto = the newest one in --checkpoint-dir
                            that verifies (damaged ones are skipped), or a fresh start when there
                            is none
  --overwrite-checkpoints   start afresh in a --checkpoint-dir that already holds checkpoints,
                            replacing and pruning them (without it or --resume, xtrain refuses);
                            never while another job is still writing there
  --metrics FILE            write each step's figures to FILE, one JSON object a line (loss,
                            learning rate, samples/s, validation, ...; docs/metrics.md); a
                            --resume run appends, others replace the file
  --trace FILE              record a timeline of the job (ops, gradient buckets, collectives,
                            checkpoints, data loading, steps) to FILE, a Chrome-trace JSON file
                            for https://ui.perfetto.dev or chrome://tracing; under xrun one file
                            for the whole job (docs/trace.md)
  --trace-steps A:B         trace only steps A..B (1-based, inclusive)
  --log-level LEVEL         trace, debug, info, warn, err, critical, off (info)
  -h, --help                this text

SIGUSR1 or SIGTERM (a scheduler's preemption warning; xrun passes both on) stops every instance
after the same step; with --checkpoint-dir they write a checkpoint of it first. The same command
with --resume auto continues.

Under xrun --min-instances, a job that runs on fewer instances than it started with
(XTRAIN_ORIGINAL_NUM_INSTANCES) keeps its global batch by raising --accumulation-factor or
--micro-batch-size (XTRAIN_KEEP_GLOBAL_BATCH; docs/launcher-environment.md, "Shrinking").

Exit codes: 0 success, 2 bad usage or bad input, 1 runtime failure, 75 preempted.
)";
}

namespace {

template <typename T>
T parseNumber(const std::string& flag, const std::string& text) {
  T value{};
  if constexpr (std::is_floating_point_v<T>) {
    try {
      size_t used = 0;
      value = static_cast<T>(std::stod(text, &used));
      if (used != text.size()) throw std::invalid_argument(text);
    } catch (const std::exception&) {
      throw UsageError(flag + " expects a number, got '" + text + "'");
    }
  } else {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      throw UsageError(flag + " expects an integer, got '" + text + "'");
    }
  }
  return value;
}

int64_t positive(const std::string& flag, const std::string& text,
                 int64_t max = std::numeric_limits<int64_t>::max()) {
  const auto v = parseNumber<int64_t>(flag, text);
  if (v <= 0) throw UsageError(flag + " must be greater than zero, got " + text);
  if (v > max) {
    throw UsageError(flag + " must be at most " + std::to_string(max) + ", got " + text);
  }
  return v;
}

// A path-valued flag: an empty value is a mistake (an unset shell variable), never "no file".
std::string path(const std::string& flag, const std::string& text) {
  if (text.empty()) throw UsageError(flag + " needs a path, got an empty one");
  return text;
}

// Counts that become an `int` in the library (DataFlow's batches per step, replicas, anchor
// periods).
constexpr int64_t kMaxIntCount = std::numeric_limits<int>::max();

// NAME[:ALL|FINAL|SUM|EVERYN:k]. Tensor names may themselves contain ':' (the Builder names outputs
// "node:0"), so the return type is recognised at the end of the text only.
AnchorRequest parseAnchor(const std::string& text) {
  AnchorRequest a;
  a.tensor = text;
  auto endsWith = [&](const std::string& suffix) {
    return text.size() > suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (const std::string type : {"ALL", "FINAL", "SUM"}) {
    if (endsWith(":" + type)) {
      a.returnType = type;
      a.tensor = text.substr(0, text.size() - type.size() - 1);
    }
  }
  const auto everyN = text.rfind(":EVERYN");
  if (everyN != std::string::npos) {
    const std::string rest = text.substr(everyN + 7);
    if (rest.empty() || rest[0] != ':') {
      throw UsageError("--anchor " + text + ": EVERYN needs a period, e.g. NAME:EVERYN:4");
    }
    a.returnType = "EVERYN";
    a.period = static_cast<int>(positive("--anchor EVERYN period", rest.substr(1), kMaxIntCount));
    a.tensor = text.substr(0, everyN);
  }
  if (a.tensor.empty()) throw UsageError("--anchor needs a tensor name, got '" + text + "'");
  return a;
}

// A:B, 1-based and inclusive.
std::pair<int64_t, int64_t> traceSteps(const std::string& text) {
  try {
    return timeline::parseStepRange(text, "--trace-steps");
  } catch (const error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

TrainOptions parseOptions(const std::vector<std::string>& args) {
  TrainOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool hasInline = false;
    if (flag.rfind("--", 0) == 0) {
      const auto eq = flag.find('=');
      if (eq != std::string::npos) {
        value = flag.substr(eq + 1);
        flag = flag.substr(0, eq);
        hasInline = true;
      }
    }
    auto next = [&]() -> std::string {
      if (hasInline) return value;
      if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
      return args[++i];
    };
    if (flag == "-h" || flag == "--help")
      o.help = true;
    else if (flag == "--model")
      o.model = path(flag, next());
    else if (flag == "--data")
      o.data = path(flag, next());
    else if (flag == "--loss") {
      o.loss = next();
      if (o.loss.empty()) throw UsageError("--loss needs a tensor name, got an empty one");
    } else if (flag == "--optimizer")
      o.optimizer = next();
    else if (flag == "--lr")
      o.lr = parseNumber<float>(flag, next());
    else if (flag == "--momentum")
      o.momentum = parseNumber<float>(flag, next());
    else if (flag == "--weight-decay")
      o.weightDecay = parseNumber<float>(flag, next());
    else if (flag == "--dampening")
      o.dampening = parseNumber<float>(flag, next());
    else if (flag == "--nesterov" || flag == "--checkpoint-async") {
      // Switches: "--nesterov=false" must not turn Nesterov on.
      if (hasInline) throw UsageError(flag + " takes no value");
      if (flag == "--nesterov")
        o.nesterov = true;
      else
        o.checkpointAsync = true;
    } else if (flag == "--beta1")
      o.beta1 = parseNumber<float>(flag, next());
    else if (flag == "--beta2")
      o.beta2 = parseNumber<float>(flag, next());
    else if (flag == "--eps")
      o.eps = parseNumber<float>(flag, next());
    else if (flag == "--max-weight-norm")
      o.maxWeightNorm = parseNumber<float>(flag, next());
    else if (flag == "--alpha")
      o.alpha = parseNumber<float>(flag, next());
    else if (flag == "--loss-scaling")
      o.lossScaling = parseNumber<float>(flag, next());
    else if (flag == "--clip-norm")
      o.clipNorm = parseNumber<float>(flag, next());
    else if (flag == "--lr-schedule")
      o.lrSchedule = next();
    else if (flag == "--warmup-steps")
      o.warmupSteps = parseNumber<int64_t>(flag, next());
    else if (flag == "--micro-batch-size")
      o.microBatchSize = positive(flag, next());
    else if (flag == "--batches-per-step")
      o.batchesPerStep = positive(flag, next(), kMaxIntCount);
    else if (flag == "--accumulation-factor")
      o.accumulationFactor = positive(flag, next());
    else if (flag == "--replicas")
      o.replicas = positive(flag, next(), kMaxIntCount);
    else if (flag == "--steps")
      o.steps = positive(flag, next());
    else if (flag == "--epochs")
      o.epochs = positive(flag, next());
    else if (flag == "--reduction")
      o.reduction = next();
    else if (flag == "--seed")
      o.seed = parseNumber<uint64_t>(flag, next());
    else if (flag == "--batchnorm-running-var") {
      o.batchNormRunningVariance = next();
      const auto& v = o.batchNormRunningVariance;
      if (v != "onnx" && v != "pytorch" && v != "auto") {
        throw UsageError("--batchnorm-running-var must be onnx, pytorch or auto, got '" + v + "'");
      }
    } else if (flag == "--anchor")
      o.anchors.push_back(parseAnchor(next()));
    else if (flag == "--save-model")
      o.saveModel = path(flag, next());
    else if (flag == "--val-data")
      o.valData = path(flag, next());
    else if (flag == "--val-every")
      o.valEvery = positive(flag, next());
    else if (flag == "--checkpoint-dir")
      o.checkpointDir = path(flag, next());
    else if (flag == "--checkpoint-every")
      o.checkpointEvery = parseNumber<int64_t>(flag, next());
    else if (flag == "--keep-last")
      o.keepLast = parseNumber<int64_t>(flag, next());
    else if (flag == "--resume")
      o.resume = path(flag, next());
    else if (flag == "--overwrite-checkpoints") {
      if (hasInline) throw UsageError(flag + " takes no value");
      o.overwriteCheckpoints = true;
    } else if (flag == "--metrics")
      o.metrics = path(flag, next());
    else if (flag == "--trace")
      o.trace = path(flag, next());
    else if (flag == "--trace-steps")
      o.traceSteps = traceSteps(next());
    else if (flag == "--log-level")
      o.logLevel = next();
    else
      throw UsageError("unknown option '" + args[i] + "' (see xtrain --help)");
  }
  if (o.help) return o;
  if (o.steps && o.epochs) throw UsageError("give --steps or --epochs, not both");
  if (o.reduction != "sum" && o.reduction != "mean") {
    throw UsageError("--reduction must be sum or mean, got '" + o.reduction + "'");
  }
  resolveOptimizerOptions(o);
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
