// A test fixture that sends the log to a file of the test's scratch directory, with the session
// module at debug level, for tests that check what a session logs (a phase's time, an option with
// no effect). The destination is restored afterwards.
#pragma once

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "testing/process_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::testing {

class SessionLogTest : public ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    dest_.emplace("XTRAIN_LOG_DEST", path("log").c_str());
    logging::configureFromEnvironment();
    logging::setLevel(logging::Module::session, logging::Level::Debug);
  }
  void TearDown() override {
    dest_.reset();
    logging::configureFromEnvironment();
    ScratchDirTest::TearDown();
  }
  // Everything logged so far.
  std::string logText() {
    logging::flush();
    std::ifstream in(path("log"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::optional<ScopedEnv> dest_;
};

}  // namespace xtrain::testing
