// docs/operators.md and the README's operator list are generated from the op registry: this test
// fails when they are stale, and rewrites them when XTRAIN_UPDATE_OP_LIST=1
// (scripts/update-op-list), so the lists can never claim an op that xtrain lacks or miss one it
// has.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "device/kernel.hpp"
#include "ir/op_registry.hpp"

namespace xtrain::testing {
namespace {

struct Listed {
  std::string type;
  bool gradient = false;
  std::string rewrittenTo;  // OpDef::rewrittenTo: the op canonicalisation turns this one into
};

// The user-facing ops by domain (ai.xtrain holds internal gradient and optimizer ops), by name.
std::map<std::string, std::vector<Listed>> userOps() {
  std::map<std::string, std::vector<Listed>> ops;
  for (const auto& name : ir::OpRegistry::instance().knownOps()) {
    const size_t sep = name.find("::");
    const std::string domain = name.substr(0, sep);
    const std::string type = name.substr(sep + 2);
    if (domain != ir::kOnnxDomain && domain != ir::kGraphcoreDomain) continue;
    const ir::OpDef* def = ir::OpRegistry::instance().find(domain, type);
    ops[domain].push_back({type, def != nullptr && static_cast<bool>(def->grad),
                           def != nullptr ? def->rewrittenTo : std::string()});
  }
  return ops;
}

std::string operatorsPage() {
  std::ostringstream os;
  os << "# Supported operators\n\n"
     << "Generated from the op registry by `scripts/update-op-list`; `tests/ops/op_list_test.cpp` "
        "fails when\nthis page is stale. ONNX models may use ai.onnx opsets 6 to 17 and "
        "ai.graphcore opset 1; each op\nresolves the differences between opsets when it is "
        "imported. A model with ops outside this list\nfails to import with one error that lists "
        "every missing op and its nodes.\n\n"
     << "Gradient: autodiff can differentiate through the op (with respect to its floating-point "
        "inputs).\nOps without one (comparisons, indices, shapes) are fine in a training graph as "
        "long as no\ngradient has to flow through them.\n";
  for (const auto& [domain, ops] : userOps()) {
    os << "\n## " << domain << " (" << ops.size() << " ops)\n\n| op | gradient |\n| --- | --- |\n";
    for (const auto& op : ops)
      os << "| " << op.type << " | " << (op.gradient ? "yes" : "no") << " |\n";
    std::string rewritten;
    for (const auto& op : ops) {
      if (op.rewrittenTo.empty()) continue;
      rewritten += (rewritten.empty() ? "" : ", ") + op.type + " into " + op.rewrittenTo;
    }
    if (!rewritten.empty()) os << "\nRewritten when imported: " << rewritten << ".\n";
  }
  return os.str();
}

// The README's compact form: one line per domain, ops without a gradient marked with °.
std::string readmeList() {
  std::ostringstream os;
  for (const auto& [domain, ops] : userOps()) {
    os << "- " << domain << " (" << ops.size() << "): ";
    for (size_t i = 0; i < ops.size(); ++i) {
      os << (i ? ", " : "") << ops[i].type << (ops[i].gradient ? "" : "°");
    }
    os << "\n";
  }
  return os.str();
}

const std::string kBegin = "<!-- operator list: generated, see docs/operators.md -->\n";
const std::string kEnd = "<!-- end of operator list -->\n";

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

bool updating() {
  const char* env = std::getenv("XTRAIN_UPDATE_OP_LIST");
  return env != nullptr && std::string(env) == "1";
}

TEST(OperatorList, DocsPageMatchesRegistry) {
  const std::string path = XTRAIN_SOURCE_DIR "/docs/operators.md";
  const std::string want = operatorsPage();
  if (updating()) std::ofstream(path, std::ios::binary) << want;
  EXPECT_EQ(readFile(path), want) << path << " is stale: run scripts/update-op-list";
}

TEST(OperatorList, ReadmeListMatchesRegistry) {
  const std::string path = XTRAIN_SOURCE_DIR "/README.md";
  std::string readme = readFile(path);
  const size_t begin = readme.find(kBegin);
  const size_t end = readme.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << path << " lacks the line " << kBegin;
  ASSERT_NE(end, std::string::npos) << path << " lacks the line " << kEnd;
  ASSERT_LT(begin, end);
  const std::string current = readme.substr(begin + kBegin.size(), end - begin - kBegin.size());
  const std::string want = readmeList();
  if (updating()) {
    readme.replace(begin + kBegin.size(), current.size(), want);
    std::ofstream(path, std::ios::binary) << readme;
    return;
  }
  EXPECT_EQ(current, want) << path << "'s operator list is stale: run scripts/update-op-list";
}

// Every listed op runs: it has a kernel, unless canonicalisation turns it into another op
// (OpDef::rewrittenTo, e.g. Upsample into Resize, or ai.graphcore Reshape into ai.onnx::Reshape),
// which then has one.
TEST(OperatorList, EveryListedOpHasAKernel) {
  const auto& kernels = device::KernelRegistry::instance();
  for (const auto& [domain, ops] : userOps()) {
    for (const auto& op : ops) {
      std::string target = op.rewrittenTo.empty() ? op.type : op.rewrittenTo;
      std::string targetDomain = domain;
      if (const size_t sep = target.find("::"); sep != std::string::npos) {
        targetDomain = target.substr(0, sep);
        target = target.substr(sep + 2);
      }
      EXPECT_TRUE(kernels.has(targetDomain, target))
          << domain << "::" << op.type
          << (op.rewrittenTo.empty() ? "" : " (rewritten into " + op.rewrittenTo + ")")
          << " is registered without a kernel";
    }
  }
}

}  // namespace
}  // namespace xtrain::testing
