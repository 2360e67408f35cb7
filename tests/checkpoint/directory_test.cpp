// A checkpoint directory: list, latestComplete and prune, with staging directories of unfinished
// saves and checkpoints that are incomplete.
#include "checkpoint_testing.hpp"

namespace xtrain::checkpoint::testing {
namespace {

class CheckpointDirectory : public CheckpointTest {
 protected:
  std::string latestFile() const {
    std::string s = readFile(root_ / "latest");
    while (!s.empty() && (s.back() == '\n')) s.pop_back();
    return s;
  }
  // An unfinished save: parts written, no index, never committed.
  std::string stage(int64_t step, const std::string& tag) {
    const std::string staging = (root_ / checkpointName(step)).string() + ".tmp-" + tag;
    writePart(staging, 0, sampleParts(0)[0]);
    return staging;
  }
};

TEST_F(CheckpointDirectory, ListIsOrderedAndIgnoresStagingAndForeignEntries) {
  save(root_, 20, sampleParts(1));
  save(root_, 3, sampleParts(2));
  stage(30, "killed");
  fs::create_directories(root_ / "notes");
  writeFile(root_ / "ckpt-00000040", "a file, not a directory");
  const auto listed = list(root_.string());
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].step, 3);
  EXPECT_EQ(listed[1].step, 20);
  EXPECT_EQ(fs::path(listed[1].path).filename(), "ckpt-00000020");
  for (const auto& l : listed) {
    EXPECT_TRUE(l.complete);
    EXPECT_EQ(l.creationTime, "2024-05-01T12:00:00Z");
    EXPECT_GT(l.bytes, 12u * 4u);
  }
  EXPECT_TRUE(list((root_ / "does-not-exist").string()).empty());
}

TEST_F(CheckpointDirectory, IncompleteCheckpointsAreListedAsSuch) {
  const std::string a = save(root_, 1, sampleParts(1));
  const std::string b = save(root_, 2, sampleParts(2));
  fs::remove(fs::path(b) / "part-1.h5");
  const auto listed = list(root_.string());
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_TRUE(listed[0].complete);
  EXPECT_FALSE(listed[1].complete);
  EXPECT_EQ(listed[1].step, 2);  // from the name when the checkpoint cannot vouch for itself
  // latest names the incomplete one: the newest complete one is chosen instead.
  EXPECT_EQ(latestFile(), "ckpt-00000002");
  EXPECT_EQ(latestComplete(root_.string()), a);
}

TEST_F(CheckpointDirectory, LatestNamesTheNewestCommit) {
  EXPECT_EQ(latestComplete(root_.string()), std::nullopt);
  EXPECT_EQ(latestComplete((root_ / "nothing-here").string()), std::nullopt);
  save(root_, 1, sampleParts(1));
  const std::string two = save(root_, 2, sampleParts(2));
  EXPECT_EQ(latestFile(), "ckpt-00000002");
  EXPECT_EQ(latestComplete(root_.string()), two);
  stage(3, "running");
  EXPECT_EQ(latestComplete(root_.string()), two);
  // latest is followed even when a higher step exists (e.g. the job was rolled back and saved
  // an earlier step last).
  const std::string one = save(root_, 1, sampleParts(3));
  EXPECT_EQ(latestFile(), "ckpt-00000001");
  EXPECT_EQ(latestComplete(root_.string()), one);
  // Without latest: the highest complete step.
  fs::remove(root_ / "latest");
  EXPECT_EQ(latestComplete(root_.string()), two);
}

TEST_F(CheckpointDirectory, PruneKeepsTheNewestAndRemovesLeftovers) {
  for (int step = 1; step <= 5; ++step) save(root_, step, sampleParts(static_cast<float>(step)));
  const std::string killed = stage(6, "killed");
  const std::string active = stage(7, "active");
  fs::create_directories(root_ / "ckpt-00000002.old-99");  // a replacement interrupted midway
  prune(root_.string(), 2, active);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root_)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ckpt-00000004", "ckpt-00000005",
                                             "ckpt-00000007.tmp-active", "latest"}));
  EXPECT_EQ(latestComplete(root_.string()), (root_ / "ckpt-00000005").string());
  // Without an active staging directory it goes too.
  prune(root_.string(), 2);
  EXPECT_FALSE(fs::exists(active));
  EXPECT_TRUE(fs::exists(root_ / "ckpt-00000004"));
  expectCheckpointError([&] { prune(root_.string(), 0); }, {"keep"});
}

TEST_F(CheckpointDirectory, PruneKeepsTheCheckpointLatestNames) {
  for (int step = 1; step <= 3; ++step) save(root_, step, sampleParts(0));
  save(root_, 1, sampleParts(1));  // latest -> ckpt-00000001
  prune(root_.string(), 1);
  EXPECT_TRUE(fs::exists(root_ / "ckpt-00000001"));
  EXPECT_TRUE(fs::exists(root_ / "ckpt-00000003"));
  EXPECT_FALSE(fs::exists(root_ / "ckpt-00000002"));
}

TEST_F(CheckpointDirectory, PruneLeavesIncompleteCheckpointsAlone) {
  save(root_, 1, sampleParts(0));
  const std::string two = save(root_, 2, sampleParts(0));
  save(root_, 3, sampleParts(0));
  fs::remove(fs::path(two) / "part-0.h5");
  prune(root_.string(), 1);
  EXPECT_TRUE(fs::exists(two));  // kept for inspection: it is not a complete checkpoint
  EXPECT_FALSE(fs::exists(root_ / "ckpt-00000001"));
}

}  // namespace
}  // namespace xtrain::checkpoint::testing
