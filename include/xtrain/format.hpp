// xtrain::format: "{}"-style message formatting; the implementation is fmt (src/common/format.cpp),
// this header depends on neither fmt nor spdlog (docs/architecture.md says why).
//
// Integers, floating-point values and bools reach fmt with their type, so fmt's format specifiers
// apply ("{:016x}", "{:.3f}", "{:>8}"); every other argument is first written with operator<< (a
// range as "[a,b,c]") and formatted as text. "{}" of a floating-point value reads as operator<<
// writes it (6 significant digits, like "{:g}"). "{{" and "}}" give literal braces.
//
// A message must never throw: extra arguments are appended, separated by spaces; missing ones leave
// their "{}" in place; a format string fmt rejects (a bad specifier) is written with every field
// replaced by its argument's "{}" text and the reason appended.
#pragma once

#include <concepts>
#include <cstddef>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "xtrain/api.hpp"

namespace xtrain {

namespace detail {
template <typename T>
void writeValue(std::ostream& os, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "true" : "false");
  } else if constexpr (requires { os << v; }) {
    os << v;
  } else if constexpr (requires {
                         v.begin();
                         v.end();
                       }) {
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

// One argument as the implementation receives it: numbers keep their type (for the specifiers),
// anything else is already text. Character types are text, as operator<< writes them.
using FormatArg = std::variant<long long, unsigned long long, double, bool, std::string>;

template <typename T>
FormatArg toFormatArg(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else if constexpr (std::is_same_v<T, char> || std::is_same_v<T, signed char> ||
                       std::is_same_v<T, unsigned char> || std::is_same_v<T, wchar_t> ||
                       std::is_same_v<T, char8_t> || std::is_same_v<T, char16_t> ||
                       std::is_same_v<T, char32_t>) {
    std::ostringstream os;
    writeValue(os, v);
    return os.str();
  } else if constexpr (std::signed_integral<T>) {
    return static_cast<long long>(v);
  } else if constexpr (std::unsigned_integral<T>) {
    return static_cast<unsigned long long>(v);
  } else if constexpr (std::floating_point<T>) {
    return static_cast<double>(v);
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return std::string(std::string_view(v));
  } else {
    std::ostringstream os;
    writeValue(os, v);
    return os.str();
  }
}

// Formats with fmt; never throws fmt::format_error (see above).
XTRAIN_API std::string formatArgs(std::string_view f, const FormatArg* args, std::size_t count);
}  // namespace detail

template <typename... Args>
std::string format(std::string_view f, const Args&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return detail::formatArgs(f, nullptr, 0);
  } else {
    const detail::FormatArg converted[] = {detail::toFormatArg(args)...};
    return detail::formatArgs(f, converted, sizeof...(Args));
  }
}

}  // namespace xtrain
