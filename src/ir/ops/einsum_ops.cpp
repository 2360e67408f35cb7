// Einsum (opset 12) and the internal GeneralEinsum its gradients are made of.
//
// Canonical form of Einsum: attribute `equation` with explicit output and no ellipsis ("ij,jk->ik":
// canonicalize expands "..." into letters the equation does not use and writes the implicit
// output of an equation without "->"), and attribute `ellipsis_labels` (the letters "..." became,
// which marks the equation canonical). As in numpy, a dimension of size 1 broadcasts against the
// same label's larger size in another input.
//
// GeneralEinsum(x0, x1, ...) with attributes `equation` (canonical letters) and `shape` (the output
// shape) extends Einsum for gradients: output labels may repeat (the diagonal is written, the rest
// is zero) and may be absent from the inputs (the result is broadcast along them), and any label
// may broadcast size 1. The gradient of either op with respect to input i is a GeneralEinsum of the
// output gradient and the other inputs whose output is input i's term.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

struct Equation {
  std::vector<std::string> inputs;
  std::string output;
};

bool isLabel(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Splits a canonical equation (letters, ',' and '->' only).
Equation splitCanonical(const std::string& eq) {
  Equation e;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  e.output = arrow == std::string::npos ? std::string() : eq.substr(arrow + 2);
  size_t start = 0;
  for (;;) {
    const size_t comma = lhs.find(',', start);
    e.inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return e;
}

std::string joinEquation(const std::vector<std::string>& inputs, const std::string& output) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? "," : "") + inputs[i];
  return s + "->" + output;
}

// The equation without spaces. Throws on a character that is not a label, ',', '...' or '->', and
// on a second '->'.
std::string checkedEquation(const Op& op) {
  std::string eq;
  for (char c : op.attrs.getString("equation")) {
    if (c != ' ') eq += c;
  }
  for (size_t i = 0; i < eq.size(); ++i) {
    const char c = eq[i];
    if (!isLabel(c) && c != ',' && c != '.' &&
        !(c == '-' && i + 1 < eq.size() && eq[i + 1] == '>') &&
        !(c == '>' && i > 0 && eq[i - 1] == '-')) {
      throw error(
          "{}: equation '{}' has the invalid character '{}' (expected letters, ',', '...' "
          "and '->')",
          op.describe(), eq, std::string(1, c));
    }
  }
  const size_t arrow = eq.find("->");
  if (arrow != std::string::npos && eq.find("->", arrow + 1) != std::string::npos) {
    throw error("{}: equation '{}' has more than one '->'", op.describe(), eq);
  }
  return eq;
}

// Where term `t` has its ellipsis (npos: none); throws when a '.' is not part of one '...'.
size_t ellipsisAt(const Op& op, const std::string& eq, const std::string& t, const char* what) {
  const size_t p = t.find('.');
  if (p == std::string::npos) return p;
  if (t.compare(p, 3, "...") != 0 || t.find('.', p + 3) != std::string::npos) {
    throw error("{}: {} '{}' of equation '{}' has a '.' that is not one '...'", op.describe(), what,
                t, eq);
  }
  return p;
}

// The output term of an explicit equation (`out`, its ellipsis replaced by `fresh`), checked
// against the input terms; of an implicit one: the ellipsis, then the labels used once, in
// alphabetical (code) order.
std::string outputTerm(const Op& op, const std::string& eq, std::optional<std::string> out,
                       const std::vector<std::string>& terms, const std::string& fresh) {
  if (!out) {
    std::map<char, int> count;
    for (const auto& t : terms) {
      for (char c : t) ++count[c];
    }
    std::string implicit = fresh;
    for (const auto& [c, n] : count) {
      if (n == 1 && fresh.find(c) == std::string::npos) implicit += c;
    }
    return implicit;
  }
  const size_t p = ellipsisAt(op, eq, *out, "output");
  if (p != std::string::npos) out->replace(p, 3, fresh);
  std::set<char> seen;
  for (char c : *out) {
    if (!seen.insert(c).second) {
      throw error("{}: output label '{}' repeats in equation '{}'", op.describe(),
                  std::string(1, c), eq);
    }
    bool found = false;
    for (const auto& t : terms) found = found || t.find(c) != std::string::npos;
    if (!found) {
      throw error("{}: output label '{}' of equation '{}' is in no input", op.describe(),
                  std::string(1, c), eq);
    }
  }
  return *out;
}

// Parses ONNX's equation against the inputs' ranks into the canonical form (see the file comment).
void canonicalizeEquation(Op& op, const Graph& graph) {
  if (op.attrs.has("ellipsis_labels")) return;  // already canonical
  const std::string eq = checkedEquation(op);
  Equation parts = splitCanonical(eq);
  std::vector<std::string>& terms = parts.inputs;
  if (terms.size() != op.inputs.size()) {
    throw error("{}: equation '{}' has {} input terms but the op has {} inputs", op.describe(), eq,
                terms.size(), op.inputs.size());
  }
  std::set<char> used;
  for (char c : eq) {
    if (isLabel(c)) used.insert(c);
  }
  // Ellipsis dimensions per input.
  std::vector<int64_t> ell(terms.size(), 0);
  int64_t maxEll = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!op.hasInput(i)) throw error("{}: input {} is required", op.describe(), i);
    const int64_t rank = graph.tensor(op.inputs[i]).info.rank();
    const size_t p = ellipsisAt(op, eq, terms[i], "term");
    const auto letters = static_cast<int64_t>(terms[i].size() - (p == std::string::npos ? 0 : 3));
    if (p == std::string::npos ? letters != rank : letters > rank) {
      throw error("{}: term '{}' of equation '{}' has {} labels but input {} has rank {}",
                  op.describe(), terms[i], eq, letters, i, rank);
    }
    ell[i] = rank - letters;
    maxEll = std::max(maxEll, ell[i]);
  }
  std::string fresh;
  for (char c = 'A'; c <= 'z' && static_cast<int64_t>(fresh.size()) < maxEll; ++c) {
    if (isLabel(c) && !used.count(c)) fresh += c;
  }
  if (static_cast<int64_t>(fresh.size()) < maxEll) {
    throw error("{}: equation '{}' needs more than 52 distinct labels", op.describe(), eq);
  }
  for (size_t i = 0; i < terms.size(); ++i) {
    const size_t p = terms[i].find("...");
    if (p != std::string::npos) {
      terms[i].replace(p, 3, fresh.substr(static_cast<size_t>(maxEll - ell[i])));
    }
  }
  std::optional<std::string> out;
  if (eq.find("->") != std::string::npos) out = parts.output;
  op.attrs.set("equation", joinEquation(terms, outputTerm(op, eq, out, terms, fresh)));
  op.attrs.set("ellipsis_labels", fresh);
}

// Label sizes of the inputs; a size 1 broadcasts against the same label's larger size (numpy,
// ONNX's reference, broadcasts a size-1 dimension of any label, not only of "...").
std::map<char, int64_t> labelSizes(const ShapeContext& ctx, const Equation& e) {
  std::map<char, int64_t> size;
  std::map<char, size_t> from;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const TensorInfo& in = ctx.input(i);
    if (static_cast<int64_t>(e.inputs[i].size()) != in.rank()) {
      ctx.fail("term '{}' has {} labels but input {} is {}", e.inputs[i], e.inputs[i].size(), i,
               in.toString());
    }
    for (size_t p = 0; p < e.inputs[i].size(); ++p) {
      const char c = e.inputs[i][p];
      if (!isLabel(c)) ctx.fail("term '{}' has the invalid label '{}'", e.inputs[i], c);
      const int64_t s = in.shape()[p];
      auto it = size.find(c);
      if (it == size.end()) {
        size[c] = s;
        from[c] = i;
        continue;
      }
      if (it->second == s) continue;
      if (s == 1 || it->second == 1) {
        it->second = std::max(it->second, s);
        continue;
      }
      ctx.fail("label '{}' has size {} in input {} ({}) and {} in input {} ({})", std::string(1, c),
               ctx.input(from[c]).shape()[e.inputs[from[c]].find(c)], from[c],
               ctx.input(from[c]).toString(), s, i, in.toString());
    }
  }
  return size;
}

void checkTypes(const ShapeContext& ctx) {
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    ctx.requireFloatOrHalf(i);
    if (ctx.input(i).dataType() != ctx.input(0).dataType()) {
      ctx.fail("input {} is {} but input 0 is {}; all inputs need one type", i,
               ctx.input(i).toString(), ctx.input(0).toString());
    }
  }
}

// The op's canonical equation, checked against its inputs' types and count.
Equation checkedEquation(const ShapeContext& ctx) {
  checkTypes(ctx);
  Equation e = splitCanonical(ctx.attrs().getString("equation"));
  if (e.inputs.size() != ctx.numInputs()) {
    ctx.fail("equation '{}' has {} input terms for {} inputs", ctx.attrs().getString("equation"),
             e.inputs.size(), ctx.numInputs());
  }
  return e;
}

// d input_i = GeneralEinsum(dy, inputs j != i) -> term_i (labels input i broadcast from size 1
// replaced by letters of their own, which the product then sums over).
void einsumGrad(GradContext& g) {
  const Equation e = splitCanonical(g.attrs().getString("equation"));
  std::map<char, int64_t> size;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    for (size_t p = 0; p < e.inputs[i].size(); ++p) {
      int64_t& s = size[e.inputs[i][p]];
      s = std::max(s, g.inputInfo(i).shape()[p]);
    }
  }
  std::set<char> used;
  for (const auto& t : e.inputs) used.insert(t.begin(), t.end());
  used.insert(e.output.begin(), e.output.end());
  const TensorId dy = g.gradOut(0);
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (!g.needsGrad(i)) continue;
    std::string term = e.inputs[i];
    std::map<char, char> renamed;
    for (size_t p = 0; p < term.size(); ++p) {
      const char c = term[p];
      if (g.inputInfo(i).shape()[p] != 1 || size[c] == 1) continue;
      if (!renamed.count(c)) {
        char f = 'A';
        while (f <= 'z' && (!isLabel(f) || used.count(f))) ++f;
        if (f > 'z') throw error("{}: no label left for the gradient", g.op().describe());
        used.insert(f);
        renamed[c] = f;
      }
      term[p] = renamed[c];
    }
    std::vector<std::string> terms{e.output};
    std::vector<TensorId> inputs{dy};
    for (size_t j = 0; j < e.inputs.size(); ++j) {
      if (j == i) continue;
      terms.push_back(e.inputs[j]);
      inputs.push_back(g.input(j));
    }
    Attributes a;
    a.set("equation", joinEquation(terms, term));
    a.set("shape", g.inputInfo(i).shape());
    g.setGradIn(i, g.emit("GeneralEinsum", inputs, std::move(a)));
  }
}

XT_REGISTER_OP([] {
  OpDef d{.type = "Einsum", .minInputs = 1, .maxInputs = -1};
  d.canonicalize = [](Op& op, const Graph& graph) {
    if (!op.attrs.has("equation")) {
      throw error("{}: attribute 'equation' is required", op.describe());
    }
    canonicalizeEquation(op, graph);
  };
  d.infer = [](const ShapeContext& ctx) {
    const Equation e = checkedEquation(ctx);
    const auto size = labelSizes(ctx, e);
    Shape out;
    for (char c : e.output) {
      auto it = size.find(c);
      if (it == size.end()) ctx.fail("output label '{}' is in no input", std::string(1, c));
      out.push_back(it->second);
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), out)};
  };
  d.grad = einsumGrad;
  return d;
}());

XT_REGISTER_OP([] {
  OpDef d{.type = "GeneralEinsum", .domain = kXtrainDomain, .minInputs = 1, .maxInputs = -1};
  d.infer = [](const ShapeContext& ctx) {
    const Equation e = checkedEquation(ctx);
    const auto size = labelSizes(ctx, e);
    const Shape out = ctx.attrs().getInts("shape");
    if (out.size() != e.output.size()) {
      ctx.fail("shape {} does not fit the output term '{}'", shapeToString(out), e.output);
    }
    std::map<char, int64_t> outSize;
    for (size_t p = 0; p < out.size(); ++p) {
      const char c = e.output[p];
      auto it = size.find(c);
      if ((it != size.end() && it->second != out[p]) ||
          (outSize.count(c) && outSize[c] != out[p])) {
        ctx.fail("shape {} gives label '{}' another size than the inputs do", shapeToString(out),
                 std::string(1, c));
      }
      outSize[c] = out[p];
    }
    return std::vector<TensorInfo>{TensorInfo(ctx.input(0).dataType(), out)};
  };
  d.grad = einsumGrad;
  return d;
}());

}  // namespace
}  // namespace xtrain::ir
