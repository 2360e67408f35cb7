#include "ir/fusion/transpose_matmul_fusion.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common/matmul_permutation.hpp"
#include "ir/fusion/subgraph_match.hpp"

namespace xtrain::ir::fusion {
namespace {

// A permutation MatMulT can take as transA/transB: the batch dims stay, the last two may swap.
bool isTransposeOfLastTwo(const Permutation& p) {
  const size_t r = p.size();
  for (size_t i = 0; i + 2 < r; ++i) {
    if (p[i] != static_cast<int64_t>(i)) return false;
  }
  return r >= 2 && p[r - 2] + p[r - 1] == static_cast<int64_t>(2 * r - 3);
}

// oneDNN's GEMM reads an operand or writes a result through strides at full speed only when one
// of its last two dims is the stored tensor's innermost: Transpose(T, perm) (or the result Y of
// Z = Transpose(Y, perm)) keeps it there.
bool innermostInLastTwo(const Permutation& operandPerm) {
  const size_t r = operandPerm.size();
  const auto inner = static_cast<int64_t>(r - 1);
  return operandPerm[r - 1] == inner || operandPerm[r - 2] == inner;
}
bool resultInnermostInLastTwo(const Permutation& permY) {
  return permY.back() >= static_cast<int64_t>(permY.size()) - 2;
}

class ChainMatch {
 public:
  ChainMatch(Graph& graph, const std::set<TensorId>& keep, const Op& matmul)
      : graph_(graph), keep_(keep), scalars_(graph, keep, matmul.id), matmul_(matmul) {
    ops_.insert(matmul.id);
  }

  // t, read by `reader` alone, may be folded away: not kept, not a graph output, produced by one
  // op placed where the MatMul runs.
  const Op* foldableProducer(const TensorId& t, OpId reader) const {
    const Tensor& tensor = graph_.tensor(t);
    if (tensor.producer < 0 || keep_.count(t) || tensor.info.dataType() != DataType::FLOAT) {
      return nullptr;
    }
    const auto& outs = graph_.outputs();
    if (std::find(outs.begin(), outs.end(), t) != outs.end()) return nullptr;
    if (tensor.consumers.empty() || !std::all_of(tensor.consumers.begin(), tensor.consumers.end(),
                                                 [&](OpId r) { return r == reader; })) {
      return nullptr;
    }
    const Op& op = graph_.op(tensor.producer);
    if (op.domain != kOnnxDomain || op.outputs.size() != 1 || op.placement != matmul_.placement) {
      return nullptr;
    }
    return &op;
  }

  // For Div(x, c), Mul(x, c) or Mul(c, x) with c a scalar FLOAT constant: x's index and the
  // factor; nothing otherwise. `divisorAllowed`: Div(c, x) is never a scale.
  std::optional<std::pair<size_t, double>> scale(const Op& op) const {
    if ((op.type != "Div" && op.type != "Mul") || op.inputs.size() != 2) return std::nullopt;
    for (size_t c : {size_t{1}, size_t{0}}) {
      if (op.type == "Div" && c == 0) continue;
      const Tensor& t = graph_.tensor(op.inputs[c]);
      const auto v = scalars_.scalar(op.inputs[c]);
      if (!v || t.info.dataType() != DataType::FLOAT || *v == 0.0) continue;
      if (graph_.tensor(op.inputs[1 - c]).info != graph_.tensor(op.outputs[0]).info) continue;
      return std::make_pair(1 - c, op.type == "Div" ? 1.0 / *v : *v);
    }
    return std::nullopt;
  }

  // Walks up from operand `side` of the MatMul through Transposes and scalar scales; the
  // permutations folded must be last-two swaps unless `anyPermutation`.
  void foldOperand(size_t side, bool anyPermutation) {
    TensorId t = matmul_.inputs[side];
    OpId reader = matmul_.id;
    Permutation perm = identityPermutation(graph_.tensor(t).info.shape().size());
    while (const Op* p = foldableProducer(t, reader)) {
      if (p->type == "Transpose") {
        const Permutation folded = composed(p->attrs.getInts("perm"), perm);
        if (!anyPermutation && !isTransposeOfLastTwo(folded)) break;
        if (!innermostInLastTwo(folded)) break;
        perm = folded;
        t = p->inputs.at(0);
      } else if (const auto s = scale(*p)) {
        alpha_ *= s->second;
        t = p->inputs[s->first];
      } else {
        break;
      }
      ops_.insert(p->id);
      reader = p->id;
    }
    sources_[side] = t;
    perms_[side] = perm;
  }

  // Walks down from the MatMul's result through its only readers, Transposes (when
  // `anyPermutation`) and scalar scales; returns the last op folded.
  OpId foldResult(bool anyPermutation) {
    OpId last = matmul_.id;
    permY_ = identityPermutation(graph_.tensor(matmul_.outputs[0]).info.shape().size());
    for (;;) {
      const TensorId& y = graph_.op(last).outputs[0];
      const Tensor& t = graph_.tensor(y);
      if (t.consumers.size() != 1) break;
      const Op& next = graph_.op(t.consumers[0]);
      if (foldableProducer(y, next.id) == nullptr || next.outputs.size() != 1) break;
      if (next.domain != kOnnxDomain || next.placement != matmul_.placement) break;
      if (next.type == "Transpose" && anyPermutation && next.inputs[0] == y &&
          resultInnermostInLastTwo(composed(permY_, next.attrs.getInts("perm")))) {
        permY_ = composed(permY_, next.attrs.getInts("perm"));
      } else if (const auto s = scale(next); s && next.inputs[s->first] == y) {
        alpha_ *= s->second;
      } else {
        break;
      }
      ops_.insert(next.id);
      last = next.id;
    }
    return last;
  }

  const std::set<OpId>& ops() const { return ops_; }
  const TensorId& source(size_t side) const { return sources_[side]; }
  const Permutation& perm(size_t side) const { return perms_[side]; }
  const Permutation& permY() const { return permY_; }
  double alpha() const { return alpha_; }

 private:
  Graph& graph_;
  const std::set<TensorId>& keep_;
  SubgraphMatch scalars_;  // reads scalar constants
  const Op& matmul_;
  std::set<OpId> ops_;
  TensorId sources_[2];
  Permutation perms_[2];
  Permutation permY_;
  double alpha_ = 1.0;
};

}  // namespace

bool fuseTransposeMatMul(Graph& graph, const std::set<TensorId>& keep, OpId root) {
  const Op& mm = graph.op(root);
  if (mm.type != "MatMul" || mm.domain != kOnnxDomain || mm.inputs.size() != 2) return false;
  const Shape& a = graph.tensor(mm.inputs[0]).info.shape();
  const Shape& b = graph.tensor(mm.inputs[1]).info.shape();
  if (a.size() < 2 || b.size() < 2) return false;
  if (graph.tensor(mm.outputs[0]).info.dataType() != DataType::FLOAT) return false;
  // Other permutations than last-two swaps need equal batch dims (MatMulT's gradient).
  const bool anyPermutation =
      a.size() >= 3 && a.size() == b.size() && std::equal(a.begin(), a.end() - 2, b.begin());
  ChainMatch m(graph, keep, mm);
  m.foldOperand(0, anyPermutation);
  m.foldOperand(1, anyPermutation);
  const OpId last = m.foldResult(anyPermutation);
  if (m.ops().size() == 1) return false;

  OpSpec fused;
  fused.type = "MatMulT";
  fused.domain = kXtrainDomain;
  fused.inputs = {m.source(0), m.source(1)};
  fused.name = mm.name.empty() ? std::string("matmul") : mm.name + "/fused";
  fused.phase = mm.phase;
  if (m.alpha() != 1.0) fused.attrs.set("alpha", static_cast<float>(m.alpha()));
  if (mm.attrs.has("__partials_type")) {
    fused.attrs.set("__partials_type", mm.attrs.getString("__partials_type"));
  }
  const bool transOnly =
      isTransposeOfLastTwo(m.perm(0)) && isTransposeOfLastTwo(m.perm(1)) && isIdentity(m.permY());
  for (size_t side : {size_t{0}, size_t{1}}) {
    const Permutation& p = m.perm(side);
    if (isIdentity(p)) continue;
    if (transOnly) {
      fused.attrs.set(side == 0 ? "transA" : "transB", int64_t{1});
    } else {
      fused.attrs.set(side == 0 ? "permA" : "permB", p);
    }
  }
  if (!isIdentity(m.permY())) fused.attrs.set("permY", m.permY());
  replaceSubgraph(graph, m.ops(), last, std::move(fused));
  return true;
}

}  // namespace xtrain::ir::fusion
