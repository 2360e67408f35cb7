// Command line of `xtrain`. parseOptions throws UsageError or flags::FlagError (exit code 2) for
// anything it cannot accept. Each flag's name, reader, help, default and whether the instances must
// agree on it are one row of trainFlags() (train_flags.cpp), defaults included: a TrainOptions is
// made by parseOptions, not default-constructed (its members' own initialisers are not the
// defaults).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/flag_table.hpp"

namespace xtrain::tools {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct AnchorRequest {
  std::string tensor;
  std::string returnType = "ALL";  // ALL, FINAL, SUM, EVERYN
  int period = 0;
};

struct TrainOptions {
  std::string model;  // empty: the built-in example
  std::string data;
  std::string loss;
  // The optimizer and its hyperparameters (optimizer_flags.hpp). parseOptions fills every value
  // that applies to the chosen optimizer (given, else its default) and leaves the others empty.
  std::string optimizer;
  std::optional<float> lr;
  std::optional<float> momentum;
  std::optional<float> weightDecay;
  std::optional<float> dampening;
  std::optional<float> beta1;
  std::optional<float> beta2;
  std::optional<float> eps;
  std::optional<float> maxWeightNorm;
  std::optional<float> alpha;
  std::optional<float> lossScaling;
  std::optional<float> clipNorm;  // empty: no clipping
  bool nesterov = false;
  // Learning-rate schedule over the runs of the training (optimizer_flags.hpp).
  std::string lrSchedule;
  int64_t warmupSteps{};
  int64_t microBatchSize{};
  int64_t batchesPerStep{};
  int64_t accumulationFactor{};
  int64_t replicas{};
  std::optional<int64_t> steps;
  std::optional<int64_t> epochs;
  std::string reduction;
  uint64_t seed{};
  // SessionOptions::batchNormRunningVariance: "onnx", "pytorch" or "auto".
  std::string batchNormRunningVariance;
  std::vector<AnchorRequest> anchors;
  // Model parallelism (model_parallel_flags.hpp, docs/model-parallelism.md, docs/pipelining.md):
  // SessionOptions::virtualGraphMode ("off", "manual" or "auto"), the IPUs of each replica,
  // enablePipelining, autoRecomputation ("none", "standard" or "pipeline") and the tensor classes
  // kept in streaming memory, canonical "weights,optimizer-state,accumulators" order ("": none).
  std::string virtualGraphMode;
  int64_t ipusPerReplica{};
  bool enablePipelining = false;
  std::string recompute;
  std::string offChip;
  std::string saveModel;
  // Validation (validation.hpp): a held-out data set laid out like --data, evaluated every
  // valEvery steps (0: at the end of every epoch) and at the end of training.
  std::string valData;
  int64_t valEvery = 0;
  // Checkpoints (docs/checkpoint-format.md).
  std::string checkpointDir;
  int64_t checkpointEvery = 0;  // steps; 0: only at the end (when checkpointDir is given)
  int64_t keepLast = 0;         // 0: keep every checkpoint
  std::string resume;           // "", "auto" or a checkpoint's path
  bool checkpointAsync = false;
  bool overwriteCheckpoints = false;  // write into a --checkpoint-dir that holds checkpoints
  std::string metrics;  // --metrics: a JSON line per step (metrics_file.hpp); empty: none
  // The job's timeline (docs/trace.md): a Chrome-trace JSON file, only steps A..B when given.
  std::string trace;
  std::optional<std::pair<int64_t, int64_t>> traceSteps;
  std::string logLevel;
  bool help = false;
};

// The table of xtrain's flags: parseOptions reads the command line with it, and the instances of a
// job compare its fingerprint (option_fingerprint.hpp).
const flags::FlagTable<TrainOptions>& trainFlags();

// The table's parse, then the checks that take several flags together.
TrainOptions parseOptions(const std::vector<std::string>& args);
const char* usageText();

}  // namespace xtrain::tools
