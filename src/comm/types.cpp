#include "comm/types.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace xtrain::comm {

size_t BufferView::bytes() const {
  const size_t elem = dataTypeSize(type);
  if (elem != 0 && count > std::numeric_limits<size_t>::max() / elem) {
    throw error("buffer of {} elements of {} overflows size_t", count, dataTypeName(type));
  }
  return count * elem;
}

Milliseconds parseDuration(std::string_view text, std::string_view what) {
  const std::string s(text);
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  std::string_view unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double ms = 0;
  if (end == s.c_str()) {
    ms = -1;
  } else if (unit.empty() || unit == "s") {
    ms = value * 1000.0;
  } else if (unit == "ms") {
    ms = value;
  } else if (unit == "m" || unit == "min") {
    ms = value * 60000.0;
  } else {
    ms = -1;
  }
  if (!(ms > 0) || !std::isfinite(ms) || ms > 1e15) {
    throw error(
        "{}='{}' is not a valid timeout: expected a positive number of seconds, optionally "
        "with a unit (e.g. 300, 0.5, 200ms, 30s, 5m)",
        what, text);
  }
  return Milliseconds(std::max<int64_t>(1, static_cast<int64_t>(std::llround(ms))));
}

Milliseconds defaultTimeout() {
  const char* v = std::getenv("XTRAIN_COMM_TIMEOUT");
  if (v == nullptr || *v == '\0') return Milliseconds(300'000);
  return parseDuration(v, "XTRAIN_COMM_TIMEOUT");
}

}  // namespace xtrain::comm
