// xckpt ls and xckpt show: what is in a checkpoint directory, and in one checkpoint.
#include <algorithm>
#include <filesystem>
#include <sstream>

#include "checkpoint/checkpoint_directory.hpp"
#include "commands.hpp"
#include "text.hpp"

namespace xtrain::tools::xckpt {

namespace fs = std::filesystem;
namespace ckpt = xtrain::checkpoint;

namespace {

std::string hyperparameterText(const std::map<std::string, double>& h) {
  std::string text;
  for (const auto& [name, value] : h) {
    if (!text.empty()) text += ", ";
    std::ostringstream v;
    v << value;
    text += name + "=" + v.str();
  }
  return text.empty() ? "(none)" : text;
}

}  // namespace

int ls(const Args& args, std::ostream& out) {
  const std::string dir = positional(args, 1, "ls")[0];
  if (!fs::is_directory(dir)) throw error("'{}' is not a directory", dir);
  const ckpt::CheckpointDirectory directory(dir);
  const auto listed = directory.list();
  const std::string latest = directory.latestName();
  out << "checkpoints in " << dir << ": " << listed.size() << "\n";
  if (!listed.empty()) {
    out << padded("STEP", 10) << padded("CREATED (UTC)", 22) << padded("SIZE", 12)
        << padded("STATE", 12) << "NAME\n";
  }
  bool latestFound = false;
  for (const auto& l : listed) {
    const std::string name = fs::path(l.path).filename().string();
    const bool isLatest = name == latest;
    latestFound = latestFound || isLatest;
    out << padded(std::to_string(l.step), 10)
        << padded(l.creationTime.empty() ? "-" : l.creationTime, 22)
        << padded(humanBytes(l.bytes), 12) << padded(l.complete ? "complete" : "INCOMPLETE", 12)
        << name << (isLatest ? "  <- latest" : "") << "\n";
  }
  // Why each one is not complete (a damaged index is listed, never parsed: see the seal).
  for (const auto& l : listed) {
    if (!l.complete) out << fs::path(l.path).filename().string() << ": " << l.problem << "\n";
  }
  if (!latest.empty() && !latestFound) {
    out << "latest names '" << latest << "', which is not a checkpoint here\n";
  }
  if (const size_t staging = directory.stagingCount(); staging > 0) {
    out << staging << " staging director" << (staging == 1 ? "y" : "ies")
        << " (saves in progress or interrupted; removed by pruning)\n";
  }
  return 0;
}

int show(const Args& args, std::ostream& out) {
  const std::string path = positional(args, 1, "show")[0];
  const ckpt::Attributes a = ckpt::readAttributes(path);
  const auto datasets = ckpt::listDatasets(path);
  out << "checkpoint " << path << "\n";
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"formatName", a.formatName},
      {"formatVersion", std::to_string(a.formatVersion)},
      {"step", std::to_string(a.step)},
      {"epoch", std::to_string(a.epoch)},
      {"samplesSeen", std::to_string(a.samplesSeen)},
      {"globalReplicationFactor", std::to_string(a.globalReplicationFactor)},
      {"instances", std::to_string(a.instances)},
      {"optimizerType", a.optimizerType},
      {"hyperparameters", hyperparameterText(a.hyperparameters)},
      {"graphFingerprint", a.graphFingerprint},
      {"creationTime", a.creationTime},
      {"xtrainVersion", a.xtrainVersion},
  };
  for (const auto& [name, value] : rows) out << "  " << padded(name, 26) << value << "\n";
  uint64_t bytes = 0;
  size_t width = 0;
  for (const auto& d : datasets) {
    bytes += static_cast<uint64_t>(d.info.nbytes());
    width = std::max(width, d.path.size());
  }
  out << "datasets: " << datasets.size() << " (" << humanBytes(bytes) << ")\n";
  for (const auto& d : datasets) {
    out << "  " << padded(d.path, width + 2) << padded(dataTypeName(d.info.dataType()), 12)
        << padded(shapeToString(d.info.shape()), 16) << d.partFile;
    // The tensor's own name when encoding changed it ("/weights/a%2Fb" holds tensor "a/b").
    for (size_t start = 1; start < d.path.size();) {
      const size_t end = std::min(d.path.find('/', start), d.path.size());
      const std::string part = d.path.substr(start, end - start);
      if (ckpt::decodeName(part) != part) out << "  (tensor '" << ckpt::decodeName(part) << "')";
      start = end + 1;
    }
    out << "\n";
  }
  return 0;
}

}  // namespace xtrain::tools::xckpt
