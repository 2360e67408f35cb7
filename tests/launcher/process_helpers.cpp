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

#include "launcher/restart_policy.hpp"

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

size_t countOccurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::map<std::string, std::string> recordedEnvironment(const std::string& dir, int restart,
                                                       int instance) {
  std::map<std::string, std::string> out;
  std::ifstream in(dir + "/env-" + std::to_string(restart) + "-" + std::to_string(instance));
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::vector<std::string> resumableTraining(const std::string& program,
                                           const std::string& checkpointDir, bool saveModel) {
  std::vector<std::string> args{program,       "--steps",
                                "20",          "--lr",
                                "0.05",        "--momentum",
                                "0.9",         "--checkpoint-dir",
                                checkpointDir, "--checkpoint-every",
                                "5",           "--resume",
                                "auto"};
  if (saveModel) {
    args.push_back("--save-model");
    args.push_back(checkpointDir + ".onnx");
  }
  return args;
}

std::set<std::string> recordedJobIds(const std::string& dir) {
  std::set<std::string> ids;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("env-", 0) != 0 && name.rfind("old-env-", 0) != 0) continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("job=", 0) == 0) ids.insert(line.substr(4));
    }
  }
  return ids;
}

void expectJobLeftNothing(const std::string& dir, const std::string& tmp) {
  for (pid_t p : readPids(dir, "pid"))
    EXPECT_TRUE(processGone(p, 2.0)) << "process " << p << " outlived xrun";
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "xrun left something in its TMPDIR " << tmp;
  for (const auto& id : recordedJobIds(dir)) {
    const std::string prefix = shmSegmentPrefix(id);
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
      EXPECT_NE(e.path().filename().string().rfind(prefix, 0), 0u)
          << "the job left the shared-memory segment " << e.path();
    }
  }
}

}  // namespace xtrain::launcher::testing
