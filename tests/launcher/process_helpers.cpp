#include "process_helpers.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace xtrain::launcher::testing {

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Child::Child(const std::vector<std::string>& argv, const std::vector<std::string>& extraEnv) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extraEnv.begin(), extraEnv.end());
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  startSeconds_ = nowSeconds();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);
  ::close(out[1]);
  ::close(err[1]);
  outFd_ = out[0];
  errFd_ = err[0];
}

Child::~Child() {
  if (!reaped_ && pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    wait(5);
  }
  if (outFd_ >= 0) ::close(outFd_);
  if (errFd_ >= 0) ::close(errFd_);
}

void Child::pump(int timeoutMs) {
  pollfd fds[2];
  int n = 0;
  if (outFd_ >= 0) fds[n++] = {outFd_, POLLIN, 0};
  if (errFd_ >= 0) fds[n++] = {errFd_, POLLIN, 0};
  if (n == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeoutMs));
    return;
  }
  if (::poll(fds, static_cast<nfds_t>(n), timeoutMs) <= 0) return;
  for (int i = 0; i < n; ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    char buf[65536];
    ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    bool isOut = fds[i].fd == outFd_;
    if (r <= 0) {
      ::close(fds[i].fd);
      (isOut ? outFd_ : errFd_) = -1;
    } else {
      (isOut ? result_.out : result_.err).append(buf, static_cast<size_t>(r));
    }
  }
}

bool Child::waitForStdout(const std::function<bool(const std::string&)>& ready,
                          double timeoutSeconds) {
  double deadline = nowSeconds() + timeoutSeconds;
  while (nowSeconds() < deadline) {
    if (ready(result_.out)) return true;
    if (outFd_ < 0 && errFd_ < 0) return ready(result_.out);
    pump(20);
  }
  return ready(result_.out);
}

ProcessResult Child::wait(double timeoutSeconds) {
  double deadline = nowSeconds() + timeoutSeconds;
  bool killed = false;
  while (!reaped_) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      result_.seconds = nowSeconds() - startSeconds_;
      result_.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (!killed && nowSeconds() >= deadline) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      result_.timedOut = true;
      killed = true;
      deadline = nowSeconds() + 5;
    } else if (killed && nowSeconds() >= deadline) {
      break;
    }
    pump(10);
  }
  // Drain what is left, but never wait on a pipe a stray process holds open for long.
  double drainUntil = nowSeconds() + 2;
  while ((outFd_ >= 0 || errFd_ >= 0) && nowSeconds() < drainUntil) pump(10);
  return result_;
}

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
