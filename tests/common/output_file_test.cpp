// The output-file writer: a regular file is replaced atomically; symbolic links are followed;
// FIFOs and character devices are written through and never replaced; what cannot be written is
// refused with the path and the reason, before any work when checked with checkOutputPath.
#include "common/output_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "testing/error_testing.hpp"
#include "testing/file_testing.hpp"
#include "testing/scratch_dir.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

using OutputFile = ScratchDirTest;

TEST_F(OutputFile, WritesANewFileAndReplacesAnOldOneKeepingItsMode) {
  writeOutputFile(path("m.onnx"), "first", "test");
  EXPECT_EQ(readFileBytes(path("m.onnx")), "first");
  ASSERT_EQ(::chmod(path("m.onnx").c_str(), 0600), 0);
  writeOutputFile(path("m.onnx"), "second", "test");
  EXPECT_EQ(readFileBytes(path("m.onnx")), "second");
  struct stat st {};
  ASSERT_EQ(::stat(path("m.onnx").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(OutputFile, FollowsSymbolicLinksAndKeepsThem) {
  fs::create_directories(dir_ / "real");
  fs::create_symlink("real/target.onnx", dir_ / "link.onnx");  // dangling until written
  writeOutputFile(path("link.onnx"), "through the link", "test");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.onnx"));
  EXPECT_EQ(readFileBytes(path("real/target.onnx")), "through the link");
  fs::create_symlink("link.onnx", dir_ / "link2.onnx");  // a chain
  writeOutputFile(path("link2.onnx"), "again", "test");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link2.onnx"));
  EXPECT_EQ(readFileBytes(path("real/target.onnx")), "again");
  fs::create_symlink("loop", dir_ / "loop");
  EXPECT_CONTAINS(errorOf([&] { writeOutputFile(path("loop"), "x", "--save-model"); }),
                  "symbolic links");
}

TEST_F(OutputFile, WritesThroughAFifoAndLeavesItAFifo) {
  const std::string fifo = path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Nobody reads it: refused at once instead of blocking.
  EXPECT_CONTAINS(errorOf([&] { writeOutputFile(fifo, "x", "--save-model"); }),
                  "no process is reading");
  // A reader opened without blocking; the bytes fit the pipe's buffer, so the write cannot block.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  writeOutputFile(fifo, "model bytes", "--save-model");
  char buf[64] = {};
  const ssize_t n = ::read(reader, buf, sizeof buf);
  ::close(reader);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(std::max<ssize_t>(n, 0))), "model bytes");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(OutputFile, WritesThroughACharacterDeviceAndLeavesItADevice) {
  // A node of its own for /dev/null's device (1, 3): the system's /dev/null is never at risk, even
  // in the code this test guards against.
  const std::string null = path("null");
  if (::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "cannot create a device node here (not root?)";
  }
  writeOutputFile(null, "discarded", "--save-model");
  checkOutputPath(null, "--save-model");
  struct stat st {};
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // /dev/full's device (1, 7): the write fails and says why.
  const std::string full = path("full");
  ASSERT_EQ(::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  EXPECT_CONTAINS(errorOf([&] { writeOutputFile(full, "x", "--save-model"); }), "No space");
  ASSERT_EQ(::lstat(full.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(OutputFile, RefusesWhatCannotBeWrittenBeforeAnyWork) {
  EXPECT_CONTAINS(errorOf([&] { checkOutputPath("", "--save-model"); }),
                  "--save-model needs a file path");
  EXPECT_CONTAINS(errorOf([&] { checkOutputPath(dir_.string(), "--save-model"); }),
                  "it is a directory");
  EXPECT_CONTAINS(errorOf([&] { checkOutputPath(path("missing/dir/out.onnx"), "--save-model"); }),
                  "does not exist");
  std::ofstream(path("file")) << "x";
  EXPECT_CONTAINS(errorOf([&] { checkOutputPath(path("file/out.onnx"), "--save-model"); }),
                  "--save-model");
  EXPECT_CONTAINS(errorOf([&] { writeOutputFile(path("missing/out.onnx"), "x", "export"); }),
                  "export");
  checkOutputPath(path("new.onnx"), "--save-model");  // a new name in a writable directory
}

}  // namespace
}  // namespace xtrain::testing
