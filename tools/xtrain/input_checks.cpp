#include "input_checks.hpp"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "checkpoint/checkpoint_directory.hpp"
#include "common/output_file.hpp"

namespace xtrain::tools {

namespace fs = std::filesystem;

namespace {

void checkCheckpointDirectory(const std::string& dir) {
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (fs::exists(status) && !fs::is_directory(status)) {
    throw error("--checkpoint-dir '{}' is not a directory (it is a file): give a directory", dir);
  }
  if (!fs::exists(status)) {
    fs::create_directories(dir, ec);
    if (ec) throw error("--checkpoint-dir '{}' cannot be created: {}", dir, ec.message());
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw error("--checkpoint-dir '{}' is not writable: {}", dir, std::strerror(errno));
  }
  // Every save would refuse it: said before the first step rather than at the first checkpoint.
  try {
    checkpoint::CheckpointDirectory(dir).checkLatestIsReplaceable();
  } catch (const checkpoint::CheckpointError& e) {
    throw error("--checkpoint-dir '{}': {}", dir, e.what());
  }
}

template <typename Read>
void scan(size_t count, size_t perSample, Read read, const std::string& dataset,
          const std::string& file, const std::vector<int64_t>& samples) {
  for (size_t i = 0; i < count; ++i) {
    const double v = read(i);
    if (std::isfinite(v)) continue;
    const size_t k = i / perSample;
    throw error(
        "dataset '{}' in '{}' holds {} in sample {} (element {} of the sample): xtrain trains on "
        "finite values only; clean the data or drop the sample",
        dataset, file, v, samples.at(k), i % perSample);
  }
}

}  // namespace

void checkOutputs(const TrainOptions& o, int64_t instance) {
  if (!o.saveModel.empty() && instance == 0) checkOutputPath(o.saveModel, "--save-model");
  if (!o.checkpointDir.empty()) checkCheckpointDirectory(o.checkpointDir);
}

void requireFiniteSamples(OwnedArray& batch, const std::string& dataset, const std::string& file,
                          const std::vector<int64_t>& samples) {
  if (samples.empty() || batch.nelms() == 0) return;
  const size_t count = batch.nelms();
  const size_t perSample = count / samples.size();
  switch (batch.dataType()) {
    case DataType::FLOAT: {
      const float* v = batch.dataAs<float>();
      scan(
          count, perSample, [v](size_t i) { return static_cast<double>(v[i]); }, dataset, file,
          samples);
      break;
    }
    case DataType::DOUBLE: {
      const double* v = batch.dataAs<double>();
      scan(
          count, perSample, [v](size_t i) { return v[i]; }, dataset, file, samples);
      break;
    }
    case DataType::FLOAT16: {
      const auto* v = static_cast<const uint16_t*>(batch.data());
      scan(
          count, perSample, [v](size_t i) { return static_cast<double>(halfToFloat(v[i])); },
          dataset, file, samples);
      break;
    }
    default: break;  // integers are always finite
  }
}

}  // namespace xtrain::tools
