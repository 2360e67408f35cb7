#include "common/flag_values.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "common/env_switch.hpp"

namespace xtrain::flags {

double parseNumberText(const std::string& flag, const std::string& text, const NumberWords& words) {
  const auto fields =
      std::vector<std::pair<std::string_view, std::string>>{{"flag", flag}, {"text", text}};
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || end == text.c_str() || errno == ERANGE) {
    throw FlagError(fillPlaceholders(words.notNumber, fields));
  }
  if (words.finiteAtLeast && (!std::isfinite(value) || value < *words.finiteAtLeast)) {
    throw FlagError(fillPlaceholders(words.outOfRange, fields));
  }
  return value;
}

Parser<double> duration(DurationRange range) {
  return [range](const std::string& flag, const std::string& text) {
    try {
      return parseDurationSeconds(text, flag, range);
    } catch (const FlagError&) {
      throw;
    } catch (const error& e) {
      throw FlagError(e.what());
    }
  };
}

Parser<uint64_t> byteCount(uint64_t minimum, uint64_t maximum) {
  return [=](const std::string& flag, const std::string& text) {
    try {
      return parseByteCount(text, flag, minimum, maximum);
    } catch (const error& e) {
      throw FlagError(e.what());
    }
  };
}

Parser<uint64_t> scaledCount(uint64_t maximum, CountWords words) {
  return [=](const std::string& flag, const std::string& text) {
    auto refuse = [&](const std::string& pattern, uint64_t value) {
      return FlagError(fillPlaceholders(pattern, {{"flag", flag},
                                                  {"text", text},
                                                  {"value", std::to_string(value)},
                                                  {"max", std::to_string(maximum)}}));
    };
    // Digits, then at most one of K, M, G: nothing else ("nan", "-1", "1e3", "12abc" are refused).
    size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
      ++digits;
    }
    if (digits == 0) throw refuse(words.notCount, 0);
    const std::string suffix = text.substr(digits);
    uint64_t scale = 1;
    if (suffix == "K" || suffix == "k") {
      scale = uint64_t{1} << 10;
    } else if (suffix == "M" || suffix == "m") {
      scale = uint64_t{1} << 20;
    } else if (suffix == "G" || suffix == "g") {
      scale = uint64_t{1} << 30;
    } else if (!suffix.empty()) {
      throw refuse(words.notCount, 0);
    }
    errno = 0;
    const unsigned long long count = std::strtoull(text.c_str(), nullptr, 10);
    uint64_t value = 0;
    if (errno == ERANGE || __builtin_mul_overflow(static_cast<uint64_t>(count), scale, &value)) {
      throw refuse(words.tooLarge, 0);
    }
    if (value > maximum) throw refuse(words.aboveMaximum, value);
    return value;
  };
}

Parser<std::string> word(std::vector<std::string> words, std::string refusal) {
  std::vector<std::pair<std::string, std::string>> same;
  for (auto& w : words) same.emplace_back(w, w);
  return choice(std::move(same), std::move(refusal));
}

Parser<std::string> nonEmpty(std::string refusal) {
  return [refusal = std::move(refusal)](const std::string& flag, const std::string& text) {
    if (text.empty()) throw FlagError(fillPlaceholders(refusal, {{"flag", flag}, {"text", text}}));
    return text;
  };
}

Parser<std::string> text() {
  return [](const std::string&, const std::string& text) { return text; };
}

}  // namespace xtrain::flags
