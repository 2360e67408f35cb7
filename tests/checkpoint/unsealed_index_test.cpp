// Indexes without a seal (format version 1, or a checkpoint.h5 whose seal was lost) reach HDF5
// without a checksum to vouch for them. The inputs libFuzzer found crashing HDF5 (a
// heap-buffer-overflow in its global heap) or looping in it forever must be reported as damaged,
// by the library and by xckpt, and end neither the caller nor hang it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "checkpoint/inspection.hpp"
#include "checkpoint/isolated_run.hpp"
#include "testing/file_testing.hpp"
#include "testing/process_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::checkpoint {
namespace {

namespace fs = std::filesystem;

// The fuzzer's inputs: a selector byte, then a damaged checkpoint.h5.
std::vector<fs::path> regressionInputs() {
  std::vector<fs::path> files;
  const fs::path dir = fs::path(XTRAIN_SOURCE_DIR) / "tools/fuzz/regressions/checkpoint";
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("crash-") || name.starts_with("timeout-")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The endless loops run until the probe's limit: 1 s instead of 5 keeps the test short.
constexpr const char* kShortLimit = "1";

class UnsealedIndex : public xtrain::testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    ::setenv("XTRAIN_UNSEALED_INDEX_TIMEOUT", kShortLimit, 1);
  }
  void TearDown() override {
    ::unsetenv("XTRAIN_UNSEALED_INDEX_TIMEOUT");
    ScratchDirTest::TearDown();
  }

  // A checkpoint directory holding `input` (less its selector byte) as checkpoint.h5, no seal.
  std::string checkpointFrom(const fs::path& input) {
    const std::string bytes = xtrain::testing::readFileBytes(input.string()).substr(1);
    const fs::path ckpt = dir_ / ("ckpt-" + input.filename().string().substr(0, 12));
    fs::create_directories(ckpt);
    std::ofstream(ckpt / "checkpoint.h5", std::ios::binary) << bytes;
    return ckpt.string();
  }
};

TEST_F(UnsealedIndex, FuzzerFoundInputsAreDamageNotAFaultOrAHang) {
  const auto inputs = regressionInputs();
  ASSERT_FALSE(inputs.empty());
  for (const auto& input : inputs) {
    SCOPED_TRACE(input.filename().string());
    const std::string ckpt = checkpointFrom(input);
    const auto start = std::chrono::steady_clock::now();
    const Inspection found = inspect(ckpt, Depth::Checksums);
    EXPECT_FALSE(found.problems.empty());
    // Bounded by the probe's limit plus the time to start and end a child.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  }
}

TEST_F(UnsealedIndex, XckptVerifyCallsThemDamaged) {
  for (const auto& input : regressionInputs()) {
    const std::string ckpt = checkpointFrom(input);
    const auto r = xtrain::testing::runCommand(std::string("XTRAIN_UNSEALED_INDEX_TIMEOUT=") +
                                               kShortLimit + " ./xckpt verify " + ckpt);
    EXPECT_EQ(r.exitCode, 1) << input.filename() << ": " << r.output;
    EXPECT_NE(r.output.find("damaged"), std::string::npos) << r.output;
  }
}

// A bad limit used to be taken silently as 5 s; it is refused as every duration is
// (common/env_value.hpp), and 30 days at most, so that the deadline does not overflow.
TEST(UnsealedIndexLimit, ReadLikeEveryDuration) {
  xtrain::testing::ScopedEnv env("XTRAIN_UNSEALED_INDEX_TIMEOUT", "250ms");
  EXPECT_EQ(unsealedIndexTimeLimit(), std::chrono::milliseconds(250));
  for (const char* bad : {"soon", "-1", "0", "inf", "1e16", " 5", "2592001"}) {
    xtrain::testing::ScopedEnv badEnv("XTRAIN_UNSEALED_INDEX_TIMEOUT", bad);
    try {
      unsealedIndexTimeLimit();
      ADD_FAILURE() << bad << " was accepted";
    } catch (const xtrain::error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("XTRAIN_UNSEALED_INDEX_TIMEOUT='") + bad +
                                           "': expected a duration"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace xtrain::checkpoint
