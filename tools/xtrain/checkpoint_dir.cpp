#include "checkpoint_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "checkpoint/checkpoint_directory.hpp"
#include "checkpoint/layout.hpp"
#include "common/env_value.hpp"
#include "xtrain/error.hpp"

namespace xtrain::tools {

void refuseToOverwriteCheckpoints(const TrainOptions& o) {
  if (o.checkpointDir.empty() || !o.resume.empty() || o.overwriteCheckpoints) return;
  // Nothing to overwrite where there is no directory; checkOutputs reports a file given as one.
  std::error_code ec;
  if (!std::filesystem::is_directory(o.checkpointDir, ec)) return;
  const checkpoint::CheckpointDirectory dir(o.checkpointDir);
  const auto listed = dir.list();
  if (listed.empty()) return;
  // The one a resume would start from; else the highest step found (incomplete or damaged).
  const std::string newest = dir.newestComplete().value_or(listed.back().path);
  throw error(
      "--checkpoint-dir '{}' already holds {} checkpoint(s), the newest '{}'; a fresh run would "
      "replace and prune them. Continue that run with --resume auto, write to a new directory, or "
      "give --overwrite-checkpoints to write over them",
      o.checkpointDir, listed.size(), newest);
}

namespace {

// Slurm's restart count: 0 when unset, empty, negative or not a whole number (Slurm's variable;
// xrun's XTRAIN_RESTART_COUNT is read strictly, as every XTRAIN_* variable is).
int64_t countFrom(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  const long long k = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || k < 0) return 0;
  return static_cast<int64_t>(k);
}

}  // namespace

JobRestart jobRestart() {
  if (const int64_t k = readEnvWholeNumber("XTRAIN_RESTART_COUNT", 0, INT32_MAX).value_or(0);
      k > 0) {
    return JobRestart{k, "XTRAIN_RESTART_COUNT"};
  }
  if (const int64_t k = countFrom("SLURM_RESTART_COUNT"); k > 0) {
    return JobRestart{k, "SLURM_RESTART_COUNT"};
  }
  return JobRestart{};
}

std::string JobRestart::describe() const {
  if (variable != "SLURM_RESTART_COUNT") return "restart " + std::to_string(count) + " of the job";
  const char* id = std::getenv("SLURM_JOB_ID");
  return "requeue " + std::to_string(count) + " of Slurm job" +
         (id != nullptr && *id != '\0' ? std::string(" ") + id : std::string());
}

namespace {

// xrun's word (XTRAIN_CHECKPOINT_DIR_SEEN=0) that no earlier attempt of this run of xrun found its
// checkpoint directory, in a job that Slurm did not requeue (an earlier run of the batch job may
// have written checkpoints, which xrun cannot know of). Any other value, or none (xrun could not
// tell: instances on other hosts), is no such word.
bool noEarlierAttemptSawTheDirectory() {
  const std::optional<std::string> seen = readEnvString("XTRAIN_CHECKPOINT_DIR_SEEN");
  return seen == "0" && countFrom("SLURM_RESTART_COUNT") == 0;
}

// The file of the rendezvous directory that says an attempt found its checkpoint directory
// (docs/launcher-environment.md, "Restarts"; xrun reads it as launcher/restart_policy.hpp says).
constexpr const char* kCheckpointDirSeenFile = "checkpoint-dir-seen";

}  // namespace

void tellXrunTheCheckpointDirectoryExists(const TrainOptions& o) {
  const std::optional<std::string> rendezvous = readEnvString("XTRAIN_RENDEZVOUS_DIR");
  if (o.checkpointDir.empty() || !rendezvous || rendezvous->empty()) return;
  const std::string path = (std::filesystem::path(*rendezvous) / kCheckpointDirSeenFile).string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    // Without it a later restart could take a vanished directory for one never made.
    throw runtime_error("cannot tell xrun that --checkpoint-dir '{}' exists: cannot create {}: {}",
                        o.checkpointDir, path, std::strerror(errno));
  }
  ::close(fd);
}

void refuseToStartAfreshOnRestart(const TrainOptions& o) {
  const JobRestart restart = jobRestart();
  if (restart.count == 0 || o.resume != "auto" || o.checkpointDir.empty()) return;
  // Every earlier attempt failed while starting: the job never had checkpoints to lose.
  if (restart.variable == "XTRAIN_RESTART_COUNT" && noEarlierAttemptSawTheDirectory()) return;
  const bool slurm = restart.variable == "SLURM_RESTART_COUNT";
  // What the user can do: a new xrun has no restart pending; a requeued batch job keeps its count,
  // so there an empty directory is the way to train afresh on purpose.
  const std::string remedy =
      slurm ? "restore the directory, or submit a new job (or create the directory empty) to train "
              "afresh"
            : "restore the directory, or start a new job (xrun without a restart pending) to train "
              "afresh";
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(o.checkpointDir, ec);
  if (!fs::exists(status)) {
    throw error(
        "{} ({}={}) with --resume auto: --checkpoint-dir '{}' does not exist, though an earlier "
        "{} of the job creates it before its first step; its checkpoints are gone (removed, or on "
        "a file system this host does not share). Refusing to train from scratch: {}",
        restart.describe(), restart.variable, restart.count, o.checkpointDir,
        slurm ? "run" : "attempt", remedy);
  }
  if (!fs::is_directory(status)) return;  // checkOutputs reports a file given as the directory
  const checkpoint::CheckpointDirectory dir(o.checkpointDir);
  const std::string latest = dir.latestName();
  if (latest.empty()) return;
  if (!dir.list().empty()) return;  // loadLatestCheckpoint picks one
  const std::string latestPath =
      (fs::path(o.checkpointDir) / checkpoint::layout::kLatestFile).string();
  throw error(
      "{} ({}={}) with --resume auto: --checkpoint-dir '{}' holds no checkpoint, yet its '{}' "
      "names '{}': the checkpoints were removed. Refusing to train from scratch: restore them, or "
      "{} to train afresh",
      restart.describe(), restart.variable, restart.count, o.checkpointDir, latestPath, latest,
      slurm ? "submit a new job" : "start a new job");
}

checkpoint::CheckpointDirectory::Lock lockCheckpointDirectory(const TrainOptions& o,
                                                              int64_t instance) {
  if (o.checkpointDir.empty() || instance != 0) return {};
  try {
    return checkpoint::CheckpointDirectory(o.checkpointDir).lock();
  } catch (const checkpoint::DirectoryInUse& e) {
    // Whatever the flags: --overwrite-checkpoints replaces what a finished or dead job left (its
    // lock went with it), never the checkpoints of a job still writing them.
    throw error(
        "--checkpoint-dir '{}' is in use by another xtrain job (process {} holds {}): two jobs "
        "writing checkpoints into one directory would replace and prune each other's{}; use "
        "another directory, or wait for that job to end",
        o.checkpointDir, e.holder(), e.lockFile(),
        o.overwriteCheckpoints ? " (--overwrite-checkpoints replaces a finished job's checkpoints, "
                                 "not a running one's)"
                               : "");
  } catch (const checkpoint::CheckpointError& e) {
    throw error("--checkpoint-dir '{}': {}", o.checkpointDir, e.what());
  }
}

}  // namespace xtrain::tools
