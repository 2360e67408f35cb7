#include "bench_args.hpp"

#include <cctype>
#include <cstdlib>

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

}  // namespace xbench
