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
  a.formatVersion = kFormatVersion + 1;
  const std::string dir = save(root_, 11, sampleParts(1), a);
  const std::vector<std::string> message = {
      "checkpoint.h5", "written by a newer xtrain (format version 4, this build reads up to 3)"};
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
  // Its seal catches it before HDF5 looks at it; without one (format version 1) HDF5 does.
  expectCheckpointError([&] { read(dir_); }, {"checkpoint.h5", "damaged"});
  fs::remove(file("seal"));
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

// HDF5 does not checksum all of the index (the global heap of its string attributes, for one): a
// flipped byte there used to crash the library inside verify(). The seal is checked first, so
// every flipped byte is reported as damage, whichever byte it is.
TEST_F(CheckpointCorruption, EveryFlippedIndexByteIsDamageNotACrash) {
  const fs::path index = file("checkpoint.h5");
  const std::string sound = readFile(index);
  ASSERT_GT(sound.size(), 1000u);
  for (size_t offset = 0; offset < sound.size(); ++offset) {
    flipByteAt(index, offset);
    const auto problems = verify(dir_);
    ASSERT_TRUE(anyProblemHas(problems, {"checkpoint.h5", "damaged"}))
        << "byte " << offset << ": " << (problems.empty() ? "no problem" : problems.front());
    flipByteAt(index, offset);
  }
  EXPECT_EQ(readFile(index), sound);
  EXPECT_TRUE(verify(dir_).empty());
}

TEST_F(CheckpointCorruption, DamagedSealIsNamed) {
  writeFile(file("seal"), "xtrain-checkpoint-seal 1\ncheckpoint.h5 12 zz\n");
  expectCheckpointError([&] { read(dir_); }, {"seal", "damaged"});
  EXPECT_TRUE(anyProblemHas(verify(dir_), {"seal", "damaged"}));
  // Removed: a format-2 index without a seal is damage too (though parsed: nothing else to check).
  fs::remove(file("seal"));
  expectCheckpointError([&] { readAttributes(dir_); }, {"seal", "missing", "damaged"});
}

TEST_F(CheckpointCorruption, NegativeOrHugeStepIsDamage) {
  ASSERT_TRUE(rewriteRootInt64(dir_, "step", -7));
  EXPECT_TRUE(anyProblemHas(verify(dir_), {"checkpoint.h5", "damaged", "'step' is -7"}));
  expectCheckpointError([&] { readAttributes(dir_); }, {"'step' is -7"});
  const auto listed = checkpoint::CheckpointDirectory(root_.string()).list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_FALSE(listed[0].complete);
  EXPECT_EQ(checkpoint::CheckpointDirectory(root_.string()).newestComplete(), std::nullopt);
  ASSERT_TRUE(rewriteRootInt64(dir_, "step", 1'000'000'000'000'000));
  EXPECT_TRUE(anyProblemHas(verify(dir_), {"'step' is 1000000000000000"}));
  ASSERT_TRUE(rewriteRootInt64(dir_, "instances", 0));
  EXPECT_TRUE(anyProblemHas(verify(dir_), {"'instances' is 0"}));
  // ... and no such checkpoint is written in the first place.
  Attributes a = sampleAttributes(-5);
  expectCheckpointError([&] { save(root_, 3, sampleParts(1), a); }, {"step -5"});
}

// Checkpoints of format version 1 have no seal: still read, verified and resumable.
TEST_F(CheckpointCorruption, FormatVersion1WithoutSealStillReads) {
  Attributes a = sampleAttributes(12);
  a.formatVersion = 1;
  const std::string old = save(root_, 12, sampleParts(2), a);
  fs::remove(fs::path(old) / "seal");
  EXPECT_TRUE(verify(old).empty());
  EXPECT_EQ(read(old).attributes.formatVersion, 1);
  EXPECT_EQ(checkpoint::CheckpointDirectory(root_.string()).newestComplete(), old);
}

}  // namespace
}  // namespace xtrain::checkpoint::testing
