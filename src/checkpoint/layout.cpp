#include "checkpoint/layout.hpp"

#include <algorithm>
#include <charconv>

namespace xtrain::checkpoint::layout {

namespace {

// The number spelled by all of `digits`, or nullopt.
std::optional<int64_t> wholeNumber(std::string_view digits) {
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

}  // namespace

std::string virtualSourceName(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

std::string partFile(int instance) {
  return "part-" + std::to_string(instance) + ".h5";
}

std::optional<int> partIndex(const std::string& name) {
  constexpr std::string_view prefix = "part-", suffix = ".h5";
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return std::nullopt;
  }
  const auto n = wholeNumber(
      std::string_view(name).substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
  if (!n || *n > 1'000'000) return std::nullopt;
  return static_cast<int>(*n);
}

std::optional<int64_t> checkpointStep(const std::string& name) {
  constexpr std::string_view prefix = "ckpt-";
  if (!name.starts_with(prefix)) return std::nullopt;
  return wholeNumber(std::string_view(name).substr(prefix.size()));
}

bool isReservedName(const std::string& name) {
  if (name == kLatestFile || name == kLockFile ||
      name.starts_with(std::string(kLatestFile) + kStagingMarker)) {
    return true;
  }
  size_t end = name.size();
  for (const char* marker : {kStagingMarker, kRetiredMarker, kKeptMarker}) {
    end = std::min(end, name.find(marker));
  }
  return checkpointStep(name.substr(0, end)).has_value();
}

}  // namespace xtrain::checkpoint::layout
