#include "placement_check.hpp"

#include <charconv>
#include <nlohmann/json.hpp>
#include <string>

#include "xtrain/error.hpp"

namespace xtrain::tools {

void checkManualPlacementFits(const TrainOptions& o, const TrainingSession& session,
                              int64_t ipusPerReplica) {
  if (o.virtualGraphMode != "manual") return;
  nlohmann::json ir;
  try {
    ir = nlohmann::json::parse(session.serializeIr());
  } catch (const nlohmann::json::exception& e) {
    throw internal_error("the session's serialized IR is not JSON: {}", e.what());
  }
  int64_t highest = -1;
  std::string culprit;
  for (const auto& op : ir.at("maingraph")) {
    const auto& attributes = op.at("attributes");
    const auto it = attributes.find("__ipu_number");
    if (it == attributes.end()) continue;
    const std::string text = it->get<std::string>();
    int64_t vg = -1;
    std::from_chars(text.data(), text.data() + text.size(), vg);
    if (vg > highest) {
      highest = vg;
      culprit = op.at("type").get<std::string>() + " '" + op.at("name").get<std::string>() + "'";
    }
  }
  if (highest < ipusPerReplica) return;
  int64_t enough = 1;
  while (enough <= highest) enough *= 2;
  throw error(
      "{} is placed on virtual graph {} (__ipu_number) but each replica has {} IPU{}: give "
      "--ipus-per-replica {} (under xrun, its --ipus-per-replica) for this model's placement",
      culprit, highest, ipusPerReplica, ipusPerReplica == 1 ? "" : "s", enough);
}

}  // namespace xtrain::tools
