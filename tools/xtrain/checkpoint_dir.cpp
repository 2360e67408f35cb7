#include "checkpoint_dir.hpp"

#include <filesystem>

#include "checkpoint/checkpoint.hpp"
#include "xtrain/error.hpp"

namespace xtrain::tools {

void refuseToOverwriteCheckpoints(const TrainOptions& o) {
  if (o.checkpointDir.empty() || !o.resume.empty() || o.overwriteCheckpoints) return;
  // Nothing to overwrite where there is no directory; checkOutputs reports a file given as one.
  std::error_code ec;
  if (!std::filesystem::is_directory(o.checkpointDir, ec)) return;
  const auto listed = checkpoint::list(o.checkpointDir);
  if (listed.empty()) return;
  // The one a resume would start from; else the highest step found (incomplete or damaged).
  const std::string newest =
      checkpoint::latestComplete(o.checkpointDir).value_or(listed.back().path);
  throw error(
      "--checkpoint-dir '{}' already holds {} checkpoint(s), the newest '{}'; a fresh run would "
      "replace and prune them. Continue that run with --resume auto, write to a new directory, or "
      "give --overwrite-checkpoints to write over them",
      o.checkpointDir, listed.size(), newest);
}

}  // namespace xtrain::tools
