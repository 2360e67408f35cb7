#include "text.hpp"

#include <array>
#include <cstdio>

namespace xtrain::tools::xckpt {

std::string humanBytes(uint64_t bytes) {
  constexpr std::array<const char*, 5> units = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < units.size()) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

std::string padded(const std::string& text, size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

std::string shortNumber(double value) {
  if (value == 0.0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", value);
  return buf;
}

}  // namespace xtrain::tools::xckpt
