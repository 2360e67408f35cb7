#include "process_helpers.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace xtrain::launcher::testing {

std::string xrunPath() {
  return std::string(XTRAIN_BIN_DIR) + "/xrun";
}

ProcessResult runXrun(const std::vector<std::string>& args, double timeoutSeconds,
                      const std::vector<std::string>& extraEnv) {
  std::vector<std::string> argv{xrunPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  Child child(argv, extraEnv);
  return child.wait(timeoutSeconds);
}

bool processGone(pid_t pid, double timeoutSeconds) {
  double deadline = nowSeconds() + timeoutSeconds;
  for (;;) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string content;
    if (!stat || !std::getline(stat, content)) return true;
    // "pid (comm) S ...": the state follows the last ')'.
    auto paren = content.rfind(')');
    if (paren != std::string::npos && paren + 2 < content.size() && content[paren + 2] == 'Z')
      return true;
    if (nowSeconds() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string makeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "xrun-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

void removeTree(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

std::vector<pid_t> readPids(const std::string& dir, const std::string& prefix) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) != 0) continue;
    std::ifstream in(entry.path());
    long p;
    while (in >> p) pids.push_back(static_cast<pid_t>(p));
  }
  return pids;
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

namespace {

// xrun picks free IPUs from the host's pool. Every xrun (and xtrain) these tests start uses a pool
// of its own (a private XTRAIN_IPU_LOCK_DIR, inherited from this process), so IPUs that other jobs
// on the host hold never change the IPUs the tests expect.
class PrivateIpuPool : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_ = makeTempDir();
    ::setenv("XTRAIN_IPU_LOCK_DIR", dir_.c_str(), 1);
  }
  void TearDown() override { removeTree(dir_); }

 private:
  std::string dir_;
};

[[maybe_unused]] ::testing::Environment* const kPrivatePool =
    ::testing::AddGlobalTestEnvironment(new PrivateIpuPool);

}  // namespace

}  // namespace xtrain::launcher::testing
