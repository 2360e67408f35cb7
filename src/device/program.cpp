#include "device/program.hpp"

#include <array>

namespace xtrain::device {

void Program::run(std::vector<HostTensor>& buffers, uint64_t seed) const {
  std::vector<HostTensor*> ins;
  std::vector<HostTensor*> outs;
  for (const auto& instr : instructions_) {
    ins.clear();
    outs.clear();
    for (int i : instr.inputs) ins.push_back(i < 0 ? nullptr : &buffers[static_cast<size_t>(i)]);
    for (int o : instr.outputs) outs.push_back(o < 0 ? nullptr : &buffers[static_cast<size_t>(o)]);
    KernelIO io{ins, outs, mixSeed(seed ^ instr.seedSalt)};
    try {
      instr.kernel->run(io);
    } catch (const internal_error&) {
      throw;
    } catch (const error& e) {
      const std::string what = e.what();
      if (what.rfind(instr.description, 0) == 0) throw;
      throw runtime_error("{}: {}", instr.description, what);
    }
  }
}

}  // namespace xtrain::device
