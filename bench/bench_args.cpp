#include "bench_args.hpp"

#include <cctype>
#include <cstdlib>
#include <iostream>

#include "xtrain/error.hpp"

namespace xbench {

std::string stringFlag(const std::vector<std::string>& args,
                       std::initializer_list<const char*> names, const std::string& fallback) {
  for (size_t i = 0; i < args.size(); ++i) {
    for (const char* n : names) {
      if (args[i] == n) {
        if (i + 1 >= args.size()) throw xtrain::error("xbench: {} needs a value", n);
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
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  size_t scale = 1;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k") scale = size_t{1} << 10;
  else if (suffix == "M" || suffix == "m") scale = size_t{1} << 20;
  else if (suffix == "G" || suffix == "g") scale = size_t{1} << 30;
  else if (!suffix.empty()) scale = 0;
  if (end == v.c_str() || scale == 0 || v[0] == '-') {
    throw xtrain::error("xbench: {} expects a count like 4096, 64K or 256M, got '{}'",
                        *names.begin(), v);
  }
  return static_cast<size_t>(x) * scale;
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
