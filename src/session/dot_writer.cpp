#include "session/dot_writer.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/output_file.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

namespace {

// A double-quoted .dot string (not std::quoted, which ADL would pick for a non-const string).
std::string dotString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";  // a line break in a label
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool wants(const SessionOptions& options, const std::string& check) {
  return options.dotChecks.count(check) != 0 || options.dotChecks.count("All") != 0;
}

}  // namespace

void checkDotOptions(const SessionOptions& options) {
  for (const auto& check : options.dotChecks) {
    const bool known = check == "All" || std::any_of(std::begin(kDotChecks), std::end(kDotChecks),
                                                     [&](const char* k) { return check == k; });
    if (!known) {
      throw error(
          "SessionOptions.dotChecks: unknown check \"{}\"; the checks are Fwd0, Fwd1, Bwd0, "
          "PreAlias, Final and All",
          check);
    }
  }
  if (!options.dotChecks.empty() && options.logDir.empty()) {
    throw error(
        "SessionOptions.dotChecks is set but logDir is empty: set logDir to the directory the .dot "
        "files go to");
  }
}

void writeDotCheck(const ir::Graph& graph, const SessionOptions& options,
                   const std::string& check) {
  if (!wants(options, check)) return;
  std::error_code ec;
  std::filesystem::create_directories(options.logDir, ec);
  const std::string path = options.logDir + "/" + check + ".dot";
  std::ostringstream out;
  const std::vector<OpId> schedule = graph.schedule();
  const auto n = static_cast<int64_t>(schedule.size());
  const int64_t first = std::max<int64_t>(0, options.firstDotOp);
  const int64_t last = std::min<int64_t>(n, options.finalDotOp);
  out << "digraph " << dotString(check) << " {\n";
  std::map<TensorId, bool> tensors;
  for (int64_t k = first; k < last; ++k) {
    const ir::Op& op = graph.op(schedule[static_cast<size_t>(k)]);
    std::string label = std::to_string(k) + " " + op.type;
    if (options.dotOpNames && !op.name.empty()) label += "\n" + op.name;
    const std::string node = "op" + std::to_string(schedule[static_cast<size_t>(k)]);
    out << "  " << node << " [shape=box, label=" << dotString(label) << "];\n";
    for (const auto& t : op.inputs) {
      if (t.empty()) continue;
      tensors[t] = true;
      out << "  " << dotString(t) << " -> " << node << ";\n";
    }
    for (const auto& t : op.outputs) {
      if (t.empty()) continue;
      tensors[t] = true;
      out << "  " << node << " -> " << dotString(t) << ";\n";
    }
  }
  for (const auto& [id, used] : tensors) {
    out << "  " << dotString(id)
        << " [label=" << dotString(id + "\n" + graph.tensor(id).info.toString()) << "];\n";
  }
  out << "}\n";
  // logDir may be shared: its fixed names are replaced, never written through (replaceOwnFile).
  replaceOwnFile(path, out.str(), "SessionOptions.dotChecks");
  logging::session::debug("dotChecks: wrote {} ({} of {} ops)", path,
                          std::max<int64_t>(0, last - first), n);
}

}  // namespace xtrain::session
