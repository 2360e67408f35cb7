#include "ir/graph.hpp"

#include <functional>
#include <queue>
#include <tuple>

#include "common/check.hpp"
#include "ir/op_registry.hpp"

namespace xtrain::ir {

const char* toString(TensorKind kind) {
  switch (kind) {
    case TensorKind::Stream: return "Stream";
    case TensorKind::Variable: return "Variable";
    case TensorKind::Const: return "Const";
    case TensorKind::Activation: return "Activation";
    case TensorKind::OptimizerState: return "OptimizerState";
    case TensorKind::Accumulator: return "Accumulator";
  }
  return "?";
}

const char* toString(Phase phase) {
  switch (phase) {
    case Phase::Forward: return "Forward";
    case Phase::Backward: return "Backward";
    case Phase::Accumulate: return "Accumulate";
    case Phase::Update: return "Update";
    case Phase::Apply: return "Apply";
  }
  return "?";
}

std::string Op::describe() const {
  std::string s = type;
  if (!name.empty()) s += " '" + name + "'";
  s += " (" + domain;
  if (opset > 0) s += " opset " + std::to_string(opset);
  s += ")";
  return s;
}

Tensor& Graph::addTensor(const TensorId& id, const TensorInfo& info, TensorKind kind,
                         std::shared_ptr<HostTensor> value) {
  if (id.empty()) throw error("a tensor id must not be empty");
  if (hasTensor(id)) throw error("tensor '{}' is defined twice", id);
  auto t = std::make_unique<Tensor>();
  t->id = id;
  t->info = info;
  t->kind = kind;
  t->value = std::move(value);
  Tensor& ref = *t;
  tensors_.emplace(id, std::move(t));
  return ref;
}

Tensor& Graph::tensor(const TensorId& id) {
  auto it = tensors_.find(id);
  if (it == tensors_.end()) throw error("no tensor '{}' in the graph", id);
  return *it->second;
}

const Tensor& Graph::tensor(const TensorId& id) const {
  return const_cast<Graph*>(this)->tensor(id);
}

std::vector<TensorId> Graph::tensorsOfKind(TensorKind kind) const {
  std::vector<TensorId> ids;
  for (const auto& [id, t] : tensors_) {
    if (t->kind == kind) ids.push_back(id);
  }
  return ids;
}

Op& Graph::addOp(OpSpec spec) {
  auto op = std::make_unique<Op>();
  op->id = nextOpId_++;
  op->type = std::move(spec.type);
  op->domain = spec.domain.empty() ? kOnnxDomain : std::move(spec.domain);
  op->name = std::move(spec.name);
  op->inputs = std::move(spec.inputs);
  op->attrs = std::move(spec.attrs);
  op->phase = spec.phase;
  op->opset = spec.opset;
  op->placement = spec.placement;
  op->recomputeType = spec.recomputeType;
  op->attrs.setOwner(op->describe());

  const OpDef& def = OpRegistry::instance().get(*op);
  for (const auto& in : op->inputs) {
    if (!in.empty() && !hasTensor(in)) {
      throw error("{}: input '{}' is not produced by any op, graph input or initializer",
                  op->describe(), in);
    }
  }
  if (def.canonicalize) def.canonicalize(*op, *this);
  while (!op->inputs.empty() && op->inputs.back().empty()) op->inputs.pop_back();

  const int nIn = static_cast<int>(op->inputs.size());
  if (nIn < def.minInputs || (def.maxInputs >= 0 && nIn > def.maxInputs)) {
    throw error("{}: has {} inputs, expected {}{}", op->describe(), nIn, def.minInputs,
                def.maxInputs == def.minInputs
                    ? std::string()
                    : (def.maxInputs < 0 ? std::string(" or more")
                                         : " to " + std::to_string(def.maxInputs)));
  }
  for (int i = 0; i < def.minInputs; ++i) {
    if (op->inputs[static_cast<size_t>(i)].empty()) {
      throw error("{}: required input {} is missing", op->describe(), i);
    }
  }

  if (spec.outputs.empty()) {
    for (int i = 0; i < spec.numOutputs; ++i) {
      spec.outputs.push_back(
          uniqueId(op->type + "_" + std::to_string(op->id) + ":" + std::to_string(i)));
    }
  }
  op->outputs = std::move(spec.outputs);
  const int nOut = static_cast<int>(op->outputs.size());
  if (nOut < def.minOutputs || (def.maxOutputs >= 0 && nOut > def.maxOutputs)) {
    throw error("{}: has {} outputs, expected {} to {}", op->describe(), nOut, def.minOutputs,
                def.maxOutputs);
  }

  ShapeContext ctx(*this, *op);
  std::vector<TensorInfo> infos = def.infer(ctx);
  XT_CHECK_LE(static_cast<size_t>(nOut), infos.size(), "{} inferred too few outputs",
              op->describe());

  for (size_t i = 0; i < op->outputs.size(); ++i) {
    const TensorId& out = op->outputs[i];
    if (out.empty()) continue;
    if (hasTensor(out)) {
      Tensor& t = tensor(out);
      if (t.producer >= 0 || t.kind != TensorKind::Activation) {
        throw error("{}: output '{}' is already defined elsewhere (each tensor has one producer)",
                    op->describe(), out);
      }
    } else {
      addTensor(out, infos[i], TensorKind::Activation);
    }
    Tensor& t = tensor(out);
    t.info = infos[i];
    t.producer = op->id;
  }
  for (const auto& in : op->inputs) {
    if (!in.empty()) tensor(in).consumers.push_back(op->id);
  }
  Op& ref = *op;
  ops_.emplace(ref.id, std::move(op));
  return ref;
}

Op& Graph::op(OpId id) {
  auto it = ops_.find(id);
  XT_CHECK(it != ops_.end(), "no op with id {}", id);
  return *it->second;
}

const Op& Graph::op(OpId id) const {
  return const_cast<Graph*>(this)->op(id);
}

void Graph::removeOp(OpId id) {
  Op& o = op(id);
  for (const auto& out : o.outputs) {
    if (out.empty()) continue;
    XT_CHECK(tensor(out).consumers.empty(), "removing {} whose output {} is still used",
             o.describe(), out);
  }
  for (const auto& in : o.inputs) {
    if (in.empty()) continue;
    auto& cs = tensor(in).consumers;
    for (auto it = cs.begin(); it != cs.end(); ++it) {
      if (*it == id) {
        cs.erase(it);
        break;
      }
    }
  }
  for (const auto& out : o.outputs) {
    if (!out.empty()) tensors_.erase(out);
  }
  ops_.erase(id);
}

void Graph::removeTensor(const TensorId& id) {
  const Tensor& t = tensor(id);
  XT_CHECK(t.consumers.empty() && t.producer < 0, "removing tensor {}, which ops still use", id);
  std::erase(inputs_, id);
  std::erase(outputs_, id);
  tensors_.erase(id);
}

void Graph::setupOp(Op& o) {
  const OpDef& def = OpRegistry::instance().get(o);
  ShapeContext ctx(*this, o);
  std::vector<TensorInfo> infos = def.infer(ctx);
  for (size_t i = 0; i < o.outputs.size(); ++i) {
    if (!o.outputs[i].empty()) tensor(o.outputs[i]).info = infos.at(i);
  }
}

std::vector<OpId> Graph::schedule() const {
  // Kahn's algorithm with a priority queue keyed by (phase, order, id): deterministic and
  // phase-ordered. The order is the op's id, except for a recomputation clone and a copy between
  // virtual graphs (IpuCopy), whose order is the smallest of its readers' (clones of clones
  // included): it is taken just when its first reader would be, were that reader ready, and not as
  // soon as its inputs allow.
  std::map<OpId, OpId> order;
  const std::function<OpId(const Op&)> orderOf = [&](const Op& o) -> OpId {
    if (o.recomputes < 0 && !(o.type == "IpuCopy" && o.domain == kXtrainDomain)) return o.id;
    if (auto it = order.find(o.id); it != order.end()) return it->second;
    OpId first = o.id;
    bool anyReader = false;
    for (const auto& out : o.outputs) {
      if (out.empty()) continue;
      for (OpId c : tensor(out).consumers) {
        const OpId k = orderOf(*ops_.at(c));
        first = anyReader ? std::min(first, k) : k;
        anyReader = true;
      }
    }
    order[o.id] = first;
    return first;
  };
  std::map<OpId, int> pending;
  using Key = std::tuple<int, OpId, OpId>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  const auto keyOf = [&](const Op& o) { return Key{static_cast<int>(o.phase), orderOf(o), o.id}; };
  for (const auto& [id, o] : ops_) {
    int n = 0;
    for (const auto& in : o->inputs) {
      if (in.empty()) continue;
      if (tensor(in).producer >= 0) ++n;
    }
    pending[id] = n;
    if (n == 0) ready.push(keyOf(*o));
  }
  // In-place ops (optimizer updates) must run after every other reader of the tensors they modify.
  // Phases guarantee that: updates are in the Update phase, readers in earlier phases.
  std::vector<OpId> scheduled;
  scheduled.reserve(ops_.size());
  while (!ready.empty()) {
    const OpId id = std::get<2>(ready.top());
    ready.pop();
    scheduled.push_back(id);
    const Op& o = *ops_.at(id);
    for (const auto& out : o.outputs) {
      if (out.empty()) continue;
      // consumers lists an op once per input slot that reads the tensor; visit each op once.
      std::set<OpId> consumers(tensor(out).consumers.begin(), tensor(out).consumers.end());
      for (OpId c : consumers) {
        const Op& co = *ops_.at(c);
        // A consumer may read the same tensor more than once.
        for (const auto& in : co.inputs) {
          if (in == out && --pending[c] == 0) ready.push(keyOf(co));
        }
      }
    }
  }
  if (scheduled.size() != ops_.size()) {
    throw error("the graph has a cycle: {} of {} ops could not be scheduled",
                ops_.size() - scheduled.size(), ops_.size());
  }
  return scheduled;
}

TensorId Graph::uniqueId(const std::string& base) {
  if (!hasTensor(base)) return base;
  for (int i = 1;; ++i) {
    TensorId id = base + "__" + std::to_string(i);
    if (!hasTensor(id)) return id;
  }
}

}  // namespace xtrain::ir
