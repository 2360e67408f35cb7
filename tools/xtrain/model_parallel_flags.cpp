#include "model_parallel_flags.hpp"

#include <array>
#include <limits>
#include <sstream>

#include "common/flag_values.hpp"
#include "xtrain/error.hpp"
#include "xtrain/format.hpp"

namespace xtrain::tools {

namespace {

using O = TrainOptions;

// --offchip's words, in the order the canonical text lists them, and the tensor location
// settings each one moves to streaming memory.
constexpr std::array<const char*, 3> kOffChipClasses = {"weights", "optimizer-state",
                                                        "accumulators"};

TensorLocationSettings SessionOptions::*offChipSettings(const std::string& cls) {
  if (cls == "weights") return &SessionOptions::weightTensorLocationSettings;
  if (cls == "optimizer-state") return &SessionOptions::optimizerStateTensorLocationSettings;
  return &SessionOptions::accumulatorTensorLocationSettings;
}

std::vector<std::string> splitComma(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.emplace_back();
  return parts;
}

// A comma-separated list of kOffChipClasses, each at most once, or "none"; returned in canonical
// order so that two instances spelling the same set differently agree.
std::string parseOffChip(const std::string& flag, const std::string& text) {
  const std::string expected =
      "a comma-separated list of weights, optimizer-state and accumulators (or none)";
  if (text == "none") return "";
  std::array<bool, kOffChipClasses.size()> given{};
  for (const std::string& part : splitComma(text)) {
    size_t i = 0;
    while (i < kOffChipClasses.size() && part != kOffChipClasses[i]) ++i;
    if (i == kOffChipClasses.size()) {
      throw UsageError(flag + " does not know the tensor class '" + part + "' in '" + text +
                       "': it takes " + expected);
    }
    if (given[i]) throw UsageError(flag + " names " + part + " twice in '" + text + "'");
    given[i] = true;
  }
  std::string canonical;
  for (size_t i = 0; i < kOffChipClasses.size(); ++i) {
    if (!given[i]) continue;
    if (!canonical.empty()) canonical += ',';
    canonical += kOffChipClasses[i];
  }
  return canonical;
}

bool isPowerOfTwo(int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

}  // namespace

void addModelParallelFlags(flags::FlagTable<O>& t) {
  t.value("--virtual-graph-mode", "off|manual|auto", &O::virtualGraphMode,
          flags::word({"off", "manual", "auto"}, "{flag} must be {choices-or}, got '{text}'"))
      .byDefault("off")
      .agree()
      .help(
          "where each replica's ops run among its IPUs ({default}): off, all on\n"
          "its first IPU, annotations ignored; manual, where the model's\n"
          "__ipu_number annotations say (every op annotated); auto, a split of\n"
          "an unannotated model by cost over --ipus-per-replica IPUs\n"
          "(docs/model-parallelism.md, docs/pipelining.md)");
  // Checked against the launcher's layout instead, as --replicas (trainer.cpp).
  t.value("--ipus-per-replica", "K", &O::ipusPerReplica,
          flags::integer<int64_t>(1, std::numeric_limits<int>::max(),
                                  {.belowMinimum = "{flag} must be at least 1, got {text}",
                                   .aboveMaximum = "{flag} must be at most {max}, got {text}"}))
      .byDefault("1")
      .help(
          "simulated IPUs each replica spans ({default}; a power of two): the\n"
          "device is --replicas x K IPUs; under xrun, its --ipus-per-replica");
  t.toggle("--enable-pipelining", &O::enablePipelining)
      .agree()
      .help(
          "run the stages (the IPUs, or __pipeline_stage annotations) pipelined\n"
          "over the micro-batches of --accumulation-factor, which must be at\n"
          "least 2 x stages - 1; needs --virtual-graph-mode manual or auto");
  t.value(
       "--recompute", "none|standard|pipeline", &O::recompute,
       flags::word({"none", "standard", "pipeline"}, "{flag} must be {choices-or}, got '{text}'"))
      .byDefault("none")
      .agree()
      .help(
          "recompute forward ops in the backward pass instead of keeping their\n"
          "outputs: standard, all but PopART's checkpoints; pipeline (with\n"
          "--enable-pipelining), each stage's forward from its stashed inputs\n"
          "({default})");
  t.value("--offchip", "CLASSES", &O::offChip, flags::Parser<std::string>(parseOffChip))
      .agree()
      .help(
          "keep these tensors in streaming memory, off the IPUs: a comma list of\n"
          "weights, optimizer-state, accumulators (default none)");
}

void checkModelParallelOptions(const O& o) {
  if (o.enablePipelining && o.virtualGraphMode == "off") {
    throw UsageError(
        "--enable-pipelining needs the ops placed on stages: add --virtual-graph-mode manual (a "
        "model annotated with __ipu_number or __pipeline_stage) or --virtual-graph-mode auto with "
        "--ipus-per-replica 2 or more");
  }
  if (o.enablePipelining && o.accumulationFactor < 2) {
    throw UsageError(format(
        "--enable-pipelining needs gradient accumulation: give --accumulation-factor N with N at "
        "least 2 x stages - 1 (3 for 2 stages, 7 for 4); got --accumulation-factor {}",
        o.accumulationFactor));
  }
  if (o.recompute == "pipeline" && !o.enablePipelining) {
    throw UsageError(
        "--recompute pipeline needs --enable-pipelining (it recomputes each stage's forward from "
        "its stash); without pipelining use --recompute standard");
  }
  if (!isPowerOfTwo(o.ipusPerReplica)) {
    int64_t lower = 1;
    while (lower * 2 < o.ipusPerReplica) lower *= 2;
    throw UsageError(format(
        "--ipus-per-replica {} is not a power of two (simulated devices hold 1, 2, 4, ... IPUs): "
        "use {} or {}",
        o.ipusPerReplica, lower, lower * 2));
  }
}

void checkIpusPerReplica(const O& o, int64_t ipusPerReplica) {
  if (ipusPerReplica > 1 && o.virtualGraphMode == "off") {
    throw error(
        "{} IPUs per replica with --virtual-graph-mode off would leave all but the first idle: add "
        "--virtual-graph-mode auto (or manual for a model annotated with __ipu_number)",
        ipusPerReplica);
  }
  if (o.enablePipelining && o.virtualGraphMode == "auto" && ipusPerReplica < 2) {
    throw error(
        "--enable-pipelining with --virtual-graph-mode auto over 1 IPU per replica makes one "
        "stage, nothing to pipeline: give --ipus-per-replica 2 or more");
  }
  // Auto makes one stage per IPU, so the trainer can name its flag before the session would
  // refuse the factor in terms of SessionOptions (manual mode's stages are the model's: the
  // session checks those).
  const int64_t depth = 2 * ipusPerReplica - 1;
  if (o.enablePipelining && o.virtualGraphMode == "auto" && o.accumulationFactor < depth) {
    throw error(
        "--enable-pipelining with --virtual-graph-mode auto over {} IPUs per replica makes {} "
        "stages, which need --accumulation-factor at least {} (2 x stages - 1), got {}",
        ipusPerReplica, ipusPerReplica, depth, o.accumulationFactor);
  }
}

void applyModelParallelOptions(const O& o, SessionOptions& options) {
  options.virtualGraphMode = o.virtualGraphMode == "manual" ? VirtualGraphMode::Manual
                             : o.virtualGraphMode == "auto" ? VirtualGraphMode::Auto
                                                            : VirtualGraphMode::Off;
  options.enablePipelining = o.enablePipelining;
  options.autoRecomputation = o.recompute == "standard"   ? RecomputationType::Standard
                              : o.recompute == "pipeline" ? RecomputationType::Pipeline
                                                          : RecomputationType::None;
  for (const std::string& cls : offChipClasses(o)) {
    (options.*offChipSettings(cls)).location.storage = TensorStorage::OffChip;
  }
}

std::vector<std::string> offChipClasses(const O& o) {
  if (o.offChip.empty()) return {};
  return splitComma(o.offChip);
}

}  // namespace xtrain::tools
