// The one way xtrain writes a file through a temporary (common/temporary_file.hpp, issue 27): an
// unforeseeable name created O_EXCL|O_NOFOLLOW, so that nothing another user planted beside an
// output (a link to a victim, a file, a FIFO) is ever opened; writeOutputFile and replaceOwnFile
// on top of it.
#include "common/temporary_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <set>
#include <string>

#include "common/file_descriptor.hpp"
#include "common/output_file.hpp"
#include "testing/error_testing.hpp"
#include "testing/file_testing.hpp"
#include "testing/planted_files.hpp"
#include "testing/scratch_dir.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

using TemporaryFile = ScratchDirTest;

TEST_F(TemporaryFile, NamesAreHiddenUnforeseeableAndNeverFileDotTmp) {
  std::set<std::string> names;
  for (int i = 0; i < 100; ++i) {
    const SiblingTemporary tmp(path("report.json"));
    const std::string name = fs::path(tmp.path()).filename().string();
    EXPECT_EQ(fs::path(tmp.path()).parent_path(), dir_);
    EXPECT_EQ(name.rfind(".report.json.tmp-", 0), 0u) << name;
    EXPECT_EQ(name.size(), std::string(".report.json.tmp-").size() + 16) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 100u) << "the names repeat";
  // A name as long as the file system allows still gives a temporary name it allows.
  const std::string longName(255, 'n');
  SiblingTemporary tmp(path(longName));
  FileDescriptor fd(tmp.create());
  EXPECT_GE(fd.get(), 0) << std::strerror(errno);
}

// Whatever holds the name drawn is skipped: another name is drawn and the file created fresh.
TEST_F(TemporaryFile, ANameAlreadyTakenIsNeverOpened) {
  PlantedTemporaries planted(path("victim"));
  SiblingTemporary tmp(path("out"));
  const std::string taken = tmp.path();
  fs::create_symlink(path("victim"), taken);
  {
    FileDescriptor fd(tmp.create());
    ASSERT_GE(fd.get(), 0) << std::strerror(errno);
    EXPECT_NE(tmp.path(), taken);
    ASSERT_EQ(::write(fd.get(), "new", 3), 3);
  }
  ASSERT_TRUE(tmp.publish());
  EXPECT_EQ(readFileBytes(path("out")), "new");
  EXPECT_EQ(readFileBytes(path("victim")), PlantedTemporaries::kVictimText);
  EXPECT_TRUE(fs::is_symlink(taken));
  EXPECT_EQ(namesIn(dir_),
            (std::set<std::string>{"out", "victim", fs::path(taken).filename().string()}));
}

// publish() replaces a symbolic link at the target, never writes through it; a temporary not
// published is removed.
TEST_F(TemporaryFile, PublishReplacesALinkAndDiscardRemoves) {
  PlantedTemporaries planted(path("victim"));
  fs::create_symlink(path("victim"), path("out"));
  {
    SiblingTemporary tmp(path("out"));
    FileDescriptor fd(tmp.create());
    ASSERT_GE(fd.get(), 0);
    ASSERT_TRUE(tmp.publish());
  }
  EXPECT_FALSE(fs::is_symlink(path("out")));
  EXPECT_EQ(readFileBytes(path("victim")), PlantedTemporaries::kVictimText);
  {
    SiblingTemporary tmp(path("dropped"));
    FileDescriptor fd(tmp.create());
    ASSERT_GE(fd.get(), 0);
  }  // destroyed unpublished
  EXPECT_EQ(namesIn(dir_), (std::set<std::string>{"out", "victim"}));
}

class PlantedBesideOutput : public ScratchDirTest,
                            public ::testing::WithParamInterface<PlantKind> {};

TEST_P(PlantedBesideOutput, WriteOutputFileAndReplaceOwnFileWriteThroughNothing) {
  PlantedTemporaries planted(path("victim"));
  planted.plantBeside({path("model.onnx"), path("report.json")}, GetParam());
  writeOutputFile(path("model.onnx"), "model", "--save-model");
  replaceOwnFile(path("report.json"), "{}", "autoReport");
  writeOutputFile(path("model.onnx"), "model 2", "--save-model");  // over an existing file too
  replaceOwnFile(path("report.json"), "{\"runs\":2}", "autoReport");
  EXPECT_EQ(readFileBytes(path("model.onnx")), "model 2");
  EXPECT_EQ(readFileBytes(path("report.json")), "{\"runs\":2}");
  planted.expectUntouched();
  std::set<std::string> expected = planted.names();
  expected.insert({"model.onnx", "report.json"});
  EXPECT_EQ(namesIn(dir_), expected);
}

INSTANTIATE_TEST_SUITE_P(Planted, PlantedBesideOutput,
                         ::testing::Values(PlantKind::SymlinkToVictim, PlantKind::RegularFile,
                                           PlantKind::Fifo));

// A name xtrain chose in a directory (autoReport's files, logDir's) is replaced whatever holds
// it: a link planted under it is not followed, a FIFO not written to; a file keeps its mode.
TEST_F(TemporaryFile, ReplaceOwnFileReplacesWhatIsThereAndNeverFollows) {
  PlantedTemporaries planted(path("victim"));
  fs::create_symlink(path("victim"), path("summary.txt"));
  replaceOwnFile(path("summary.txt"), "summary", "autoReport");
  EXPECT_FALSE(fs::is_symlink(path("summary.txt")));
  EXPECT_EQ(readFileBytes(path("summary.txt")), "summary");
  EXPECT_EQ(readFileBytes(path("victim")), PlantedTemporaries::kVictimText);
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  replaceOwnFile(path("fifo"), "now a file", "autoReport");  // nobody reads it: no blocking
  EXPECT_EQ(readFileBytes(path("fifo")), "now a file");
  ASSERT_EQ(::chmod(path("summary.txt").c_str(), 0640), 0);
  replaceOwnFile(path("summary.txt"), "again", "autoReport");
  struct stat st {};
  ASSERT_EQ(::stat(path("summary.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  fs::create_directory(path("dir"));
  expectError([&] { replaceOwnFile(path("dir"), "x", "autoReport"); },
              {"autoReport", "dir", "directory"});
  expectError([&] { replaceOwnFile(path("missing/x"), "x", "autoReport"); },
              {"autoReport", "missing/x"});
}

}  // namespace
}  // namespace xtrain::testing
