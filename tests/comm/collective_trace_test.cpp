// CollectiveTrace, the ring of the last collectives each instance keeps for xrun's hang report: the
// file it makes (0600, never through a symlink), what a slot holds from entry to end, and the ring.
// QueuedCommunicator's recording is checked end to end by tests/launcher/hang_report_test.cpp.
#include "comm/collective_trace.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

namespace xtrain::comm {
namespace {

namespace fs = std::filesystem;

class CollectiveTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "xtrain-trace-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The slots of the file at `path`, oldest first.
  static std::vector<trace::Slot> slots(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes(trace::kFileSize);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_EQ(in.gcount(), static_cast<std::streamsize>(trace::kFileSize));
    std::vector<trace::Slot> out;
    for (uint32_t i = 0; i < trace::kSlots; ++i) {
      trace::Slot s{};
      EXPECT_TRUE(trace::readSlot(trace::slotsOf(bytes.data())[i], s));
      if (s.state != static_cast<uint32_t>(trace::State::Empty)) out.push_back(s);
    }
    std::sort(out.begin(), out.end(),
              [](const trace::Slot& a, const trace::Slot& b) { return a.ticket < b.ticket; });
    return out;
  }

  std::string dir_;
};

TEST_F(CollectiveTraceTest, RecordsEntryAndEnd) {
  const std::string path = dir_ + "/" + trace::fileName(3);
  auto t = CollectiveTrace::create(path, 3);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(static_cast<size_t>(st.st_size), trace::kFileSize);

  const int64_t before = monotonicNanoseconds();
  const uint64_t a = t->enter("world", 1, 4, "allReduce", 7, 400, "gradient bucket of w");
  const uint64_t b =
      t->enter("a-group-name-longer-than-the-slot-holds-so-it-is-cut", 0, 2, "broadcast", 0, 8);
  t->end(a, trace::State::Finished);
  t->end(b, trace::State::Failed, trace::Failure::Timeout);
  const uint64_t c = t->enter("world", 1, 4, "barrier", 8, 0);

  std::ifstream in(path, std::ios::binary);
  trace::Header h{};
  in.read(reinterpret_cast<char*>(&h), sizeof h);
  EXPECT_EQ(std::string(h.magic, 8), std::string(trace::kMagic, 8));
  EXPECT_EQ(h.instance, 3);
  EXPECT_EQ(h.pid, ::getpid());
  EXPECT_EQ(h.claims, 3u);

  const auto s = slots(path);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].ticket, a);
  EXPECT_STREQ(s[0].group, "world");
  EXPECT_STREQ(s[0].op, "allReduce");
  EXPECT_STREQ(s[0].label, "gradient bucket of w");
  EXPECT_STREQ(s[1].label, "");
  EXPECT_EQ(s[0].seq, 7u);
  EXPECT_EQ(s[0].bytes, 400u);
  EXPECT_EQ(s[0].rank, 1);
  EXPECT_EQ(s[0].size, 4);
  EXPECT_GE(s[0].startNs, before);
  EXPECT_GE(s[0].endNs, s[0].startNs);
  EXPECT_EQ(s[0].state, static_cast<uint32_t>(trace::State::Finished));
  EXPECT_EQ(std::string(s[1].group).size(), sizeof s[1].group - 1);
  EXPECT_EQ(s[1].state, static_cast<uint32_t>(trace::State::Failed));
  EXPECT_EQ(s[1].failure, static_cast<uint32_t>(trace::Failure::Timeout));
  EXPECT_EQ(s[2].ticket, c);
  EXPECT_EQ(s[2].state, static_cast<uint32_t>(trace::State::Entered));
  EXPECT_EQ(s[2].endNs, 0);
  for (const auto& slot : s) EXPECT_EQ(slot.version % 2, 0u);
}

TEST_F(CollectiveTraceTest, TheRingKeepsTheLastSlots) {
  const std::string path = dir_ + "/" + trace::fileName(0);
  auto t = CollectiveTrace::create(path, 0);
  const uint64_t total = trace::kSlots + 44;
  uint64_t first = 0;
  for (uint64_t i = 0; i < total; ++i) {
    const uint64_t ticket = t->enter("world", 0, 1, "allReduce", i, 4);
    if (i == 0) first = ticket;
    t->end(ticket, trace::State::Finished);
  }
  // The first slot was reused: ending it again changes nothing.
  t->end(first, trace::State::Failed, trace::Failure::Other);
  const auto s = slots(path);
  ASSERT_EQ(s.size(), trace::kSlots);
  EXPECT_EQ(s.front().seq, total - trace::kSlots);
  EXPECT_EQ(s.back().seq, total - 1);
  for (const auto& slot : s) EXPECT_EQ(slot.state, static_cast<uint32_t>(trace::State::Finished));
}

TEST_F(CollectiveTraceTest, NeverWritesThroughASymlinkAndReplacesAnOldFile) {
  const std::string target = dir_ + "/target";
  { std::ofstream(target) << "keep me"; }
  const std::string path = dir_ + "/" + trace::fileName(1);
  fs::create_symlink(target, path);
  auto t = CollectiveTrace::create(path, 1);
  EXPECT_FALSE(fs::is_symlink(path));
  std::ifstream in(target);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "keep me");
  t.reset();
  // An earlier run's file is replaced by a fresh one.
  auto again = CollectiveTrace::create(path, 1);
  (void)again->enter("world", 0, 1, "barrier", 0, 0);
  EXPECT_EQ(slots(path).size(), 1u);
  EXPECT_THROW(CollectiveTrace::create(dir_ + "/missing/dir/file", 0), std::exception);
}

}  // namespace
}  // namespace xtrain::comm
