// What read() and verify() say about damaged checkpoints: each problem is a CheckpointError naming
// the file and what is wrong, and nothing is returned half-loaded.
#include "checkpoint_testing.hpp"

namespace xtrain::checkpoint::testing {
namespace {

class CheckpointCorruption : public CheckpointTest {
 protected:
  void SetUp() override {
    CheckpointTest::SetUp();
    dir_ = save(root_, 10, sampleParts(1));
  }
  fs::path file(const std::string& name) const { return fs::path(dir_) / name; }

  std::string dir_;
};

TEST_F(CheckpointCorruption, SoundCheckpointVerifies) {
  EXPECT_TRUE(verify(dir_).empty());
  EXPECT_EQ(read(dir_).datasets.size(), 5u);
}

TEST_F(CheckpointCorruption, MissingPartIsNamed) {
  fs::remove(file("part-1.h5"));
  expectCheckpointError([&] { read(dir_); }, {"part-1.h5", "missing"});
  expectCheckpointError([&] { listDatasets(dir_); }, {"part-1.h5", "missing"});
  EXPECT_TRUE(anyProblemHas(verify(dir_), {"part-1.h5", "missing"}));
  // Attributes alone still read (they live in checkpoint.h5).
  EXPECT_EQ(readAttributes(dir_).step, 10);
}

TEST_F(CheckpointCorruption, FlippedDataBytesFailTheChecksum) {
  // The velocity's bytes are unique in part-1.h5: flip a bit in the middle of them.
  ASSERT_TRUE(flipByteOf(file("part-1.h5"), floatTensor({4, 3}, 3), 20));
  expectCheckpointError([&] { read(dir_); },
                        {"part-1.h5", "/optimizer/W1/velocity", "corrupt", "CRC-32"});
  const auto problems = verify(dir_);
  ASSERT_EQ(problems.size(), 1u) << problems[0];
  EXPECT_TRUE(anyProblemHas(problems, {"/optimizer/W1/velocity", "corrupt"}));
  // Structure alone is still sound: listDatasets does not read data.
  EXPECT_EQ(listDatasets(dir_).size(), 5u);
}

TEST_F(CheckpointCorruption, FlippedMetadataBytesAreCaught) {
  // The newest HDF5 file format checksums its superblock and object headers.
  std::string bytes = readFile(file("checkpoint.h5"));
  bytes[12] = static_cast<char>(bytes[12] ^ 0x01);  // inside the superblock
  writeFile(file("checkpoint.h5"), bytes);
  expectCheckpointError([&] { read(dir_); }, {"checkpoint.h5", "corrupt"});
  EXPECT_FALSE(verify(dir_).empty());
}

TEST_F(CheckpointCorruption, TruncatedIndexIsNamed) {
  truncateTo(file("checkpoint.h5"), 0.5);
  expectCheckpointError([&] { read(dir_); }, {"checkpoint.h5", "truncated"});
  expectCheckpointError([&] { readAttributes(dir_); }, {"checkpoint.h5", "truncated"});
}

TEST_F(CheckpointCorruption, TruncatedPartIsNamed) {
  truncateTo(file("part-0.h5"), 0.7);
  expectCheckpointError([&] { read(dir_); }, {"part-0.h5", "truncated"});
  EXPECT_TRUE(anyProblemHas(verify(dir_), {"part-0.h5", "truncated"}));
}

TEST_F(CheckpointCorruption, EmptyFileIsNamed) {
  truncateTo(file("part-0.h5"), 0.0);
  expectCheckpointError([&] { read(dir_); }, {"part-0.h5", "empty"});
}

TEST_F(CheckpointCorruption, NewerFormatVersionIsRefused) {
  Attributes a = sampleAttributes(11);
  a.formatVersion = 2;
  const std::string dir = save(root_, 11, sampleParts(1), a);
  const std::vector<std::string> message = {
      "checkpoint.h5", "written by a newer xtrain (format version 2, this build reads up to 1)"};
  expectCheckpointError([&] { read(dir); }, message);
  expectCheckpointError([&] { readAttributes(dir); }, message);
}

TEST_F(CheckpointCorruption, OtherFormatNameIsRefused) {
  Attributes a = sampleAttributes(12);
  a.formatName = "something-else";
  const std::string dir = save(root_, 12, sampleParts(1), a);
  expectCheckpointError([&] { read(dir); },
                        {"checkpoint.h5", "not an xtrain checkpoint", "something-else"});
}

TEST_F(CheckpointCorruption, NonHdf5FileIsNamed) {
  writeFile(file("checkpoint.h5"), "this is not HDF5 at all, just text that is long enough\n");
  expectCheckpointError([&] { read(dir_); }, {"checkpoint.h5", "not an HDF5 file"});
  // Given directly as the path.
  writeFile(root_ / "notes.txt", "hello\n");
  expectCheckpointError([&] { read((root_ / "notes.txt").string()); },
                        {"notes.txt", "not an HDF5 file"});
  // An HDF5 file that is not a checkpoint index.
  expectCheckpointError([&] { read(file("part-1.h5").string()); },
                        {"part-1.h5", "not an xtrain checkpoint"});
}

TEST_F(CheckpointCorruption, DirectoryWithoutIndexOrMissingPath) {
  fs::create_directories(root_ / "empty");
  expectCheckpointError([&] { read((root_ / "empty").string()); },
                        {"empty", "has no checkpoint.h5"});
  expectCheckpointError([&] { read((root_ / "nowhere").string()); }, {"nowhere", "does not exist"});
  EXPECT_TRUE(anyProblemHas(verify((root_ / "nowhere").string()), {"does not exist"}));
}

TEST_F(CheckpointCorruption, VerifyListsEveryProblem) {
  fs::remove(file("part-0.h5"));
  ASSERT_TRUE(flipByteOf(file("part-1.h5"), floatTensor({4, 3}, 3), 4));
  const auto problems = verify(dir_);
  EXPECT_TRUE(anyProblemHas(problems, {"part-0.h5", "missing"}));
  EXPECT_TRUE(anyProblemHas(problems, {"/optimizer/W1/velocity", "corrupt"}));
  // read() reports them all in one error.
  expectCheckpointError([&] { read(dir_); }, {"problems", "part-0.h5", "velocity"});
}

TEST_F(CheckpointCorruption, SwappedPartsAreCaught) {
  // Parts of another checkpoint (same paths, other bytes) put in place of this one's.
  const std::string other = save(root_, 20, sampleParts(7));
  fs::copy_file(fs::path(other) / "part-0.h5", file("part-0.h5"),
                fs::copy_options::overwrite_existing);
  expectCheckpointError([&] { read(dir_); }, {"part-0.h5", "crc32"});
}

}  // namespace
}  // namespace xtrain::checkpoint::testing
