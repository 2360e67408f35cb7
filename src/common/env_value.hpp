// The one reader of xtrain's own environment variables (XTRAIN_*) and of the values of the same
// kinds on command lines: whole numbers, durations, words from a list, strings. Every value is read
// with one syntax, and every refusal reads the same, `NAME='value': expected ...`, naming the range
// or the words that would do. (The variables used to be parsed by hand, each its own way: some took
// a leading space or 0x10, others refused them; XTRAIN_COMM_TIMEOUT=1e10 overflowed into a timeout
// of -9223372036854775808 ms.) Switches and byte counts are in env_switch.hpp, with the same rules.
//
// The syntax (docs/environment.md):
//  - unset or empty: the default;
//  - whole numbers: decimal digits, with a leading '-' only where the range has negative numbers;
//    no '+', space, hexadecimal, fraction or exponent;
//  - durations: decimal digits with an optional fraction (`0.5`), and an optional unit ms, s, m or
//  h
//    (any case; none means seconds); no sign, space, exponent, inf or nan; at most kMaxDuration (30
//    days) unless a tighter bound is documented;
//  - anything else is refused, never taken as the default.
// Read at each call; nothing is cached.
#pragma once
#pragma GCC visibility push(default)

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace xtrain {

// The longest duration xtrain takes anywhere (a timeout, a wait, a grace period): 30 days. Longer
// ones would overflow the clocks' nanoseconds once added to now, and no wait of xtrain's needs
// more.
inline constexpr std::chrono::seconds kMaxDuration{30 * 24 * 3600};

// Throws xtrain::error "`what`='`text`': expected `expected`", the one form of every refusal.
[[noreturn]] void throwBadValue(std::string_view what, std::string_view text,
                                std::string_view expected);

// A whole number in [minimum, maximum]; refusals name `what` and `text`.
int64_t parseWholeNumber(std::string_view text, std::string_view what, int64_t minimum,
                         int64_t maximum);

// The bounds of a duration: more than 0 (or 0 too when zeroAllowed), at most `maximum` (a maximum
// above kMaxDuration is kMaxDuration).
struct DurationRange {
  bool zeroAllowed = false;
  std::chrono::milliseconds maximum = kMaxDuration;
};

// A duration in seconds (a double, finite, within `range`); refusals name `what`, `text` and the
// range.
double parseDurationSeconds(std::string_view text, std::string_view what, DurationRange range = {});

// Seconds (finite, not negative, at most kMaxDuration) as whole milliseconds, a positive duration
// never below 1 ms. A value outside that range is a bug of the caller (internal_error).
std::chrono::milliseconds secondsToMilliseconds(double seconds);

// The value of `name`, or nullopt when it is unset or empty.
std::optional<std::string> readEnvString(const char* name);

// parseWholeNumber of `name`'s value, or nullopt when it is unset or empty.
std::optional<int64_t> readEnvWholeNumber(const char* name, int64_t minimum, int64_t maximum);

// parseDurationSeconds of `name`'s value as milliseconds, or nullopt when unset or empty.
std::optional<std::chrono::milliseconds> readEnvDuration(const char* name,
                                                         DurationRange range = {});

// `text` when it is one of `words` (exactly, case included); else refused, listing the words.
std::string parseChoice(std::string_view text, std::string_view what,
                        std::initializer_list<std::string_view> words);

// parseChoice of `name`'s value, or nullopt when it is unset or empty.
std::optional<std::string> readEnvChoice(const char* name,
                                         std::initializer_list<std::string_view> words);

}  // namespace xtrain

#pragma GCC visibility pop
