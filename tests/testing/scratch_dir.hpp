// A test fixture with a fresh directory of its own (under gtest's temporary directory, named after
// the process and the test), removed after the test.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace xtrain::testing {

class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A parameterised suite or test ("Zoo/Case", "Case/1") would give a nested directory whose
    // parent TearDown would leave behind: '/' becomes '_'.
    std::string name =
        std::string(::testing::UnitTest::GetInstance()->current_test_suite()->name()) + "_" +
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("xtrain_" + std::to_string(::getpid()) + "_" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A path inside the directory.
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

}  // namespace xtrain::testing
