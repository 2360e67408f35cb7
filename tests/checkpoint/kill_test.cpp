// A save killed with SIGKILL at a random moment never leaves the directory without a loadable
// checkpoint: CheckpointDirectory::newestComplete() always names one that read() accepts, holding
// the data of its step.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "checkpoint_testing.hpp"

namespace xtrain::checkpoint::testing {
namespace {

// Big enough (2 parts x 2 MiB) that a save takes a while, so kills land in every stage.
std::vector<std::vector<Dataset>> stepParts(int64_t step) {
  const float s = static_cast<float>(step);
  return {{{"/weights/W", floatTensor({256, 1024}, s)}, {"/weights/B", floatTensor({16}, s)}},
          {{"/optimizer/W/velocity", floatTensor({256, 1024}, -s)},
           {"/state/data", HostTensor::fromVector<int64_t>({1}, {step})}}};
}

// The child: saves steps first, first + 1, ... and prunes, until killed.
[[noreturn]] void saveForever(const fs::path& dir, int64_t first) {
  try {
    for (int64_t step = first;; ++step) {
      const std::string final = (dir / checkpointName(step)).string();
      const std::string staging = final + ".tmp-" + std::to_string(::getpid());
      const auto parts = stepParts(step);
      for (size_t i = 0; i < parts.size(); ++i) writePart(staging, static_cast<int>(i), parts[i]);
      writeIndex(staging, sampleAttributes(step), 2);
      commit(staging, final);
      checkpoint::CheckpointDirectory(dir.string()).prune(2, "");
    }
  } catch (...) {
    ::_exit(3);
  }
}

// Waits for the child to end, at most `limit`; true when it did. Stores its wait status.
bool reap(pid_t pid, std::chrono::milliseconds limit, int& status) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

class CheckpointKilledSave : public CheckpointTest {};

TEST_F(CheckpointKilledSave, LatestCompleteAlwaysLoads) {
  save(root_, 1, stepParts(1));
  std::mt19937 rng(20240501);
  std::uniform_int_distribution<int> delayMs(1, 250);
  int64_t next = 2;
  int interrupted = 0;  // kills that left a save unfinished
  for (int round = 0; round < 12; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) saveForever(root_, next);
    std::this_thread::sleep_for(std::chrono::milliseconds(delayMs(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    if (!reap(pid, std::chrono::seconds(20), status)) {
      ::kill(pid, SIGKILL);
      FAIL() << "the saving child did not end after SIGKILL";
    }
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child failed by itself, status " << status;

    for (const auto& e : fs::directory_iterator(root_)) {
      if (e.path().filename().string().find(".tmp-") != std::string::npos) ++interrupted;
    }
    const auto latest = checkpoint::CheckpointDirectory(root_.string()).newestComplete();
    ASSERT_TRUE(latest.has_value()) << "round " << round;
    Contents c;
    ASSERT_NO_THROW(c = read(*latest)) << "round " << round << ": " << *latest;
    const int64_t step = c.attributes.step;
    EXPECT_EQ(fs::path(*latest).filename(), checkpointName(step));
    const auto parts = stepParts(step);
    for (const auto& part : parts) {
      for (const auto& d : part) EXPECT_TRUE(sameBytes(c.datasets.at(d.path), d.value)) << d.path;
    }
    for (const auto& l : checkpoint::CheckpointDirectory(root_.string()).list()) {
      next = std::max(next, l.step + 1);
    }
  }
  RecordProperty("interrupted_saves", interrupted);
  EXPECT_GT(interrupted, 0) << "no kill landed inside a save; the test proved nothing";
  // The leftovers go with the next prune.
  checkpoint::CheckpointDirectory(root_.string()).prune(2);
  for (const auto& e : fs::directory_iterator(root_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
    EXPECT_EQ(e.path().filename().string().find(".old-"), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace xtrain::checkpoint::testing
