#include "launcher/output_router.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "xtrain/error.hpp"

namespace xtrain::launcher {
namespace {

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

int index(Stream s) {
  return s == Stream::Stdout ? 0 : 1;
}

Stream streamOf(int stream) {
  return stream == 0 ? Stream::Stdout : Stream::Stderr;
}

}  // namespace

OutputRouter::OutputRouter(const LocalJobSpec& spec, FailureWitness& witness)
    : spec_(spec),
      witness_(witness),
      engineMode_(spec.engine.has_value()),
      numInstances_(numInstancesOf(spec)),
      splitters_(spec.envPerInstance.size()) {}

OutputRouter::~OutputRouter() {
  closeFiles();
}

void OutputRouter::openFiles() {
  if (spec_.outputDir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(spec_.outputDir, ec);
  files_.assign(static_cast<size_t>(numInstances_), {-1, -1});
  for (size_t i = 0; i < files_.size(); ++i) {
    for (int s = 0; s < 2; ++s) {
      std::string path =
          spec_.outputDir + "/instance-" + std::to_string(i) + (s == 0 ? ".out" : ".err");
      int& fd = files_[i][static_cast<size_t>(s)];
      // Never through a planted symbolic link, never into a file another user owns (an output
      // directory in a shared /tmp): the mode itself is the user's umask's.
      fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (spec_.appendOutput ? O_APPEND : 0),
                  0644);
      if (fd < 0) {
        throw runtime_error("--output-dir: cannot write {}: {}{}", path, std::strerror(errno),
                            errno == ELOOP ? " (it is a symbolic link, which xrun refuses)" : "");
      }
      struct stat st {};
      if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
        closeFd(fd);
        throw runtime_error(
            "--output-dir: {} is not a regular file of yours (uid {}); remove it or choose "
            "another directory",
            path, static_cast<unsigned>(::geteuid()));
      }
      if (!spec_.appendOutput && ::ftruncate(fd, 0) != 0) {
        throw runtime_error("--output-dir: cannot truncate {}: {}", path, std::strerror(errno));
      }
    }
  }
}

void OutputRouter::closeFiles() {
  for (auto& f : files_) {
    for (int s = 0; s < 2; ++s) closeFd(f[static_cast<size_t>(s)]);
  }
}

void OutputRouter::feed(int source, Stream stream, std::string_view bytes) {
  const int s = index(stream);
  std::vector<std::string> lines;
  splitters_.at(static_cast<size_t>(source))[static_cast<size_t>(s)].feed(bytes, lines);
  for (const auto& line : lines) routeLine(source, s, line);
}

void OutputRouter::endOfStream(int source, Stream stream) {
  const int s = index(stream);
  auto& splitter = splitters_.at(static_cast<size_t>(source))[static_cast<size_t>(s)];
  if (auto rest = splitter.finish()) routeLine(source, s, *rest);
  if (engineMode_ && spec_.engine->tag == EngineTag::Mpirun) {
    std::vector<MpirunLineJoiner::Line> lines;
    joiners_[s].finish(lines);
    routeJoined(s, lines);
  }
}

void OutputRouter::message(const std::string& text) {
  if (!stderrBroken_ && !writeAll(spec_.stderrFd, "xrun: " + text + "\n")) stderrBroken_ = true;
}

void OutputRouter::print(Stream s, const std::string& text) {
  if (s == Stream::Stdout) {
    if (!stdoutBroken_ && !writeAll(spec_.stdoutFd, text)) stdoutBroken_ = true;
  } else {
    if (!stderrBroken_ && !writeAll(spec_.stderrFd, text)) stderrBroken_ = true;
  }
}

void OutputRouter::writeFile(int instance, int stream, std::string_view text) {
  if (instance < 0 || static_cast<size_t>(instance) >= files_.size()) return;
  int& fd = files_[static_cast<size_t>(instance)][static_cast<size_t>(stream)];
  if (fd < 0) return;
  std::string raw(text);
  raw.push_back('\n');
  if (!writeAll(fd, raw)) closeFd(fd);
}

void OutputRouter::routeLine(int source, int stream, const std::string& line) {
  if (engineMode_) {
    routeEngineLine(stream, line);
    return;
  }
  Stream s = streamOf(stream);
  if (s == Stream::Stderr) witness_.instanceStderr(source, line);
  writeFile(source, stream, line);
  if (!shouldPrint(spec_.output, source, s, line)) return;
  print(s, renderLine(spec_.output, source, s, line));
}

void OutputRouter::routeEngineLine(int stream, const std::string& line) {
  if (spec_.engine->tag == EngineTag::Mpirun) {
    std::vector<MpirunLineJoiner::Line> lines;
    joiners_[stream].feed(line, lines);
    routeJoined(stream, lines);
    return;
  }
  auto tagged = parseEngineLine(spec_.engine->tag, line);
  if (!tagged) {
    routeOwnLine(stream, line);
    return;
  }
  std::string_view whole(line);
  routeInstanceLine(stream, tagged->instance, whole.substr(0, whole.size() - tagged->text.size()),
                    tagged->text);
}

void OutputRouter::routeJoined(int stream, const std::vector<MpirunLineJoiner::Line>& lines) {
  for (const auto& l : lines) {
    if (l.instance) {
      routeInstanceLine(stream, *l.instance, l.tag, l.text);
    } else {
      routeOwnLine(stream, l.text);
    }
  }
}

// The engine's own message: always printed, as it is.
void OutputRouter::routeOwnLine(int stream, const std::string& line) {
  Stream s = streamOf(stream);
  if (s == Stream::Stderr) witness_.engineStderr(line);
  print(s, line + "\n");
}

void OutputRouter::routeInstanceLine(int stream, int instance, std::string_view tag,
                                     std::string_view text) {
  if (instance < 0 || instance >= numInstances_) {
    routeOwnLine(stream, std::string(tag) + std::string(text));
    return;
  }
  Stream s = streamOf(stream);
  if (s == Stream::Stderr) witness_.instanceStderr(instance, text);
  writeFile(instance, stream, text);
  if (!shouldPrint(spec_.output, instance, s, text)) return;
  std::string out;
  if (spec_.output.tag) out = tag;
  out.append(text);
  out.push_back('\n');
  print(s, out);
}

}  // namespace xtrain::launcher
