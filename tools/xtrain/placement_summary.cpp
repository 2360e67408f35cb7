#include "placement_summary.hpp"

#include <nlohmann/json.hpp>

#include "xtrain/error.hpp"
#include "xtrain/format.hpp"

namespace xtrain::tools {

namespace {

// "123 B", "4.5 KiB", "1.2 MiB": a memory line is read at a glance, not to the byte.
std::string bytesText(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? format("{} B", bytes) : format("{:.1f} {}", value, kUnits[unit]);
}

std::string stagesText(const TrainOptions& o, const nlohmann::json& report) {
  if (!o.enablePipelining) return "not pipelined";
  const auto& pipeline = report.at("pipeline");
  const int64_t stages = pipeline.at("stages").get<int64_t>();
  // The schedule fills, runs and flushes over the micro-batches of one weight update.
  std::string text = format("{} pipeline stages over the {} micro-batches of each update", stages,
                            o.accumulationFactor);
  if (o.recompute == "pipeline") text += ", each stage's forward recomputed";
  return text;
}

}  // namespace

bool usesModelParallelism(const TrainOptions& o, int64_t ipusPerReplica) {
  return ipusPerReplica > 1 || o.virtualGraphMode != "off" || o.enablePipelining ||
         !o.offChip.empty();
}

std::string describePlacement(const TrainOptions& o, const TrainingSession& session,
                              int64_t ipusPerReplica) {
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(session.getReport());
  } catch (const nlohmann::json::exception& e) {
    throw internal_error("the session's report is not JSON: {}", e.what());
  }
  std::string text = format("xtrain: virtual graphs {}, {} IPU{} per replica, {}; off chip: {}\n",
                            o.virtualGraphMode, ipusPerReplica, ipusPerReplica == 1 ? "" : "s",
                            stagesText(o, report), o.offChip.empty() ? "nothing" : o.offChip);
  const auto& memory = report.at("memory");
  const auto& capacity = memory.at("capacityBytesPerIpu");
  const std::string of =
      capacity.is_null() ? " (no limit)" : " of " + bytesText(capacity.get<uint64_t>());
  const auto& ipus = memory.at("ipus");
  // The replicas are alike: replica 0's IPUs are the device's first ipusPerReplica.
  for (size_t i = 0; i < ipus.size() && static_cast<int64_t>(i) < ipusPerReplica; ++i) {
    const auto& ipu = ipus[i];
    text += format("xtrain:   IPU {} of a replica: {}{}", i,
                   bytesText(ipu.at("totalBytes").get<uint64_t>()), of);
    const auto streaming = ipu.at("streamingBytes").get<uint64_t>();
    if (streaming > 0) text += format(", {} in streaming memory", bytesText(streaming));
    text += "\n";
  }
  return text;
}

}  // namespace xtrain::tools
