// `xtrain` outputs (--save-model, --trace, --metrics) that name a file it reads or keeps (issue
// 27):
// `--resume ck/ckpt-00000002 --trace ck/ckpt-00000002/part-0.h5` once exited 0 and left a
// checkpoint that no longer verified. Every such output is refused with exit 2, naming both flags
// and the path, before anything is written, however the path reaches the file: directly, through
// `..`, a symbolic link (a dangling one too) or a hard link.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpoint_directory.hpp"
#include "testing/file_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

class XtrainOutputPaths : public ScratchDirTest {
 protected:
  // ck/ckpt-00000001, ck/ckpt-00000002 and ck/latest, from two steps of the built-in example.
  void SetUp() override {
    ScratchDirTest::SetUp();
    ck_ = path("ck");
    const CommandResult r =
        runCommand("./xtrain --steps 2 --checkpoint-every 1 --checkpoint-dir " + ck_);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    ckpt_ = ck_ + "/ckpt-00000002";
    ASSERT_TRUE(checkpoint::verify(ckpt_).empty());
    before_ = snapshot();
  }

  // Every regular file under ck/ and its bytes.
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(ck_)) {
      if (e.is_regular_file()) files[e.path().string()] = readFileBytes(e.path().string());
    }
    return files;
  }

  // Exit code 2, every fragment in the output, and ck/ as it was.
  void expectRefused(const std::string& args, const std::vector<std::string>& fragments) {
    SCOPED_TRACE(args);
    const CommandResult r = runCommand("./xtrain --steps 3 " + args);
    EXPECT_EQ(r.exitCode, 2) << r.output;
    for (const auto& f : fragments) EXPECT_NE(r.output.find(f), std::string::npos) << r.output;
    EXPECT_FALSE(std::regex_search(r.output, std::regex("(^|\n)step +[0-9]")))
        << "trained before refusing:\n"
        << r.output;
    EXPECT_TRUE(snapshot() == before_) << "ck/ changed";
    EXPECT_TRUE(checkpoint::verify(ckpt_).empty());
  }

  std::string ck_, ckpt_;
  std::map<std::string, std::string> before_;
};

TEST_F(XtrainOutputPaths, AFileOfTheResumedCheckpointIsNoOutput) {
  const std::string resume = "--resume " + ckpt_ + " ";
  for (const std::string flag : {"--trace", "--save-model", "--metrics"}) {
    for (const std::string file : {"part-0.h5", "checkpoint.h5", "seal"}) {
      const std::string out = ckpt_ + "/" + file;
      expectRefused(resume + flag + " " + out,
                    {flag + " " + out + " lies inside --resume " + ckpt_});
    }
  }
  // A new name inside it is refused too: the directory is a checkpoint, not a place for outputs.
  expectRefused(resume + "--trace " + ckpt_ + "/trace.json", {"lies inside --resume " + ckpt_});
  expectRefused(resume + "--metrics " + ckpt_, {"--metrics " + ckpt_ + " is the same file as"});
  // Reached through `..`.
  const std::string dotted = ck_ + "/ckpt-00000001/../ckpt-00000002/part-0.h5";
  expectRefused(resume + "--trace " + dotted, {"--trace " + dotted, "--resume " + ckpt_});
}

TEST_F(XtrainOutputPaths, LinksIntoTheResumedCheckpointAreSeenThrough) {
  const std::string resume = "--resume " + ckpt_ + " ";
  fs::create_directory_symlink(ckpt_, dir_ / "alias");
  expectRefused(resume + "--save-model " + path("alias/checkpoint.h5"),
                {"--save-model " + path("alias/checkpoint.h5"), "--resume " + ckpt_});
  // Writing follows a dangling link and creates its target: inside the checkpoint.
  fs::create_symlink(ckpt_ + "/new.json", dir_ / "dangling.json");
  expectRefused(resume + "--trace " + path("dangling.json"), {"lies inside --resume " + ckpt_});
  // A hard link: --metrics of a resumed run appends to it, into the part file.
  fs::create_hard_link(ckpt_ + "/part-0.h5", dir_ / "figures.jsonl");
  expectRefused(resume + "--metrics " + path("figures.jsonl"),
                {"--metrics " + path("figures.jsonl") + " is a hard link to",
                 "part-0.h5' of --resume " + ckpt_});
}

TEST_F(XtrainOutputPaths, TheCheckpointDirectorysOwnNamesAreNoOutputs) {
  const std::string resumeAuto = "--resume auto --checkpoint-dir " + ck_ + " ";
  // The checkpoint --resume auto picks, and the pointer it moves.
  expectRefused(resumeAuto + "--save-model " + ckpt_ + "/checkpoint.h5",
                {"--save-model " + ckpt_ + "/checkpoint.h5 lies inside --checkpoint-dir " + ck_,
                 "'ckpt-00000002'"});
  expectRefused(resumeAuto + "--trace " + ck_ + "/latest",
                {"--trace " + ck_ + "/latest lies inside --checkpoint-dir " + ck_, "'latest'"});
  expectRefused(resumeAuto + "--metrics " + ck_ + "/ckpt-00000001/part-0.h5",
                {"--metrics", "'ckpt-00000001'"});
  fs::create_hard_link(ck_ + "/latest", dir_ / "pointer.json");
  expectRefused(
      resumeAuto + "--trace " + path("pointer.json"),
      {"--trace " + path("pointer.json") + " is a hard link to", "--checkpoint-dir " + ck_});
  // A fresh run into a directory that does not exist yet: the names it is about to write.
  const std::string fresh = path("fresh");
  for (const std::string name : {"latest", "ckpt-00000003", ".xtrain-lock"}) {
    expectRefused("--checkpoint-dir " + fresh + " --trace " + fresh + "/" + name,
                  {"--trace " + fresh + "/" + name + " lies inside --checkpoint-dir " + fresh,
                   "'" + name + "'"});
  }
  EXPECT_FALSE(fs::exists(fresh));
}

TEST_F(XtrainOutputPaths, OtherNamesInTheCheckpointDirectoryAreTheUsers) {
  // Figures and a trace beside the checkpoints are what a user expects to be able to keep there.
  const CommandResult r = runCommand("./xtrain --steps 3 --resume auto --checkpoint-dir " + ck_ +
                                     " --metrics " + ck_ + "/metrics.jsonl --trace " + ck_ +
                                     "/trace.json --save-model " + ck_ + "/model.onnx");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(fs::is_regular_file(ck_ + "/metrics.jsonl"));
  EXPECT_TRUE(fs::is_regular_file(ck_ + "/trace.json"));
  EXPECT_TRUE(fs::is_regular_file(ck_ + "/model.onnx"));
  for (const auto& l : checkpoint::CheckpointDirectory(ck_).list()) {
    EXPECT_TRUE(checkpoint::verify(l.path).empty()) << l.path;
  }
  EXPECT_EQ(readFileBytes(ck_ + "/latest"), "ckpt-00000003\n");
}

// A `latest` that xtrain did not write is the user's: a run into that directory refuses before
// training instead of failing at its first checkpoint or replacing the file.
TEST_F(XtrainOutputPaths, AUsersLatestInTheCheckpointDirectoryIsRefusedUpFront) {
  const std::string users = path("users");
  fs::create_directories(users);
  writeFileBytes(users + "/latest", "notes of mine\n");
  const CommandResult r = runCommand("./xtrain --steps 2 --checkpoint-dir " + users);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--checkpoint-dir '" + users + "'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is not a `latest` pointer xtrain wrote"), std::string::npos) << r.output;
  EXPECT_EQ(readFileBytes(users + "/latest"), "notes of mine\n");
}

}  // namespace
}  // namespace xtrain::testing
