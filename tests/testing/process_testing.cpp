#include "testing/process_testing.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace xtrain::testing {

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value) {
    ::setenv(name, value, 1);
  } else {
    ::unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    ::setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

namespace {

// `word` as one single-quoted sh word.
std::string shellQuoted(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

CommandResult runCommand(const std::string& commandLine, const CommandOptions& options) {
  const std::string cwd = options.cwd.empty() ? std::string(XTRAIN_BIN_DIR) : options.cwd;
  const std::string cmd = "cd " + shellQuoted(cwd) + " && timeout " +
                          std::to_string(options.timeoutSeconds) + " sh -c " +
                          shellQuoted(commandLine) + " 2>&1";
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

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
  return waitForOutput(result_.out, ready, timeoutSeconds);
}

bool Child::waitForStderr(const std::function<bool(const std::string&)>& ready,
                          double timeoutSeconds) {
  return waitForOutput(result_.err, ready, timeoutSeconds);
}

// `output` is result_.out or result_.err, which pump() appends to.
bool Child::waitForOutput(const std::string& output,
                          const std::function<bool(const std::string&)>& ready,
                          double timeoutSeconds) {
  double deadline = nowSeconds() + timeoutSeconds;
  while (nowSeconds() < deadline) {
    if (ready(output)) return true;
    if (outFd_ < 0 && errFd_ < 0) return ready(output);
    pump(20);
  }
  return ready(output);
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

}  // namespace xtrain::testing
