#include "global_batch.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

#include "common/env_value.hpp"
#include "xtrain/error.hpp"
#include "xtrain/format.hpp"

namespace xtrain::tools {

namespace {

std::optional<std::string> variable(const char* name) {
  return readEnvString(name);
}

// An instance count, refused (exit 2) as every variable is (common/env_value.hpp).
int64_t count(const char* name, const std::string& text) {
  try {
    return parseWholeNumber(text, name, 1, INT32_MAX);
  } catch (const error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

std::string keepGlobalBatch(TrainOptions& o) {
  const auto original = variable("XTRAIN_ORIGINAL_NUM_INSTANCES");
  const auto current = variable("XTRAIN_NUM_INSTANCES");
  if (!original || !current) return {};
  std::string keep;
  try {
    keep = readEnvChoice("XTRAIN_KEEP_GLOBAL_BATCH", {"accumulation", "micro-batch", "no"})
               .value_or("accumulation");
  } catch (const error& e) {
    throw UsageError(format("{} (xrun's --keep-global-batch)", e.what()));
  }
  const int64_t n0 = count("XTRAIN_ORIGINAL_NUM_INSTANCES", *original);
  const int64_t n = count("XTRAIN_NUM_INSTANCES", *current);
  if (n > n0) {
    throw UsageError(
        format("XTRAIN_NUM_INSTANCES={} is more than XTRAIN_ORIGINAL_NUM_INSTANCES={}", n, n0));
  }
  if (n == n0) return {};
  if (keep == "no") {
    return format(
        "xtrain: the job runs on {} of its {} instances; the global batch shrinks with it "
        "(--keep-global-batch no)",
        n, n0);
  }
  const bool accumulation = keep == "accumulation";
  const char* flag = accumulation ? "--accumulation-factor" : "--micro-batch-size";
  int64_t& value = accumulation ? o.accumulationFactor : o.microBatchSize;
  if (value > std::numeric_limits<int64_t>::max() / n0 || (value * n0) % n != 0) {
    throw UsageError(format(
        "the job runs on {} of its {} instances, and {} {} x {} / {} is not a whole number, so "
        "--keep-global-batch {} cannot keep the global batch exactly; use a count of instances "
        "that divides {}, or --keep-global-batch no",
        n, n0, flag, value, n0, n, keep, n0));
  }
  const int64_t was = value;
  value = value * n0 / n;
  return format(
      "xtrain: the job runs on {} of its {} instances; {} {} (was {}) keeps the global batch "
      "(--keep-global-batch {})",
      n, n0, flag, value, was, keep);
}

}  // namespace xtrain::tools
