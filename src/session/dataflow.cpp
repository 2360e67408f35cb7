#include "xtrain/dataflow.hpp"

#include "xtrain/error.hpp"
#include "xtrain/stepio.hpp"

namespace xtrain {

AnchorReturnType::AnchorReturnType(const std::string& name) : name_(name) {
  if (name == "ALL")
    id_ = AnchorReturnTypeId::All;
  else if (name == "FINAL")
    id_ = AnchorReturnTypeId::Final;
  else if (name == "SUM")
    id_ = AnchorReturnTypeId::Sum;
  else if (name == "EVERYN")
    throw error("anchor return type EVERYN needs a return period");
  else
    throw error("unknown anchor return type '{}' (expected ALL, FINAL, SUM or EVERYN)", name);
}

AnchorReturnType::AnchorReturnType(const std::string& name, int returnPeriod) : name_(name) {
  if (name != "EVERYN") {
    *this = AnchorReturnType(name);
    return;
  }
  if (returnPeriod <= 0) {
    throw error("anchor return type EVERYN needs a return period > 0, got {}", returnPeriod);
  }
  id_ = AnchorReturnTypeId::EveryN;
  period_ = returnPeriod;
}

DataFlow::DataFlow() = default;

DataFlow::DataFlow(int batchesPerStep) : batchesPerStep_(batchesPerStep) {
  validate();
}

DataFlow::DataFlow(int batchesPerStep, const std::map<TensorId, AnchorReturnType>& anchors)
    : batchesPerStep_(batchesPerStep), anchors_(anchors) {
  for (const auto& [id, art] : anchors) anchorIds_.push_back(id);
  validate();
}

DataFlow::DataFlow(int batchesPerStep, const std::vector<TensorId>& anchorIds,
                   const AnchorReturnType& art)
    : batchesPerStep_(batchesPerStep) {
  for (const auto& id : anchorIds) {
    if (anchors_.count(id)) throw error("anchor '{}' is listed twice in the DataFlow", id);
    anchors_.emplace(id, art);
    anchorIds_.push_back(id);
  }
  validate();
}

void DataFlow::validate() const {
  if (batchesPerStep_ <= 0) {
    throw error("batches per step must be greater than zero, got {}", batchesPerStep_);
  }
  for (const auto& [id, art] : anchors_) {
    if (art.id() != AnchorReturnTypeId::EveryN) continue;
    if (art.rp() > batchesPerStep_) {
      throw error("anchor '{}': EVERYN period {} is greater than batches per step {}", id, art.rp(),
                  batchesPerStep_);
    }
    if (batchesPerStep_ % art.rp() != 0) {
      throw error("anchor '{}': batches per step {} is not a multiple of the EVERYN period {}", id,
                  batchesPerStep_, art.rp());
    }
  }
}

const AnchorReturnType& DataFlow::art(const TensorId& id) const {
  auto it = anchors_.find(id);
  if (it == anchors_.end()) throw error("tensor '{}' is not an anchor of the DataFlow", id);
  return it->second;
}

int DataFlow::numOutFetchesPerRepl(int accumulationFactor, const TensorId& id) const {
  const auto& a = art(id);
  switch (a.id()) {
    case AnchorReturnTypeId::All: return batchesPerStep_ * accumulationFactor;
    case AnchorReturnTypeId::EveryN: return batchesPerStep_ * accumulationFactor / a.rp();
    case AnchorReturnTypeId::Final:
    case AnchorReturnTypeId::Sum: return 1;
  }
  return 1;
}

ConstVoidData StepIO::in(TensorId id, int64_t, bool, bool) {
  throw internal_error("StepIO::in('{}') called: StepIO buffers are read whole", id);
}
void StepIO::inComplete(TensorId, int64_t, bool) {}
MutableVoidData StepIO::out(TensorId id, int64_t) {
  throw internal_error("StepIO::out('{}') called: StepIO buffers are written whole", id);
}
void StepIO::outComplete(TensorId) {}

MutableVoidData WeightsIO::weight(const TensorId& id) const {
  auto it = weights_.find(id);
  if (it == weights_.end()) throw error("WeightsIO has no buffer for '{}'", id);
  return it->second;
}

}  // namespace xtrain
