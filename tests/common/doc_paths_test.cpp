// The repository stands alone: every repository path that README.md, a page of docs/ or a comment
// in the sources, scripts or build files cites (docs/..., src/..., include/..., tests/...,
// scripts/..., tools/..., examples/..., bench/..., launcher/...) exists, and nothing cites the
// shared folder beside the checkout (dot-dot-slash shared), which a clone or an installed package
// does not have. A path without an extension may name a file by its stem (src/checkpoint/seal for
// seal.cpp and seal.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "testing/scratch_dir.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

// Spelled in two pieces so that this file does not cite it.
const std::string kShared = std::string("..") + "/shared";
// A comment's opening, likewise spelled so that the fixtures' comments are not this file's.
const std::string kSlashes =
    "/"
    "/";

// Folders whose sources, scripts and build files are read for comments.
const std::vector<std::string> kCodeFolders = {"include",  "src",      "tests",   "tools", "bench",
                                               "launcher", "examples", "scripts", "cmake"};

enum class CommentStyle { None, Slashes, Hash };

// How comments start in a file, or None for a file that is not read (data, generated files).
CommentStyle commentStyle(const fs::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".hpp" || ext == ".cpp" || ext == ".h" || ext == ".c" || ext == ".cc") {
    return CommentStyle::Slashes;
  }
  if (ext == ".sh" || ext == ".py" || ext == ".cmake" || file.filename() == "CMakeLists.txt") {
    return CommentStyle::Hash;
  }
  // Extensionless programs in scripts/ (scripts/demo, scripts/test, ...) are shell scripts.
  if (ext.empty() && file.parent_path().filename() == "scripts") return CommentStyle::Hash;
  return CommentStyle::None;
}

// The comment on one line of code, or "" when it has none.
std::string commentOf(const std::string& line, CommentStyle style) {
  const size_t at = style == CommentStyle::Slashes ? line.find("//") : line.find('#');
  return at == std::string::npos ? std::string() : line.substr(at);
}

// Whether `cited` (relative to the repository root) names a file or folder there.
bool resolves(const fs::path& root, const std::string& cited) {
  const fs::path p = root / cited;
  if (fs::exists(p)) return true;
  if (p.has_extension() || !fs::is_directory(p.parent_path())) return false;
  for (const auto& entry : fs::directory_iterator(p.parent_path())) {
    if (entry.path().stem() == p.filename()) return true;
  }
  return false;
}

// Whether a pattern's fixed start (the part before the *, e.g. of tools/fuzz/libfuzzer_*.cpp) names
// the start of a file or folder there.
bool resolvesPattern(const fs::path& root, const std::string& cited) {
  if (!cited.empty() && cited.back() == '/') return fs::is_directory(root / cited);
  const fs::path p = root / cited;
  if (!fs::is_directory(p.parent_path())) return false;
  const std::string start = p.filename().string();
  for (const auto& entry : fs::directory_iterator(p.parent_path())) {
    if (entry.path().filename().string().rfind(start, 0) == 0) return true;
  }
  return false;
}

// Every cited path in one text that does not resolve. A path followed by *, < or { is a pattern
// (bench/run-*-vs-peers.sh, tests/<module>/, src/comm/backends/{inproc, shm}).
void checkText(const fs::path& root, const std::string& where, int lineNumber,
               const std::string& text, std::vector<std::string>& problems) {
  static const std::regex kPath(
      "(^|[^A-Za-z0-9_./~-])((docs|src|include|tests|scripts|tools|examples|bench|launcher)/"
      "[A-Za-z0-9_./+-]*)");
  const std::string at = where + ":" + std::to_string(lineNumber);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kPath);
       it != std::sregex_iterator(); ++it) {
    std::string cited = (*it)[2].str();
    const size_t end = static_cast<size_t>((*it).position(2) + (*it).length(2));
    const bool pattern =
        end < text.size() && std::string("*<{").find(text[end]) != std::string::npos;
    while (!cited.empty() && std::string(".,:;-").find(cited.back()) != std::string::npos) {
      cited.pop_back();
    }
    if (!(pattern ? resolvesPattern(root, cited) : resolves(root, cited))) {
      problems.push_back(at + ": cites " + cited + ", which does not exist");
    }
  }
}

// All the problems in the repository at `root`, as "file:line: what" lines.
std::vector<std::string> findProblems(const fs::path& root) {
  std::vector<std::string> problems;
  auto readFile = [&](const fs::path& file, CommentStyle style, bool wholeText) {
    std::ifstream in(file);
    const std::string where = fs::relative(file, root).string();
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find(kShared) != std::string::npos) {
        problems.push_back(where + ":" + std::to_string(n) + ": cites " + kShared +
                           ", outside the repository");
      }
      checkText(root, where, n, wholeText ? line : commentOf(line, style), problems);
    }
  };
  if (fs::exists(root / "README.md")) readFile(root / "README.md", CommentStyle::None, true);
  if (fs::is_directory(root / "docs")) {
    for (const auto& entry : fs::directory_iterator(root / "docs")) {
      if (entry.path().extension() == ".md") readFile(entry.path(), CommentStyle::None, true);
    }
  }
  if (fs::exists(root / "CMakeLists.txt")) {
    readFile(root / "CMakeLists.txt", CommentStyle::Hash, false);
  }
  for (const auto& folder : kCodeFolders) {
    if (!fs::is_directory(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      if (!entry.is_regular_file()) continue;
      const CommentStyle style = commentStyle(entry.path());
      if (style != CommentStyle::None) readFile(entry.path(), style, false);
    }
  }
  std::sort(problems.begin(), problems.end());
  return problems;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(DocPaths, EveryCitedPathExistsAndNothingCitesShared) {
  const std::vector<std::string> problems = findProblems(XTRAIN_SOURCE_DIR);
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

class DocPathsChecker : public ScratchDirTest {
 protected:
  void write(const std::string& name, const std::string& text) {
    fs::create_directories(fs::path(path(name)).parent_path());
    std::ofstream(path(name)) << text;
  }
};

TEST_F(DocPathsChecker, FindsDanglingPathsAndCitationsOfShared) {
  write("README.md", "Start at docs/guide.md; the code is in src/core/.\n");
  write("docs/guide.md",
        "See src/core/engine.hpp, src/core/plan (a stem), `include/x/api.hpp`, src/core/pl*.cpp,\n"
        "src/core/gone*.cpp, and\n"
        "src/core/gone.cpp, which was removed.\n");
  write("src/core/engine.hpp", kSlashes + " Follows docs/guide.md section 2 and " + kShared +
                                   "/reference/spec.md.\n" +
                                   "const char* kData = \"tests/data/not-a-comment.bin\";  " +
                                   kSlashes + " include/x/missing.hpp\n");
  write("src/core/plan.cpp", "int plan();\n");
  write("include/x/api.hpp", "#pragma once\n");
  write("scripts/run", "#!/bin/sh\n# Runs bench/gone.sh.\n");
  write("tests/data/notes.txt", "docs/unread.md is data, not read.\n");

  const std::vector<std::string> expected = {
      "docs/guide.md:2: cites src/core/gone, which does not exist",
      "docs/guide.md:3: cites src/core/gone.cpp, which does not exist",
      "scripts/run:2: cites bench/gone.sh, which does not exist",
      "src/core/engine.hpp:1: cites " + kShared + ", outside the repository",
      "src/core/engine.hpp:2: cites include/x/missing.hpp, which does not exist",
  };
  EXPECT_EQ(findProblems(dir_), expected) << joined(findProblems(dir_));
}

}  // namespace
}  // namespace xtrain::testing
