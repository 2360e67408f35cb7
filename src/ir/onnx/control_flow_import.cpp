// Control flow at import: ai.graphcore Call and ai.onnx If, Loop and Scan are inlined into the
// graph (docs/architecture.md, "Subgraphs"; PackedDataBlock too, in packed_data_import.cpp). A
// Call's callee and an If's chosen branch are added once; a Loop's and a Scan's body once per
// iteration, with the iteration's number a constant. Every op added is folded when its result is
// known, so a Loop's condition computed from constants, an If's constant condition and the slices
// of a Scan reach the next op as constants.
//
// Where a value is known only at run time, the inlined form computes what the op would and selects
// (Where): an If on a condition computed at run time adds both branches and selects each output; a
// Loop whose condition is computed at run time runs every one of its M iterations and keeps each
// iteration's results only while the condition held. Gradients follow from the inlined ops'.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/onnx/inliner.hpp"
#include "ir/op_registry.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::ir::onnximport {

namespace {

// A limit of unrolling: iterations of one Loop or Scan.
constexpr int64_t kMaxIterations = int64_t{1} << 16;

// The control-flow ops and the names of their graph attributes.
std::vector<std::string> graphAttrNames(const onnx::NodeProto& node) {
  const std::string domain = onnxutil::canonicalDomain(node.domain());
  if (domain == kOnnxDomain) {
    if (node.op_type() == "If") return {"then_branch", "else_branch"};
    if (node.op_type() == "Loop" || node.op_type() == "Scan") return {"body"};
  }
  if (domain == kGraphcoreDomain && node.op_type() == "Call") return {"callee"};
  if (domain == kGraphcoreDomain && node.op_type() == "PackedDataBlock") return {"callback"};
  return {};
}

}  // namespace

void Inliner::bindInput(const onnx::ValueInfoProto& vi, size_t i, const TensorId& id,
                        Scope& local) {
  const TensorInfo& given = info(id);
  if (vi.has_type() && vi.type().has_tensor_type()) {
    const auto& tt = vi.type().tensor_type();
    if (tt.elem_type() != 0 && dataTypeToOnnx(given.dataType()) != tt.elem_type()) {
      fail("subgraph input {} '{}' is declared with ONNX element type {}, but is given {}", i,
           vi.name(), tt.elem_type(), given.toString());
    }
    if (tt.has_shape()) {
      bool matches = tt.shape().dim_size() == static_cast<int>(given.shape().size());
      for (int d = 0; matches && d < tt.shape().dim_size(); ++d) {
        const auto& dim = tt.shape().dim(d);
        matches = !dim.has_dim_value() || dim.dim_value() == given.shape()[d];
      }
      if (!matches && calleeShapesAreHints_) {
        logging::ir::warn(
            "{}: callee input {} '{}' is declared with another shape than the {} the call gives "
            "it; the callee is inlined with the shape given",
            label_, i, vi.name(), given.toString());
      } else if (!matches) {
        fail("subgraph input {} '{}' is declared with another shape than the {} it is given", i,
             vi.name(), given.toString());
      }
    }
  }
  local.names[vi.name()] = id;
}

std::vector<TensorId> Inliner::instantiate(const onnx::GraphProto& body,
                                           const std::vector<TensorId>& inputs,
                                           const std::string& tag) {
  if (static_cast<size_t>(body.input_size()) != inputs.size()) {
    fail("subgraph '{}' has {} inputs, the op gives it {}", body.name(), body.input_size(),
         inputs.size());
  }
  imp_.inlinedOps += static_cast<size_t>(body.node_size());
  if (imp_.inlinedOps > kMaxInlinedOps) {
    fail(
        "inlining the model's subgraphs adds more than {} ops (loops unroll when imported: see "
        "docs/onnx-import.md)",
        kMaxInlinedOps);
  }
  Scope local{{}, &scope_};
  for (int i = 0; i < body.input_size(); ++i) {
    bindInput(body.input(i), static_cast<size_t>(i), inputs[static_cast<size_t>(i)], local);
  }
  const std::string prefix = tag.empty() ? std::string() : tag + "/";
  for (const auto& init : body.initializer()) {
    HostTensor v = onnxutil::tensorFromProto(init, label_ + ": initializer '" + init.name() + "'");
    local.names[init.name()] = constant(std::move(v), prefix + init.name());
  }
  for (int j = 0; j < body.node_size(); ++j) {
    const onnx::NodeProto& n = body.node(j);
    std::string nlabel = label_ + " > " + (body.name().empty() ? "subgraph" : body.name()) +
                         " node #" + std::to_string(j);
    if (!n.name().empty()) nlabel += " '" + n.name() + "'";
    nlabel += " (" + n.op_type() + ")";
    std::vector<TensorId> ins;
    for (const auto& in : n.input()) {
      if (in.empty()) {
        ins.emplace_back();
        continue;
      }
      TensorId id = local.find(in, imp_.graph);
      if (id.empty()) {
        throw error("{}: input '{}' is not a tensor of the subgraph or of an enclosing graph",
                    nlabel, in);
      }
      ins.push_back(std::move(id));
    }
    std::vector<TensorId> outs;
    for (const auto& out : n.output()) {
      if (out.empty()) {
        outs.emplace_back();
        continue;
      }
      outs.push_back(freshId(prefix + out));
      local.names[out] = outs.back();
    }
    const std::string domain = onnxutil::canonicalDomain(n.domain());
    if (n.op_type() == "Constant" && domain == kOnnxDomain) {
      if (outs.size() != 1 || outs[0].empty()) {
        throw error("{}: a Constant node must have exactly one output, it has {}", nlabel,
                    outs.size());
      }
      addConstantNode(imp_.graph, n, nlabel, outs[0]);
    } else if (isControlFlow(n)) {
      importControlFlow(imp_, n, nlabel, ins, outs, local);
    } else {
      addNodeOp(imp_, n, nlabel, ins, outs,
                n.name().empty() ? std::string() : base_ + "/" + prefix + n.name());
    }
  }
  std::vector<TensorId> results;
  for (const auto& out : body.output()) {
    TensorId id = local.find(out.name(), imp_.graph);
    if (id.empty()) {
      fail("subgraph '{}' output '{}' is not a tensor of the subgraph or of an enclosing graph",
           body.name(), out.name());
    }
    results.push_back(std::move(id));
  }
  return results;
}

namespace {

// ---- Call

void inlineCall(Inliner& in, const std::vector<TensorId>& inputs,
                const std::vector<TensorId>& outputs, const std::string& nodeName) {
  const onnx::GraphProto& callee = in.graphAttr("callee");
  // PopART's messages, word for word.
  if (static_cast<int>(outputs.size()) != callee.output_size()) {
    throw error(
        "For CallOp '{}', number of outputs ({}) does not match that of the callee "
        "subgraph ({})",
        nodeName, outputs.size(), callee.output_size());
  }
  if (static_cast<int>(inputs.size()) != callee.input_size()) {
    throw error(
        "For CallOp '{}', number of inputs ({}) does not match that of the callee "
        "subgraph ({})",
        nodeName, inputs.size(), callee.input_size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) in.fail("input {} is absent; every input of a Call is required", i);
  }
  in.allowCalleeShapes();
  in.writeOutputs(in.instantiate(callee, inputs, ""), outputs);
}

// ---- If

void inlineIf(Inliner& in, const std::vector<TensorId>& inputs,
              const std::vector<TensorId>& outputs) {
  if (inputs.size() != 1 || inputs[0].empty()) {
    in.fail("takes one input (the condition), got {}", inputs.size());
  }
  const onnx::GraphProto& thenG = in.graphAttr("then_branch");
  const onnx::GraphProto& elseG = in.graphAttr("else_branch");
  for (const auto* g : {&thenG, &elseG}) {
    if (g->output_size() != static_cast<int>(outputs.size())) {
      in.fail("has {} outputs, but its {} has {}", outputs.size(),
              g == &thenG ? "then_branch" : "else_branch", g->output_size());
    }
  }
  const TensorId cond = in.scalarCondition(inputs[0], "the condition");
  const std::vector<TensorId> thenIn = in.enclosingInputs(thenG, "then_branch");
  const std::vector<TensorId> elseIn = in.enclosingInputs(elseG, "else_branch");
  if (const HostTensor* c = in.known(cond)) {
    const bool taken = c->getAsDouble(0) != 0;
    in.writeOutputs(in.instantiate(taken ? thenG : elseG, taken ? thenIn : elseIn, ""), outputs);
    return;
  }
  // Known only at run time: both branches, each output selected.
  const std::vector<TensorId> t = in.instantiate(thenG, thenIn, "then");
  const std::vector<TensorId> e = in.instantiate(elseG, elseIn, "else");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (in.info(t[i]) != in.info(e[i])) {
      in.fail(
          "output {} is {} in then_branch and {} in else_branch; with a condition known only "
          "at run time, xtrain computes both branches and selects, so they must agree",
          i, in.info(t[i]).toString(), in.info(e[i]).toString());
    }
    if (!outputs[i].empty()) in.op("Where", {cond, t[i], e[i]}, {}, outputs[i]);
  }
}

// ---- Loop

struct LoopState {
  std::vector<TensorId> carried;
  std::vector<std::vector<TensorId>> scans;  // per scan output, one row per iteration
  TensorId running;                          // BOOL scalar
};

// One iteration of a Loop whose condition `state.running` may be known only at run time.
void loopIteration(Inliner& in, const onnx::GraphProto& body, int64_t i, LoopState& state) {
  const size_t n = state.carried.size();
  std::vector<TensorId> bodyIn = {in.int64Constant({i}, {}, "iteration"), state.running};
  bodyIn.insert(bodyIn.end(), state.carried.begin(), state.carried.end());
  const std::vector<TensorId> res = in.instantiate(body, bodyIn, "it" + std::to_string(i));
  const TensorId condOut = in.scalarCondition(res[0], "the body's condition output");
  const HostTensor* running = in.known(state.running);
  if (running != nullptr) {  // known true: this iteration runs
    for (size_t k = 0; k < n; ++k) state.carried[k] = res[1 + k];
    for (size_t k = 0; k < state.scans.size(); ++k) state.scans[k].push_back(res[1 + n + k]);
    state.running = condOut;
    return;
  }
  // Known at run time only: keep the iteration's results where it ran.
  for (size_t k = 0; k < n; ++k) {
    if (in.info(res[1 + k]) != in.info(state.carried[k])) {
      in.fail(
          "loop-carried value {} changes from {} to {}; with a condition known only at run "
          "time its type and shape must stay the same",
          k, in.info(state.carried[k]).toString(), in.info(res[1 + k]).toString());
    }
    state.carried[k] = in.op("Where", {state.running, res[1 + k], state.carried[k]});
  }
  for (size_t k = 0; k < state.scans.size(); ++k) {
    const TensorId zeros = in.constant(HostTensor(in.info(res[1 + n + k])), "zeros");
    state.scans[k].push_back(in.op("Where", {state.running, res[1 + n + k], zeros}));
  }
  state.running = in.op("And", {state.running, condOut});
}

int64_t loopTripCount(Inliner& in, const TensorId& m) {
  const HostTensor* v = in.known(m);
  if (v == nullptr) {
    in.fail(
        "the trip count '{}' is computed at run time; xtrain unrolls loops when it imports a "
        "model and needs a trip count known then (a constant, or computed from constants and "
        "shapes)",
        m);
  }
  if (v->nelms() != 1 || isFloatingPoint(v->dataType())) {
    in.fail("the trip count '{}' is {}, expected an integer tensor of one element", m,
            v->info().toString());
  }
  const double count = v->getAsDouble(0);
  return count < 0 ? 0 : static_cast<int64_t>(std::min<double>(count, 9.2e18));
}

void inlineLoop(Inliner& in, const std::vector<TensorId>& inputs,
                const std::vector<TensorId>& outputs) {
  const onnx::GraphProto& body = in.graphAttr("body");
  if (inputs.size() < 2) in.fail("takes at least 2 inputs (M, cond), got {}", inputs.size());
  const size_t n = inputs.size() - 2;
  if (static_cast<size_t>(body.input_size()) != n + 2) {
    in.fail(
        "the body has {} inputs, expected {} (iteration number, condition and the {} "
        "loop-carried values)",
        body.input_size(), n + 2, n);
  }
  if (static_cast<size_t>(body.output_size()) < n + 1 ||
      outputs.size() != static_cast<size_t>(body.output_size()) - 1) {
    in.fail(
        "the body has {} outputs and the op {}; expected the body's to be the condition, the "
        "{} loop-carried values and the scan outputs, and the op's one fewer",
        body.output_size(), outputs.size(), n);
  }
  const bool hasCount = !inputs[0].empty();
  const int64_t count = hasCount ? loopTripCount(in, inputs[0]) : kMaxIterations + 1;
  if (hasCount && count > kMaxIterations) {
    in.fail(
        "the trip count is {}; xtrain unrolls loops when it imports a model, up to {} "
        "iterations",
        count, kMaxIterations);
  }
  LoopState state;
  state.carried.assign(inputs.begin() + 2, inputs.end());
  state.scans.resize(outputs.size() - n);
  state.running =
      inputs[1].empty() ? in.boolConstant(true) : in.scalarCondition(inputs[1], "the condition");
  int64_t i = 0;
  for (; i < count; ++i) {
    const HostTensor* running = in.known(state.running);
    if (running != nullptr && running->getAsDouble(0) == 0) break;
    if (!hasCount && running == nullptr) {
      in.fail(
          "has no trip count and a condition computed at run time; xtrain unrolls loops when "
          "it imports a model and needs a trip count known then");
    }
    loopIteration(in, body, i, state);
  }
  if (!hasCount && i == count) {
    in.fail("has no trip count and did not stop within {} iterations", kMaxIterations);
  }
  std::vector<TensorId> results = state.carried;
  for (auto& rows : state.scans) {
    if (rows.empty()) {
      in.fail("runs no iteration, so the shape of its scan outputs is unknown");
    }
    Shape one = in.info(rows[0]).shape();
    one.insert(one.begin(), 1);
    std::vector<TensorId> parts;
    for (const auto& r : rows) parts.push_back(in.reshape(r, one));
    Attributes a;
    a.set("axis", int64_t{0});
    results.push_back(parts.size() == 1 ? parts[0] : in.op("Concat", parts, a));
  }
  in.writeOutputs(results, outputs);
}

// ---- Scan (opset 9 and later), with PopART's shapes: a scan input's slice drops the scan axis
// when its rank is above 1 (keeps it as size 1 otherwise), and the scan outputs' slices are
// concatenated along the scan output axis.

int64_t axisOf(Inliner& in, int64_t axis, size_t rank, const char* what, size_t k) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) in.fail("{}[{}] = {} is out of range for rank {}", what, k, axis, r);
  return axis < 0 ? axis + r : axis;
}

void inlineScan(Inliner& in, const onnx::NodeProto& node, const std::vector<TensorId>& inputs,
                const std::vector<TensorId>& outputs, int opset) {
  if (opset > 0 && opset < 9) {
    in.fail("Scan before opset 9 (with a batch axis and sequence_lens) is not supported");
  }
  const onnx::GraphProto& body = in.graphAttr("body");
  const int64_t m = intAttr(node, "num_scan_inputs", -1);
  if (m < 1 || static_cast<size_t>(m) > inputs.size()) {
    in.fail("num_scan_inputs is {}, expected 1 to the {} inputs", m, inputs.size());
  }
  const size_t nScan = static_cast<size_t>(m), nState = inputs.size() - nScan;
  if (static_cast<size_t>(body.input_size()) != inputs.size() ||
      static_cast<size_t>(body.output_size()) != outputs.size() || outputs.size() < nState) {
    in.fail("the body has {} inputs and {} outputs, the op {} and {}", body.input_size(),
            body.output_size(), inputs.size(), outputs.size());
  }
  const auto inAxes = intsAttr(node, "scan_input_axes"),
             inDirs = intsAttr(node, "scan_input_directions");
  const auto outAxes = intsAttr(node, "scan_output_axes"),
             outDirs = intsAttr(node, "scan_output_directions");
  const auto at = [](const std::vector<int64_t>& v, size_t k) { return k < v.size() ? v[k] : 0; };
  int64_t length = -1;
  std::vector<int64_t> axes(nScan);
  for (size_t k = 0; k < nScan; ++k) {
    const TensorInfo& x = in.info(inputs[nState + k]);
    if (x.shape().empty()) in.fail("scan input {} is a scalar; it needs an axis to scan", k);
    axes[k] = axisOf(in, at(inAxes, k), x.shape().size(), "scan_input_axes", k);
    const int64_t len = x.shape()[static_cast<size_t>(axes[k])];
    if (length >= 0 && len != length) {
      in.fail("scan inputs have {} and {} slices along their scan axes; they must agree", length,
              len);
    }
    length = len;
  }
  if (length > kMaxIterations) {
    in.fail("scans {} slices; xtrain unrolls a Scan when it imports a model, up to {}", length,
            kMaxIterations);
  }
  const size_t nOut = outputs.size() - nState;
  if (length == 0 && nOut > 0) in.fail("scans no slice, so the shape of its outputs is unknown");
  std::vector<TensorId> state(inputs.begin(), inputs.begin() + static_cast<long>(nState));
  std::vector<std::vector<TensorId>> rows(nOut);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<TensorId> bodyIn = state;
    for (size_t k = 0; k < nScan; ++k) {
      const TensorId& x = inputs[nState + k];
      const int64_t index = at(inDirs, k) != 0 ? length - 1 - t : t;
      const bool keepAxis = in.info(x).shape().size() == 1;
      const TensorId idx = in.int64Constant({index}, keepAxis ? Shape{1} : Shape{}, "index");
      Attributes a;
      a.set("axis", axes[k]);
      bodyIn.push_back(in.op("Gather", {x, idx}, a));
    }
    const std::vector<TensorId> res = in.instantiate(body, bodyIn, "it" + std::to_string(t));
    std::copy(res.begin(), res.begin() + static_cast<long>(nState), state.begin());
    for (size_t k = 0; k < nOut; ++k) rows[k].push_back(res[nState + k]);
  }
  std::vector<TensorId> results = state;
  for (size_t k = 0; k < nOut; ++k) {
    std::vector<TensorId> parts = rows[k];
    if (at(outDirs, k) != 0) std::reverse(parts.begin(), parts.end());
    const size_t rank = in.info(parts[0]).shape().size();
    if (rank == 0) in.fail("scan output {} is a scalar; PopART concatenates scan outputs", k);
    Attributes a;
    a.set("axis", axisOf(in, at(outAxes, k), rank, "scan_output_axes", k));
    results.push_back(parts.size() == 1 ? parts[0] : in.op("Concat", parts, a));
  }
  in.writeOutputs(results, outputs);
}

}  // namespace

TensorId Scope::find(const std::string& name, const Graph& graph) const {
  for (const Scope* s = this; s != nullptr; s = s->parent) {
    auto it = s->names.find(name);
    if (it != s->names.end()) return it->second;
  }
  return graph.hasTensor(name) ? name : TensorId();
}

bool isControlFlow(const onnx::NodeProto& node) {
  return !graphAttrNames(node).empty();
}

std::vector<const onnx::GraphProto*> subgraphsOf(const onnx::NodeProto& node) {
  std::vector<const onnx::GraphProto*> graphs;
  for (const auto& name : graphAttrNames(node)) {
    const onnx::AttributeProto* a = findAttr(node, name);
    if (a != nullptr && a->has_g()) graphs.push_back(&a->g());
  }
  return graphs;
}

void importControlFlow(NodeImporter& imp, const onnx::NodeProto& node, const std::string& label,
                       const std::vector<TensorId>& inputs, const std::vector<TensorId>& outputs,
                       const Scope& scope) {
  Inliner in(imp, node, label, scope);
  const std::string domain = onnxutil::canonicalDomain(node.domain());
  const auto v = imp.opsets.find(domain);
  const int opset = v == imp.opsets.end() ? 0 : v->second;
  if (node.op_type() == "Call") {
    inlineCall(in, inputs, outputs, node.name());
  } else if (node.op_type() == "PackedDataBlock") {
    inlinePackedDataBlock(in, inputs, outputs);
  } else if (node.op_type() == "If") {
    inlineIf(in, inputs, outputs);
  } else if (node.op_type() == "Loop") {
    inlineLoop(in, inputs, outputs);
  } else {
    inlineScan(in, node, inputs, outputs, opset);
  }
}

}  // namespace xtrain::ir::onnximport
