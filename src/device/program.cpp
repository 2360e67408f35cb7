#include "device/program.hpp"

#include <array>
#include <chrono>

#include "common/timeline.hpp"

namespace xtrain::device {

void Program::run(std::vector<HostTensor>& buffers, uint64_t seed,
                  const std::function<void(size_t)>& afterInstruction) const {
  std::vector<HostTensor*> ins;
  std::vector<HostTensor*> outs;
  for (size_t k = 0; k < instructions_.size(); ++k) {
    const Instruction& instr = instructions_[k];
    const timeline::Span traced(timeline::Category::Op, instr.description);
    const auto start = profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
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
    if (profiling_) {
      seconds_[k] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (afterInstruction) afterInstruction(k);
  }
}

void Program::setProfiling(bool on) {
  profiling_ = on;
  seconds_.assign(instructions_.size(), 0.0);
}

}  // namespace xtrain::device
