// Command-line flags of xbench's benchmarks: `--name value` pairs, looked up by any of their names.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace xbench {

// The value after the first of `names` in args, or `fallback`.
std::string stringFlag(const std::vector<std::string>& args,
                       std::initializer_list<const char*> names, const std::string& fallback);
// A non-negative count with an optional K, M or G suffix (powers of 1024; flags::scaledCount);
// throws flags::FlagError (an xtrain::error) naming the flag on a malformed value.
size_t sizeFlag(const std::vector<std::string>& args, std::initializer_list<const char*> names,
                size_t fallback);
// sizeFlag for a count the benchmark keeps in an int (iterations, threads): at most INT_MAX.
int intCountFlag(const std::vector<std::string>& args, std::initializer_list<const char*> names,
                 int fallback);
// The integer after `name`, else `fallback`; it must lie in [min, max]: "abc", "12abc", "nan" and
// out-of-range values are refused naming the flag (exit code 2), so no benchmark runs on a value
// it did not understand.
int64_t intFlag(const std::vector<std::string>& args, const std::string& name, int64_t fallback,
                int64_t min, int64_t max);

// Checks a subcommand's command line (args[0] is the subcommand) before it runs, so a typo never
// runs a benchmark with defaults: --help/-h prints `usage` to stdout and gives 0; an argument that
// is not one of `valued` (flags taking a value) or `switches` prints which one to stderr with the
// usage and gives 2, as does a valued flag without its value. nullopt: go on.
std::optional<int> checkFlags(const std::vector<std::string>& args,
                              const std::vector<std::string>& valued,
                              const std::vector<std::string>& switches, const std::string& usage);

int benchComm(const std::vector<std::string>& args);
const char* commUsage();

}  // namespace xbench
