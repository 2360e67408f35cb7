// A Program: a straight-line list of kernel invocations over a table of buffers, built once and run
// many times. The buffers are owned by whoever runs the program (one table per replica), so one
// Program can be run by several replicas concurrently. Not thread-safe per buffer table.
#pragma once
#pragma GCC visibility push(default)

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/kernel.hpp"

namespace xtrain::device {

// A transfer between an IPU and its streaming memory around an instruction: an off-chip tensor
// (docs/model-parallelism.md, "Off-chip storage") loaded before the kernel runs or stored after.
// The simulated device keeps the tensor's buffer in host memory already, so the transfer moves
// nothing: the program traces it as an op of its own ("RemoteLoad <tensor>", "RemoteStore
// <tensor>") with its bytes and simulated cycles, which the session's cycle model costs.
struct RemoteTransferMark {
  std::string description;
  int64_t bytes = 0;
  int64_t cycles = 0;
  bool store = false;
};

struct Instruction {
  std::unique_ptr<Kernel> kernel;
  std::vector<int> inputs;   // buffer indices, -1 for absent
  std::vector<int> outputs;  // buffer indices, -1 for absent
  std::string description;
  uint64_t seedSalt = 0;                   // mixed into the per-execution seed
  std::vector<RemoteTransferMark> remote;  // loads first, then stores
};

class Program {
 public:
  void append(Instruction instruction) { instructions_.push_back(std::move(instruction)); }
  size_t size() const { return instructions_.size(); }
  bool empty() const { return instructions_.empty(); }
  const std::vector<Instruction>& instructions() const { return instructions_; }

  // Runs every instruction in order. `seed` identifies this execution (replica, step, micro-batch).
  // Not for two threads at once: kernels keep scratch buffers between calls (threads running
  // replicas each lower their own Program).
  // A kernel's exception is rethrown with the op's description prefixed when it does not already
  // name it. `afterInstruction(k)`, when set, is called after instruction k finished (e.g. to start
  // reducing a gradient as soon as it is complete).
  void run(std::vector<HostTensor>& buffers, uint64_t seed,
           const std::function<void(size_t)>& afterInstruction = {}) const;
  // Instructions [begin, end) only, as run() runs them: a pipelined session runs a phase's program
  // one pipeline slot (a contiguous range) at a time. A run counts as complete (runs()) when its
  // range ends at the last instruction.
  void runRange(std::vector<HostTensor>& buffers, uint64_t seed, size_t begin, size_t end) const;

  // Profiling: when on, run() adds each instruction's wall time to seconds() (one entry per
  // instruction) and counts the runs that completed (runs()). Meant for one thread at a time (the
  // thread running this copy of the program); off by default. setProfiling and resetProfile zero
  // the counters.
  void setProfiling(bool on);
  void resetProfile();
  const std::vector<double>& seconds() const { return seconds_; }
  uint64_t runs() const { return runs_; }

  // Floating-point checks (SessionOptions::enableFloatingPointChecks): with `bufferNames` (the
  // tensor of each buffer index) not empty, run() throws runtime_error after an instruction that
  // wrote an inf or a nan into a FLOAT, FLOAT16, BFLOAT16 or DOUBLE output, naming the op, the
  // tensor and the element. Empty: off, at no cost.
  void setFloatingPointChecks(std::vector<std::string> bufferNames);

 private:
  void runInstructions(std::vector<HostTensor>& buffers, uint64_t seed, size_t begin, size_t end,
                       const std::function<void(size_t)>& afterInstruction) const;
  void checkFloatingPoint(const Instruction& instr, const std::vector<HostTensor>& buffers) const;

  std::vector<Instruction> instructions_;
  bool profiling_ = false;
  mutable std::vector<double> seconds_;
  std::vector<std::string> checkedBufferNames_;
  mutable uint64_t runs_ = 0;
};

// SplitMix64 finaliser: a cheap, well-mixed hash for deriving seeds.
inline uint64_t mixSeed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace xtrain::device

#pragma GCC visibility pop
