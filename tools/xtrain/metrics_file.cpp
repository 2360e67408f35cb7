#include "metrics_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/json_writer.hpp"
#include "common/output_file.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::tools {

// Numbers in json::Reals::Shortest: the shortest text that reads back as the same value of its
// own type, so a float such as the learning rate 0.01 is written 0.01, not 0.009999999776482582.
std::string metricsLine(const StepMetrics& m) {
  std::string line;
  json::Sink out(line);
  json::Writer o(out, json::Reals::Shortest);
  o.beginObject();
  o.field("step", m.step);
  o.field("epoch", m.epoch);
  o.field("loss", m.loss);
  o.field("lr", m.learningRate);
  o.field("step_time_s", m.stepSeconds);
  o.field("samples_per_s", m.samplesPerSecond);
  o.field("reduction_share", m.reductionShare);
  o.field("loss_scale", m.lossScale);
  if (m.gradientNorm) o.field("grad_norm", *m.gradientNorm);
  if (m.validationLoss) o.field("val_loss", *m.validationLoss);
  if (m.validationAccuracy) o.field("val_accuracy", *m.validationAccuracy);
  if (m.validationSamples) o.field("val_samples", *m.validationSamples);
  o.field("wall_time", m.wallTime);
  o.endObject();
  return line;
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
    : path_(path), fd_(openForAppending(path)), append_(append) {}

namespace {

// The size of the regular file behind `fd`; -1 for anything else (a pipe or a device, which has no
// end to cut back to).
off_t regularFileSize(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return st.st_size;
}

// Where the last whole line of the file written through `writeFd` ends (0 when it has none): its
// size when it is empty or ends with a newline, or when it cannot be read back.
off_t endOfLastWholeLine(const std::string& path, int writeFd, off_t size) {
  // The descriptor is write-only (a FIFO opened for reading too would count as its own reader):
  // the file is opened again to read, and must be the same file.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  struct stat reading {};
  struct stat writing {};
  if (fd.get() < 0 || ::fstat(fd.get(), &reading) != 0 || ::fstat(writeFd, &writing) != 0 ||
      reading.st_dev != writing.st_dev || reading.st_ino != writing.st_ino) {
    return size;
  }
  char buffer[4096];
  off_t end = size;
  while (end > 0) {
    const off_t from = end > static_cast<off_t>(sizeof buffer) ? end - sizeof buffer : 0;
    const ssize_t n = ::pread(fd.get(), buffer, static_cast<size_t>(end - from), from);
    if (n != static_cast<ssize_t>(end - from)) return size;
    for (ssize_t i = n; i > 0; --i) {
      if (buffer[i - 1] == '\n') return from + i;
    }
    end = from;
  }
  return 0;
}

}  // namespace

void MetricsFile::write(const StepMetrics& m) {
  if (failed_) return;
  const std::string line = metricsLine(m) + "\n";
  auto fail = [&](const char* doing, const std::string& after) {
    failed_ = true;
    logging::warn("--metrics: {} '{}' failed ({}){}; the later steps' metrics are not written",
                  doing, path_, std::strerror(errno), after);
  };
  const off_t size = regularFileSize(fd_.get());
  if (firstWrite_) {
    firstWrite_ = false;
    if (!append_) {
      // Only a regular file has anything to empty (ftruncate fails on /dev/null or a pipe).
      if (size > 0 && ::ftruncate(fd_.get(), 0) != 0) return fail("emptying", "");
    } else if (size > 0) {
      // A resumed run appends: a torn last line left by an earlier writer (one killed in the
      // middle of a line) would swallow this run's first line, so it goes.
      const off_t whole = endOfLastWholeLine(path_, fd_.get(), size);
      if (whole < size) {
        if (::ftruncate(fd_.get(), whole) != 0) return fail("cutting the torn last line of", "");
        logging::warn(
            "--metrics: '{}' ended in a torn line ({} bytes without a newline); it was "
            "removed before appending",
            path_, size - whole);
      }
    }
  }
  // The line goes whole or not at all: a short write (a full disk, a file size limit) is cut back
  // to where the line began, so that the file never ends in half a line that a reader would
  // refuse. Later steps are not written: a line missing in the middle would pass for a complete
  // record.
  const off_t lineStart = regularFileSize(fd_.get());
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_.get(), line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;  // no progress and no reason: not to be retried forever
      if (done == 0) return fail("writing to", "");
      const int err = errno;
      const bool cut = lineStart >= 0 && ::ftruncate(fd_.get(), lineStart) == 0;
      errno = err;
      return fail("writing to", cut ? "; the part of the line written was removed"
                                    : "; the file ends in a partial line");
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace xtrain::tools
