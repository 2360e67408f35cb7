// The layering rules of docs/architecture.md ("What each folder may include") as a checker: which
// xtrain folders and which third-party headers each folder's sources may include, and how the
// headers mark what the shared libraries export (docs/architecture.md, "Symbol visibility").
// tests/common/include_rules_test.cpp runs it over the repository and over fake trees.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace xtrain::testing {

// One row of the table: the folder (or file) it governs, the xtrain folders or files that it may
// include, and the third-party headers ("fmt/" a prefix, "mpi.h" one header, "H5*" a prefix).
struct IncludeRule {
  std::string folder;
  std::vector<std::string> xtrain;
  std::vector<std::string> headers;
};

struct IncludeRules {
  std::vector<IncludeRule> rules;
  // Headers every folder may include besides the C++ standard library's (the "every folder" row:
  // the C and POSIX headers).
  std::vector<std::string> system;
};

// Reads the table under the heading "## What each folder may include" of a markdown text. Throws
// std::runtime_error when the heading or the table is missing or a row is malformed.
IncludeRules parseIncludeRules(std::string_view markdown);

// Every #include of the C/C++ sources under `folders` (relative to `root`) that breaks `rules`, one
// message each: "file:line: #include ...: why (rule `folder`)". A quoted include is resolved
// against the including file's folder, then include/, src/, the root and tools/ (the build's
// include directories); one that names no file is a violation too. A third-party header that a
// file reaches through xtrain headers counts as its own include (the message names the chain).
std::vector<std::string> checkIncludes(const std::filesystem::path& root, const IncludeRules& rules,
                                       const std::vector<std::string>& folders);

// Every header under `internalFolder` (src/) that does not put its declarations between one
// "#pragma GCC visibility push(default)" (before any declaration, after every third-party include)
// and a last line "#pragma GCC visibility pop"; and every class or free function declared in a
// header under `publicFolder` (include/xtrain) without XTRAIN_API.
std::vector<std::string> checkVisibilityMarks(const std::filesystem::path& root,
                                              const IncludeRules& rules,
                                              const std::string& internalFolder,
                                              const std::string& publicFolder);

}  // namespace xtrain::testing
