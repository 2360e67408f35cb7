#include "launcher/failure_witness.hpp"

#include "launcher/exit_status.hpp"
#include "launcher/failure_clues.hpp"
#include "xtrain/format.hpp"

namespace xtrain::launcher {
namespace {

// Lines of dashes and blank lines frame mpirun's reports; they say nothing in a root-cause line.
bool isDecoration(std::string_view line) {
  return line.find_first_not_of(" \t-=*") == std::string_view::npos;
}

// ' "a" | "b"': the lines of a tail, quoted, each cut at 300 characters.
std::string quoted(const LineTail& tail) {
  std::string text;
  bool first = true;
  for (const auto& line : tail.lines()) {
    std::string shown = line.size() > 300 ? line.substr(0, 300) + "..." : line;
    text += (first ? " \"" : " | \"") + shown + "\"";
    first = false;
  }
  return text;
}

}  // namespace

FailureWitness::FailureWitness(int numInstances, std::optional<EngineMode> engine)
    : numInstances_(numInstances),
      engine_(std::move(engine)),
      tails_(static_cast<size_t>(numInstances), LineTail(3)) {}

void FailureWitness::instanceStderr(int instance, std::string_view line) {
  if (didNotArrive_.empty()) didNotArrive_ = instancesThatDidNotArrive(line, numInstances_);
  if (instance >= 0 && instance < numInstances_) {
    tails_[static_cast<size_t>(instance)].push(std::string(line));
  }
}

void FailureWitness::engineStderr(std::string_view line) {
  if (!engine_ || isDecoration(line)) return;
  engineTail_.push(std::string(line));
  if (!blamed_) blamed_ = instanceBlamedBy(engine_->tag, line);
  // Open MPI: "ORTE has lost communication with a remote daemon." ... "Remote daemon:
  // [[43993,0],1] on node h2" (a cut link, a dead host).
  if (engine_->tag == EngineTag::Mpirun && lostHost_.empty()) lostHost_ = hostLostByMpirun(line);
}

std::optional<int> FailureWitness::blamedInstance() const {
  if (blamed_ && *blamed_ >= 0 && *blamed_ < numInstances_) return blamed_;
  return std::nullopt;
}

std::string FailureWitness::instanceFailure(int instance, pid_t pid, int status,
                                            int othersRunning) const {
  std::string text = format("instance {} (pid {}) {}", instance, pid, describeStatus(status));
  if (othersRunning > 0) {
    text += format(", the first to fail; stopped the other {} running", othersRunning);
  }
  const LineTail& tail = tails_.at(static_cast<size_t>(instance));
  if (tail.lines().empty()) return text + "; it wrote nothing on stderr";
  return text + "; its last stderr lines:" + quoted(tail);
}

std::string FailureWitness::engineFailure(pid_t pid, int status) const {
  std::string text = format("{} (pid {}) {}", engine_->name, pid, describeStatus(status));
  const LineTail* tail = &engineTail_;
  std::string whose = engine_->name + "'s";
  if (const auto blamed = blamedInstance()) {
    text += format("; it names instance {} as the first to fail", *blamed);
    const LineTail& own = tails_[static_cast<size_t>(*blamed)];
    if (!own.lines().empty()) {
      tail = &own;
      whose = "the instance's";
    }
  }
  if (!lostHost_.empty()) {
    std::string which;
    const auto& hosts = engine_->hostOfInstance;
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (hosts[i] == lostHost_) which += (which.empty() ? "" : ", ") + std::to_string(i);
    }
    text += format("; it lost contact with host {}", lostHost_);
    if (!which.empty()) {
      text += format(" (instance{} {}: unreachable, or their host or daemon died)",
                     which.find(',') == std::string::npos ? "" : "s", which);
    }
  }
  if (tail->lines().empty()) return text + "; nothing on stderr";
  return text + "; " + whose + " last stderr lines:" + quoted(*tail);
}

}  // namespace xtrain::launcher
