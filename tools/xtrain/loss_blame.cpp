#include "loss_blame.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace xtrain::tools {

namespace {

// At most this many bytes of samples are read at once while looking for the culprit.
constexpr size_t kScanBytes = size_t{64} << 20;

template <typename T>
std::optional<int64_t> firstOverflowing(const std::vector<unsigned char>& bytes, size_t count,
                                        double limit) {
  const auto* v = reinterpret_cast<const T*>(bytes.data());
  for (size_t i = 0; i < count; ++i) {
    const double x = static_cast<double>(v[i]);
    if (!std::isfinite(x) || std::fabs(x) > limit) return static_cast<int64_t>(i);
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> overflowingMagnitude(DataType type) {
  switch (type) {
    case DataType::FLOAT: return std::sqrt(static_cast<double>(FLT_MAX));
    case DataType::DOUBLE: return std::sqrt(DBL_MAX);
    default: return std::nullopt;  // integers widen exactly; FLOAT16 has loss scaling for this
  }
}

std::optional<OverflowingValue> findOverflowingValue(DataSource& source,
                                                     const std::map<TensorId, TensorInfo>& inputs,
                                                     const std::vector<int64_t>& samples) {
  std::optional<OverflowingValue> first;
  for (const auto& [id, info] : inputs) {
    const std::optional<double> limit = overflowingMagnitude(info.dataType());
    if (!limit || info.rank() == 0 || info.shape()[0] <= 0) continue;
    const size_t sampleElements = static_cast<size_t>(info.nelms() / info.shape()[0]);
    const size_t sampleBytes = sampleElements * dataTypeSize(info.dataType());
    if (sampleBytes == 0) continue;
    const size_t perRead = std::max<size_t>(1, kScanBytes / sampleBytes);
    std::vector<unsigned char> bytes;
    for (size_t at = 0; at < samples.size(); at += perRead) {
      // Past a culprit already found in an earlier input: nothing later can come first.
      if (first && samples[at] > first->sample) break;
      const std::vector<int64_t> part(
          samples.begin() + static_cast<std::ptrdiff_t>(at),
          samples.begin() + static_cast<std::ptrdiff_t>(std::min(samples.size(), at + perRead)));
      bytes.resize(part.size() * sampleBytes);
      source.fill(id, info, part, bytes.data());
      const size_t count = part.size() * sampleElements;
      const std::optional<int64_t> hit = info.dataType() == DataType::FLOAT
                                             ? firstOverflowing<float>(bytes, count, *limit)
                                             : firstOverflowing<double>(bytes, count, *limit);
      if (!hit) continue;
      const auto k = static_cast<size_t>(*hit) / sampleElements;
      const auto e = static_cast<int64_t>(static_cast<size_t>(*hit) % sampleElements);
      const double value =
          info.dataType() == DataType::FLOAT
              ? static_cast<double>(reinterpret_cast<const float*>(bytes.data())[*hit])
              : reinterpret_cast<const double*>(bytes.data())[*hit];
      if (!first || part[k] < first->sample)
        first = OverflowingValue{id, part[k], e, value, info.dataType()};
      break;
    }
  }
  return first;
}

void throwNonFiniteLoss(double loss, int64_t step, const std::optional<OverflowingValue>& culprit,
                        bool inThisStep, const std::string& file) {
  if (!culprit) {
    throw runtime_error(
        "the loss became {} at step {} (try a smaller --lr: the data trained on holds no value "
        "large enough to overflow)",
        loss, step);
  }
  throw error(
      "the loss became {} at step {}: dataset '{}' in '{}' holds {} in sample {} (element {} of "
      "the sample), trained on {}; a {} value beyond {:.3g} overflows arithmetic (its square is "
      "too large), so scale or clean the data: a smaller --lr will not help",
      loss, step, culprit->dataset, file, culprit->value, culprit->sample, culprit->element,
      inThisStep ? "in this step" : "in an earlier step", dataTypeName(culprit->type),
      overflowingMagnitude(culprit->type).value_or(0.0));
}

}  // namespace xtrain::tools
