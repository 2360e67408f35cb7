// A checkpoint directory (CheckpointDirectory): list, newestComplete, prune and the lock, with
// staging directories of unfinished saves and checkpoints that are incomplete.
#include <sys/wait.h>

#include <optional>

#include "checkpoint/durable_files.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint_testing.hpp"

namespace xtrain::checkpoint::testing {
namespace {

class CheckpointDirectory : public CheckpointTest {
 protected:
  checkpoint::CheckpointDirectory dir() const {
    return checkpoint::CheckpointDirectory(root_.string());
  }
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
  const auto listed = dir().list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].step, 3);
  EXPECT_EQ(listed[1].step, 20);
  EXPECT_EQ(fs::path(listed[1].path).filename(), "ckpt-00000020");
  for (const auto& l : listed) {
    EXPECT_TRUE(l.complete);
    EXPECT_EQ(l.creationTime, "2024-05-01T12:00:00Z");
    EXPECT_GT(l.bytes, 12u * 4u);
  }
  EXPECT_TRUE(checkpoint::CheckpointDirectory((root_ / "does-not-exist").string()).list().empty());
}

TEST_F(CheckpointDirectory, IncompleteCheckpointsAreListedAsSuch) {
  const std::string a = save(root_, 1, sampleParts(1));
  const std::string b = save(root_, 2, sampleParts(2));
  fs::remove(fs::path(b) / "part-1.h5");
  const auto listed = dir().list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_TRUE(listed[0].complete);
  EXPECT_FALSE(listed[1].complete);
  EXPECT_EQ(listed[1].step, 2);  // from the name when the checkpoint cannot vouch for itself
  // latest names the incomplete one: the newest complete one is chosen instead.
  EXPECT_EQ(latestFile(), "ckpt-00000002");
  EXPECT_EQ(dir().newestComplete(), a);
}

TEST_F(CheckpointDirectory, LatestNamesTheNewestCommit) {
  EXPECT_EQ(dir().newestComplete(), std::nullopt);
  EXPECT_EQ(checkpoint::CheckpointDirectory((root_ / "nothing-here").string()).newestComplete(),
            std::nullopt);
  save(root_, 1, sampleParts(1));
  const std::string two = save(root_, 2, sampleParts(2));
  EXPECT_EQ(latestFile(), "ckpt-00000002");
  EXPECT_EQ(dir().newestComplete(), two);
  stage(3, "running");
  EXPECT_EQ(dir().newestComplete(), two);
  // latest is followed even when a higher step exists (e.g. the job was rolled back and saved
  // an earlier step last).
  const std::string one = save(root_, 1, sampleParts(3));
  EXPECT_EQ(latestFile(), "ckpt-00000001");
  EXPECT_EQ(dir().newestComplete(), one);
  // Without latest: the highest complete step.
  fs::remove(root_ / "latest");
  EXPECT_EQ(dir().newestComplete(), two);
}

TEST_F(CheckpointDirectory, PruneKeepsTheNewestAndRemovesLeftovers) {
  for (int step = 1; step <= 5; ++step) save(root_, step, sampleParts(static_cast<float>(step)));
  const std::string killed = stage(6, "killed");
  const std::string active = stage(7, "active");
  fs::create_directories(root_ / "ckpt-00000002.old-99");  // a replacement interrupted midway
  dir().prune(2, active);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root_)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ckpt-00000004", "ckpt-00000005",
                                             "ckpt-00000007.tmp-active", "latest"}));
  EXPECT_EQ(dir().newestComplete(), (root_ / "ckpt-00000005").string());
  // Without an active staging directory it goes too.
  dir().prune(2);
  EXPECT_FALSE(fs::exists(active));
  EXPECT_TRUE(fs::exists(root_ / "ckpt-00000004"));
  expectCheckpointError([&] { dir().prune(0); }, {"keep"});
}

// A replacement cut between its two renames (where directories cannot be exchanged, as on NFS):
// "ckpt-N" is missing, its old copy is "ckpt-N.old-<pid>" and the new one still staged. prune puts
// the complete staged copy back in place rather than deleting both; with only the old copy
// complete, that one.
TEST_F(CheckpointDirectory, PruneRestoresACheckpointAnInterruptedReplacementLeftOut) {
  const fs::path other = root_ / "elsewhere";
  for (bool stagedComplete : {true, false}) {
    SCOPED_TRACE(stagedComplete ? "staged copy complete" : "staged copy incomplete");
    fs::remove_all(root_);
    fs::create_directories(other);
    save(root_, 4, sampleParts(4));
    const std::string five = save(root_, 5, sampleParts(5));
    fs::rename(five, root_ / "ckpt-00000005.old-99");
    const fs::path staged = root_ / "ckpt-00000005.tmp-otherhost-1-abc";
    fs::rename(save(other, 5, sampleParts(50)), staged);
    if (!stagedComplete) fs::remove(staged / "part-1.h5");
    ASSERT_EQ(latestFile(), "ckpt-00000005");
    // Before prune, a resume reads the copy where it is.
    const auto order = dir().resumeOrder();
    ASSERT_FALSE(order.empty());
    EXPECT_EQ(fs::path(order.front().path).filename(),
              stagedComplete ? staged.filename() : fs::path("ckpt-00000005.old-99"));
    EXPECT_EQ(order.front().step, 5);
    dir().prune(1);
    ASSERT_TRUE(fs::exists(five)) << "the checkpoint latest names was deleted";
    EXPECT_FALSE(fs::exists(root_ / "ckpt-00000005.old-99"));
    EXPECT_FALSE(fs::exists(root_ / "ckpt-00000004"));  // pruned as usual: keep 1
    EXPECT_EQ(dir().newestComplete(), five);
    // Which copy: the weights of the staged save (50) or of the old one (5).
    const Contents c = read(five);
    const float w = c.datasets.at("/weights/W1").data<float>()[0];
    EXPECT_EQ(w, floatTensor({4, 3}, stagedComplete ? 50.0f : 5.0f).data<float>()[0]);
  }
}

// Only canonical names are checkpoints xtrain wrote: "ckpt-10" (a user's copy, say) is neither
// listed nor pruned; a symlink loop under a checkpoint name is skipped, not thrown.
TEST_F(CheckpointDirectory, NonCanonicalNamesAndSymlinkLoopsAreLeftAlone) {
  save(root_, 1, sampleParts(1));
  save(root_, 2, sampleParts(2));
  fs::create_directories(root_ / "copies");
  save(root_ / "copies", 10, sampleParts(10));
  fs::rename(root_ / "copies" / "ckpt-00000010", root_ / "ckpt-10");
  fs::create_symlink(root_ / "ckpt-00000009", root_ / "ckpt-00000009");  // a loop
  const auto listed = dir().list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[1].step, 2);
  dir().prune(1);
  EXPECT_TRUE(fs::exists(root_ / "ckpt-10"));
  EXPECT_TRUE(fs::is_symlink(root_ / "ckpt-00000009"));
  EXPECT_FALSE(fs::exists(root_ / "ckpt-00000001"));
}

TEST_F(CheckpointDirectory, PruneKeepsTheCheckpointLatestNames) {
  for (int step = 1; step <= 3; ++step) save(root_, step, sampleParts(0));
  save(root_, 1, sampleParts(1));  // latest -> ckpt-00000001
  dir().prune(1);
  EXPECT_TRUE(fs::exists(root_ / "ckpt-00000001"));
  EXPECT_TRUE(fs::exists(root_ / "ckpt-00000003"));
  EXPECT_FALSE(fs::exists(root_ / "ckpt-00000002"));
}

TEST_F(CheckpointDirectory, PruneLeavesIncompleteCheckpointsAlone) {
  save(root_, 1, sampleParts(0));
  const std::string two = save(root_, 2, sampleParts(0));
  save(root_, 3, sampleParts(0));
  fs::remove(fs::path(two) / "part-0.h5");
  dir().prune(1);
  EXPECT_TRUE(fs::exists(two));  // kept for inspection: it is not a complete checkpoint
  EXPECT_FALSE(fs::exists(root_ / "ckpt-00000001"));
}

// A checkpoint of format version 1 (no seal), or a user's copy of one: prune cannot tell that
// xtrain wrote it, so it stays, whatever --keep-last says.
TEST_F(CheckpointDirectory, PruneKeepsCheckpointsWithoutASeal) {
  Attributes old = sampleAttributes(1);
  old.formatVersion = 1;
  save(root_, 1, sampleParts(0), old);
  fs::remove(root_ / "ckpt-00000001" / "seal");
  for (int step = 2; step <= 4; ++step) save(root_, step, sampleParts(0));
  dir().prune(1);
  EXPECT_TRUE(fs::exists(root_ / "ckpt-00000001" / "checkpoint.h5"))
      << "not written by this xtrain";
  EXPECT_FALSE(fs::exists(root_ / "ckpt-00000002"));
  EXPECT_FALSE(fs::exists(root_ / "ckpt-00000003"));
  EXPECT_TRUE(fs::exists(root_ / "ckpt-00000004"));
  // Still resumable: it is a complete checkpoint.
  fs::remove_all(root_ / "ckpt-00000004");
  fs::remove(root_ / "latest");
  EXPECT_EQ(dir().newestComplete(), (root_ / "ckpt-00000001").string());
}

// Directories that merely look like leftovers of a save ("ckpt-*.tmp-*", "ckpt-*.old-*") but hold
// a user's files are not xtrain's to delete.
TEST_F(CheckpointDirectory, PruneKeepsUserDirectoriesThatLookLikeLeftovers) {
  save(root_, 1, sampleParts(0));
  fs::create_directories(root_ / "ckpt-00000001.tmp-mine" / "notes");
  fs::create_directories(root_ / "ckpt-00000001.old-backup");
  writeFile(root_ / "ckpt-00000001.old-backup" / "README", "keep me");
  fs::create_directories(root_ / "ckpt-notes.tmp-x");
  const std::string killed = stage(2, "killed");
  dir().prune(1);
  EXPECT_TRUE(fs::exists(root_ / "ckpt-00000001.tmp-mine" / "notes"));
  EXPECT_EQ(readFile(root_ / "ckpt-00000001.old-backup" / "README"), "keep me");
  EXPECT_TRUE(fs::exists(root_ / "ckpt-notes.tmp-x"));
  EXPECT_FALSE(fs::exists(killed)) << "a killed save's staging directory still goes";
}

// Saving a step whose name a user's directory (or an unsealed checkpoint) holds moves it aside
// instead of replacing, and so deleting, it.
TEST_F(CheckpointDirectory, CommitSetsAsideWhatXtrainDidNotWrite) {
  fs::create_directories(root_ / "ckpt-00000001");
  writeFile(root_ / "ckpt-00000001" / "notes.txt", "mine");
  const std::string one = save(root_, 1, sampleParts(0));
  EXPECT_TRUE(verify(one).empty());
  const std::string kept = one + ".kept-" + std::to_string(::getpid());
  EXPECT_EQ(readFile(fs::path(kept) / "notes.txt"), "mine");
  // Not listed, not pruned.
  EXPECT_EQ(dir().list().size(), 1u);
  save(root_, 2, sampleParts(0));
  dir().prune(1);
  EXPECT_TRUE(fs::exists(kept));
  // A sealed checkpoint of the same step is replaced as before (nothing else set aside).
  save(root_, 2, sampleParts(1));
  EXPECT_FALSE(fs::exists(root_ / ("ckpt-00000002.kept-" + std::to_string(::getpid()))));
}

// Staging names are unique per job, with or without a launcher's job id, and say whose they are,
// so prune() removes a killed job's staging directory but not one a live job is writing.
TEST_F(CheckpointDirectory, StagingNamesAreUniqueAndPruneSparesLiveJobs) {
  const std::string final = (root_ / checkpointName(5)).string();
  const StagingOwner me = thisProcessAsStagingOwner();
  StagingOwner other = me;
  other.nonce ^= 1;
  EXPECT_NE(stagingDirectory(final, me), stagingDirectory(final, other));
  EXPECT_NE(stagingDirectory(final, me), stagingDirectory(final, thisProcessAsStagingOwner()));
  const auto parsed = stagingOwnerOf(baseName(stagingDirectory(final, me)));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->host, me.host);
  EXPECT_EQ(parsed->pid, me.pid);
  EXPECT_EQ(parsed->nonce, me.nonce);
  EXPECT_FALSE(stagingOwnerOf("ckpt-00000005.tmp-job").has_value());

  // A live job: this test's parent process. A dead one: a child that has exited.
  StagingOwner live = me;
  live.pid = ::getppid();
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);
  StagingOwner dead = me;
  dead.pid = child;
  EXPECT_TRUE(ownerAlive(live));
  EXPECT_FALSE(ownerAlive(dead));
  const std::string liveDir = stagingDirectory(final, live);
  const std::string deadDir = stagingDirectory(final, dead);
  writePart(liveDir, 0, sampleParts(0)[0]);
  writePart(deadDir, 0, sampleParts(0)[0]);
  save(root_, 1, sampleParts(0));
  dir().prune(1);
  EXPECT_TRUE(fs::exists(liveDir));
  EXPECT_FALSE(fs::exists(deadDir));
}

// --resume auto tries the checkpoint `latest` names, then the others newest first.
TEST_F(CheckpointDirectory, ResumeOrderStartsWithLatestThenNewestFirst) {
  for (int step = 1; step <= 3; ++step) save(root_, step, sampleParts(0));
  save(root_, 2, sampleParts(1));  // latest -> ckpt-00000002
  std::vector<std::string> names;
  for (const auto& l : dir().resumeOrder()) names.push_back(baseName(l.path));
  EXPECT_EQ(names, (std::vector<std::string>{"ckpt-00000002", "ckpt-00000003", "ckpt-00000001"}));
  EXPECT_TRUE(checkpoint::CheckpointDirectory((root_ / "none").string()).resumeOrder().empty());
}

// A checkpoint saved under a name of the caller's choosing (saveCheckpoint(DIR/run 1)) after the
// ckpt-<step> ones is the newest commit: a resume tries it first (list() and prune ignore it).
TEST_F(CheckpointDirectory, ResumeOrderStartsWithACustomNamedLatest) {
  for (int step = 1; step <= 2; ++step) save(root_, step, sampleParts(0));
  const std::string custom = (root_ / "run 1").string();
  const std::string staging = custom + ".tmp-test";
  for (size_t i = 0; i < 2; ++i) writePart(staging, static_cast<int>(i), sampleParts(1)[i]);
  writeIndex(staging, sampleAttributes(5), 2);
  commit(staging, custom);
  ASSERT_EQ(dir().latestName(), "run 1");
  const auto order = dir().resumeOrder();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0].path, custom);
  EXPECT_EQ(order[0].step, 5);
  EXPECT_TRUE(order[0].complete);
  EXPECT_EQ(baseName(order[1].path), "ckpt-00000002");
  EXPECT_EQ(dir().list().size(), 2u);
}

// Names and `latest` as every user of a checkpoint directory sees them.
TEST_F(CheckpointDirectory, NamesLatestAndStagingCount) {
  EXPECT_EQ(dir().checkpointPath(7), (root_ / "ckpt-00000007").string());
  EXPECT_EQ(dir().latestName(), "");
  dir().pointLatestAt("ckpt-00000007");
  EXPECT_EQ(readFile(root_ / "latest"), "ckpt-00000007\n");
  EXPECT_EQ(dir().latestName(), "ckpt-00000007");
  dir().checkLatestIsReplaceable();
  // A name of the caller's choosing may hold a space: `latest` names it whole.
  dir().pointLatestAt("run 1");
  EXPECT_EQ(dir().latestName(), "run 1");
  EXPECT_EQ(dir().stagingCount(), 0u);
  stage(8, "killed");
  EXPECT_EQ(dir().stagingCount(), 1u);
  EXPECT_TRUE(layout::isReservedName(".xtrain-lock"));
}

// One job per directory: a second lock is refused, naming the holder, until the first is released.
TEST_F(CheckpointDirectory, LockIsExclusiveAndReleasedWithItsHolder) {
  std::optional<checkpoint::CheckpointDirectory::Lock> held = dir().lock();
  EXPECT_EQ(readFile(root_ / ".xtrain-lock"), std::to_string(::getpid()));
  try {
    (void)dir().lock();
    FAIL() << "a second lock of the directory was granted";
  } catch (const DirectoryInUse& e) {
    EXPECT_EQ(e.holder(), std::to_string(::getpid()));
    EXPECT_EQ(e.lockFile(), (root_ / ".xtrain-lock").string());
  }
  checkpoint::CheckpointDirectory::Lock moved = std::move(*held);
  held.reset();  // a moved-from lock holds nothing
  EXPECT_THROW((void)dir().lock(), DirectoryInUse);
  moved = checkpoint::CheckpointDirectory::Lock();
  EXPECT_NO_THROW((void)dir().lock());
  expectCheckpointError(
      [&] { (void)checkpoint::CheckpointDirectory((root_ / "none").string()).lock(); },
      {"cannot create its lock file", "none"});
}

}  // namespace
}  // namespace xtrain::checkpoint::testing
