// DatasetReader on damaged and unusual data files: links that do not resolve are named as such,
// data whose recorded place lies outside the file is refused before HDF5 reads it (a flipped byte
// there once crashed H5Dread), and no single-byte flip of a small file ends the process.
#include "checkpoint/dataset_reader.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dataset_testing.hpp"
#include "testing/error_testing.hpp"
#include "testing/file_testing.hpp"
#include "testing/scratch_dir.hpp"

namespace xtrain::checkpoint {
namespace {

using testing::readEveryDataset;
using testing::statusOfChild;
using xtrain::testing::errorOf;
using xtrain::testing::readFileBytes;
using xtrain::testing::writeFileBytes;
namespace fs = std::filesystem;

// 16 samples of 4 floats whose bytes are easy to find in the file: sample i, feature f holds
// 1000 + 4 i + f.
std::vector<float> recognisableData() {
  std::vector<float> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1000.0f + static_cast<float>(i);
  return v;
}

class DatasetReaderDamage : public xtrain::testing::ScratchDirTest {
 protected:
  std::string writeData() {
    const std::string file = path("d.h5");
    DatasetWriter w(file);
    const auto v = recognisableData();
    w.write("x", TensorInfo(DataType::FLOAT, {16, 4}), v.data());
    return file;
  }
  // Reads every sample of `x` as FLOAT (the whole path xtrain takes).
  static void readAll(const std::string& file) {
    DatasetReader r(file);
    const TensorInfo info = r.info("x");
    std::vector<int64_t> samples(static_cast<size_t>(info.shape()[0]));
    for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<int64_t>(i);
    std::vector<float> out(static_cast<size_t>(info.nelms()));
    r.readSamples("x", samples, DataType::FLOAT, out.data());
  }
};

TEST_F(DatasetReaderDamage, BrokenLinksAreNamedAsLinks) {
  const std::string file = path("links.h5");
  {
    DatasetWriter w(file);
    w.softLink("x", "/nowhere");
    w.externalLink("y", path("missing.h5"), "/data");
  }
  DatasetReader r(file);
  const std::string soft = errorOf([&] { r.info("x"); });
  EXPECT_CONTAINS(soft, "soft link to '/nowhere'");
  const std::string external = errorOf([&] { r.info("y"); });
  EXPECT_CONTAINS(external, "external link to '/data'");
  EXPECT_CONTAINS(external, "missing.h5");
  EXPECT_CONTAINS(errorOf([&] { r.info("z"); }), "has no dataset 'z'");
}

// A training batch is shuffled sample indices, repeats possible (a small data set with a large
// batch): each sample lands where it was asked for, converted to the requested type.
TEST_F(DatasetReaderDamage, ShuffledAndRepeatedSamplesLandInBatchOrder) {
  DatasetReader r(writeData());
  const std::vector<int64_t> batch{7, 2, 15, 2, 0, 1, 3, 14, 9};
  std::vector<float> out(batch.size() * 4);
  r.readSamples("x", batch, DataType::FLOAT, out.data());
  std::vector<double> asDouble(batch.size() * 4);
  r.readSamples("x", batch, DataType::DOUBLE, asDouble.data());
  for (size_t i = 0; i < batch.size(); ++i) {
    for (size_t f = 0; f < 4; ++f) {
      const float want = 1000.0f + static_cast<float>(4 * batch[i] + static_cast<int64_t>(f));
      EXPECT_EQ(out[i * 4 + f], want) << "batch position " << i << " feature " << f;
      EXPECT_EQ(asDouble[i * 4 + f], want);
    }
  }
  // In file order without repeats the rows are read in place.
  const std::vector<int64_t> ordered{3, 4, 5, 9, 12};
  std::vector<float> direct(ordered.size() * 4);
  r.readSamples("x", ordered, DataType::FLOAT, direct.data());
  for (size_t i = 0; i < ordered.size(); ++i) {
    EXPECT_EQ(direct[i * 4], 1000.0f + static_cast<float>(4 * ordered[i]));
  }
  EXPECT_CONTAINS(errorOf([&] {
                    r.readSamples("x", {3, 16, 1}, DataType::FLOAT, out.data());
                  }),
                  "sample 16 is out of range for dataset 'x'");
  EXPECT_CONTAINS(errorOf([&] { r.readSamples("x", {-1}, DataType::FLOAT, out.data()); }),
                  "sample -1 is out of range");
}

// With a resident budget, a dataset that fits is read whole once and batches come from memory: the
// same values as from the file, the same errors, and nothing kept beyond the budget.
TEST_F(DatasetReaderDamage, ResidentDatasetsGiveWhatTheFileGives) {
  const std::string file = writeData();  // 16 samples x 4 floats = 256 bytes as FLOAT
  const std::vector<int64_t> batch{7, 2, 15, 2, 0};
  DatasetReader fromFile(file);
  std::vector<float> want(batch.size() * 4);
  fromFile.readSamples("x", batch, DataType::FLOAT, want.data());
  EXPECT_EQ(fromFile.residentBytes(), 0u);

  DatasetReader kept(file, 300);
  std::vector<float> got(batch.size() * 4);
  kept.readSamples("x", batch, DataType::FLOAT, got.data());
  EXPECT_EQ(got, want);
  EXPECT_EQ(kept.residentBytes(), 256u);
  kept.readSamples("x", batch, DataType::FLOAT, got.data());  // from memory now
  EXPECT_EQ(got, want);
  // As DOUBLE the dataset is 512 bytes: beyond what is left, so read from the file.
  std::vector<double> asDouble(batch.size() * 4);
  kept.readSamples("x", batch, DataType::DOUBLE, asDouble.data());
  EXPECT_EQ(kept.residentBytes(), 256u);
  EXPECT_EQ(asDouble[0], want[0]);
  EXPECT_CONTAINS(errorOf([&] {
                    kept.readSamples("x", {1, 16}, DataType::FLOAT, got.data());
                  }),
                  "sample 16 is out of range for dataset 'x'");
  EXPECT_CONTAINS(errorOf([&] { kept.readSamples("x", {-3}, DataType::FLOAT, got.data()); }),
                  "sample -3 is out of range");
}

TEST(DatasetReaderBudget, EnvironmentGivesAByteCount) {
  ::unsetenv("XTRAIN_DATA_RESIDENT_BYTES");
  EXPECT_EQ(DatasetReader::residentBytesFromEnvironment(), size_t{256} << 20);
  ::setenv("XTRAIN_DATA_RESIDENT_BYTES", "0", 1);
  EXPECT_EQ(DatasetReader::residentBytesFromEnvironment(), 0u);
  ::setenv("XTRAIN_DATA_RESIDENT_BYTES", "1048576", 1);
  EXPECT_EQ(DatasetReader::residentBytesFromEnvironment(), size_t{1} << 20);
  for (const char* bad : {"-8", "1G", "lots", " 5"}) {
    ::setenv("XTRAIN_DATA_RESIDENT_BYTES", bad, 1);
    EXPECT_CONTAINS(errorOf([] { DatasetReader::residentBytesFromEnvironment(); }),
                    "XTRAIN_DATA_RESIDENT_BYTES='" + std::string(bad) + "': expected a byte count");
  }
  ::unsetenv("XTRAIN_DATA_RESIDENT_BYTES");
}

TEST_F(DatasetReaderDamage, DataAddressBeyondTheFileIsRefused) {
  const std::string file = writeData();
  std::string bytes = readFileBytes(file);
  // The data's address: where its first float lies. The layout message records it as 8 bytes,
  // little-endian; point it far beyond the end of the file.
  const auto v = recognisableData();
  const std::string first(reinterpret_cast<const char*>(v.data()), sizeof(float));
  const size_t dataAt = bytes.find(first);
  ASSERT_NE(dataAt, std::string::npos);
  const uint64_t address = dataAt;
  std::string encoded(8, '\0');
  std::memcpy(encoded.data(), &address, 8);
  const size_t recordAt = bytes.find(encoded);
  ASSERT_NE(recordAt, std::string::npos) << "no layout message holds the data's address";
  const uint64_t far = uint64_t{1} << 40;
  std::memcpy(bytes.data() + recordAt, &far, 8);
  writeFileBytes(file, bytes);
  // HDF5 checksums the object header of a v2 file; either refusal is fine, a crash is not.
  const std::string msg = errorOf([&] { readAll(file); });
  EXPECT_CONTAINS(msg, "'x'");
}

TEST_F(DatasetReaderDamage, NoSingleByteFlipEndsTheProcess) {
  const std::string pristine = readFileBytes(writeData());
  const std::string file = path("flipped.h5");
  int crashes = 0;
  std::string first;
  // Every byte of the file's metadata (the first 2 KiB) and a stride through the rest; each read
  // runs in a child process, so a crash is seen as its signal.
  for (size_t at = 0; at < pristine.size(); at += at < 2048 ? 1 : 61) {
    std::string bytes = pristine;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
    writeFileBytes(file, bytes);
    const int status = statusOfChild([&] {
      try {
        readAll(file);
      } catch (const std::exception&) {
      }
      return 0;
    });
    if (WIFSIGNALED(status)) {
      if (crashes++ == 0) {
        // Kept for a look: the flipped file that ended the reader.
        const std::string kept = ::testing::TempDir() + "xtrain_flipped_data.h5";
        writeFileBytes(kept, bytes);
        first = "offset " + std::to_string(at) + ": signal " + std::to_string(WTERMSIG(status)) +
                " (file kept as " + kept + ")";
      }
    }
  }
  EXPECT_EQ(crashes, 0) << "first: " << first;
}

TEST_F(DatasetReaderDamage, FuzzerFoundDataFilesAreRefusedNotAFault) {
  const fs::path dir = fs::path(XTRAIN_SOURCE_DIR) / "tools/fuzz/regressions/data";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".h5") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    // Each file is damaged: something in it must be refused.
    const int status =
        statusOfChild([&] { return readEveryDataset(entry.path().string()) > 0 ? 0 : 3; });
    EXPECT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << "nothing in the damaged file was refused";
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace xtrain::checkpoint
