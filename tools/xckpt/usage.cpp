#include "commands.hpp"
#include "common/flag_table.hpp"

namespace xtrain::tools::xckpt {

const char* usageText() {
  return R"(usage: xckpt <command> ...

  ls DIR                   the checkpoints of a checkpoint directory: step, creation time, size,
                           complete or not, and which one `latest` names
  show CKPT                a checkpoint's attributes, then every dataset: path, type, shape, part
  verify CKPT              checks structure and every checksum; exit 0 when sound, else prints every
                           problem and exits 1
  diff A B                 per dataset of either: shapes, max abs and max rel difference; exit 0 when
                           every dataset is equal, 1 when one differs or is only on one side
  export-onnx CKPT MODEL.onnx OUT.onnx [--with-optimizer-state]
                           writes the checkpoint's weights into the model's initializers; with the
                           flag also the optimizer state, under PopART's names (Accl___<w>, ...)

CKPT is a checkpoint directory (DIR/ckpt-<step>) or its checkpoint.h5.
Exit codes: 0 success, 1 problems found (verify) or differences (diff), 2 bad arguments or files.
See docs/xckpt.md.
)";
}

Args positional(const Args& args, size_t count, const char* command,
                const std::vector<std::string>& flags, std::vector<std::string>* given) {
  // The command's switches: a table of their own, which records the ones given in order.
  xtrain::flags::FlagTable<std::vector<std::string>> table(
      xtrain::flags::Syntax{.unknown = std::string(command) + ": unknown option '{arg}'",
                            .inlineValues = false,
                            .positionalsAnywhere = true});
  for (const auto& f : flags) {
    table.custom(f, "", [](std::vector<std::string>& seen, const xtrain::flags::Given& g) {
      seen.push_back(g.flag);
    });
  }
  Args out;
  try {
    const std::vector<std::string> seen = table.parse(args, &out);
    if (given != nullptr) given->insert(given->end(), seen.begin(), seen.end());
  } catch (const xtrain::flags::FlagError& e) {
    throw UsageError(e.what());
  }
  if (out.size() != count) {
    throw UsageError(std::string(command) + " takes " + std::to_string(count) + " argument" +
                     (count == 1 ? "" : "s") + ", got " + std::to_string(out.size()));
  }
  return out;
}

}  // namespace xtrain::tools::xckpt
