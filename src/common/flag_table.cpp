#include "common/flag_table.hpp"

#include <algorithm>

namespace xtrain::flags {

std::string fillPlaceholders(std::string_view pattern,
                             const std::vector<std::pair<std::string_view, std::string>>& fields) {
  std::string out;
  size_t i = 0;
  while (i < pattern.size()) {
    const size_t open = pattern.find('{', i);
    if (open == std::string_view::npos) break;
    out += pattern.substr(i, open - i);
    const size_t close = pattern.find('}', open);
    const auto field = close == std::string_view::npos
                           ? fields.end()
                           : std::find_if(fields.begin(), fields.end(), [&](const auto& f) {
                               return f.first == pattern.substr(open + 1, close - open - 1);
                             });
    if (field == fields.end()) {
      out += '{';
      i = open + 1;
    } else {
      out += field->second;
      i = close + 1;
    }
  }
  out += pattern.substr(std::min(i, pattern.size()));
  return out;
}

namespace detail {
namespace {

// The long name that shares the most leading characters (at least 4) with `name`, the first in
// alphabetical order on a tie: a cheap and predictable "did you mean".
std::string suggestion(const std::string& name, const std::vector<const RowShape*>& rows) {
  std::vector<std::string> names;
  for (const RowShape* row : rows) {
    for (const auto& n : row->names) {
      if (n.size() >= 3) names.push_back(n);
    }
  }
  std::sort(names.begin(), names.end());
  std::string best;
  size_t bestScore = 0;
  for (const auto& candidate : names) {
    size_t i = 0;
    while (i < name.size() && i < candidate.size() && name[i] == candidate[i]) ++i;
    if (i > bestScore && i >= 4) {
      bestScore = i;
      best = candidate;
    }
  }
  return best;
}

std::optional<size_t> findRow(const std::string& name, const std::vector<const RowShape*>& rows) {
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& names = rows[r]->names;
    if (std::find(names.begin(), names.end(), name) != names.end()) return r;
  }
  return std::nullopt;
}

// The argument split into the flag's name and a value written with it (--flag=value, -n4).
std::pair<std::string, std::optional<std::string>> splitArgument(const std::string& arg,
                                                                 const Syntax& syntax) {
  if (arg.rfind("--", 0) == 0) {
    const auto eq = arg.find('=');
    if (syntax.inlineValues && eq != std::string::npos) {
      return {arg.substr(0, eq), arg.substr(eq + 1)};
    }
  } else if (syntax.shortInline && arg.size() > 2 && arg[0] == '-') {
    return {arg.substr(0, 2), arg.substr(2)};
  }
  return {arg, std::nullopt};
}

}  // namespace

std::vector<std::string> scan(const std::vector<std::string>& args, const Syntax& syntax,
                              const std::vector<const RowShape*>& rows,
                              const std::function<void(size_t, const Given&)>& apply) {
  std::vector<std::string> others;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool positional = arg.empty() || arg[0] != '-' || arg == "-";
    if (syntax.programFollows && (arg == "--" || positional)) {
      others.assign(args.begin() + static_cast<std::ptrdiff_t>(arg == "--" ? i + 1 : i),
                    args.end());
      return others;
    }
    if (syntax.positionalsAnywhere && positional) {
      others.push_back(arg);
      continue;
    }
    auto [name, inlineValue] = splitArgument(arg, syntax);
    const auto row = findRow(name, rows);
    if (!row) {
      const std::string hint = suggestion(name, rows);
      throw FlagError(fillPlaceholders(
          syntax.unknown, {{"arg", arg},
                           {"flag", name},
                           {"hint", hint.empty() ? "" : " (did you mean " + hint + "?)"}}));
    }
    const RowShape& shape = *rows[*row];
    Given given{name, "", arg};
    if (shape.takesValue) {
      if (inlineValue) {
        given.text = *inlineValue;
      } else if (i + 1 < args.size()) {
        given.text = args[++i];
      } else {
        throw FlagError(fillPlaceholders(syntax.needsValue, {{"flag", name}, {"arg", arg}}));
      }
    } else if (inlineValue && !shape.lenient) {
      throw FlagError(fillPlaceholders(syntax.takesNoValue, {{"flag", name}, {"arg", arg}}));
    }
    apply(*row, given);
  }
  return others;
}

std::string usageRows(const std::vector<const RowShape*>& rows, const UsageLayout& layout) {
  // Each row: its flags (with those shown on it), then its help from the column on.
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) {
    const RowShape& first = *rows[r];
    if (first.help.empty() || !first.joinPrevious.empty()) continue;
    const bool shortName = first.names.front().rfind("--", 0) != 0;
    std::string head(layout.indent + (shortName ? 0 : layout.longOnlyIndent), ' ');
    for (size_t k = r; k < rows.size(); ++k) {
      const RowShape& row = *rows[k];
      if (k > r && row.joinPrevious.empty()) break;
      if (k > r) head += row.joinPrevious;
      for (size_t n = 0; n < row.names.size(); ++n) head += (n > 0 ? ", " : "") + row.names[n];
      if (!row.valueName.empty()) head += " " + row.valueName;
    }
    std::string help = first.defaultText
                           ? fillPlaceholders(first.help, {{"default", *first.defaultText}})
                           : first.help;
    const std::string indent(layout.column, ' ');
    for (size_t nl = help.find('\n'); nl != std::string::npos; nl = help.find('\n', nl + 1)) {
      help.insert(nl + 1, indent);
    }
    out += first.section + head;
    const size_t firstLine = std::min(help.find('\n'), help.size());
    if (head.size() < layout.column) {
      out += std::string(layout.column - head.size(), ' ');
    } else if (head.size() + 3 + firstLine <= layout.width) {
      out += "   ";
    } else {
      out += "\n" + indent;
    }
    out += help + "\n";
  }
  return out;
}

}  // namespace detail
}  // namespace xtrain::flags
