// Parsing of device option maps (createIpuModelDevice / createOfflineIPUDevice) and byte sizes.
// Internal.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace xtrain::device {

// Shape of one simulated IPU.
struct IpuShape {
  std::string version = "ipu2";
  int tilesPerIpu = 1472;
  uint64_t memoryPerTile = uint64_t{624} * 1024;  // bytes
};

// The shape of each IPU generation: ipu1 (1216 tiles x 256 KiB), ipu2 and ipu21 (1472 tiles x 624
// KiB). Throws xtrain::error for another name.
IpuShape ipuShapeForVersion(const std::string& version);

struct IpuDeviceOptions {
  int numIpus = 1;
  IpuShape shape;
};

// Parses {numIPUs, tilesPerIPU, memoryPerTile, ipuVersion}. `what` names the caller in error
// messages
// ("createIpuModelDevice"). Unknown keys and bad values throw xtrain::error naming the key.
IpuDeviceOptions parseIpuDeviceOptions(const std::map<std::string, std::string>& options,
                                       std::string_view what);

// "638976", "624KiB", "624 KiB", "1MiB", "2GiB", "512B" -> bytes. Suffixes are case-insensitive.
// Throws xtrain::error (naming `what`) for anything else, zero, or a value that overflows.
uint64_t parseByteSize(std::string_view text, std::string_view what);

// Parses a positive int (no sign, no trailing characters). Throws xtrain::error naming `what`.
int parsePositiveInt(std::string_view text, std::string_view what);

// s without leading and trailing white space.
std::string_view trimWhitespace(std::string_view s);

// 638976 -> "624 KiB", 1572864 -> "1.50 MiB", 100 -> "100 B".
std::string formatBytes(uint64_t bytes);

}  // namespace xtrain::device

#pragma GCC visibility pop
