// `xtrain --metrics FILE`: the figures of every step as JSON Lines (one JSON object a line), for
// plotting (scripts/plot-metrics) or any other tool. docs/metrics.md lists the fields.
//
// Instance 0 alone writes. Each line reaches the file in one write(2) as its step ends, so a job
// that is killed leaves every finished step's line behind, and `tail -f` follows the training;
// a line is written whole or not at all (a full disk leaves no half line).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/file_descriptor.hpp"

namespace xtrain::tools {

// One step's figures. Optional ones are left out of the line when empty.
struct StepMetrics {
  int64_t step = 0;        // steps completed: 1 after the first step
  double epoch = 0;        // samples seen / samples in the data set
  double loss = 0;         // the step's mean loss, as the progress line prints it
  float learningRate = 0;  // in force during the step
  double stepSeconds = 0;  // drawing the samples, run() and reading the loss
  double samplesPerSecond = 0;
  double reductionShare = 0;  // of run()'s time, the gradient reduction across replicas, in [0, 1]
  float lossScale = 1;
  std::optional<float> gradientNorm;  // with --clip-norm
  std::optional<double> validationLoss;
  std::optional<double> validationAccuracy;  // in [0, 1], a classification loss only
  std::optional<int64_t> validationSamples;
  double wallTime = 0;  // seconds since the Unix epoch when the step ended
};

// The JSON object of one step, without the newline. Non-finite numbers become null (JSON has no
// NaN or Infinity).
std::string metricsLine(const StepMetrics& m);

class MetricsFile {
 public:
  // Opens `path` for writing, before training: throws xtrain::error naming --metrics and the path
  // when it cannot be written (its directory missing or not writable, a directory, ...). What the
  // file holds is kept until the first write(); `append` (a resumed run) keeps it for good, else
  // the first write() empties the file first, so a run that fails before its first step leaves an
  // earlier run's figures alone.
  MetricsFile(const std::string& path, bool append);
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;

  // Appends metricsLine(m) and a newline, whole or not at all: a write that fails part way (a
  // full disk, a file size limit) is cut back to where the line began, so the file never ends in
  // half a line. A failed write is logged once as a warning and the later steps are not written:
  // the figures are not worth the training. A resumed run's first write() first removes a torn
  // last line an earlier writer left (killed mid-line), with a warning.
  void write(const StepMetrics& m);

 private:
  std::string path_;
  FileDescriptor fd_;
  bool append_;
  bool firstWrite_ = true;
  bool failed_ = false;
};

}  // namespace xtrain::tools
