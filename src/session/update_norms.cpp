// The norms an update needs over more than one tensor or shard: gradient clipping's global norm and
// Lamb's norms of a sharded weight (docs/optimizers.md sections 3.1 and 5).
#include <algorithm>
#include <cmath>

#include "common/optimizer_hyper.hpp"
#include "session/update_control.hpp"

namespace xtrain::session {

void UpdateControl::clipGradients() {
  if (clipGroups_.empty()) return;
  const int64_t L = localReplicas();
  auto gradScale = [&](const ir::WeightUpdate& u) {
    const HyperView<CommonHyper> hyper(buffer(0, u.hyper).span<float>());
    return static_cast<double>(hyper[CommonHyper::GradScale]);
  };
  auto sumOfSquares = [](const HostTensor& t) {
    double s = 0.0;
    for (float x : t.span<float>()) s += static_cast<double>(x) * x;
    return s;
  };
  // Sharded weights: their shards' sums over the shard groups, all in one reduction.
  std::vector<const replication::ShardPlan*> plans;
  std::vector<const ir::WeightUpdate*> sharded;
  for (const auto& group : clipGroups_) {
    for (const ir::WeightUpdate* u : group.updates) {
      if (u->shardElements > 0) {
        plans.push_back(&shards_->at(u->weight));
        sharded.push_back(u);
      }
    }
  }
  // Unscaled (times gradScale^2) before they travel as FLOAT: a large loss scale must not overflow.
  const std::vector<double> shardSums =
      exchange_->sumOverShards(plans, 1, [&](size_t k, int64_t local, double* out) {
        const double gs = gradScale(*sharded[k]);
        *out = gs * gs * sumOfSquares(buffer(local, sharded[k]->gradShard));
      });
  size_t next = 0;
  clipNorms_.clear();
  for (const auto& group : clipGroups_) {
    // Per local replica: grouped weights differ between replica groups, so does their norm.
    std::vector<double> sumSq(static_cast<size_t>(L), 0.0);
    for (const ir::WeightUpdate* u : group.updates) {
      const double gs2 = gradScale(*u) * gradScale(*u);
      if (u->shardElements > 0) {
        for (double& s : sumSq) s += shardSums[next];  // already unscaled
        ++next;
      } else if (grouped_->count(u->weight)) {
        for (int64_t r = 0; r < L; ++r) {
          sumSq[static_cast<size_t>(r)] += gs2 * sumOfSquares(buffer(r, u->reduced));
        }
      } else {
        const double s = gs2 * sumOfSquares(buffer(0, u->reduced));
        for (double& x : sumSq) x += s;
      }
    }
    clipNorms_.push_back(static_cast<float>(std::sqrt(sumSq[0])));
    for (int64_t r = 0; r < L; ++r) {
      const double norm = std::sqrt(sumSq[static_cast<size_t>(r)]);
      const float factor =
          static_cast<float>(group.maxNorm / std::max(static_cast<double>(group.maxNorm), norm));
      for (const ir::WeightUpdate* u : group.updates) {
        const HyperView<CommonHyper, float> hyper(buffer(r, u->hyper).span<float>());
        hyper[CommonHyper::ClipFactor] = factor;
      }
    }
  }
}

void UpdateControl::completeLambNorms() {
  std::vector<const replication::ShardPlan*> plans;
  std::vector<const ir::WeightUpdate*> lamb;
  for (const auto& u : updates_->updates) {
    if (u.lambNorms.empty()) continue;
    plans.push_back(&shards_->at(u.weight));
    lamb.push_back(&u);
  }
  const std::vector<double> sums =
      exchange_->sumOverShards(plans, 2, [&](size_t k, int64_t local, double* out) {
        const float* partial = buffer(local, lamb[k]->lambNorms).data<float>();
        out[0] = partial[0];
        out[1] = partial[1];
      });
  for (size_t k = 0; k < lamb.size(); ++k) {
    for (int64_t r = 0; r < localReplicas(); ++r) {
      float* norms = buffer(r, lamb[k]->lambNorms).data<float>();
      norms[0] = static_cast<float>(sums[2 * k]);
      norms[1] = static_cast<float>(sums[2 * k + 1]);
    }
  }
}

}  // namespace xtrain::session
