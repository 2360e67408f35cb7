// DataFlow: how many batches one run() executes and which tensors come back to the host (anchors),
// with PopART's semantics (docs/replication-semantics.md section 6).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/names.hpp"

namespace xtrain {

enum class AnchorReturnTypeId { Final, EveryN, All, Sum };

class XTRAIN_API AnchorReturnType {
 public:
  // "ALL", "FINAL", "SUM" or "EVERYN" (with a period). Throws xtrain::error for other names, for
  // EVERYN without a period, or for a period <= 0.
  explicit AnchorReturnType(const std::string& name = "ALL");
  AnchorReturnType(const std::string& name, int returnPeriod);

  AnchorReturnTypeId id() const { return id_; }
  int rp() const { return period_; }  // period of EVERYN, 0 otherwise
  const std::string& str() const { return name_; }

 private:
  AnchorReturnTypeId id_;
  std::string name_;
  int period_ = 0;
};

// PopART's shorthands.
namespace AnchorReturnTypes {
inline AnchorReturnType All() {
  return AnchorReturnType("ALL");
}
inline AnchorReturnType Final() {
  return AnchorReturnType("FINAL");
}
inline AnchorReturnType Sum() {
  return AnchorReturnType("SUM");
}
inline AnchorReturnType EveryN(int n) {
  return AnchorReturnType("EVERYN", n);
}
}  // namespace AnchorReturnTypes

class XTRAIN_API DataFlow {
 public:
  DataFlow();
  // No anchors.
  explicit DataFlow(int batchesPerStep);
  // Throws xtrain::error when batchesPerStep <= 0 or an EVERYN period does not divide
  // batchesPerStep.
  DataFlow(int batchesPerStep, const std::map<TensorId, AnchorReturnType>& anchors);
  // Every listed anchor with one return type.
  DataFlow(int batchesPerStep, const std::vector<TensorId>& anchorIds,
           const AnchorReturnType& art = AnchorReturnType("ALL"));

  int batchesPerStep() const { return batchesPerStep_; }
  const std::vector<TensorId>& anchors() const { return anchorIds_; }
  bool isAnchored(const TensorId& id) const { return anchors_.count(id) != 0; }
  // Throws xtrain::error naming the tensor when it is not an anchor.
  const AnchorReturnType& art(const TensorId& id) const;
  int numOutFetchesPerRepl(int accumulationFactor, const TensorId& id) const;

 private:
  void validate() const;
  int batchesPerStep_ = 1;
  std::vector<TensorId> anchorIds_;
  std::map<TensorId, AnchorReturnType> anchors_;
};

}  // namespace xtrain
