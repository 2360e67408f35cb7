// Layering enforced: every #include of src/, include/, launcher/, tools/, bench/ and python/
// follows the table "What each folder may include" of docs/architecture.md, and the headers carry
// the marks that decide what the shared libraries export ("Symbol visibility"). The checker's own
// cases run on fake trees.
#include "testing/include_rules.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testing/file_testing.hpp"
#include "testing/scratch_dir.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kScanned = {"src",   "include", "launcher",
                                           "tools", "bench",   "python"};

std::string listed(const std::vector<std::string>& violations) {
  std::string out;
  for (const auto& v : violations) out += "  " + v + "\n";
  return out;
}

IncludeRules repositoryRules() {
  return parseIncludeRules(readFileBytes(std::string(XTRAIN_SOURCE_DIR) + "/docs/architecture.md"));
}

TEST(IncludeRules, TheRepositoryFollowsTheTable) {
  const auto violations = checkIncludes(XTRAIN_SOURCE_DIR, repositoryRules(), kScanned);
  EXPECT_TRUE(violations.empty()) << "includes that break docs/architecture.md's table:\n"
                                  << listed(violations);
}

TEST(IncludeRules, TheRepositoryHeadersMarkWhatIsExported) {
  const auto violations =
      checkVisibilityMarks(XTRAIN_SOURCE_DIR, repositoryRules(), "src", "include/xtrain");
  EXPECT_TRUE(violations.empty()) << listed(violations);
}

TEST(IncludeRules, TheTableNamesTheModules) {
  const auto rules = repositoryRules();
  std::vector<std::string> folders;
  for (const auto& rule : rules.rules) folders.push_back(rule.folder);
  for (const char* module : {"src/common", "src/comm", "src/replication", "src/ir", "src/device",
                             "src/checkpoint", "src/session", "include/xtrain"}) {
    EXPECT_NE(std::find(folders.begin(), folders.end(), module), folders.end()) << module;
  }
  EXPECT_FALSE(rules.system.empty());
}

const char* const kFakeDoc = R"(# Fake
## What each folder may include

| Folder | xtrain | third-party |
|---|---|---|
| every folder | | `unistd.h`, `sys/` |
| `include/xtrain` | `include/xtrain` | |
| `src/common` | `include/xtrain` | `fmt/` |
| `src/ir` | `src/common`, `include/xtrain` | |
| `src/ir/onnx` | `src/ir`, `src/common` | `onnx/` |
| `src/session`, `tools` | `src/ir`, `src/common`, `include/xtrain` | |

## Next section
| `src/comm` | `src/common` | `gloo/` |
)";

class IncludeRulesTree : public ScratchDirTest {
 protected:
  void write(const std::string& relative, const std::string& text) {
    const fs::path p = dir_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::vector<std::string> check() {
    return checkIncludes(dir_, parseIncludeRules(kFakeDoc), {"src", "include", "tools"});
  }
  // A tree that follows the fake table.
  void writeGoodTree() {
    write("include/xtrain/api.hpp", "#pragma once\n#include <vector>\n");
    write("src/common/format.cpp", "#include <fmt/format.h>\n#include \"xtrain/api.hpp\"\n");
    write("src/common/check.hpp", "#pragma once\n#include <unistd.h>\n#include <sys/stat.h>\n");
    write("src/ir/graph.hpp", "#pragma once\n#include \"common/check.hpp\"\n");
    write("src/ir/graph.cpp", "#include \"ir/graph.hpp\"\n#include \"graph.hpp\"\n");
    write("src/ir/onnx/proto.hpp", "#pragma once\n#include <onnx/onnx_pb.h>\n");
    write("src/ir/onnx/import.hpp", "#pragma once\n#include <string>\n");
    write("src/ir/onnx/import.cpp", "#include \"ir/onnx/proto.hpp\"\n#include \"import.hpp\"\n");
    write("src/session/session.cpp", "#include \"ir/onnx/import.hpp\"\n#include <map>\n");
    write("tools/xtrain/main.cpp", "#include \"ir/graph.hpp\"\n");
  }
};

TEST_F(IncludeRulesTree, ParsesTheTableOfItsSectionOnly) {
  const auto rules = parseIncludeRules(kFakeDoc);
  ASSERT_EQ(rules.rules.size(), 6u);  // src/comm is in the next section
  EXPECT_EQ(rules.system, (std::vector<std::string>{"unistd.h", "sys/"}));
  EXPECT_EQ(rules.rules[1].folder, "src/common");
  EXPECT_EQ(rules.rules[1].headers, std::vector<std::string>{"fmt/"});
  EXPECT_EQ(rules.rules[4].folder, "src/session");
  EXPECT_EQ(rules.rules[5].folder, "tools");
  EXPECT_EQ(rules.rules[5].xtrain, rules.rules[4].xtrain);
  EXPECT_THROW(parseIncludeRules("# no table\n"), std::runtime_error);
}

TEST_F(IncludeRulesTree, AcceptsATreeThatFollowsTheTable) {
  writeGoodTree();
  EXPECT_TRUE(check().empty()) << listed(check());
}

TEST_F(IncludeRulesTree, NamesTheFileLineIncludeAndRuleOfAnUpwardInclude) {
  writeGoodTree();
  write("src/common/bad.cpp", "#include <string>\n\n#include \"ir/graph.hpp\"\n");
  const auto violations = check();
  ASSERT_EQ(violations.size(), 1u) << listed(violations);
  EXPECT_EQ(violations[0],
            "src/common/bad.cpp:3: #include \"ir/graph.hpp\" (src/ir/graph.hpp): src/common may "
            "include only include/xtrain (rule `src/common`)");
}

TEST_F(IncludeRulesTree, FlagsAThirdPartyHeaderOutsideItsFolder) {
  writeGoodTree();
  write("src/ir/ops.cpp", "#include <fmt/format.h>\n#include <onnx/onnx_pb.h>\n");
  write("src/common/zip.cpp", "#include <zlib.h>\n");
  const auto violations = check();
  ASSERT_EQ(violations.size(), 3u) << listed(violations);
  EXPECT_EQ(violations[0],
            "src/common/zip.cpp:1: #include <zlib.h>: src/common may not include this header "
            "(rule `src/common`)");
  EXPECT_NE(violations[1].find("src/ir/ops.cpp:1: #include <fmt/format.h>"), std::string::npos);
  EXPECT_NE(violations[2].find("src/ir/ops.cpp:2: #include <onnx/onnx_pb.h>"), std::string::npos);
}

TEST_F(IncludeRulesTree, FlagsAThirdPartyHeaderReachedThroughXtrainHeaders) {
  writeGoodTree();
  write("src/ir/onnx/import.hpp", "#pragma once\n#include \"ir/onnx/proto.hpp\"\n");
  const auto violations = check();
  ASSERT_EQ(violations.size(), 1u) << listed(violations);
  EXPECT_EQ(violations[0],
            "src/session/session.cpp:1: #include \"ir/onnx/import.hpp\" brings <onnx/onnx_pb.h> "
            "(through src/ir/onnx/import.hpp -> src/ir/onnx/proto.hpp): src/session may not "
            "include this header (rule `src/session`)");
}

TEST_F(IncludeRulesTree, FlagsAPublicHeaderThatIncludesInternalOnes) {
  writeGoodTree();
  write("include/xtrain/session.hpp", "#pragma once\n#include \"common/check.hpp\"\n");
  const auto violations = check();
  ASSERT_EQ(violations.size(), 1u) << listed(violations);
  EXPECT_NE(violations[0].find("include/xtrain/session.hpp:2: #include \"common/check.hpp\""),
            std::string::npos);
}

TEST_F(IncludeRulesTree, FlagsIncludesThatNameNoFileAndFoldersWithoutARow) {
  writeGoodTree();
  write("src/ir/missing.cpp", "#include \"ir/nowhere.hpp\"\n");
  write("src/device/kernel.cpp", "#include <vector>\n");
  const auto violations = check();
  ASSERT_EQ(violations.size(), 2u) << listed(violations);
  EXPECT_EQ(violations[0], "src/device/kernel.cpp: no row of the table governs this folder");
  EXPECT_EQ(violations[1],
            "src/ir/missing.cpp:1: #include \"ir/nowhere.hpp\": names no file of "
            "the repository");
}

TEST_F(IncludeRulesTree, InternalHeadersExportBetweenOnePushAndALastPop) {
  const auto rules = parseIncludeRules(kFakeDoc);
  write("src/ir/good.hpp",
        "#pragma once\n#pragma GCC visibility push(default)\n#include <vector>\n\nnamespace x {}\n"
        "\n#pragma GCC visibility pop\n");
  write("src/ir/onnx/good.hpp",
        "#pragma once\n#include <onnx/onnx_pb.h>\n\n#pragma GCC visibility push(default)\n"
        "namespace x {}\n#pragma GCC visibility pop\n");
  write("src/ir/unmarked.hpp", "#pragma once\nnamespace x {}\n");
  write("src/ir/late_push.hpp",
        "#pragma once\nnamespace x {}\n#pragma GCC visibility push(default)\n"
        "#pragma GCC visibility pop\n");
  write("src/ir/onnx/exports_onnx.hpp",
        "#pragma once\n#pragma GCC visibility push(default)\n#include <onnx/onnx_pb.h>\n"
        "namespace x {}\n#pragma GCC visibility pop\n");
  write("src/ir/not_a_header.cpp", "namespace x {}\n");
  const auto violations = checkVisibilityMarks(dir_, rules, "src", "include/xtrain");
  ASSERT_EQ(violations.size(), 3u) << listed(violations);
  EXPECT_EQ(violations[0].rfind("src/ir/late_push.hpp: its declarations must be exported", 0), 0u);
  EXPECT_EQ(
      violations[1].rfind("src/ir/onnx/exports_onnx.hpp:3: #include <onnx/onnx_pb.h> after", 0),
      0u);
  EXPECT_EQ(violations[2].rfind("src/ir/unmarked.hpp: its declarations must be exported", 0), 0u);
}

TEST_F(IncludeRulesTree, PublicClassesAndFunctionsCarryXtrainApi) {
  const auto rules = parseIncludeRules(kFakeDoc);
  write("include/xtrain/good.hpp",
        "#pragma once\nnamespace xtrain {\nclass Forward;\nclass XTRAIN_API Session {\n"
        " public:\n  void run();\n};\nstruct [[nodiscard]] XTRAIN_API Scope {};\n"
        "XTRAIN_API int count(int a,\n                     int b);\ninline int twice(int a) {\n"
        "  return 2 * a;\n}\ntemplate <typename T>\nT same(T t) {\n  return t;\n}\n}\n");
  write("include/xtrain/bad.hpp",
        "#pragma once\nnamespace xtrain {\nclass Session {};\nstruct [[nodiscard]] Scope {};\n"
        "int count(int a,\n          int b);\n}\n");
  const auto violations = checkVisibilityMarks(dir_, rules, "src", "include/xtrain");
  ASSERT_EQ(violations.size(), 3u) << listed(violations);
  EXPECT_EQ(violations[0],
            "include/xtrain/bad.hpp:3: class Session is public API without XTRAIN_API");
  EXPECT_EQ(violations[1],
            "include/xtrain/bad.hpp:4: struct Scope is public API without XTRAIN_API");
  EXPECT_EQ(violations[2],
            "include/xtrain/bad.hpp:5: function declared without XTRAIN_API: int count(int a,");
}

}  // namespace
}  // namespace xtrain::testing
