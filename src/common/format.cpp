// xtrain::format over fmt: the arguments the header converted (numbers typed, the rest as text) go
// into a dynamic argument list; a string fmt rejects falls back to plain substitution, so a message
// being built for an error never throws.
#include "xtrain/format.hpp"

#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace {

// A floating-point argument: "{}" gives what operator<< writes (6 significant digits, "{:g}"), a
// specifier is fmt's own.
struct Floating {
  double value;
};

// One replacement field of a format string: where it is, its argument index when it names one, and
// whether it carries a specifier.
struct Field {
  std::size_t begin = 0;
  std::size_t end = 0;  // one past the closing '}'
  std::optional<std::size_t> index;
  bool hasSpec = false;
};

// The next field at or after `pos`, skipping "{{" and "}}". Only "{}", "{N}", "{:spec}" and
// "{N:spec}" count as fields (a lone brace is text, as the hand-made formatter had it).
std::optional<Field> nextField(std::string_view f, std::size_t& pos) {
  while (pos < f.size()) {
    const char c = f[pos];
    if ((c == '{' || c == '}') && pos + 1 < f.size() && f[pos + 1] == c) {
      pos += 2;
      continue;
    }
    if (c != '{') {
      ++pos;
      continue;
    }
    std::size_t i = pos + 1;
    std::size_t index = 0;
    bool hasIndex = false;
    while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i]))) {
      index = index * 10 + static_cast<std::size_t>(f[i] - '0');
      hasIndex = true;
      ++i;
    }
    bool spec = false;
    if (i < f.size() && f[i] == ':') {
      spec = true;
      while (i < f.size() && f[i] != '}' && f[i] != '{') ++i;
    }
    if (i < f.size() && f[i] == '}') {
      Field field{pos, i + 1, hasIndex ? std::optional<std::size_t>(index) : std::nullopt, spec};
      pos = i + 1;
      return field;
    }
    ++pos;  // a lone '{': text
  }
  return std::nullopt;
}

// How many arguments the format string uses.
std::size_t argumentsUsed(std::string_view f) {
  std::size_t automatic = 0;
  std::size_t named = 0;
  std::size_t pos = 0;
  while (auto field = nextField(f, pos)) {
    if (field->index) {
      named = std::max(named, *field->index + 1);
    } else {
      ++automatic;
    }
  }
  return std::max(automatic, named);
}

std::string plainText(const xtrain::detail::FormatArg& arg) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) {
          return fmt::format("{:g}", v);
        } else {
          return fmt::format("{}", v);
        }
      },
      arg);
}

// Plain substitution for a string fmt rejected: each field becomes its argument's "{}" text (a
// field without an argument stays as written), "{{" and "}}" become single braces, extra arguments
// are appended. A rejected specifier is named at the end, so that the bug shows.
std::string substitute(std::string_view f, const xtrain::detail::FormatArg* args, std::size_t count,
                       const char* reason) {
  std::string out;
  std::size_t pos = 0;
  std::size_t copied = 0;
  std::size_t automatic = 0;
  std::size_t used = 0;
  bool anySpec = false;
  auto copyText = [&](std::size_t until) {
    for (std::size_t i = copied; i < until; ++i) {
      out += f[i];
      if ((f[i] == '{' || f[i] == '}') && i + 1 < until && f[i + 1] == f[i]) ++i;
    }
  };
  while (auto field = nextField(f, pos)) {
    copyText(field->begin);
    const std::size_t index = field->index ? *field->index : automatic++;
    anySpec = anySpec || field->hasSpec;
    if (index < count) {
      out += plainText(args[index]);
      used = std::max(used, index + 1);
    } else {
      out.append(f.substr(field->begin, field->end - field->begin));
    }
    copied = field->end;
  }
  copyText(f.size());
  for (std::size_t i = used; i < count; ++i) out += ' ' + plainText(args[i]);
  if (anySpec) out += fmt::format(" [format error: {}]", reason);
  return out;
}

}  // namespace

template <>
struct fmt::formatter<Floating> : fmt::formatter<double> {
  bool plain = true;

  constexpr auto parse(fmt::format_parse_context& ctx) {
    plain = ctx.begin() == ctx.end() || *ctx.begin() == '}';
    return fmt::formatter<double>::parse(ctx);
  }

  template <typename FormatContext>
  auto format(Floating x, FormatContext& ctx) const {
    if (plain) return fmt::format_to(ctx.out(), "{:g}", x.value);
    return fmt::formatter<double>::format(x.value, ctx);
  }
};

namespace xtrain::detail {

std::string formatArgs(std::string_view f, const FormatArg* args, std::size_t count) {
  fmt::dynamic_format_arg_store<fmt::format_context> store;
  store.reserve(count, 0);
  for (std::size_t i = 0; i < count; ++i) {
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, double>) {
            store.push_back(Floating{v});
          } else if constexpr (std::is_same_v<T, std::string>) {
            store.push_back(std::cref(v));
          } else {
            store.push_back(v);
          }
        },
        args[i]);
  }
  try {
    std::string out = fmt::vformat(fmt::string_view(f.data(), f.size()), store);
    for (std::size_t i = argumentsUsed(f); i < count; ++i) out += ' ' + plainText(args[i]);
    return out;
  } catch (const fmt::format_error& e) {
    return substitute(f, args, count, e.what());
  }
}

}  // namespace xtrain::detail
