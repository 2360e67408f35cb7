// Reading XTRAIN_* environment switches one way everywhere: a value that is not understood is an
// error naming the variable and the value, never silently the default. (Each switch used to be
// parsed by hand, and differently: XTRAIN_FUSION=off kept fusion on.) Numbers, durations, words and
// strings are read by env_value.hpp, with the same rules and the same form of refusal:
// `NAME='value': expected ...`.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string_view>

namespace xtrain {

// A boolean switch. Unset or empty: `defaultValue`. Otherwise one of 0, 1, false, true, off, on
// (any case). Anything else throws xtrain::error naming the variable and the value and listing
// the accepted ones (no space around them). Read at each call.
bool readBoolSwitch(const char* name, bool defaultValue);

// Parses a byte count: digits with an optional unit B, KiB, MiB or GiB (any case), nothing else
// (no sign, space, decimal point or other unit). Throws xtrain::error naming `what` and `text`
// when it is malformed, outside [minimum, maximum], or does not fit in 64 bits.
uint64_t parseByteCount(std::string_view text, std::string_view what, uint64_t minimum = 0,
                        uint64_t maximum = UINT64_MAX);

// A byte count from the environment: unset or empty gives `defaultValue`; otherwise
// parseByteCount(value, name, minimum, maximum), whose errors name the variable and its value.
uint64_t readByteCount(const char* name, uint64_t defaultValue, uint64_t minimum = 0,
                       uint64_t maximum = UINT64_MAX);

}  // namespace xtrain

#pragma GCC visibility pop
