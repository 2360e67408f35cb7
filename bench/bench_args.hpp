// Command-line flags of xbench's benchmarks: `--name value` pairs, looked up by any of their names.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace xbench {

// The value after the first of `names` in args, or `fallback`.
std::string stringFlag(const std::vector<std::string>& args,
                       std::initializer_list<const char*> names, const std::string& fallback);
// A non-negative count with an optional K, M or G suffix (powers of 1024); throws xtrain::error
// naming the flag on a malformed value.
size_t sizeFlag(const std::vector<std::string>& args, std::initializer_list<const char*> names,
                size_t fallback);

int benchComm(const std::vector<std::string>& args);
const char* commUsage();

}  // namespace xbench
