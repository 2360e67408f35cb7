// FileStore on its own: what the file layout promises beyond the Store contract (store_test.cpp
// runs that contract over both stores): processes meet through it, keys of any characters stay
// apart and inside the job's directory, readers never see half a value, add() refuses a
// non-counter.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "comm/store.hpp"
#include "comm/types.hpp"
#include "testing/error_testing.hpp"
#include "testing/scratch_dir.hpp"

namespace xtrain::comm {
namespace {

class FileStoreTest : public xtrain::testing::ScratchDirTest {};

TEST_F(FileStoreTest, AddIsAtomicAcrossProcesses) {
  constexpr int kProcesses = 4;
  constexpr int kAdds = 40;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        FileStore s(dir_, "job", Milliseconds(10000));
        for (int i = 0; i < kAdds; ++i) s.add("counter", 1);
        s.set("done" + std::to_string(p), "1");
      } catch (...) {
        code = 1;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  FileStore s(dir_, "job", Milliseconds(10000));
  std::vector<std::string> done;
  for (int p = 0; p < kProcesses; ++p) done.push_back("done" + std::to_string(p));
  EXPECT_TRUE(s.check(done));
  EXPECT_EQ(s.get("counter"), std::to_string(kProcesses * kAdds));
}

TEST_F(FileStoreTest, KeysOfAnyCharactersStayApartAndInsideTheJobDirectory) {
  FileStore s(dir_, "job/with slashes", Milliseconds(1000));
  EXPECT_EQ(s.directory().parent_path(), dir_);
  const std::vector<std::string> keys{"a/b", "a%2Fb", "../escape", "..", ".", "x y\tz", "\xff\x01"};
  for (size_t i = 0; i < keys.size(); ++i) s.set(keys[i], "value " + std::to_string(i));
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(s.get(keys[i]), "value " + std::to_string(i));
  // Every key is one plain file inside the job's directory; nothing else was written.
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_)) {
    if (e.is_regular_file()) {
      ++files;
      EXPECT_EQ(e.path().parent_path(), s.directory()) << e.path();
    }
  }
  EXPECT_EQ(files, keys.size());
}

TEST_F(FileStoreTest, AReaderNeverSeesHalfAValue) {
  FileStore writer(dir_, "job", Milliseconds(5000));
  FileStore reader(dir_, "job", Milliseconds(5000));
  const std::string a(1 << 18, 'a'), b(1 << 18, 'b');
  writer.set("big", a);
  std::atomic<bool> stop{false};
  std::thread w([&] {
    for (int i = 0; !stop; ++i) writer.set("big", i % 2 ? b : a);
  });
  int torn = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string v = reader.get("big");
    if (v != a && v != b) ++torn;
  }
  stop = true;
  w.join();
  EXPECT_EQ(torn, 0);
}

TEST_F(FileStoreTest, AddRefusesAValueThatIsNotACounter) {
  FileStore s(dir_, "job", Milliseconds(1000));
  s.set("name", "twelve");
  EXPECT_CONTAINS(xtrain::testing::errorOf([&] { s.add("name", 1); }), "'twelve', not a counter");
  EXPECT_EQ(s.get("name"), "twelve");  // left as it was
  EXPECT_EQ(s.add("fresh", -3), -3);   // a missing key counts from 0
  EXPECT_EQ(s.add("fresh", 5), 2);
}

TEST_F(FileStoreTest, TimeoutNamesTheDirectoryTheJobAndOnlyTheMissingKeys) {
  FileStore s(dir_, "job", Milliseconds(30));
  s.set("here", "1");
  const std::string message = xtrain::testing::errorOf([&] { s.wait({"here", "absent"}); });
  EXPECT_CONTAINS(message, s.directory().string());
  EXPECT_CONTAINS(message, "job 'job'");
  EXPECT_CONTAINS(message, "absent");
  const std::string keys = message.substr(message.find("waiting for keys"));
  EXPECT_EQ(keys.find("here"), std::string::npos) << message;
}

// Strangers on a shared /tmp: every key is a 0600 file of its own; a symbolic link or a directory
// open to others under the store's name is refused, never followed or used.
TEST_F(FileStoreTest, KeysAre0600AndPlantedLinksOrOpenDirectoriesAreRefused) {
  {
    FileStore s(dir_, "private", Milliseconds(1000));
    s.set("k", "v");
    s.add("n", 2);
    for (const auto& entry : std::filesystem::directory_iterator(s.directory())) {
      struct stat st {};
      ASSERT_EQ(::lstat(entry.path().c_str(), &st), 0);
      EXPECT_TRUE(S_ISREG(st.st_mode)) << entry.path();
      EXPECT_EQ(st.st_mode & 0777, 0600u) << entry.path();
    }
  }
  const auto elsewhere = dir_ / "elsewhere";
  std::filesystem::create_directory(elsewhere);
  std::filesystem::permissions(elsewhere, std::filesystem::perms::owner_all);
  std::filesystem::create_directory_symlink(elsewhere, dir_ / "xtrain-job-planted");
  try {
    FileStore s(dir_, "planted", Milliseconds(1000));
    ADD_FAILURE() << "a symbolic link was taken for the store's directory";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a directory (a symbolic link is refused)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere));
  std::filesystem::create_directory(dir_ / "xtrain-job-open");
  std::filesystem::permissions(dir_ / "xtrain-job-open", std::filesystem::perms::all);
  try {
    FileStore s(dir_, "open", Milliseconds(1000));
    ADD_FAILURE() << "a directory open to others was used";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("has mode 0777, open to other users"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace xtrain::comm
