#include "common/env_switch.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>

#include "common/env_value.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

bool readBoolSwitch(const char* name, bool defaultValue) {
  const auto value = readEnvString(name);
  if (!value) return defaultValue;
  const std::string v = lower(*value);
  if (v == "1" || v == "true" || v == "on") return true;
  if (v == "0" || v == "false" || v == "off") return false;
  throwBadValue(name, *value, "a switch: 0, 1, false, true, off or on");
}

uint64_t parseByteCount(std::string_view text, std::string_view what, uint64_t minimum,
                        uint64_t maximum) {
  std::string bounds;
  if (minimum > 0 && maximum < UINT64_MAX) {
    bounds = format(" from {} to {}", minimum, maximum);
  } else if (minimum > 0) {
    bounds = format(" of at least {}", minimum);
  } else if (maximum < UINT64_MAX) {
    bounds = format(" of at most {}", maximum);
  }
  const std::string expected =
      format("a byte count{}: digits with an optional unit B, KiB, MiB or GiB (e.g. 4MiB)", bounds);
  auto bad = [&](std::string_view why) {
    throwBadValue(what, text, why.empty() ? expected : format("{}; {}", expected, why));
  };
  uint64_t digits = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, digits);
  // from_chars takes no sign and no leading space, so "-8" and " 5" fail here as they should.
  if (end == first) bad("");
  if (ec == std::errc::result_out_of_range) bad("it does not fit in 64 bits");
  const std::string unit = lower(std::string_view(end, static_cast<size_t>(last - end)));
  uint64_t scale = 0;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "kib") {
    scale = uint64_t{1} << 10;
  } else if (unit == "mib") {
    scale = uint64_t{1} << 20;
  } else if (unit == "gib") {
    scale = uint64_t{1} << 30;
  } else {
    bad(format("unknown unit '{}'", std::string_view(end, static_cast<size_t>(last - end))));
  }
  if (digits > std::numeric_limits<uint64_t>::max() / scale) bad("it does not fit in 64 bits");
  const uint64_t bytes = digits * scale;
  if (bytes < minimum) bad(format("{} bytes is too few", bytes));
  if (bytes > maximum) bad(format("{} bytes is too many", bytes));
  return bytes;
}

uint64_t readByteCount(const char* name, uint64_t defaultValue, uint64_t minimum,
                       uint64_t maximum) {
  const auto value = readEnvString(name);
  if (!value) return defaultValue;
  return parseByteCount(*value, name, minimum, maximum);
}

}  // namespace xtrain
