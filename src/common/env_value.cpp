#include "common/env_value.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/check.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

// The length of the leading `digits[.digits]` of `text` (0 when it does not start with a digit, or
// when a '.' is not followed by a digit).
size_t decimalLength(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && isDigit(text[i])) ++i;
  if (i == 0) return 0;
  if (i < text.size() && text[i] == '.') {
    size_t j = i + 1;
    while (j < text.size() && isDigit(text[j])) ++j;
    if (j == i + 1) return 0;
    i = j;
  }
  return i;
}

// Seconds per unit of a duration, or 0 for a suffix that is not a unit.
double secondsPerUnit(std::string_view unit) {
  std::string u(unit);
  std::transform(u.begin(), u.end(), u.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (u.empty() || u == "s") return 1;
  if (u == "ms") return 1e-3;
  if (u == "m") return 60;
  if (u == "h") return 3600;
  return 0;
}

// The range's maximum, never above kMaxDuration, in seconds.
double maxSecondsOf(DurationRange range) {
  const auto cap = std::chrono::duration_cast<std::chrono::milliseconds>(kMaxDuration);
  return static_cast<double>(std::min(range.maximum, cap).count()) / 1000.0;
}

std::string describeDurationRange(DurationRange range) {
  const double maxSeconds = maxSecondsOf(range);
  const std::string days =
      maxSeconds == static_cast<double>(kMaxDuration.count()) ? " (30 days)" : "";
  // Whole seconds as digits (fmt would write 2592000.0 as 2.592e+06).
  const auto wholeSeconds = static_cast<int64_t>(maxSeconds);
  const std::string maxText = static_cast<double>(wholeSeconds) == maxSeconds
                                  ? std::to_string(wholeSeconds)
                                  : format("{}", maxSeconds);
  return format(
      "a duration {} and at most {} s{}: a decimal number of seconds, or with a unit ms, s, m or h "
      "(e.g. 300, 0.5, 200ms, 5m)",
      range.zeroAllowed ? "of 0 or more" : "of more than 0", maxText, days);
}

std::string listWords(std::initializer_list<std::string_view> words) {
  std::string out;
  size_t i = 0;
  for (std::string_view w : words) {
    if (i > 0) out += i + 1 == words.size() ? (words.size() > 2 ? ", or " : " or ") : ", ";
    out += w;
    ++i;
  }
  return out;
}

}  // namespace

void throwBadValue(std::string_view what, std::string_view text, std::string_view expected) {
  throw error("{}='{}': expected {}", what, text, expected);
}

int64_t parseWholeNumber(std::string_view text, std::string_view what, int64_t minimum,
                         int64_t maximum) {
  const std::string expected =
      maximum == std::numeric_limits<int64_t>::max()
          ? format("a whole number of at least {} (decimal digits only)", minimum)
          : format("a whole number from {} to {} (decimal digits only)", minimum, maximum);
  // from_chars reads one optional '-' and decimal digits: no '+', space or 0x prefix.
  const bool negative = !text.empty() && text.front() == '-';
  int64_t value = 0;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(text.data(), last, value);
  if (ec != std::errc() || end != last || (negative && minimum >= 0) || value < minimum ||
      value > maximum) {
    throwBadValue(what, text, expected);
  }
  return value;
}

double parseDurationSeconds(std::string_view text, std::string_view what, DurationRange range) {
  const std::string expected = describeDurationRange(range);
  const size_t digits = decimalLength(text);
  if (digits == 0) throwBadValue(what, text, expected);
  const double scale = secondsPerUnit(text.substr(digits));
  if (scale == 0) throwBadValue(what, text, expected);
  double number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  // Hundreds of digits are out of range for a double: too long either way.
  if (ec == std::errc::result_out_of_range) throwBadValue(what, text, expected);
  XT_CHECK(ec == std::errc() && end == text.data() + digits, "'{}' is a decimal", text);
  const double seconds = number * scale;
  const double maxSeconds = maxSecondsOf(range);
  if (!std::isfinite(seconds) || seconds > maxSeconds || (seconds == 0 && !range.zeroAllowed)) {
    throwBadValue(what, text, expected);
  }
  return seconds;
}

std::chrono::milliseconds secondsToMilliseconds(double seconds) {
  const double maxSeconds = static_cast<double>(kMaxDuration.count());
  XT_CHECK(std::isfinite(seconds) && seconds >= 0 && seconds <= maxSeconds,
           "{} s is not a duration of 0 to {} s", seconds, maxSeconds);
  const auto ms = static_cast<int64_t>(std::llround(seconds * 1000.0));
  return std::chrono::milliseconds(seconds > 0 ? std::max<int64_t>(1, ms) : 0);
}

std::optional<std::string> readEnvString(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::optional<int64_t> readEnvWholeNumber(const char* name, int64_t minimum, int64_t maximum) {
  const auto text = readEnvString(name);
  if (!text) return std::nullopt;
  return parseWholeNumber(*text, name, minimum, maximum);
}

std::optional<std::chrono::milliseconds> readEnvDuration(const char* name, DurationRange range) {
  const auto text = readEnvString(name);
  if (!text) return std::nullopt;
  return secondsToMilliseconds(parseDurationSeconds(*text, name, range));
}

std::string parseChoice(std::string_view text, std::string_view what,
                        std::initializer_list<std::string_view> words) {
  if (std::find(words.begin(), words.end(), text) == words.end()) {
    throwBadValue(what, text, listWords(words));
  }
  return std::string(text);
}

std::optional<std::string> readEnvChoice(const char* name,
                                         std::initializer_list<std::string_view> words) {
  const auto text = readEnvString(name);
  if (!text) return std::nullopt;
  return parseChoice(*text, name, words);
}

}  // namespace xtrain
