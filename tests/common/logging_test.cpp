#include "xtrain/logging.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

namespace fs = std::filesystem;
using logging::Level;
using logging::Module;

constexpr const char* kEnvVars[] = {"XTRAIN_LOG_LEVEL", "XTRAIN_LOG_DEST", "XTRAIN_LOG_CONFIG"};

// One printed line: "2026-11-21T10:05:16.123Z session 4242.4243 I: message".
const std::regex kLineRe(
    R"(^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z ([a-z]+) (\d+)\.(\d+) ([TDIWEC]): (.*)$)");

struct Line {
  std::tm tm{};
  std::string module;
  long pid = 0;
  long tid = 0;
  char letter = '?';
  std::string message;
};

std::optional<Line> parseLine(const std::string& text) {
  std::smatch m;
  if (!std::regex_match(text, m, kLineRe)) return std::nullopt;
  Line line;
  line.tm.tm_year = std::stoi(m[1]) - 1900;
  line.tm.tm_mon = std::stoi(m[2]) - 1;
  line.tm.tm_mday = std::stoi(m[3]);
  line.tm.tm_hour = std::stoi(m[4]);
  line.tm.tm_min = std::stoi(m[5]);
  line.tm.tm_sec = std::stoi(m[6]);
  line.module = m[8];
  line.pid = std::stol(m[9]);
  line.tid = std::stol(m[10]);
  line.letter = m[11].str()[0];
  line.message = m[12];
  return line;
}

std::vector<std::string> readLines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

void writeFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

long currentTid() {
  return static_cast<long>(::syscall(SYS_gettid));
}

// Counts how often it is written with operator<<, i.e. formatted.
struct Counted {
  int* count;
};
std::ostream& operator<<(std::ostream& os, const Counted& c) {
  ++*c.count;
  return os << "counted";
}

// Every test starts from the library defaults: no environment, every module Off, output to stderr.
class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("xtrain_logging_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    reset();
  }

  void TearDown() override {
    reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static void reset() {
    for (const char* v : kEnvVars) ::unsetenv(v);
    logging::setDefaultLevel(Level::Off);
    logging::configureFromEnvironment();
  }

  // Points XTRAIN_LOG_DEST at a fresh file in this test's directory and reconfigures.
  fs::path logToFile(const std::string& name = "out.log") {
    fs::path p = dir_ / name;
    ::setenv("XTRAIN_LOG_DEST", p.c_str(), 1);
    logging::configureFromEnvironment();
    return p;
  }

  // Message of the xtrain::error that configureFromEnvironment() throws.
  static std::string configureError() {
    try {
      logging::configureFromEnvironment();
    } catch (const error& e) {
      return e.what();
    }
    ADD_FAILURE() << "configureFromEnvironment() did not throw";
    return {};
  }

  fs::path dir_;
};

TEST_F(LoggingTest, DefaultIsOffForEveryModule) {
  for (Module m : logging::allModules) {
    EXPECT_EQ(logging::getLevel(m), Level::Off) << logging::toString(m);
    EXPECT_FALSE(logging::shouldLog(m, Level::Critical)) << logging::toString(m);
  }
  EXPECT_EQ(logging::getDefaultLevel(), Level::Off);
}

TEST_F(LoggingTest, LevelsFilterPerModule) {
  logging::setLevel(Module::session, Level::Info);
  EXPECT_EQ(logging::getLevel(Module::session), Level::Info);
  EXPECT_FALSE(logging::shouldLog(Module::session, Level::Trace));
  EXPECT_FALSE(logging::shouldLog(Module::session, Level::Debug));
  EXPECT_TRUE(logging::shouldLog(Module::session, Level::Info));
  EXPECT_TRUE(logging::shouldLog(Module::session, Level::Warn));
  EXPECT_TRUE(logging::shouldLog(Module::session, Level::Err));
  EXPECT_TRUE(logging::shouldLog(Module::session, Level::Critical));
  EXPECT_FALSE(logging::shouldLog(Module::session, Level::Off));
  // Other modules are untouched.
  EXPECT_FALSE(logging::shouldLog(Module::ir, Level::Critical));
  EXPECT_FALSE(logging::shouldLog(Module::xtrain, Level::Critical));

  logging::setLevel(Module::ir, Level::Trace);
  EXPECT_TRUE(logging::shouldLog(Module::ir, Level::Trace));
  logging::setLevel(Module::ir, Level::Critical);
  EXPECT_FALSE(logging::shouldLog(Module::ir, Level::Err));
  EXPECT_TRUE(logging::shouldLog(Module::ir, Level::Critical));
}

TEST_F(LoggingTest, LevelsFilterPrintedLines) {
  fs::path p = logToFile();
  logging::setLevel(Module::comm, Level::Warn);
  logging::comm::info("dropped");
  logging::comm::warn("kept warn");
  logging::comm::err("kept err");
  logging::session::critical("dropped, session is off");
  logging::log(Module::comm, Level::Debug, "dropped too");
  logging::log(Module::comm, Level::Critical, "kept critical");
  logging::flush();
  std::vector<std::string> messages;
  for (const auto& l : readLines(p)) {
    auto line = parseLine(l);
    ASSERT_TRUE(line) << l;
    messages.push_back(line->message);
  }
  EXPECT_EQ(messages, (std::vector<std::string>{"kept warn", "kept err", "kept critical"}));
}

TEST_F(LoggingTest, DefaultLevelForTools) {
  logging::setDefaultLevelForTools();
  EXPECT_EQ(logging::getDefaultLevel(), Level::Info);
  for (Module m : logging::allModules) {
    EXPECT_EQ(logging::getLevel(m), Level::Info) << logging::toString(m);
  }
  // The environment still wins for the modules it names, and the default survives reconfiguration.
  fs::path cfg = dir_ / "log.json";
  writeFile(cfg, R"({"ir": "off"})");
  ::setenv("XTRAIN_LOG_CONFIG", cfg.c_str(), 1);
  logging::configureFromEnvironment();
  EXPECT_EQ(logging::getLevel(Module::ir), Level::Off);
  EXPECT_EQ(logging::getLevel(Module::session), Level::Info);
  logging::setDefaultLevel(Level::Off);
  EXPECT_EQ(logging::getLevel(Module::session), Level::Off);
}

TEST_F(LoggingTest, LevelFromString) {
  EXPECT_EQ(logging::levelFromString("trace"), Level::Trace);
  EXPECT_EQ(logging::levelFromString("DEBUG"), Level::Debug);
  EXPECT_EQ(logging::levelFromString("info"), Level::Info);
  EXPECT_EQ(logging::levelFromString("INFO"), Level::Info);
  EXPECT_EQ(logging::levelFromString("Warn"), Level::Warn);
  EXPECT_EQ(logging::levelFromString("warning"), Level::Warn);
  EXPECT_EQ(logging::levelFromString("err"), Level::Err);
  EXPECT_EQ(logging::levelFromString("ERROR"), Level::Err);
  EXPECT_EQ(logging::levelFromString("critical"), Level::Critical);
  EXPECT_EQ(logging::levelFromString("OFF"), Level::Off);
  for (Level l : {Level::Trace, Level::Debug, Level::Info, Level::Warn, Level::Err, Level::Critical,
                  Level::Off}) {
    EXPECT_EQ(logging::levelFromString(logging::toString(l)), l);
  }
  try {
    logging::levelFromString("loud");
    FAIL() << "no error for an unknown level";
  } catch (const error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("'loud'"), std::string::npos) << what;
    EXPECT_NE(what.find("trace, debug, info, warn, err, critical, off"), std::string::npos) << what;
  }
  EXPECT_THROW(logging::levelFromString(""), error);
}

TEST_F(LoggingTest, ModuleFromString) {
  for (Module m : logging::allModules) {
    EXPECT_EQ(logging::moduleFromString(logging::toString(m)), m);
  }
  EXPECT_EQ(logging::moduleFromString("SESSION"), Module::session);
  EXPECT_STREQ(logging::toString(Module::xtrain), "xtrain");
  EXPECT_STREQ(logging::toString(Module::devicex), "devicex");
  EXPECT_STREQ(logging::toString(Module::checkpoint), "checkpoint");
  try {
    logging::moduleFromString("popart");
    FAIL() << "no error for an unknown module";
  } catch (const error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("'popart'"), std::string::npos) << what;
    EXPECT_NE(what.find("xtrain, session, ir, devicex"), std::string::npos) << what;
    EXPECT_NE(what.find("checkpoint"), std::string::npos) << what;
  }
}

TEST_F(LoggingTest, EnvironmentLevelAppliesToAllModules) {
  ::setenv("XTRAIN_LOG_LEVEL", "debug", 1);
  logging::configureFromEnvironment();
  for (Module m : logging::allModules) {
    EXPECT_EQ(logging::getLevel(m), Level::Debug) << logging::toString(m);
  }
  // setLevel overrides until the next configureFromEnvironment().
  logging::setLevel(Module::ir, Level::Err);
  EXPECT_EQ(logging::getLevel(Module::ir), Level::Err);
  logging::configureFromEnvironment();
  EXPECT_EQ(logging::getLevel(Module::ir), Level::Debug);
}

TEST_F(LoggingTest, BadEnvironmentLevelNamesVariableAndValue) {
  ::setenv("XTRAIN_LOG_LEVEL", "verbose", 1);
  std::string what = configureError();
  EXPECT_NE(what.find("XTRAIN_LOG_LEVEL"), std::string::npos) << what;
  EXPECT_NE(what.find("'verbose'"), std::string::npos) << what;
  EXPECT_NE(what.find("trace, debug"), std::string::npos) << what;
}

TEST_F(LoggingTest, FailedConfigurationChangesNothing) {
  logging::setLevel(Module::session, Level::Warn);
  ::setenv("XTRAIN_LOG_LEVEL", "trace", 1);
  ::setenv("XTRAIN_LOG_CONFIG", (dir_ / "missing.json").c_str(), 1);
  std::string what = configureError();
  EXPECT_NE(what.find("missing.json"), std::string::npos) << what;
  EXPECT_EQ(logging::getLevel(Module::session), Level::Warn);
  EXPECT_EQ(logging::getLevel(Module::ir), Level::Off);
}

TEST_F(LoggingTest, ConfigFileOverridesEnvironmentLevel) {
  fs::path cfg = dir_ / "log.json";
  writeFile(cfg, R"({"session": "debug", "ir": "TRACE", "comm": "off"})");
  ::setenv("XTRAIN_LOG_LEVEL", "warn", 1);
  ::setenv("XTRAIN_LOG_CONFIG", cfg.c_str(), 1);
  logging::configureFromEnvironment();
  EXPECT_EQ(logging::getLevel(Module::session), Level::Debug);
  EXPECT_EQ(logging::getLevel(Module::ir), Level::Trace);
  EXPECT_EQ(logging::getLevel(Module::comm), Level::Off);
  EXPECT_EQ(logging::getLevel(Module::xtrain), Level::Warn);
  EXPECT_EQ(logging::getLevel(Module::checkpoint), Level::Warn);

  // Without XTRAIN_LOG_LEVEL the other modules keep the default.
  ::unsetenv("XTRAIN_LOG_LEVEL");
  logging::configureFromEnvironment();
  EXPECT_EQ(logging::getLevel(Module::session), Level::Debug);
  EXPECT_EQ(logging::getLevel(Module::xtrain), Level::Off);
}

TEST_F(LoggingTest, ConfigFileErrorsNameFileAndKey) {
  fs::path cfg = dir_ / "bad.json";
  ::setenv("XTRAIN_LOG_CONFIG", cfg.c_str(), 1);
  const std::string path = cfg.string();

  writeFile(cfg, R"({"session": "debug",)");
  std::string what = configureError();
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("not valid JSON"), std::string::npos) << what;

  writeFile(cfg, R"({"session": "debug", "sessoin": "info"})");
  what = configureError();
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("'sessoin'"), std::string::npos) << what;
  EXPECT_NE(what.find("valid modules"), std::string::npos) << what;

  writeFile(cfg, R"({"ir": "chatty"})");
  what = configureError();
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("key 'ir'"), std::string::npos) << what;
  EXPECT_NE(what.find("'chatty'"), std::string::npos) << what;
  EXPECT_NE(what.find("valid levels"), std::string::npos) << what;

  writeFile(cfg, R"({"ir": 3})");
  what = configureError();
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("key 'ir'"), std::string::npos) << what;

  writeFile(cfg, R"(["session", "debug"])");
  what = configureError();
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("JSON object"), std::string::npos) << what;

  // Nothing was applied by the failed attempts.
  EXPECT_EQ(logging::getLevel(Module::session), Level::Off);
}

TEST_F(LoggingTest, FileDestinationLineFormat) {
  fs::path p = logToFile();
  logging::setLevel(Module::session, Level::Info);

  // Timestamps must be UTC whatever the local time zone is.
  const char* oldTz = std::getenv("TZ");
  std::string savedTz = oldTz ? oldTz : "";
  ::setenv("TZ", "XST-05:30", 1);
  ::tzset();
  std::time_t before = std::time(nullptr);
  logging::session::info("step {} loss {}", 7, 0.5);
  std::time_t after = std::time(nullptr);
  if (oldTz) {
    ::setenv("TZ", savedTz.c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
  logging::flush();

  auto lines = readLines(p);
  ASSERT_EQ(lines.size(), 1u);
  auto line = parseLine(lines[0]);
  ASSERT_TRUE(line) << "line does not match the format: " << lines[0];
  EXPECT_EQ(line->module, "session");
  EXPECT_EQ(line->pid, static_cast<long>(::getpid()));
  EXPECT_EQ(line->tid, currentTid());
  EXPECT_EQ(line->letter, 'I');
  EXPECT_EQ(line->message, "step 7 loss 0.5");
  std::time_t stamped = ::timegm(&line->tm);
  EXPECT_GE(stamped, before - 1) << lines[0];
  EXPECT_LE(stamped, after + 1) << lines[0];
}

TEST_F(LoggingTest, EveryModuleAndLevelLetter) {
  fs::path p = logToFile();
  for (Module m : logging::allModules) logging::setLevel(m, Level::Trace);
  const std::vector<std::pair<Level, char>> letters = {{Level::Trace, 'T'}, {Level::Debug, 'D'},
                                                       {Level::Info, 'I'},  {Level::Warn, 'W'},
                                                       {Level::Err, 'E'},   {Level::Critical, 'C'}};
  for (Module m : logging::allModules) {
    for (const auto& [level, letter] : letters) logging::log(m, level, "x");
  }
  logging::flush();
  auto lines = readLines(p);
  ASSERT_EQ(lines.size(), logging::allModules.size() * letters.size());
  std::size_t i = 0;
  for (Module m : logging::allModules) {
    for (const auto& [level, letter] : letters) {
      auto line = parseLine(lines[i]);
      ASSERT_TRUE(line) << lines[i];
      EXPECT_EQ(line->module, logging::toString(m)) << lines[i];
      EXPECT_EQ(line->letter, letter) << lines[i];
      ++i;
    }
  }
}

TEST_F(LoggingTest, HelpersUseTheirModule) {
  fs::path p = logToFile();
  for (Module m : logging::allModules) logging::setLevel(m, Level::Trace);
  logging::trace("a");
  logging::debug("a");
  logging::info("a");
  logging::warn("a");
  logging::err("a");
  logging::critical("a");
  logging::session::info("a");
  logging::ir::debug("a");
  logging::devicex::trace("a");
  logging::transform::warn("a");
  logging::pattern::err("a");
  logging::builder::critical("a");
  logging::op::info("a");
  logging::opx::info("a");
  logging::ces::info("a");
  logging::comm::warn("a");
  logging::replication::info("a");
  logging::launcher::info("a");
  logging::checkpoint::info("a");
  logging::flush();
  std::vector<std::string> got;
  for (const auto& l : readLines(p)) {
    auto line = parseLine(l);
    ASSERT_TRUE(line) << l;
    got.push_back(line->module + " " + line->letter);
  }
  EXPECT_EQ(got,
            (std::vector<std::string>{"xtrain T", "xtrain D", "xtrain I", "xtrain W", "xtrain E",
                                      "xtrain C", "session I", "ir D", "devicex T", "transform W",
                                      "pattern E", "builder C", "op I", "opx I", "ces I", "comm W",
                                      "replication I", "launcher I", "checkpoint I"}));
}

TEST_F(LoggingTest, PlaceholdersAreFormatted) {
  fs::path p = logToFile();
  logging::setLevel(Module::xtrain, Level::Info);
  logging::setLevel(Module::ir, Level::Info);
  logging::info("tensor {} has shape {}", "w0", std::vector<int>{2, 3});
  logging::ir::info("{} + {} = {}", 1, 2, 3);
  logging::info("literal {{}} and {}", true);
  logging::info("no arguments keeps {{ as is");
  logging::log(Module::ir, Level::Info, "log() prints {} verbatim");
  logging::flush();
  std::vector<std::string> messages;
  for (const auto& l : readLines(p)) {
    auto line = parseLine(l);
    ASSERT_TRUE(line) << l;
    messages.push_back(line->message);
  }
  EXPECT_EQ(messages, (std::vector<std::string>{"tensor w0 has shape [2,3]", "1 + 2 = 3",
                                                "literal {} and true", "no arguments keeps { as is",
                                                "log() prints {} verbatim"}));
}

TEST_F(LoggingTest, NothingIsFormattedWhenOff) {
  fs::path p = logToFile();
  int count = 0;
  logging::info("value {}", Counted{&count});
  logging::session::critical("value {}", Counted{&count});
  logging::setLevel(Module::ir, Level::Warn);
  logging::ir::info("value {}", Counted{&count});
  logging::ir::debug("value {}", Counted{&count});
  EXPECT_EQ(count, 0);
  logging::ir::warn("value {}", Counted{&count});
  EXPECT_EQ(count, 1);
  logging::flush();
  auto lines = readLines(p);
  ASSERT_EQ(lines.size(), 1u);
  auto line = parseLine(lines[0]);
  ASSERT_TRUE(line) << lines[0];
  EXPECT_EQ(line->message, "value counted");
}

TEST_F(LoggingTest, FileDestinationAppends) {
  fs::path p = dir_ / "out.log";
  writeFile(p, "earlier line\n");
  logToFile();
  logging::setLevel(Module::xtrain, Level::Info);
  logging::info("new line");
  logging::flush();
  auto lines = readLines(p);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "earlier line");
  EXPECT_TRUE(parseLine(lines[1])) << lines[1];
}

TEST_F(LoggingTest, UnopenableDestinationNamesPath) {
  fs::path blocker = dir_ / "not_a_dir";
  writeFile(blocker, "x");
  fs::path bad = blocker / "out.log";  // a path below a regular file can never be created
  ::setenv("XTRAIN_LOG_DEST", bad.c_str(), 1);
  std::string what = configureError();
  EXPECT_NE(what.find("XTRAIN_LOG_DEST"), std::string::npos) << what;
  EXPECT_NE(what.find(bad.string()), std::string::npos) << what;
}

TEST_F(LoggingTest, StandardStreamDestinations) {
  logging::setLevel(Module::launcher, Level::Info);
  ::testing::internal::CaptureStderr();
  logging::launcher::info("to stderr");
  logging::flush();
  std::string err = ::testing::internal::GetCapturedStderr();
  auto line = parseLine(err.substr(0, err.find('\n')));
  ASSERT_TRUE(line) << err;
  EXPECT_EQ(line->module, "launcher");
  EXPECT_EQ(line->message, "to stderr");

  ::setenv("XTRAIN_LOG_DEST", "stdout", 1);
  ::setenv("XTRAIN_LOG_LEVEL", "info", 1);
  logging::configureFromEnvironment();
  ::testing::internal::CaptureStdout();
  logging::launcher::info("to stdout");
  logging::flush();
  std::string out = ::testing::internal::GetCapturedStdout();
  line = parseLine(out.substr(0, out.find('\n')));
  ASSERT_TRUE(line) << out;
  EXPECT_EQ(line->message, "to stdout");
}

TEST_F(LoggingTest, ConcurrentWritersProduceWholeLines) {
  fs::path p = logToFile();
  logging::setLevel(Module::replication, Level::Debug);
  constexpr int kThreads = 4;
  constexpr int kMessages = 250;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kMessages; ++i) logging::replication::debug("thread {} message {}", t, i);
    });
  }
  for (auto& th : threads) th.join();
  logging::flush();
  auto lines = readLines(p);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kThreads * kMessages));
  std::map<long, int> perTid;
  std::set<std::string> messages;
  for (const auto& l : lines) {
    auto line = parseLine(l);
    ASSERT_TRUE(line) << l;
    ++perTid[line->tid];
    messages.insert(line->message);
  }
  EXPECT_EQ(perTid.size(), static_cast<std::size_t>(kThreads));
  for (const auto& [tid, n] : perTid) EXPECT_EQ(n, kMessages) << tid;
  EXPECT_EQ(messages.size(), lines.size());
}

}  // namespace
}  // namespace xtrain
