// Stores: in-memory and file, with bounded waits and job isolation.
#include <algorithm>
#include <atomic>
#include <filesystem>

#include "comm_test_util.hpp"

namespace xtrain::comm {
namespace {

using namespace testing;

// One directory per test; a parameterised test's name ("Case/1") would make a nested one, whose
// parent TearDown would leave behind, so '/' becomes '_'.
std::filesystem::path freshDir(std::string name) {
  std::replace(name.begin(), name.end(), '/', '_');
  auto dir = std::filesystem::temp_directory_path() /
             ("xtrain-store-test-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

enum class Kind { Memory, File };

class StoreTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    dir_ = freshDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::shared_ptr<Store> make(const std::string& job) {
    if (GetParam() == Kind::Memory) return std::make_shared<InMemoryStore>(job, Milliseconds(5000));
    return std::make_shared<FileStore>(dir_, job, Milliseconds(5000));
  }
  std::filesystem::path dir_;
};

TEST_P(StoreTest, SetGetOverwriteAndBinaryValues) {
  auto s = make("job1");
  s->set("a", "1");
  EXPECT_EQ(s->get("a"), "1");
  s->set("a", std::string("x\0y", 3));
  EXPECT_EQ(s->get("a"), std::string("x\0y", 3));
  s->set("odd/key with spaces%", "v");
  EXPECT_EQ(s->get("odd/key with spaces%"), "v");
  EXPECT_TRUE(s->check({"a", "odd/key with spaces%"}));
  EXPECT_FALSE(s->check({"a", "b"}));
}

TEST_P(StoreTest, GetWaitsForALaterSet) {
  auto s = make("job1");
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    s->set("late", "here");
  });
  EXPECT_EQ(s->get("late", Milliseconds(5000)), "here");
  writer.join();
}

TEST_P(StoreTest, WaitTimesOutNamingTheMissingKeys) {
  auto s = make("job1");
  s->set("present", "");
  const auto t0 = std::chrono::steady_clock::now();
  try {
    s->wait({"present", "absent"}, Milliseconds(100));
    FAIL();
  } catch (const CommTimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("[absent]"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_THROW(s->get("absent", Milliseconds(50)), CommTimeoutError);
}

TEST_P(StoreTest, AddIsAtomicAcrossThreads) {
  auto s = make("job1");
  const auto errors = runThreads(8, [&](int) {
    for (int i = 0; i < 50; ++i) s->add("counter", 1);
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(s->add("counter", 0), 400);
  EXPECT_EQ(s->get("counter"), "400");
  s->set("text", "abc");
  EXPECT_THROW(s->add("text", 1), error);
}

TEST_P(StoreTest, JobsDoNotMeet) {
  auto a = make("jobA");
  auto b = make("jobB");
  a->set("k", "a");
  EXPECT_FALSE(b->check({"k"}));
  b->set("k", "b");
  EXPECT_EQ(a->get("k"), "a");
  EXPECT_EQ(b->get("k"), "b");
}

TEST_P(StoreTest, PrefixStoreSeparatesKeySpaces) {
  auto base = make("job1");
  PrefixStore p1(base, "c1"), p2(base, "c2");
  p1.set("k", "1");
  EXPECT_FALSE(p2.check({"k"}));
  EXPECT_EQ(base->get("c1/k"), "1");
  EXPECT_EQ(p1.add("n", 2), 2);
}

INSTANTIATE_TEST_SUITE_P(All, StoreTest, ::testing::Values(Kind::Memory, Kind::File),
                         [](const auto& info) {
                           return info.param == Kind::Memory ? "Memory" : "File";
                         });

TEST(FileStore, LivesInAJobPrivateDirectory) {
  const auto dir = freshDir("private");
  FileStore s(dir, "my job", Milliseconds(1000));
  EXPECT_EQ(s.directory(), dir / "xtrain-job-my%20job");
  const auto perms = std::filesystem::status(s.directory()).permissions();
  EXPECT_EQ(perms & std::filesystem::perms::all, std::filesystem::perms::owner_all);
  s.set("k", "v");
  // A second store object on the same directory and job (another process, in real use) sees the
  // key.
  FileStore again(dir, "my job", Milliseconds(1000));
  EXPECT_EQ(again.get("k"), "v");
  EXPECT_THROW(FileStore(dir, "", Milliseconds(1000)), error);
  std::filesystem::remove_all(dir);
}

// The inproc backend meets through either store.
TEST(FileStore, InprocWorldOverAFileStore) {
  const auto dir = freshDir("inproc");
  auto store = std::make_shared<FileStore>(dir, "job", Milliseconds(5000));
  std::vector<int32_t> got(3);
  const auto errors = runThreads(3, [&](int r) {
    auto comm = createCommunicator(CommConfig{store, r, 3, "world", Milliseconds(5000)}, "inproc");
    int32_t v = r;
    comm->allReduceSync(viewOf(&v, 1, DataType::INT32));
    got[static_cast<size_t>(r)] = v;
  });
  EXPECT_EQ(errors, (std::vector<std::string>{"", "", ""}));
  EXPECT_EQ(got, (std::vector<int32_t>{3, 3, 3}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xtrain::comm
