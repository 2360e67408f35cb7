#include "testing/include_rules.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

const char* const kHeading = "## What each folder may include";
const char* const kPush = "#pragma GCC visibility push(default)";
const char* const kPop = "#pragma GCC visibility pop";

std::string trim(std::string s) {
  const auto notSpace = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
  s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
  return s;
}

bool startsWith(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The `quoted` words of one table cell.
std::vector<std::string> codeSpans(const std::string& cell) {
  static const std::regex span("`([^`]+)`");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), span); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

std::vector<std::string> readLines(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// Whether `path` is `folder` or lies under it.
bool under(const std::string& path, const std::string& folder) {
  return path == folder || startsWith(path, folder + "/");
}

// A header of the C++ standard library: <vector>, <cstdint> (no extension, no folder).
bool isStandardLibrary(const std::string& header) {
  return header.find('.') == std::string::npos && header.find('/') == std::string::npos;
}

// Whether a header matches a table entry: "fmt/" and "H5*" are prefixes, anything else one header.
bool matchesEntry(const std::string& header, std::string entry) {
  if (!entry.empty() && entry.back() == '*') {
    entry.pop_back();
    return startsWith(header, entry);
  }
  if (!entry.empty() && entry.back() == '/') return startsWith(header, entry);
  return header == entry;
}

bool matchesAny(const std::string& header, const std::vector<std::string>& entries) {
  return std::any_of(entries.begin(), entries.end(),
                     [&](const std::string& e) { return matchesEntry(header, e); });
}

// A header any folder may include: the standard library, the C and POSIX headers of the table.
bool isSystemHeader(const std::string& header, const IncludeRules& rules) {
  return isStandardLibrary(header) || matchesAny(header, rules.system);
}

struct Include {
  int line = 0;
  bool angle = false;
  std::string name;
};

std::vector<Include> includesOf(const fs::path& file) {
  static const std::regex include(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  std::vector<Include> out;
  const auto lines = readLines(file);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_search(lines[i], m, include)) {
      out.push_back({static_cast<int>(i + 1), m[1].str() == "<", m[2].str()});
    }
  }
  return out;
}

bool isSource(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".hpp" || ext == ".h" || ext == ".cpp" || ext == ".cc" || ext == ".c";
}

bool isHeader(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".hpp" || ext == ".h";
}

// The sources under `folder` (relative to root), as root-relative paths with '/', sorted.
std::vector<std::string> sourcesUnder(const fs::path& root, const std::string& folder,
                                      bool headersOnly) {
  std::vector<std::string> out;
  if (!fs::is_directory(root / folder)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
    if (!entry.is_regular_file() || !isSource(entry.path())) continue;
    if (headersOnly && !isHeader(entry.path())) continue;
    out.push_back(entry.path().lexically_relative(root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class Checker {
 public:
  Checker(const fs::path& root, const IncludeRules& rules) : root_(root), rules_(rules) {}

  // The row that governs `path`: the longest folder that is `path` or holds it.
  const IncludeRule* ruleFor(const std::string& path) const {
    const IncludeRule* best = nullptr;
    for (const auto& rule : rules_.rules) {
      if (under(path, rule.folder) && (!best || rule.folder.size() > best->folder.size())) {
        best = &rule;
      }
    }
    return best;
  }

  // The repository file a quoted include names, "" when none.
  std::string resolve(const std::string& from, const std::string& name) const {
    const fs::path dir = fs::path(from).parent_path();
    for (const fs::path& base :
         {dir, fs::path("include"), fs::path("src"), fs::path(), fs::path("tools")}) {
      const fs::path candidate = (base / name).lexically_normal();
      if (fs::is_regular_file(root_ / candidate)) return candidate.generic_string();
    }
    return "";
  }

  const std::vector<Include>& includes(const std::string& file) {
    auto it = includes_.find(file);
    if (it == includes_.end()) it = includes_.emplace(file, includesOf(root_ / file)).first;
    return it->second;
  }

  // The third-party headers `file` includes, itself or through the xtrain headers it includes:
  // header -> the chain of files from `file` to the one that includes it.
  const std::map<std::string, std::vector<std::string>>& thirdParty(const std::string& file) {
    if (auto it = reach_.find(file); it != reach_.end()) return it->second;
    auto& out = reach_[file];  // empty while visiting: an include cycle ends here
    std::map<std::string, std::vector<std::string>> found;
    for (const auto& inc : includes(file)) {
      if (inc.angle) {
        if (!isSystemHeader(inc.name, rules_)) found.emplace(inc.name, std::vector{file});
        continue;
      }
      const std::string target = resolve(file, inc.name);
      if (target.empty()) continue;
      for (const auto& [header, chain] : thirdParty(target)) {
        std::vector<std::string> longer{file};
        longer.insert(longer.end(), chain.begin(), chain.end());
        found.emplace(header, std::move(longer));
      }
    }
    out = std::move(found);
    return out;
  }

  bool mayIncludeHeader(const IncludeRule& rule, const std::string& header) const {
    return isSystemHeader(header, rules_) || matchesAny(header, rule.headers);
  }

  void check(const std::string& file, std::vector<std::string>& violations) {
    const IncludeRule* rule = ruleFor(file);
    if (!rule) {
      violations.push_back(file + ": no row of the table governs this folder");
      return;
    }
    const std::string ruleName = " (rule `" + rule->folder + "`)";
    for (const auto& inc : includes(file)) {
      const std::string where = file + ":" + std::to_string(inc.line) + ": #include ";
      if (inc.angle) {
        if (!mayIncludeHeader(*rule, inc.name)) {
          violations.push_back(where + "<" + inc.name + ">: " + rule->folder +
                               " may not include this header" + ruleName);
        }
        continue;
      }
      const std::string target = resolve(file, inc.name);
      const std::string quoted = where + "\"" + inc.name + "\"";
      if (target.empty()) {
        violations.push_back(quoted + ": names no file of the repository");
        continue;
      }
      const bool allowed =
          under(target, rule->folder) ||
          std::any_of(rule->xtrain.begin(), rule->xtrain.end(),
                      [&](const std::string& folder) { return under(target, folder); });
      if (!allowed) {
        violations.push_back(quoted + " (" + target + "): " + rule->folder + " may include only " +
                             joined(rule->xtrain, ", ") + ruleName);
        continue;
      }
      for (const auto& [header, chain] : thirdParty(target)) {
        if (mayIncludeHeader(*rule, header)) continue;
        violations.push_back(quoted + " brings <" + header + "> (through " + joined(chain, " -> ") +
                             "): " + rule->folder + " may not include this header" + ruleName);
      }
    }
  }

 private:
  fs::path root_;
  const IncludeRules& rules_;
  std::map<std::string, std::vector<Include>> includes_;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> reach_;
};

// A namespace-scope line (column 0) that starts something other than a function declaration.
bool startsNonFunction(const std::string& line) {
  static const std::regex other(
      R"(^((inline|template|using|namespace|enum|class|struct|union|static|constexpr|typedef|extern|friend)\b|XTRAIN_))");
  return std::regex_search(line, other);
}

void checkPublicHeader(const fs::path& root, const std::string& file,
                       std::vector<std::string>& violations) {
  static const std::regex classHead(R"(^(class|struct)\s+(\[\[\w+\]\]\s+)?(\w+))");
  static const std::regex functionStart(R"(^[A-Za-z_][\w:<>,\s\*&]*\()");
  const auto lines = readLines(root / file);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::string where = file + ":" + std::to_string(i + 1) + ": ";
    std::smatch m;
    if (std::regex_search(line, m, classHead)) {
      const bool declarationOnly = line.find('{') == std::string::npos && trim(line).back() == ';';
      if (!declarationOnly && m[3].str() != "XTRAIN_API") {
        violations.push_back(where + m[1].str() + " " + m[3].str() +
                             " is public API without XTRAIN_API");
      }
      continue;
    }
    if (!std::regex_search(line, functionStart) || startsNonFunction(line)) continue;
    if (i > 0 && startsWith(trim(lines[i - 1]), "template")) continue;
    // A declaration ends with ';' before any '{' (a definition is inline or a template).
    size_t j = i;
    while (j < lines.size() && lines[j].find_first_of(";{") == std::string::npos) ++j;
    if (j == lines.size() || lines[j][lines[j].find_first_of(";{")] == '{') continue;
    violations.push_back(where + "function declared without XTRAIN_API: " + trim(line));
  }
}

void checkInternalHeader(const fs::path& root, const IncludeRules& rules, const std::string& file,
                         std::vector<std::string>& violations) {
  static const std::regex declarationStart(R"(^(namespace|class|struct|template|inline|using)\b)");
  const auto lines = readLines(root / file);
  std::vector<size_t> pushes, pops;
  size_t firstDeclaration = lines.size();
  size_t last = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    if (t == kPush) pushes.push_back(i);
    if (t == kPop) pops.push_back(i);
    if (firstDeclaration == lines.size() && std::regex_search(lines[i], declarationStart)) {
      firstDeclaration = i;
    }
    if (!t.empty()) last = i;
  }
  const std::string why = std::string(": its declarations must be exported between \"") + kPush +
                          "\" and a last line \"" + kPop + "\" (docs/architecture.md)";
  if (pushes.size() != 1 || pops.size() != 1 || pops[0] != last || pushes[0] > firstDeclaration) {
    violations.push_back(file + why);
    return;
  }
  for (const auto& inc : includesOf(root / file)) {
    if (inc.angle && static_cast<size_t>(inc.line - 1) > pushes[0] &&
        !isSystemHeader(inc.name, rules)) {
      violations.push_back(file + ":" + std::to_string(inc.line) + ": #include <" + inc.name +
                           "> after \"" + kPush +
                           "\" would export the library's template instantiations; include it "
                           "before");
    }
  }
}

}  // namespace

IncludeRules parseIncludeRules(std::string_view markdown) {
  std::istringstream in{std::string(markdown)};
  std::string line;
  bool inSection = false;
  bool found = false;
  int tableRow = 0;
  IncludeRules rules;
  bool sawSystem = false;
  while (std::getline(in, line)) {
    if (startsWith(line, "## ")) {
      if (inSection) break;
      inSection = trim(line) == kHeading;
      found = found || inSection;
      continue;
    }
    if (!inSection || !startsWith(trim(line), "|")) continue;
    if (++tableRow <= 2) continue;  // the header row and the |---| row
    std::vector<std::string> cells;
    std::istringstream row(trim(line).substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    if (cells.size() < 3) throw std::runtime_error("include rules: a row with < 3 cells: " + line);
    const auto folders = codeSpans(cells[0]);
    if (folders.empty()) {
      if (cells[0].find("every folder") == std::string::npos) {
        throw std::runtime_error("include rules: a row names no folder: " + line);
      }
      const auto system = codeSpans(cells[2]);
      rules.system.insert(rules.system.end(), system.begin(), system.end());
      sawSystem = true;
      continue;
    }
    for (const auto& folder : folders) {
      rules.rules.push_back({folder, codeSpans(cells[1]), codeSpans(cells[2])});
    }
  }
  if (!found) {
    throw std::runtime_error(std::string("include rules: no section \"") + kHeading + "\"");
  }
  if (rules.rules.empty() || !sawSystem) {
    throw std::runtime_error(
        "include rules: the table has no folder rows or no \"every folder\" row");
  }
  return rules;
}

std::vector<std::string> checkIncludes(const fs::path& root, const IncludeRules& rules,
                                       const std::vector<std::string>& folders) {
  Checker checker(root, rules);
  std::vector<std::string> violations;
  for (const auto& folder : folders) {
    for (const auto& file : sourcesUnder(root, folder, false)) checker.check(file, violations);
  }
  return violations;
}

std::vector<std::string> checkVisibilityMarks(const fs::path& root, const IncludeRules& rules,
                                              const std::string& internalFolder,
                                              const std::string& publicFolder) {
  std::vector<std::string> violations;
  for (const auto& file : sourcesUnder(root, internalFolder, true)) {
    checkInternalHeader(root, rules, file, violations);
  }
  for (const auto& file : sourcesUnder(root, publicFolder, true)) {
    checkPublicHeader(root, file, violations);
  }
  return violations;
}

}  // namespace xtrain::testing
