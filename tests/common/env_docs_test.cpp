// docs/environment.md lists every XTRAIN_* variable, and every one is read through the one reader
// (src/common/env_value.hpp): no source calls getenv("XTRAIN_...") itself, which is how variables
// came to differ (some took " 5" or 0x10, others refused them; issue 27). Reads the sources of
// src/, tools/, launcher/ and python/ and the table of docs/environment.md.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

std::string readText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The C++ and Python sources of the folders xtrain's programs and libraries are built from.
std::vector<fs::path> sources() {
  std::vector<fs::path> out;
  for (const char* folder : {"src", "tools", "launcher", "python", "include"}) {
    const fs::path root = fs::path(XTRAIN_SOURCE_DIR) / folder;
    if (!fs::exists(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const std::string ext = entry.path().extension().string();
      if (entry.is_regular_file() && (ext == ".cpp" || ext == ".hpp" || ext == ".py")) {
        out.push_back(entry.path());
      }
    }
  }
  return out;
}

std::string fromRoot(const fs::path& file) {
  return fs::relative(file, XTRAIN_SOURCE_DIR).string();
}

// Names the sources spell as a string of their own ("XTRAIN_NUM_IPUS"): the variables they read
// or set, each a key passed to the reader or to an instance's environment.
std::set<std::string> namesInSources() {
  static const std::regex name(R"re("(XTRAIN_[A-Z0-9_]*[A-Z0-9])["=])re");
  std::set<std::string> out;
  for (const auto& file : sources()) {
    const std::string text = readText(file);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name);
         it != std::sregex_iterator(); ++it) {
      out.insert((*it)[1].str());
    }
  }
  return out;
}

std::set<std::string> namesInDocs() {
  static const std::regex row(R"(^\| `(XTRAIN_[A-Z0-9_]+)` \|)");
  std::set<std::string> out;
  std::istringstream in(readText(fs::path(XTRAIN_SOURCE_DIR) / "docs" / "environment.md"));
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, row)) out.insert(m[1].str());
  }
  return out;
}

TEST(EnvironmentDocs, EveryVariableIsInTheTableAndEveryRowIsRead) {
  const auto read = namesInSources();
  const auto documented = namesInDocs();
  ASSERT_GT(read.size(), 30u) << "the sources were not found under " << XTRAIN_SOURCE_DIR;
  for (const auto& n : read) {
    EXPECT_TRUE(documented.count(n)) << n << " is read or set by the sources but missing from "
                                     << "docs/environment.md";
  }
  for (const auto& n : documented) {
    EXPECT_TRUE(read.count(n)) << n << " is in docs/environment.md but no source names it";
  }
}

TEST(EnvironmentDocs, NoSourceReadsAnXtrainVariableByItself) {
  static const std::regex direct(
      R"re(getenv\s*\(\s*"XTRAIN_|environ(\.get|\[)\s*\(?\s*["']XTRAIN_)re");
  for (const auto& file : sources()) {
    const std::string text = readText(file);
    EXPECT_FALSE(std::regex_search(text, direct))
        << fromRoot(file) << " reads an XTRAIN_* variable itself; use src/common/env_value.hpp "
        << "(one syntax and one form of refusal for every variable)";
  }
}

}  // namespace
}  // namespace xtrain::testing
