// Helpers for the checkpoint tests: a scratch directory per test, sample contents, a whole save,
// and file surgery (truncation, flipped bytes).
#pragma once

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpoint_directory.hpp"
#include "checkpoint/seal.hpp"

namespace xtrain::checkpoint::testing {

namespace fs = std::filesystem;

// A fresh directory for each test, removed afterwards.
class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("xtrain_ckpt_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
};

inline Attributes sampleAttributes(int64_t step) {
  Attributes a;
  a.step = step;
  a.epoch = step / 10;
  a.samplesSeen = step * 32;
  a.globalReplicationFactor = 4;
  a.instances = 2;
  a.optimizerType = "SGD";
  a.hyperparameters = {{"learningRate", 0.01}, {"momentum", 0.9}};
  a.graphFingerprint = "fp-1234";
  a.creationTime = "2024-05-01T12:00:00Z";
  a.xtrainVersion = "0.1.0";
  return a;
}

// A FLOAT tensor whose values depend on (seed, index), so each dataset's bytes are distinct.
inline HostTensor floatTensor(const Shape& shape, float seed) {
  HostTensor t(TensorInfo(DataType::FLOAT, shape));
  auto s = t.span<float>();
  for (size_t i = 0; i < s.size(); ++i) s[i] = seed + 0.001f * static_cast<float>(i);
  return t;
}

// A whole save: every part, the index, the commit. Returns the checkpoint's directory.
inline std::string save(const fs::path& dir, int64_t step,
                        const std::vector<std::vector<Dataset>>& parts,
                        const Attributes& attributes) {
  const std::string final = (dir / checkpointName(step)).string();
  const std::string staging = final + ".tmp-test";
  for (size_t i = 0; i < parts.size(); ++i) writePart(staging, static_cast<int>(i), parts[i]);
  writeIndex(staging, attributes, static_cast<int>(parts.size()));
  commit(staging, final);
  return final;
}

inline std::string save(const fs::path& dir, int64_t step,
                        const std::vector<std::vector<Dataset>>& parts) {
  return save(dir, step, parts, sampleAttributes(step));
}

// Two parts: weights in part 0, optimizer state and random state in part 1.
inline std::vector<std::vector<Dataset>> sampleParts(float seed) {
  std::vector<Dataset> p0 = {{"/weights/W1", floatTensor({4, 3}, seed)},
                             {"/weights/B1", floatTensor({3}, seed + 1)}};
  std::vector<Dataset> p1 = {{"/optimizer/W1/velocity", floatTensor({4, 3}, seed + 2)},
                             {"/state/rng", HostTensor::fromVector<uint32_t>({2, 2}, {1, 2, 3, 4})},
                             {"/state/data", HostTensor::fromVector<int64_t>({2}, {7, 8})}};
  return {p0, p1};
}

inline bool sameBytes(const HostTensor& a, const HostTensor& b) {
  return a.info() == b.info() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

inline std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void writeFile(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Flips one bit of the first occurrence of `pattern`'s bytes in the file; false when absent.
inline bool flipByteOf(const fs::path& file, const HostTensor& pattern, size_t offsetInPattern) {
  std::string bytes = readFile(file);
  const std::string needle(reinterpret_cast<const char*>(pattern.raw()), pattern.nbytes());
  const size_t at = bytes.find(needle);
  if (at == std::string::npos) return false;
  bytes[at + offsetInPattern] = static_cast<char>(bytes[at + offsetInPattern] ^ 0x10);
  writeFile(file, bytes);
  return true;
}

// Flips every bit of the byte at `offset` of the file, in place (flipping it again restores it).
inline void flipByteAt(const fs::path& file, size_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  const char c = static_cast<char>(f.get());
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(~c));
  ASSERT_TRUE(f.good()) << "cannot flip byte " << offset << " of " << file;
}

// Rewrites an int64 root attribute of the checkpoint's index in place and seals the index again:
// what a buggy writer would leave (the seal matches, the value is wrong). False on an HDF5 failure.
inline bool rewriteRootInt64(const fs::path& checkpointDir, const char* name, int64_t value) {
  const std::string index = (checkpointDir / "checkpoint.h5").string();
  const hid_t file = H5Fopen(index.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file < 0) return false;
  const hid_t attribute = H5Aopen(file, name, H5P_DEFAULT);
  const bool ok = attribute >= 0 && H5Awrite(attribute, H5T_NATIVE_INT64, &value) >= 0;
  if (attribute >= 0) H5Aclose(attribute);
  if (H5Fclose(file) < 0 || !ok) return false;
  writeSeal(checkpointDir.string());
  return true;
}

inline void truncateTo(const fs::path& file, double fraction) {
  const auto size = fs::file_size(file);
  fs::resize_file(file, static_cast<uintmax_t>(static_cast<double>(size) * fraction));
}

// Runs f, expects a CheckpointError whose message contains every part.
template <typename F>
void expectCheckpointError(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    const std::string what = e.what();
    for (const auto& p : parts) {
      EXPECT_NE(what.find(p), std::string::npos) << what << "\n  missing: " << p;
    }
  }
}

// True when one of the problems contains every part.
inline bool anyProblemHas(const std::vector<std::string>& problems,
                          const std::vector<std::string>& parts) {
  return std::any_of(problems.begin(), problems.end(), [&](const std::string& p) {
    return std::all_of(parts.begin(), parts.end(),
                       [&](const std::string& s) { return p.find(s) != std::string::npos; });
  });
}

}  // namespace xtrain::checkpoint::testing
