#include "metrics_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "common/output_file.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::tools {

namespace {

// The shortest text that reads back as the same value (std::to_chars), so a float such as the
// learning rate 0.01 is written 0.01, not 0.009999999776482582.
template <typename T>
void appendNumber(std::string& out, T v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char text[64];
  const auto r = std::to_chars(text, text + sizeof text, v);
  out.append(text, r.ptr);
}

class JsonObject {
 public:
  template <typename T>
  void add(const char* key, T value) {
    out_ += out_.empty() ? "{\"" : ",\"";
    out_ += key;
    out_ += "\":";
    appendNumber(out_, value);
  }
  template <typename T>
  void addIfSet(const char* key, const std::optional<T>& value) {
    if (value) add(key, *value);
  }
  std::string text() && { return std::move(out_) + "}"; }

 private:
  std::string out_;
};

}  // namespace

std::string metricsLine(const StepMetrics& m) {
  JsonObject o;
  o.add("step", m.step);
  o.add("epoch", m.epoch);
  o.add("loss", m.loss);
  o.add("lr", m.learningRate);
  o.add("step_time_s", m.stepSeconds);
  o.add("samples_per_s", m.samplesPerSecond);
  o.add("reduction_share", m.reductionShare);
  o.add("loss_scale", m.lossScale);
  o.addIfSet("grad_norm", m.gradientNorm);
  o.addIfSet("val_loss", m.validationLoss);
  o.addIfSet("val_accuracy", m.validationAccuracy);
  o.addIfSet("val_samples", m.validationSamples);
  o.add("wall_time", m.wallTime);
  return std::move(o).text();
}

namespace {

// O_APPEND: every line lands at the end, also after a resumed run's earlier lines. O_NONBLOCK only
// while opening: a FIFO that nobody reads is refused rather than waited for.
int openForAppending(const std::string& path) {
  checkOutputPath(path, "--metrics");
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666);
  if (fd < 0) {
    if (errno == ENXIO) {
      throw error("--metrics: cannot write '{}': it is a FIFO that no process is reading", path);
    }
    throw error("--metrics: cannot open '{}' for writing: {}", path, std::strerror(errno));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

}  // namespace

MetricsFile::MetricsFile(const std::string& path, bool append)
    : path_(path), fd_(openForAppending(path)), truncatePending_(!append) {}

void MetricsFile::write(const StepMetrics& m) {
  if (failed_) return;
  const std::string line = metricsLine(m) + "\n";
  auto fail = [&](const char* doing) {
    failed_ = true;
    logging::warn("--metrics: {} '{}' failed ({}); the later steps' metrics are not written", doing,
                  path_, std::strerror(errno));
  };
  if (truncatePending_) {
    truncatePending_ = false;
    // Only a regular file has anything to empty (ftruncate fails on /dev/null or a pipe).
    struct stat st {};
    if (::fstat(fd_.get(), &st) == 0 && S_ISREG(st.st_mode) && ::ftruncate(fd_.get(), 0) != 0) {
      return fail("emptying");
    }
  }
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_.get(), line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("writing to");
    done += static_cast<size_t>(n);
  }
}

}  // namespace xtrain::tools
