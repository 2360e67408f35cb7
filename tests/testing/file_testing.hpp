// Whole files as strings, for tests that write, damage and read back files.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace xtrain::testing {

// The bytes of the file at `path` ("" when it cannot be read).
inline std::string readFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// Replaces the file at `path` with `bytes`.
inline void writeFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace xtrain::testing
