// xtrain::format: "{}"-style message formatting with no third-party dependency in public headers.
// Each "{}" is replaced by the next argument written with operator<<; "{{" and "}}" give literal braces.
// Extra arguments are appended; missing ones leave "{}" in place (a message must never throw).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace xtrain {

namespace detail {
template <typename T>
void writeValue(std::ostream& os, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "true" : "false");
  } else if constexpr (requires { os << v; }) {
    os << v;
  } else if constexpr (requires { v.begin(); v.end(); }) {
    os << '[';
    bool first = true;
    for (const auto& e : v) {
      if (!first) os << ',';
      first = false;
      writeValue(os, e);
    }
    os << ']';
  } else {
    os << "<?>";
  }
}

inline void formatRest(std::ostringstream& os, std::string_view f) {
  for (size_t i = 0; i < f.size(); ++i) {
    if ((f[i] == '{' || f[i] == '}') && i + 1 < f.size() && f[i + 1] == f[i]) ++i;
    os << f[i];
  }
}

template <typename T, typename... Rest>
void formatRest(std::ostringstream& os, std::string_view f, const T& v, const Rest&... rest) {
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      os << '{';
      ++i;
    } else if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      os << '}';
      ++i;
    } else if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '}') {
      writeValue(os, v);
      formatRest(os, f.substr(i + 2), rest...);
      return;
    } else {
      os << f[i];
    }
  }
  os << ' ';
  writeValue(os, v);
  ((os << ' ', writeValue(os, rest)), ...);
}
}  // namespace detail

template <typename... Args>
std::string format(std::string_view f, const Args&... args) {
  std::ostringstream os;
  detail::formatRest(os, f, args...);
  return os.str();
}

}  // namespace xtrain
