// The exit codes the documentation promises are the ones the tools use. docs/errors.md's table "The
// tools' exit codes" (one row per tool: columns 0, 1 and 2, and the other codes) is compared with
// the codes the built tools return when run on an input that asks for each one; the other places
// that state exit codes (docs/launcher-environment.md's table for xrun, the README's and `xtrain
// --help`'s line for xtrain, `xckpt --help`'s line) must name the same codes as that table. A code
// a tool gains, loses or changes, or a doc that says otherwise, fails here naming the tool, the
// code and the run that produced it.
//
// A code is a number ("75") or "128 + s", the code of a job ended by signal s (xrun passes on an
// instance's signal, or the one it received itself, as 128 + s).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "testing/private_ipu_pool.hpp"
#include "testing/process_testing.hpp"
#include "xtrain/dist.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

using Codes = std::set<std::string>;

const std::string kSignalCode = "128 + s";

std::string readText(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path sourceFile(const std::string& relative) {
  return fs::path(XTRAIN_SOURCE_DIR) / relative;
}

std::string show(const Codes& codes) {
  std::string s;
  for (const auto& c : codes) s += (s.empty() ? "" : ", ") + c;
  return "{" + s + "}";
}

// `text` without anything in parentheses (nested ones included): the asides of a cell.
std::string withoutAsides(const std::string& text) {
  std::string out;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (depth == 0) out += c;
    if (c == ')' && depth > 0) --depth;
  }
  return out;
}

// The codes a list names: each comma-separated item that starts with a code ("75 preempted",
// "126/127 program ...", "126, 127", "128 + s signal", "0 success"); asides in parentheses are
// skipped, as are items that start with a word (they continue the previous item's sentence).
Codes codesOfList(const std::string& list) {
  Codes codes;
  static const std::regex item(R"(^\s*(\d+)(?:/(\d+))?( \+ s\b)?)");
  const std::string rest = withoutAsides(list);
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t end = rest.find(", ", start);
    const std::string piece =
        rest.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::smatch m;
    if (std::regex_search(piece, m, item)) {
      if (m[3].matched) {
        codes.insert(kSignalCode);
      } else {
        codes.insert(m[1].str());
        if (m[2].matched) codes.insert(m[2].str());
      }
    }
    if (end == std::string::npos) break;
    start = end + 2;
  }
  return codes;
}

std::vector<std::string> cellsOf(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(row.substr(1));  // after the leading '|'
  while (std::getline(in, cell, '|')) {
    const size_t b = cell.find_first_not_of(' ');
    const size_t e = cell.find_last_not_of(' ');
    cells.push_back(b == std::string::npos ? std::string() : cell.substr(b, e - b + 1));
  }
  if (!cells.empty() && cells.back().empty()) cells.pop_back();
  return cells;
}

// The rows of the Markdown table whose header line is `header`, as cells; none when it is missing.
std::vector<std::vector<std::string>> tableAfter(const std::string& text,
                                                 const std::string& header) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  bool inTable = false;
  while (std::getline(in, line)) {
    if (!inTable) {
      inTable = line == header;
      continue;
    }
    if (line.empty() || line[0] != '|') break;
    if (line.rfind("| ---", 0) == 0 || line.rfind("|---", 0) == 0) continue;
    rows.push_back(cellsOf(line));
  }
  return rows;
}

// docs/errors.md: tool -> the codes its row names. Columns 0, 1 and 2 count unless the cell is
// "—"; the last column lists the other codes.
std::map<std::string, Codes> errorsPageCodes() {
  const std::string header = "| tool | 0 | 1 | 2 | other |";
  const auto rows = tableAfter(readText(sourceFile("docs/errors.md")), header);
  EXPECT_FALSE(rows.empty()) << "docs/errors.md has no table headed '" << header << "'";
  std::map<std::string, Codes> codes;
  for (const auto& cells : rows) {
    if (cells.size() != 5) {
      ADD_FAILURE() << "docs/errors.md: a row of the exit-code table has " << cells.size()
                    << " cells, not 5: " << (cells.empty() ? "" : cells[0]);
      continue;
    }
    std::string tool = cells[0];
    tool.erase(std::remove(tool.begin(), tool.end(), '`'), tool.end());
    Codes& c = codes[tool];
    for (int column = 1; column <= 3; ++column) {
      if (cells[column] != "—" && !cells[column].empty()) c.insert(std::to_string(column - 1));
    }
    if (cells[4] != "—") {
      const Codes other = codesOfList(cells[4]);
      c.insert(other.begin(), other.end());
    }
  }
  return codes;
}

// The codes of the line "Exit codes: ..." in `text` (a help text, the README).
Codes exitCodesLine(const std::string& text, const std::string& where) {
  const size_t at = text.find("Exit codes: ");
  if (at == std::string::npos) {
    ADD_FAILURE() << where << " has no line 'Exit codes: ...'";
    return {};
  }
  const size_t end = text.find('\n', at);
  return codesOfList(text.substr(at + 12, end == std::string::npos ? end : end - at - 12));
}

// One run of a tool on an input that asks for one exit code.
struct ToolRun {
  ToolRun(std::string what_, std::vector<std::string> args_, int signalToSend_ = 0,
          std::string readyOn_ = "", int dyingSignal_ = 0)
      : what(std::move(what_)),
        args(std::move(args_)),
        signalToSend(signalToSend_),
        readyOn(std::move(readyOn_)),
        dyingSignal(dyingSignal_) {}

  std::string what;               // what the input is, for messages
  std::vector<std::string> args;  // after the tool's path
  int signalToSend;               // sent to the tool once `readyOn` is on its stdout
  std::string readyOn;
  int dyingSignal;  // the signal its instance dies of, when it is one
};

std::string binary(const std::string& tool) {
  return std::string(XTRAIN_BIN_DIR) + "/" + tool;
}

// The code one run ends with, as the table writes it.
std::string codeOf(const std::string& tool, const ToolRun& run, std::string& output) {
  std::vector<std::string> argv = {binary(tool)};
  argv.insert(argv.end(), run.args.begin(), run.args.end());
  Child child(argv);
  if (run.signalToSend != 0) {
    const bool ready = child.waitForStdout(
        [&](const std::string& out) { return out.find(run.readyOn) != std::string::npos; }, 120);
    EXPECT_TRUE(ready) << tool << " (" << run.what << ") never printed '" << run.readyOn << "'";
    ::kill(child.pid(), run.signalToSend);
  }
  const ProcessResult r = child.wait(120);
  EXPECT_FALSE(r.timedOut) << tool << " (" << run.what << ") did not end";
  output = r.out + r.err;
  for (int s : {run.signalToSend, run.dyingSignal}) {
    if (s != 0 && r.exitCode == 128 + s) return kSignalCode;
  }
  return std::to_string(r.exitCode);
}

class ExitCodesDoc : public PrivateIpuPoolTest {
 protected:
  // Runs every run of `tool` and compares the codes they end with to docs/errors.md's row.
  void expectRowMatches(const std::string& tool, const std::vector<ToolRun>& runs) {
    const auto documented = errorsPageCodes();
    const auto row = documented.find(tool);
    ASSERT_NE(row, documented.end()) << "docs/errors.md's exit-code table has no row for " << tool;
    Codes observed;
    std::string seen;
    for (const ToolRun& run : runs) {
      std::string output;
      const std::string code = codeOf(tool, run, output);
      observed.insert(code);
      seen += "\n  " + run.what + ": " + code;
      EXPECT_TRUE(row->second.count(code))
          << tool << " exits " << code << " for " << run.what
          << ", a code docs/errors.md does not list for it " << show(row->second) << "\n"
          << output;
    }
    for (const auto& code : row->second) {
      EXPECT_TRUE(observed.count(code)) << "docs/errors.md lists exit code " << code << " for "
                                        << tool << ", but none of these runs ends with it:" << seen;
    }
  }
};

TEST_F(ExitCodesDoc, XtrainUsesTheCodesOfItsRow) {
  expectRowMatches("xtrain",
                   {
                       {"--help", {"--help"}},
                       {"the built-in example, 2 steps", {"--steps", "2"}},
                       {"an unknown flag", {"--no-such-flag"}},
                       {"a loss that becomes NaN", {"--lr", "1e30", "--steps", "20"}},
                       {"SIGTERM while training", {"--steps", "1000000"}, SIGTERM, "step "},
                   });
}

TEST_F(ExitCodesDoc, XckptUsesTheCodesOfItsRow) {
  const std::string ckpts = path("ckpts");
  std::string output;
  ToolRun make{"a run that saves two checkpoints",
               {"--steps", "2", "--checkpoint-dir", ckpts, "--checkpoint-every", "1"}};
  ASSERT_EQ(codeOf("xtrain", make, output), "0") << output;
  const std::string first = ckpts + "/ckpt-00000001", second = ckpts + "/ckpt-00000002";
  ASSERT_TRUE(fs::exists(first) && fs::exists(second)) << output;
  expectRowMatches("xckpt", {
                                {"--help", {"--help"}},
                                {"verify of a sound checkpoint", {"verify", second}},
                                {"diff of two different checkpoints", {"diff", first, second}},
                                {"an unknown command", {"no-such-command"}},
                                {"verify of a missing path", {"verify", path("missing")}},
                            });
}

TEST_F(ExitCodesDoc, XrunUsesTheCodesOfItsRow) {
  const std::string notExecutable = path("not-executable");
  std::ofstream(notExecutable) << "#!/bin/sh\n";
  ::chmod(notExecutable.c_str(), 0644);
  expectRowMatches(
      "xrun",
      {
          {"an instance that exits 0", {"-n", "1", "/bin/true"}},
          {"an instance that exits 1", {"-n", "1", "/bin/false"}},
          {"an unknown option", {"--no-such-option"}},
          {"an instance that exits 75 (preempted)", {"-n", "1", "/bin/sh", "-c", "exit 75"}},
          {"--timeout", {"--timeout", "0.3", "-n", "1", "/bin/sleep", "30"}},
          {"a program that is not executable", {"-n", "1", notExecutable}},
          {"a program that does not exist", {"-n", "1", path("no-such-program")}},
          {"an instance killed by SIGKILL",
           {"-n", "1", "/bin/sh", "-c", "kill -KILL $$"},
           0,
           "",
           SIGKILL},
          {"SIGINT to xrun",
           {"-n", "1", "/bin/sh", "-c", "echo ready; exec /bin/sleep 30"},
           SIGINT,
           "ready"},
      });
}

TEST_F(ExitCodesDoc, XbenchUsesTheCodesOfItsRow) {
  if (!fs::exists(binary("xbench"))) GTEST_SKIP() << "xbench is not built here";
  const std::string file = path("a-file");
  std::ofstream(file) << "x";
  expectRowMatches("xbench", {
                                 {"mlp --help", {"mlp", "--help"}},
                                 {"an unknown benchmark", {"no-such-benchmark"}},
                                 {"a checkpoint directory that cannot be made",
                                  {"checkpoint", "--bytes", "1M", "--tensors", "1", "--reps", "1",
                                   "--dir", file + "/sub"}},
                             });
}

// The other places that state the codes agree with docs/errors.md's table.
TEST_F(ExitCodesDoc, EveryOtherStatementNamesTheSameCodes) {
  const auto documented = errorsPageCodes();
  ASSERT_TRUE(documented.count("xtrain") && documented.count("xckpt") && documented.count("xrun"));

  CommandResult help = runCommand("./xtrain --help");
  EXPECT_EQ(exitCodesLine(help.output, "xtrain --help"), documented.at("xtrain"))
      << "xtrain --help and docs/errors.md's xtrain row name different codes";
  EXPECT_EQ(exitCodesLine(readText(sourceFile("README.md")), "README.md"), documented.at("xtrain"))
      << "the README's 'Exit codes:' line and docs/errors.md's xtrain row name different codes";
  help = runCommand("./xckpt --help");
  EXPECT_EQ(exitCodesLine(help.output, "xckpt --help"), documented.at("xckpt"))
      << "xckpt --help and docs/errors.md's xckpt row name different codes";

  // docs/launcher-environment.md: one row per code; "1..255" is the failing instance's own code.
  const auto rows =
      tableAfter(readText(sourceFile("docs/launcher-environment.md")), "| code | meaning |");
  ASSERT_FALSE(rows.empty()) << "docs/launcher-environment.md has no table '| code | meaning |'";
  Codes launcher;
  for (const auto& cells : rows) {
    const Codes c = codesOfList(cells.at(0) == "1..255" ? "1" : cells.at(0));
    EXPECT_FALSE(c.empty()) << "docs/launcher-environment.md: no code in '" << cells.at(0) << "'";
    launcher.insert(c.begin(), c.end());
  }
  EXPECT_EQ(launcher, documented.at("xrun"))
      << "docs/launcher-environment.md's exit codes and docs/errors.md's xrun row differ";

  // The preemption code programs use (include/xtrain/dist.hpp) is the one xtrain and xrun list.
  const std::string preempted = std::to_string(dist::kPreemptedExitCode);
  EXPECT_TRUE(documented.at("xtrain").count(preempted));
  EXPECT_TRUE(documented.at("xrun").count(preempted));
}

// The parsing above, on the forms the tables use.
TEST(ExitCodesDocParsing, ListsNameTheirCodes) {
  EXPECT_EQ(codesOfList("0 success, 2 bad usage or bad input, 1 runtime failure, 75 preempted."),
            (Codes{"0", "1", "2", "75"}));
  EXPECT_EQ(codesOfList("75 preempted (every instance exited 0 or 75; or SIGTERM, SIGUSR1), 124 "
                        "timeout, 126/127 program not runnable, 128 + s signal (docs/x.md)"),
            (Codes{"75", "124", "126", "127", kSignalCode}));
  EXPECT_EQ(codesOfList("126, 127"), (Codes{"126", "127"}));
  EXPECT_EQ(codesOfList("75 preempted: SIGUSR1 or SIGTERM stopped it, with a checkpoint"),
            (Codes{"75"}));
  EXPECT_EQ(codesOfList("—"), Codes{});
}

}  // namespace
}  // namespace xtrain::testing
