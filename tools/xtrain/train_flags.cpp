// xtrain's flags: every flag of `xtrain` is one row here (name, field, reader, help, default,
// whether the instances of a job must agree on it). The parser, the usage rows and the option
// fingerprint the instances compare (option_fingerprint.hpp) are all made from it.
#include <limits>

#include "common/flag_values.hpp"
#include "common/timeline.hpp"
#include "model_parallel_flags.hpp"
#include "options.hpp"

namespace xtrain::tools {

namespace {

using O = TrainOptions;
using flags::Parser;

// Counts that become an `int` in the library (DataFlow's batches per step, replicas, anchor
// periods).
constexpr int64_t kMaxIntCount = std::numeric_limits<int>::max();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

// A count that must be greater than zero: "--steps must be greater than zero, got 0".
Parser<int64_t> positive(int64_t max = kMaxInt64) {
  return flags::integer<int64_t>(1, max,
                                 {.belowMinimum = "{flag} must be greater than zero, got {text}",
                                  .aboveMaximum = "{flag} must be at most {max}, got {text}"});
}

// Any integer; the ranges of these are checked with the other flags (parseOptions).
template <typename T>
Parser<T> anyInteger() {
  return flags::integer<T>(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
}

// NAME[:ALL|FINAL|SUM|EVERYN:k]. Tensor names may themselves contain ':' (the Builder names outputs
// "node:0"), so the return type is recognised at the end of the text only.
AnchorRequest parseAnchor(const std::string&, const std::string& text) {
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
    a.period = static_cast<int>(positive(kMaxIntCount)("--anchor EVERYN period", rest.substr(1)));
    a.tensor = text.substr(0, everyN);
  }
  if (a.tensor.empty()) throw UsageError("--anchor needs a tensor name, got '" + text + "'");
  return a;
}

// A:B, 1-based and inclusive.
std::pair<int64_t, int64_t> parseTraceSteps(const std::string& flag, const std::string& text) {
  try {
    return timeline::parseStepRange(text, flag);
  } catch (const error& e) {
    throw UsageError(e.what());
  }
}

// How a path the instances may spell differently (one per host) enters the fingerprint: whether
// it is given.
template <std::string O::*field>
std::string givenOrNone(const O& o) {
  return (o.*field).empty() ? "(none)" : "(given)";
}

void addModelFlags(flags::FlagTable<O>& t) {
  t.value("--model", "M.onnx", &O::model, flags::nonEmpty())
      .help("the model to train (graph inputs without initializers are fed from --data)")
      .agree([](const O& o) { return o.model.empty() ? "(built-in example)" : "(a model file)"; });
  t.value("--data", "D.h5", &O::data, flags::nonEmpty())
      .help("one dataset per graph input, named like the input, first dimension = samples");
  t.value("--loss", "TENSOR", &O::loss,
          flags::nonEmpty("{flag} needs a tensor name, got an empty one"))
      .help("the loss tensor of the model (required with --model)");
}

void addOptimizerFlags(flags::FlagTable<O>& t) {
  const Parser<float> real = flags::number<float>();
  t.value("--optimizer", "NAME", &O::optimizer, flags::text())
      .byDefault("sgd")
      .agree()
      .help(
          "sgd, adam, adamw, lamb, adamax, adagrad, rmsprop, centered-rmsprop,\n"
          "adadelta ({default}). adam and adamax add the weight decay to the gradient\n"
          "(L2), adamw and lamb decay the weight (decoupled); the adaptive ones L2");
  t.value("--lr", "X", &O::lr, real)
      .agree()
      .help(
          "learning rate (sgd, adagrad, rmsprop, centered-rmsprop 0.01; adam,\n"
          "adamw, lamb, adamax 0.001; adadelta 1.0)");
  t.value("--weight-decay", "X", &O::weightDecay, real).agree().help("weight decay (0)");
  t.value("--momentum", "X", &O::momentum, real)
      .agree()
      .help("sgd, adagrad, rmsprop, centered-rmsprop, adadelta (sgd 0.9, others 0)");
  t.value("--dampening", "X", &O::dampening, real).agree().help("sgd: momentum dampening (0)");
  t.toggle("--nesterov", &O::nesterov).agree().help("sgd: Nesterov momentum");
  t.value("--beta1", "X", &O::beta1, real)
      .agree()
      .help("adam, adamw, lamb, adamax: moment decay rates (0.9, 0.999)");
  t.value("--beta2", "X", &O::beta2, real).agree().sameRowAs(", ");
  t.value("--eps", "X", &O::eps, real)
      .agree()
      .help("all but sgd: epsilon of the denominator (1e-6)");
  t.value("--max-weight-norm", "X", &O::maxWeightNorm, real)
      .agree()
      .help("lamb: the bound of the trust ratio's weight norm (10)");
  t.value("--alpha", "X", &O::alpha, real)
      .agree()
      .help(
          "rmsprop, centered-rmsprop: the moving average's decay; adadelta: rho\n"
          "(0.99; adadelta 0.9)");
  t.value("--loss-scaling", "X", &O::lossScaling, real).agree().help("loss scaling factor (1)");
  t.value("--clip-norm", "X", &O::clipNorm, real)
      .agree()
      .help("clip the global gradient norm over all weights to X (off)");
  t.value("--lr-schedule", "S", &O::lrSchedule, flags::text())
      .byDefault("constant")
      .agree()
      .help(
          "constant, linear or cosine ({default}); changes the learning rate\n"
          "between runs, all --batches-per-step updates of a run share one rate");
  t.value("--warmup-steps", "N", &O::warmupSteps, anyInteger<int64_t>())
      .byDefault("0")
      .agree()
      .help("ramp the learning rate up linearly over the first N steps ({default})");
}

void addBatchFlags(flags::FlagTable<O>& t) {
  t.value("--micro-batch-size", "N", &O::microBatchSize, positive())
      .byDefault("32")
      .agree()
      .help("samples per micro-batch per replica ({default})");
  t.value("--batches-per-step", "N", &O::batchesPerStep, positive(kMaxIntCount))
      .byDefault("1")
      .agree()
      .help("batches one run executes ({default})");
  t.value("--accumulation-factor", "N", &O::accumulationFactor, positive())
      .byDefault("1")
      .agree()
      .help("micro-batches whose gradients are accumulated per update ({default})");
  // Checked against the launcher's layout instead (trainer.cpp).
  t.value("--replicas", "N", &O::replicas, positive(kMaxIntCount))
      .byDefault("1")
      .help("local replicas, each on its own simulated IPU ({default})");
  t.value("--steps", "N", &O::steps, positive())
      .agree()
      .help("how long to train (default: 100 steps for the example, 1 epoch otherwise)");
  t.value("--epochs", "N", &O::epochs, positive()).agree().sameRowAs(" | ");
  t.value("--reduction", "sum|mean", &O::reduction, flags::text())
      .byDefault("mean")
      .agree()
      .help("how gradients are reduced over micro-batches and replicas ({default})");
  t.value("--seed", "S", &O::seed, anyInteger<uint64_t>())
      .byDefault("0")
      .agree()
      .help("seed of the sample order and of random ops ({default})");
  t.value("--batchnorm-running-var", "onnx|pytorch|auto", &O::batchNormRunningVariance,
          flags::word({"onnx", "pytorch", "auto"}, "{flag} must be {choices-or}, got '{text}'"))
      .byDefault("onnx")
      .agree()
      .help(
          "the running variance BatchNormalization keeps: onnx, the batch's\n"
          "population variance as ONNX defines it (the default); pytorch, the\n"
          "unbiased one as PyTorch keeps it (needs more than one value per\n"
          "channel); auto, pytorch's for a model whose producer is pytorch\n"
          "(torch.onnx.export), else onnx's (docs/onnx-import.md)");
  // Anchors change no collective.
  t.value("--anchor", "NAME[:ALL|FINAL|SUM|EVERYN:k]", &O::anchors,
          Parser<AnchorRequest>(parseAnchor))
      .help("also fetch a tensor each step (repeatable)");
}

void addOutputFlags(flags::FlagTable<O>& t) {
  // Saving the model, validation and checkpoints are collectives: whether they happen must agree.
  t.value("--save-model", "OUT.onnx", &O::saveModel, flags::nonEmpty())
      .agree(givenOrNone<&O::saveModel>)
      .help("write the trained model");
  t.value("--val-data", "V.h5", &O::valData, flags::nonEmpty())
      .agree(givenOrNone<&O::valData>)
      .help(
          "a held-out data set laid out like --data (the built-in example: x\n"
          "[N,32] float, labels [N] int): prints its loss and, when the loss is\n"
          "a classification loss, top-1 accuracy, with the current weights");
  t.value("--val-every", "N", &O::valEvery, positive())
      .agree()
      .help(
          "evaluate every N steps (default: at the end of every epoch); also at\n"
          "the end of training");
  t.value("--checkpoint-dir", "DIR", &O::checkpointDir, flags::nonEmpty())
      .agree(givenOrNone<&O::checkpointDir>)
      .help("write checkpoints there (ckpt-<step>/, `latest`); at the end at least");
  t.value("--checkpoint-every", "N", &O::checkpointEvery, anyInteger<int64_t>())
      .agree()
      .help("also every N steps");
  t.value("--keep-last", "K", &O::keepLast, anyInteger<int64_t>())
      .help("keep only the newest K checkpoints (0: all)");
  t.toggle("--checkpoint-async", &O::checkpointAsync)
      .agree()
      .help("write checkpoints while training continues");
  t.value("--resume", "auto|PATH", &O::resume, flags::nonEmpty())
      .agree([](const O& o) {
        return o.resume.empty() || o.resume == "auto" ? o.resume : "(a checkpoint path)";
      })
      .help(
          "continue from a checkpoint: auto = the newest one in --checkpoint-dir\n"
          "that verifies (damaged ones are skipped), or a fresh start when there\n"
          "is none");
  t.toggle("--overwrite-checkpoints", &O::overwriteCheckpoints)
      .help(
          "start afresh in a --checkpoint-dir that already holds checkpoints,\n"
          "replacing and pruning them (without it or --resume, xtrain refuses);\n"
          "never while another job is still writing there");
  t.value("--metrics", "FILE", &O::metrics, flags::nonEmpty())
      .help(
          "write each step's figures to FILE, one JSON object a line (loss,\n"
          "learning rate, samples/s, validation, ...; docs/metrics.md); a\n"
          "--resume run appends, others replace the file");
  t.value("--trace", "FILE", &O::trace, flags::nonEmpty())
      .help(
          "record a timeline of the job (ops, gradient buckets, collectives,\n"
          "checkpoints, data loading, steps) to FILE, a Chrome-trace JSON file\n"
          "for https://ui.perfetto.dev or chrome://tracing; under xrun one file\n"
          "for the whole job (docs/trace.md)");
  t.value("--trace-steps", "A:B", &O::traceSteps,
          Parser<std::pair<int64_t, int64_t>>(parseTraceSteps))
      .help("trace only steps A..B (1-based, inclusive)");
  t.value("--log-level", "LEVEL", &O::logLevel, flags::text())
      .byDefault("info")
      .help("trace, debug, info, warn, err, critical, off ({default})");
  t.toggle("-h", &O::help).alias("--help").lenient().help("this text");
}

}  // namespace

const flags::FlagTable<TrainOptions>& trainFlags() {
  static const flags::FlagTable<TrainOptions> table = [] {
    flags::FlagTable<O> t(
        flags::Syntax{.unknown = "unknown option '{arg}' (see xtrain --help)",
                      .needsValue = "{flag} needs a value",
                      .takesNoValue = "{flag} takes no value"},
        flags::UsageLayout{.indent = 2, .longOnlyIndent = 0, .column = 28, .width = 100});
    addModelFlags(t);
    addOptimizerFlags(t);
    addBatchFlags(t);
    addModelParallelFlags(t);
    addOutputFlags(t);
    return t;
  }();
  return table;
}

}  // namespace xtrain::tools
