// The typed readers of flag values for FlagTable (common/flag_table.hpp): integers in a range,
// floating-point numbers, durations, byte counts, words from a list, paths and text. Each refuses
// what it does not understand, never falling back to a default, with FlagError in words the tool
// gives (patterns with {flag}, {text} and the reader's own placeholders), so that every tool keeps
// the messages its users know.
#pragma once
#pragma GCC visibility push(default)

#include <charconv>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/env_value.hpp"
#include "common/flag_table.hpp"

namespace xtrain::flags {

// {flag}, {text}; {value}, {min} and {max} as decimal numbers.
struct IntegerWords {
  std::string notInteger = "{flag} expects an integer, got '{text}'";
  std::string belowMinimum = "{flag} must be at least {min}, got {value}";
  std::string aboveMaximum = "{flag} must be at most {max}, got {value}";
};

// A whole number in [minimum, maximum]: decimal digits, a leading '-' for a signed type, nothing
// else. A number that does not fit in T is not an integer.
template <typename T>
Parser<T> integer(T minimum, T maximum, IntegerWords words = {}) {
  return [=](const std::string& flag, const std::string& text) {
    T value{};
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    auto refuse = [&](const std::string& pattern) {
      return FlagError(fillPlaceholders(pattern, {{"flag", flag},
                                                  {"text", text},
                                                  {"value", std::to_string(value)},
                                                  {"min", std::to_string(minimum)},
                                                  {"max", std::to_string(maximum)}}));
    };
    if (text.empty() || ec != std::errc() || ptr != end) throw refuse(words.notInteger);
    if (value < minimum) throw refuse(words.belowMinimum);
    if (value > maximum) throw refuse(words.aboveMaximum);
    return value;
  };
}

// {flag}, {text}.
struct NumberWords {
  std::string notNumber = "{flag} expects a number, got '{text}'";
  // With finiteAtLeast: the refusal of an infinite or NaN value or one below the bound.
  std::optional<double> finiteAtLeast;
  std::string outOfRange;
};

// A floating-point number as strtod reads it (leading space, exponent, inf, nan, hex), the whole
// text, within double's range (as std::stod); then converted to T.
double parseNumberText(const std::string& flag, const std::string& text, const NumberWords& words);
template <typename T = double>
Parser<T> number(NumberWords words = {}) {
  return [words](const std::string& flag, const std::string& text) {
    return static_cast<T>(parseNumberText(flag, text, words));
  };
}

// A duration in seconds as every duration of xtrain is read (common/env_value.hpp: 30, 0.5,
// 200ms, 5m), with env_value's refusal naming the flag.
Parser<double> duration(DurationRange range = {});

// A byte count as the environment's are read (common/env_switch.hpp: 4096, 64KiB, 2GiB), with its
// refusal naming the flag.
Parser<uint64_t> byteCount(uint64_t minimum = 0, uint64_t maximum = UINT64_MAX);

// {flag}, {text}, {value}, {max}.
struct CountWords {
  std::string notCount = "{flag} expects a count like 4096, 64K or 256M, got '{text}'";
  std::string tooLarge = "{flag} {text} is too large";
  std::string aboveMaximum = "{flag} must be at most {max}, got {value}";
};

// A count with an optional K, M or G (any case; powers of 1024): digits, then at most that letter.
Parser<uint64_t> scaledCount(uint64_t maximum = UINT64_MAX, CountWords words = {});

// One of `words`, as the value each stands for. The refusal may use {flag}, {text}, {choices}
// ("a, b, c") and {choices-or} ("a, b or c").
template <typename T>
Parser<T> choice(std::vector<std::pair<std::string, T>> words, std::string refusal) {
  return [words = std::move(words), refusal = std::move(refusal)](const std::string& flag,
                                                                  const std::string& text) {
    std::string list, listOr;
    for (size_t i = 0; i < words.size(); ++i) {
      if (words[i].first == text) return words[i].second;
      list += (i > 0 ? ", " : "") + words[i].first;
      listOr += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i].first;
    }
    throw FlagError(fillPlaceholders(
        refusal, {{"flag", flag}, {"text", text}, {"choices", list}, {"choices-or", listOr}}));
  };
}

// The words of choice() standing for themselves.
Parser<std::string> word(std::vector<std::string> words, std::string refusal);

// Any text but an empty one: an empty value is a mistake (an unset shell variable), never "no
// file". The default refusal is xtrain's.
Parser<std::string> nonEmpty(std::string refusal = "{flag} needs a path, got an empty one");

// Any text, the empty one included.
Parser<std::string> text();

}  // namespace xtrain::flags

#pragma GCC visibility pop
