// xckpt: inspects, checks, compares and converts xtrain checkpoints (docs/xckpt.md).
#include <iostream>
#include <map>

#include "commands.hpp"
#include "xtrain/error.hpp"

namespace {

using namespace xtrain::tools::xckpt;
using Command = int (*)(const Args&, std::ostream&);

bool wantsHelp(const Args& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const Args all(argv + 1, argv + argc);
  if (wantsHelp(all)) {
    std::cout << usageText();
    return 0;
  }
  const std::map<std::string, Command> commands = {
      {"ls", ls}, {"show", show}, {"verify", verify}, {"diff", diff}, {"export-onnx", exportOnnx}};
  try {
    if (all.empty()) throw UsageError("no command given");
    const auto it = commands.find(all[0]);
    if (it == commands.end()) throw UsageError("unknown command '" + all[0] + "'");
    return it->second(Args(all.begin() + 1, all.end()), std::cout);
  } catch (const UsageError& e) {
    std::cerr << "xckpt: " << e.what() << "\n" << usageText();
    return 2;
  } catch (const xtrain::internal_error& e) {
    std::cerr << "xckpt: internal error (please report): " << e.what() << "\n";
    return 1;
  } catch (const xtrain::error& e) {
    // Bad files: missing, not a checkpoint, corrupt, or not matching the model.
    std::cerr << "xckpt: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "xckpt: " << e.what() << "\n";
    return 1;
  }
}
