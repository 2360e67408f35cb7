// logging::setLevel(module, level) by name, as PopART documents it (executing-graphs.txt 5.7.1):
// setLevel("popart", "DEBUG") sets every module, setLevel("session", "OFF") one module; a bad name
// is an error naming it and the valid ones, and changes nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

using logging::Level;
using logging::Module;

// Every test starts and ends with the library's defaults: no environment, every module Off.
class LoggingSetLevel : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }
  void TearDown() override { reset(); }
  static void reset() {
    for (const char* v : {"XTRAIN_LOG_LEVEL", "XTRAIN_LOG_DEST", "XTRAIN_LOG_CONFIG"}) {
      ::unsetenv(v);
    }
    logging::setDefaultLevel(Level::Off);
    logging::configureFromEnvironment();
  }
  static void expectEveryModuleAt(Level level) {
    for (Module m : logging::allModules) {
      EXPECT_EQ(logging::getLevel(m), level) << logging::toString(m);
    }
  }
  static std::string errorOf(const std::string& module, const std::string& level) {
    try {
      logging::setLevel(module, level);
    } catch (const error& e) {
      return e.what();
    }
    ADD_FAILURE() << "setLevel(\"" << module << "\", \"" << level << "\") did not throw";
    return {};
  }
};

TEST_F(LoggingSetLevel, DefaultModuleSetsEveryModule) {
  logging::setLevel("popart", "DEBUG");
  expectEveryModuleAt(Level::Debug);
  EXPECT_EQ(logging::getDefaultLevel(), Level::Debug);
  EXPECT_TRUE(logging::shouldLog(Module::checkpoint, Level::Debug));
  EXPECT_FALSE(logging::shouldLog(Module::checkpoint, Level::Trace));
  // xtrain's own name for the default module, and PopART's Python "all", do the same.
  logging::setLevel("xtrain", "TRACE");
  expectEveryModuleAt(Level::Trace);
  logging::setLevel("all", "WARN");
  expectEveryModuleAt(Level::Warn);
}

TEST_F(LoggingSetLevel, OtherModulesSetThemselvesOnly) {
  logging::setLevel("popart", "DEBUG");
  logging::setLevel("session", "OFF");
  EXPECT_EQ(logging::getLevel(Module::session), Level::Off);
  for (Module m : logging::allModules) {
    if (m != Module::session) {
      EXPECT_EQ(logging::getLevel(m), Level::Debug) << logging::toString(m);
    }
  }
  logging::setLevel("comm", "ERR");
  EXPECT_EQ(logging::getLevel(Module::comm), Level::Err);
  EXPECT_EQ(logging::getLevel(Module::ir), Level::Debug);
}

TEST_F(LoggingSetLevel, PopartPythonAndNoneModulesAreTheDefaultModuleAlone) {
  logging::setLevel("python", "INFO");
  EXPECT_EQ(logging::getLevel(Module::xtrain), Level::Info);
  EXPECT_EQ(logging::getLevel(Module::session), Level::Off);
  logging::setLevel("none", "CRITICAL");
  EXPECT_EQ(logging::getLevel(Module::xtrain), Level::Critical);
  EXPECT_EQ(logging::getLevel(Module::session), Level::Off);
}

TEST_F(LoggingSetLevel, NamesAreCaseInsensitive) {
  logging::setLevel("POPART", "debug");
  expectEveryModuleAt(Level::Debug);
  logging::setLevel("Session", "Off");
  EXPECT_EQ(logging::getLevel(Module::session), Level::Off);
}

TEST_F(LoggingSetLevel, UnknownModuleNamesItAndTheValidOnesAndChangesNothing) {
  const std::string what = errorOf("sessoin", "DEBUG");
  EXPECT_NE(what.find("'sessoin'"), std::string::npos) << what;
  EXPECT_NE(what.find("all, popart, xtrain, session"), std::string::npos) << what;
  EXPECT_NE(what.find("python, none"), std::string::npos) << what;
  expectEveryModuleAt(Level::Off);
}

TEST_F(LoggingSetLevel, UnknownLevelNamesItAndTheValidOnesAndChangesNothing) {
  for (const char* module : {"popart", "session"}) {
    const std::string what = errorOf(module, "LOUD");
    EXPECT_NE(what.find("'LOUD'"), std::string::npos) << what;
    EXPECT_NE(what.find("valid levels"), std::string::npos) << what;
    EXPECT_NE(what.find("debug"), std::string::npos) << what;
    expectEveryModuleAt(Level::Off);
    EXPECT_EQ(logging::getDefaultLevel(), Level::Off);
  }
}

}  // namespace
}  // namespace xtrain
