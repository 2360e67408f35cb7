#include "bench_args.hpp"

#include <iostream>
#include <limits>

#include "common/flag_values.hpp"
#include "xtrain/error.hpp"

namespace xbench {

std::string stringFlag(const std::vector<std::string>& args,
                       std::initializer_list<const char*> names, const std::string& fallback) {
  for (size_t i = 0; i < args.size(); ++i) {
    for (const char* n : names) {
      if (args[i] == n) {
        if (i + 1 >= args.size()) throw xtrain::error("{} needs a value", n);
        return args[i + 1];
      }
    }
  }
  return fallback;
}

size_t sizeFlag(const std::vector<std::string>& args, std::initializer_list<const char*> names,
                size_t fallback) {
  const std::string v = stringFlag(args, names, "");
  if (v.empty()) return fallback;
  return xtrain::flags::scaledCount(std::numeric_limits<size_t>::max())(*names.begin(), v);
}

int intCountFlag(const std::vector<std::string>& args, std::initializer_list<const char*> names,
                 int fallback) {
  const std::string v = stringFlag(args, names, "");
  if (v.empty()) return fallback;
  return static_cast<int>(xtrain::flags::scaledCount(
      static_cast<uint64_t>(std::numeric_limits<int>::max()))(*names.begin(), v));
}

int64_t intFlag(const std::vector<std::string>& args, const std::string& name, int64_t fallback,
                int64_t min, int64_t max) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != name) continue;
    const std::string range = "{flag} must be between {min} and {max}, got {value}";
    return xtrain::flags::integer<int64_t>(
        min, max, {.belowMinimum = range, .aboveMaximum = range})(name, args[i + 1]);
  }
  return fallback;
}

namespace {
bool isOneOf(const std::string& arg, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (arg == n) return true;
  }
  return false;
}
}  // namespace

std::optional<int> checkFlags(const std::vector<std::string>& args,
                              const std::vector<std::string>& valued,
                              const std::vector<std::string>& switches, const std::string& usage) {
  const std::string command = args.empty() ? std::string() : args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: " << usage << "\n";
      return 0;
    }
    if (isOneOf(arg, switches)) continue;
    if (isOneOf(arg, valued)) {
      if (i + 1 >= args.size()) {
        std::cerr << "xbench " << command << ": " << arg << " needs a value\nusage: " << usage
                  << "\n";
        return 2;
      }
      ++i;
      continue;
    }
    std::cerr << "xbench " << command << ": unknown "
              << (arg.rfind('-', 0) == 0 ? "option" : "argument") << " '" << arg
              << "'\nusage: " << usage << "\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace xbench
