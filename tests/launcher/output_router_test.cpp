// The output router without processes: bytes in, lines out on xrun's stdout and stderr (files
// here), in the per-instance files, and in the failure witness.
#include "launcher/output_router.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "process_helpers.hpp"

namespace xtrain::launcher {
namespace {

// An anonymous file standing in for xrun's stdout or stderr.
class Captured {
 public:
  Captured() : fd_(::memfd_create("xrun-router-test", MFD_CLOEXEC)) {}
  ~Captured() { ::close(fd_); }
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;
  int fd() const { return fd_; }
  std::string text() const {
    std::string out(static_cast<size_t>(::lseek(fd_, 0, SEEK_END)), '\0');
    EXPECT_EQ(::pread(fd_, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
    return out;
  }

 private:
  int fd_;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct XrunOutputRouter : ::testing::Test {
  Captured out, err;
  LocalJobSpec spec;
  void SetUp() override {
    spec.stdoutFd = out.fd();
    spec.stderrFd = err.fd();
  }
  void localJob(int n) { spec.envPerInstance.assign(static_cast<size_t>(n), {}); }
  void engineJob(EngineTag tag, int n) {
    spec.envPerInstance.assign(1, {});
    EngineMode e;
    e.tag = tag;
    e.name = tag == EngineTag::Mpirun ? "mpirun" : "srun";
    e.numInstances = n;
    spec.engine = e;
  }
};

TEST_F(XrunOutputRouter, TagsWholeLinesPerInstanceAndFlushesTheRestAtTheEnd) {
  localJob(2);
  FailureWitness witness(2, std::nullopt);
  OutputRouter router(spec, witness);
  router.feed(0, Stream::Stdout, "hel");
  router.feed(1, Stream::Stdout, "one\ntw");
  router.feed(0, Stream::Stdout, "lo\n");
  router.feed(1, Stream::Stderr, "bad\n");
  router.endOfStream(1, Stream::Stdout);
  router.message("a note");
  EXPECT_EQ(out.text(), "[1] one\n[0] hello\n[1] tw\n");
  EXPECT_EQ(err.text(), "[1] bad\nxrun: a note\n");
  EXPECT_EQ(witness.instanceFailure(1, 5, W_EXITCODE(1, 0), 0),
            "instance 1 (pid 5) exited with code 1; its last stderr lines: \"bad\"");
}

TEST_F(XrunOutputRouter, FilesGetEveryLineUntaggedAndTheFilterOnlyWhatItLetsThrough) {
  localJob(2);
  const std::string dir = testing::makeTempDir();
  spec.outputDir = dir + "/out";
  spec.output.onlyInstance = 1;
  spec.output.format = TagFormat::Mpi;
  FailureWitness witness(2, std::nullopt);
  {
    OutputRouter router(spec, witness);
    router.openFiles();
    router.feed(0, Stream::Stdout, "loss 0.5\n");
    router.feed(0, Stream::Stderr, "a note\nERROR: out of memory\n");
    router.feed(1, Stream::Stdout, "loss 0.4\n");
  }
  EXPECT_EQ(out.text(), "[1,1]<stdout>:loss 0.4\n");
  EXPECT_EQ(err.text(), "[1,0]<stderr>:ERROR: out of memory\n");
  EXPECT_EQ(readFile(spec.outputDir + "/instance-0.out"), "loss 0.5\n");
  EXPECT_EQ(readFile(spec.outputDir + "/instance-0.err"), "a note\nERROR: out of memory\n");
  EXPECT_EQ(readFile(spec.outputDir + "/instance-1.out"), "loss 0.4\n");
  EXPECT_EQ(readFile(spec.outputDir + "/instance-1.err"), "");
  testing::removeTree(dir);
}

TEST_F(XrunOutputRouter, RefusesAnOutputFileThatIsASymbolicLink) {
  localJob(1);
  const std::string dir = testing::makeTempDir();
  spec.outputDir = dir;
  std::filesystem::create_symlink(dir + "/elsewhere", dir + "/instance-0.err");
  FailureWitness witness(1, std::nullopt);
  OutputRouter router(spec, witness);
  try {
    router.openFiles();
    ADD_FAILURE() << "a symbolic link was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("it is a symbolic link, which xrun refuses"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/elsewhere"));
  testing::removeTree(dir);
}

TEST_F(XrunOutputRouter, SrunLinesKeepTheirTagOrLoseItAndTheEnginesOwnAreAlwaysPrinted) {
  engineJob(EngineTag::Srun, 2);
  spec.output.onlyInstance = 0;
  FailureWitness witness(2, spec.engine);
  OutputRouter router(spec, witness);
  router.feed(0, Stream::Stdout, "0: step 1\n1: step 1\n");
  router.feed(0, Stream::Stderr, "srun: error: n1: task 1: Exited with exit code 3\n5: late\n");
  EXPECT_EQ(out.text(), "0: step 1\n");
  EXPECT_EQ(err.text(), "srun: error: n1: task 1: Exited with exit code 3\n5: late\n");
  EXPECT_EQ(witness.blamedInstance(), 1);

  spec.output = OutputPolicy{};
  spec.output.tag = false;
  Captured out2;
  spec.stdoutFd = out2.fd();
  OutputRouter untagged(spec, witness);
  untagged.feed(0, Stream::Stdout, "1: step 2\n");
  EXPECT_EQ(out2.text(), "step 2\n");
}

TEST_F(XrunOutputRouter, MpirunPiecesAreJoinedAndFlushedAtTheEnd) {
  engineJob(EngineTag::Mpirun, 2);
  const std::string dir = testing::makeTempDir();
  spec.outputDir = dir;
  FailureWitness witness(2, spec.engine);
  OutputRouter router(spec, witness);
  router.openFiles();
  router.feed(0, Stream::Stderr, "[1,1]<stderr>:xtrain: [1,0]<stderr>:zero");
  router.feed(0, Stream::Stderr, "\n[1,1]<stderr>:bad thing\n");
  router.feed(0, Stream::Stderr, "[1,0]<stderr>:unterminated");
  EXPECT_EQ(err.text(), "[1,0]<stderr>:zero\n[1,1]<stderr>:xtrain: bad thing\n");
  router.endOfStream(0, Stream::Stderr);
  router.closeFiles();
  EXPECT_EQ(err.text(),
            "[1,0]<stderr>:zero\n[1,1]<stderr>:xtrain: bad thing\n[1,0]<stderr>:unterminated\n");
  EXPECT_EQ(readFile(dir + "/instance-1.err"), "xtrain: bad thing\n");
  EXPECT_EQ(readFile(dir + "/instance-0.err"), "zero\nunterminated\n");
  EXPECT_EQ(witness.engineFailure(3, W_EXITCODE(1, 0)),
            "mpirun (pid 3) exited with code 1; nothing on stderr");
  testing::removeTree(dir);
}

}  // namespace
}  // namespace xtrain::launcher
