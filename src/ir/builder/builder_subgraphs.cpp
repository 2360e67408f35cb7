// Subgraph Builders (Builder::createSubgraphBuilder) and the ops that embed them as graph
// attributes: ai.graphcore Call, ai.onnx If, Loop and Scan. A child Builder's model is the
// subgraph; the op copies its graph into the node when it is emitted, as PopART's Builder does.
// Ids are unique across a family of Builders, so an inlined subgraph's names never clash with its
// callers' (and the ONNX checker's single-assignment rule holds across scopes).
#include "ir/builder/builder_impl.hpp"
#include "ir/onnx/onnx_import.hpp"

namespace xtrain {

Builder& BuilderImpl::addChild(std::unique_ptr<Builder> child, BuilderImpl* childImpl,
                               Builder* self) {
  childImpl->parent_ = this;
  childImpl->parentBuilder_ = self;
  // The child's ops use the versions its parent chose.
  *childImpl->model_.mutable_opset_import() = model_.opset_import();
  childImpl->model_.mutable_graph()->set_name("subgraph_" + std::to_string(children_.size()));
  children_.push_back(std::move(child));
  childImpls_.push_back(childImpl);
  return *children_.back();
}

bool BuilderImpl::visible(const TensorId& id) const {
  return hasTensor(id) || (parent_ != nullptr && parent_->visible(id));
}

bool BuilderImpl::takenBelow(const std::string& id) const {
  for (const BuilderImpl* c : childImpls_) {
    if (c->tensorIds_.count(id) || c->takenBelow(id)) return true;
  }
  return false;
}

bool BuilderImpl::idTaken(const std::string& id) const {
  const BuilderImpl* root = this;
  while (root->parent_ != nullptr) root = root->parent_;
  return root->tensorIds_.count(id) != 0 || root->takenBelow(id);
}

TensorId BuilderImpl::addUntypedInput(const std::string& debugName) {
  if (parent_ == nullptr) {
    // PopART's message.
    throw error(
        "Can not add untyped tensors to the top-level graph. Use "
        "Builder::addInputTensor(const TensorInfo &tensorInfo, const std::string &debugPrefix) "
        "instead.");
  }
  const TensorId id = uniqueTensorId(scopePrefix() + (debugName.empty() ? "input" : debugName));
  model_.mutable_graph()->add_input()->set_name(id);
  tensorIds_.insert(id);
  ++generation_;
  return id;
}

void BuilderImpl::addInputFromParent(const TensorId& id) {
  if (parent_ == nullptr || !parent_->visible(id)) {
    // PopART's message.
    throw error(
        "Failed to add unrecognised Tensor {} from higher scope, Currently, a Tensor must already "
        "exist in a higher (parent) scope to add it as an input in a lower scope.",
        id);
  }
  onnx::ValueInfoProto* in = model_.mutable_graph()->add_input();
  in->set_name(id);
  for (BuilderImpl* p = parent_; p != nullptr; p = p->parent_) {
    if (!p->hasTensor(id)) continue;
    try {
      const TensorInfo info = p->tensorInfo(id);
      *in->mutable_type() = ir::onnxutil::tensorTypeProto(info);
    } catch (const error&) {
      // Its type is not known yet: the op that uses the subgraph gives it.
    }
    break;
  }
  tensorIds_.insert(id);
  ++generation_;
}

void BuilderImpl::addOuterTypes(onnx::GraphProto& g) const {
  std::set<std::string> defined;
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& init : g.initializer()) defined.insert(init.name());
  for (const auto& node : g.node()) defined.insert(node.output().begin(), node.output().end());
  std::set<std::string> added;
  for (const auto& node : g.node()) {
    for (const auto& name : node.input()) {
      if (name.empty() || defined.count(name) || added.count(name)) continue;
      for (BuilderImpl* p = parent_; p != nullptr; p = p->parent_) {
        if (!p->hasTensor(name)) continue;
        try {
          const TensorInfo info = p->tensorInfo(name);
          onnx::ValueInfoProto* vi = g.add_input();
          vi->set_name(name);
          *vi->mutable_type() = ir::onnxutil::tensorTypeProto(info);
          added.insert(name);
        } catch (const error&) {
        }
        break;
      }
    }
  }
}

onnx::GraphProto BuilderImpl::subgraphOf(BuilderImpl& child, const char* method) {
  if (child.parent_ == nullptr) {
    throw error("Builder: {}: the subgraph must be a Builder made by createSubgraphBuilder",
                method);
  }
  for (const auto& o : child.model_.opset_import()) requireOpset(o.domain(), o.version());
  onnx::GraphProto g = child.model_.graph();
  child.runInference();
  for (auto& out : *g.mutable_output()) {
    if (out.has_type()) continue;
    auto it = child.inferred_.find(out.name());
    // A type without a shape is left out: the checker requires the shape of a typed value.
    if (it != child.inferred_.end() && it->second.tensor_type().has_shape()) {
      *out.mutable_type() = it->second;
    }
  }
  return g;
}

std::optional<TensorInfo> BuilderImpl::irInfo(const TensorId& id) {
  if (parent_ != nullptr) return std::nullopt;  // a subgraph alone does not import
  if (irGeneration_ != generation_) {
    irInfos_.clear();
    irGeneration_ = generation_;
    try {
      ir::OnnxImportOptions options;
      options.runChecker = false;
      const ir::OnnxModel m = ir::importOnnxModel(
          ir::onnxutil::serializeModel(modelForExport(), "the Builder's model"), options);
      for (const auto& [tid, t] : m.graph->tensors()) irInfos_.emplace(tid, t->info);
    } catch (const error&) {
      // Not importable yet (an op without a kernel's rule, a trip count from a computation):
      // ONNX inference's answer, or its error, stands.
    }
  }
  const auto it = irInfos_.find(id);
  if (it == irInfos_.end()) return std::nullopt;
  return it->second;
}

// ---- Builder

Builder& Builder::createSubgraphBuilder() {
  std::unique_ptr<Builder> child = Builder::create();
  BuilderImpl* childImpl = child->impl_.get();
  return impl_->addChild(std::move(child), childImpl, this);
}

TensorId Builder::addUntypedInputTensor(const std::string& debugContext) {
  return impl_->addUntypedInput(debugContext);
}

void Builder::addInputTensorFromParentGraph(const TensorId& tensorId) {
  impl_->addInputFromParent(tensorId);
}

Builder* Builder::getParent() const {
  return impl_->parentBuilder();
}

// ---- the ops

std::vector<TensorId> AiGraphcoreOpset1::call(const std::vector<TensorId>& args,
                                              unsigned num_outputs, Builder& callee,
                                              const std::string& debugContext) {
  onnx::GraphProto g = impl_->subgraphOf(BuilderImpl::of(callee), "call");
  // PopART checks these when it builds its IR, with these messages; the Builder knows them now.
  if (static_cast<int>(num_outputs) != g.output_size()) {
    throw error(
        "For CallOp '{}', number of outputs ({}) does not match that of the callee subgraph ({})",
        debugContext, num_outputs, g.output_size());
  }
  if (static_cast<int>(args.size()) != g.input_size()) {
    throw error(
        "For CallOp '{}', number of inputs ({}) does not match that of the callee subgraph ({})",
        debugContext, args.size(), g.input_size());
  }
  auto e = impl_->emit("Call", ir::kGraphcoreDomain, args, num_outputs, debugContext);
  setGraphAttr(*e.node, "callee", std::move(g));
  return e.outputs;
}

std::vector<TensorId> AiOnnxOpset11::logical_if(const std::vector<TensorId>& args,
                                                unsigned num_outputs, Builder& else_branch,
                                                Builder& then_branch,
                                                const std::string& debugContext) {
  BuilderImpl::checkArity("logical_if", "If", args, 1, 1);
  onnx::GraphProto e = impl_->subgraphOf(BuilderImpl::of(else_branch), "logical_if");
  onnx::GraphProto t = impl_->subgraphOf(BuilderImpl::of(then_branch), "logical_if");
  for (const auto* g : {&t, &e}) {
    if (g->output_size() != static_cast<int>(num_outputs)) {
      throw error("Builder: logical_if: {} has {} outputs, expected num_outputs = {}",
                  g == &t ? "then_branch" : "else_branch", g->output_size(), num_outputs);
    }
  }
  auto n = impl_->emit("If", "", args, num_outputs, debugContext);
  setGraphAttr(*n.node, "else_branch", std::move(e));
  setGraphAttr(*n.node, "then_branch", std::move(t));
  return n.outputs;
}

std::vector<TensorId> AiOnnxOpset11::loop(const std::vector<TensorId>& args, unsigned num_outputs,
                                          Builder& body, const std::string& debugContext) {
  BuilderImpl::checkArity("loop", "Loop", args, 2, SIZE_MAX);
  onnx::GraphProto g = impl_->subgraphOf(BuilderImpl::of(body), "loop");
  if (g.input_size() != static_cast<int>(args.size())) {
    throw error(
        "Builder: loop: the body has {} inputs, expected {} (iteration number, condition and the "
        "{} loop-carried values)",
        g.input_size(), args.size(), args.size() - 2);
  }
  if (g.output_size() != static_cast<int>(num_outputs) + 1) {
    throw error(
        "Builder: loop: the body has {} outputs, expected num_outputs + 1 = {} (the condition, "
        "then the loop's outputs)",
        g.output_size(), num_outputs + 1);
  }
  auto n = impl_->emit("Loop", "", args, num_outputs, debugContext);
  setGraphAttr(*n.node, "body", std::move(g));
  return n.outputs;
}

std::vector<TensorId> AiOnnxOpset11::scan(const std::vector<TensorId>& args, unsigned num_outputs,
                                          Builder& body, int64_t num_scan_inputs,
                                          const std::vector<int64_t>& scan_input_axes,
                                          const std::vector<int64_t>& scan_input_directions,
                                          const std::vector<int64_t>& scan_output_axes,
                                          const std::vector<int64_t>& scan_output_directions,
                                          const std::string& debugContext) {
  BuilderImpl::checkArity("scan", "Scan", args, 1, SIZE_MAX);
  if (num_scan_inputs < 1 || num_scan_inputs > static_cast<int64_t>(args.size())) {
    throw error("Builder: scan: num_scan_inputs is {}, expected 1 to the {} inputs",
                num_scan_inputs, args.size());
  }
  onnx::GraphProto g = impl_->subgraphOf(BuilderImpl::of(body), "scan");
  if (g.input_size() != static_cast<int>(args.size()) ||
      g.output_size() != static_cast<int>(num_outputs)) {
    throw error("Builder: scan: the body has {} inputs and {} outputs, expected {} and {}",
                g.input_size(), g.output_size(), args.size(), num_outputs);
  }
  auto n = impl_->emit("Scan", "", args, num_outputs, debugContext);
  setIntAttr(*n.node, "num_scan_inputs", num_scan_inputs);
  const std::pair<const char*, const std::vector<int64_t>*> lists[] = {
      {"scan_input_axes", &scan_input_axes},
      {"scan_input_directions", &scan_input_directions},
      {"scan_output_axes", &scan_output_axes},
      {"scan_output_directions", &scan_output_directions}};
  for (const auto& [name, values] : lists) {
    if (!values->empty()) setIntsAttr(*n.node, name, *values);
  }
  setGraphAttr(*n.node, "body", std::move(g));
  return n.outputs;
}

}  // namespace xtrain
