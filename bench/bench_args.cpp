#include "bench_args.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <limits>

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
  auto bad = [&] {
    return xtrain::error("{} expects a count like 4096, 64K or 256M, got '{}'", *names.begin(), v);
  };
  // Digits, then at most one of K, M, G: nothing else ("nan", "-1", "1e3", "12abc" are refused).
  size_t digits = 0;
  while (digits < v.size() && std::isdigit(static_cast<unsigned char>(v[digits]))) ++digits;
  if (digits == 0) throw bad();
  const std::string suffix = v.substr(digits);
  size_t scale = 1;
  if (suffix == "K" || suffix == "k") {
    scale = size_t{1} << 10;
  } else if (suffix == "M" || suffix == "m") {
    scale = size_t{1} << 20;
  } else if (suffix == "G" || suffix == "g") {
    scale = size_t{1} << 30;
  } else if (!suffix.empty()) {
    throw bad();
  }
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), nullptr, 10);
  size_t result = 0;
  if (errno == ERANGE || __builtin_mul_overflow(static_cast<size_t>(x), scale, &result)) {
    throw xtrain::error("{} {} is too large", *names.begin(), v);
  }
  return result;
}

int intCountFlag(const std::vector<std::string>& args, std::initializer_list<const char*> names,
                 int fallback) {
  const size_t v = sizeFlag(args, names, static_cast<size_t>(fallback));
  if (v > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw xtrain::error("{} must be at most {}, got {}", *names.begin(),
                        std::numeric_limits<int>::max(), v);
  }
  return static_cast<int>(v);
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
