#include "device/ipu/ipu_options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>

#include "xtrain/error.hpp"

namespace xtrain::device {
namespace {

constexpr const char* kValidKeys =
    "numIPUs, tilesPerIPU, memoryPerTile, ipuVersion, compileIPUCode";

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string_view trimWhitespace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

IpuShape ipuShapeForVersion(const std::string& version) {
  if (version == "ipu2" || version == "ipu21") {
    return IpuShape{version, 1472, uint64_t{624} * 1024};
  }
  if (version == "ipu1") {
    return IpuShape{version, 1216, uint64_t{256} * 1024};
  }
  throw error("unknown IPU version '{}'; valid versions are ipu1, ipu2, ipu21", version);
}

int parsePositiveInt(std::string_view text, std::string_view what) {
  const std::string_view t = trimWhitespace(text);
  int value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || value <= 0) {
    throw error("{}: '{}' is not a positive integer", what, text);
  }
  return value;
}

uint64_t parseByteSize(std::string_view text, std::string_view what) {
  const std::string_view t = trimWhitespace(text);
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || end == t.data()) {
    throw error("{}: '{}' is not a byte size (expected e.g. 638976, 624KiB or 1MiB)", what, text);
  }
  const std::string suffix =
      lower(trimWhitespace(std::string_view(end, t.data() + t.size() - end)));
  uint64_t unit = 0;
  if (suffix.empty() || suffix == "b") {
    unit = 1;
  } else if (suffix == "kib") {
    unit = uint64_t{1} << 10;
  } else if (suffix == "mib") {
    unit = uint64_t{1} << 20;
  } else if (suffix == "gib") {
    unit = uint64_t{1} << 30;
  } else {
    throw error("{}: unknown size suffix in '{}'; use no suffix (bytes) or B, KiB, MiB, GiB", what,
                text);
  }
  if (value == 0) {
    throw error("{}: '{}' must be greater than zero", what, text);
  }
  if (value > std::numeric_limits<uint64_t>::max() / unit) {
    throw error("{}: '{}' is too large", what, text);
  }
  return value * unit;
}

std::string formatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    return std::to_string(bytes) + " B";
  }
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  const bool whole = bytes % (uint64_t{1} << (10 * (u + 1))) == 0;
  if (whole) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  }
  return buf;
}

IpuDeviceOptions parseIpuDeviceOptions(const std::map<std::string, std::string>& options,
                                       std::string_view what) {
  for (const auto& [key, value] : options) {
    if (key == "numIPUs" || key == "tilesPerIPU" || key == "memoryPerTile" || key == "ipuVersion") {
      continue;
    }
    if (key == "compileIPUCode") {
      // Poplar's IPU Model option (compile the vertices' IPU code as well as the host code):
      // xtrain compiles no IPU code, so it is checked and has no effect (docs/devices.md).
      const std::string v = lower(trimWhitespace(value));
      if (v != "true" && v != "false" && v != "1" && v != "0") {
        throw error(
            "{}: option compileIPUCode: '{}' is not a boolean (expected true, false, 1 or 0)", what,
            value);
      }
      continue;
    }
    std::string hint;
    for (const char* valid :
         {"numIPUs", "tilesPerIPU", "memoryPerTile", "ipuVersion", "compileIPUCode"}) {
      if (lower(key) == lower(valid)) {
        hint = format(" (did you mean '{}'?)", valid);
      }
    }
    throw error("{}: unknown option '{}'{}; valid options are {}", what, key, hint, kValidKeys);
  }
  IpuDeviceOptions out;
  if (auto it = options.find("ipuVersion"); it != options.end()) {
    try {
      out.shape = ipuShapeForVersion(std::string(trimWhitespace(it->second)));
    } catch (const error& e) {
      throw error("{}: option ipuVersion: {}", what, e.what());
    }
  }
  if (auto it = options.find("numIPUs"); it != options.end()) {
    out.numIpus = parsePositiveInt(it->second, format("{}: option numIPUs", what));
  }
  if (auto it = options.find("tilesPerIPU"); it != options.end()) {
    out.shape.tilesPerIpu = parsePositiveInt(it->second, format("{}: option tilesPerIPU", what));
  }
  if (auto it = options.find("memoryPerTile"); it != options.end()) {
    out.shape.memoryPerTile = parseByteSize(it->second, format("{}: option memoryPerTile", what));
  }
  const uint64_t maxPerTile = std::numeric_limits<uint64_t>::max() /
                              static_cast<uint64_t>(out.shape.tilesPerIpu) /
                              static_cast<uint64_t>(out.numIpus);
  if (out.shape.memoryPerTile > maxPerTile) {
    throw error("{}: {} IPUs x {} tiles x {} bytes per tile overflows a 64-bit byte count", what,
                out.numIpus, out.shape.tilesPerIpu, out.shape.memoryPerTile);
  }
  return out;
}

}  // namespace xtrain::device
