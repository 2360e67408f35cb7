#include "device/program.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <utility>

#include "common/check.hpp"
#include "common/timeline.hpp"

namespace xtrain::device {

namespace {

// The first element of `t` whose exponent bits are all ones (an inf or a nan), or -1; by bits, so
// that it holds whatever the compiler's floating-point flags. `Bits` is the element's storage,
// `exponent` the mask of its exponent bits.
template <class Bits>
int64_t firstNonFinite(const HostTensor& t, Bits exponent, Bits& found) {
  const std::byte* p = t.raw();
  for (int64_t i = 0; i < t.nelms(); ++i) {
    Bits b;
    std::memcpy(&b, p + static_cast<size_t>(i) * sizeof(Bits), sizeof(Bits));
    if ((b & exponent) == exponent) {
      found = b;
      return i;
    }
  }
  return -1;
}

// Where `t` holds an inf or a nan: the element and "inf" or "nan"; -1 when nowhere (or `t` is not
// a floating-point tensor).
std::pair<int64_t, const char*> nonFinite(const HostTensor& t) {
  switch (t.dataType()) {
    case DataType::FLOAT: {
      uint32_t b = 0;
      const int64_t i = firstNonFinite<uint32_t>(t, 0x7f800000u, b);
      return {i, (b & 0x007fffffu) != 0 ? "nan" : "inf"};
    }
    case DataType::FLOAT16: {
      uint16_t b = 0;
      const int64_t i = firstNonFinite<uint16_t>(t, 0x7c00u, b);
      return {i, (b & 0x03ffu) != 0 ? "nan" : "inf"};
    }
    case DataType::BFLOAT16: {
      uint16_t b = 0;
      const int64_t i = firstNonFinite<uint16_t>(t, 0x7f80u, b);
      return {i, (b & 0x007fu) != 0 ? "nan" : "inf"};
    }
    case DataType::DOUBLE: {
      uint64_t b = 0;
      const int64_t i = firstNonFinite<uint64_t>(t, 0x7ff0000000000000ull, b);
      return {i, (b & 0x000fffffffffffffull) != 0 ? "nan" : "inf"};
    }
    default: return {-1, ""};
  }
}

// The trace events of an instruction's remote loads (store false) or stores.
void traceRemote(const Instruction& instr, bool store) {
  if (instr.remote.empty() || !timeline::recording()) return;
  for (const RemoteTransferMark& m : instr.remote) {
    if (m.store != store) continue;
    timeline::Span traced(timeline::Category::Op, m.description);
    traced.arg("bytes", m.bytes).arg("cycles", m.cycles);
  }
}

}  // namespace

void Program::run(std::vector<HostTensor>& buffers, uint64_t seed,
                  const std::function<void(size_t)>& afterInstruction) const {
  runInstructions(buffers, seed, 0, instructions_.size(), afterInstruction);
}

void Program::runRange(std::vector<HostTensor>& buffers, uint64_t seed, size_t begin,
                       size_t end) const {
  XT_CHECK(begin <= end && end <= instructions_.size(), "instruction range [{}, {}) of {}", begin,
           end, instructions_.size());
  runInstructions(buffers, seed, begin, end, {});
}

void Program::runInstructions(std::vector<HostTensor>& buffers, uint64_t seed, size_t begin,
                              size_t end, const std::function<void(size_t)>& afterInstruction) const {
  std::vector<HostTensor*> ins;
  std::vector<HostTensor*> outs;
  for (size_t k = begin; k < end; ++k) {
    const Instruction& instr = instructions_[k];
    traceRemote(instr, false);
    {
      const timeline::Span traced(timeline::Category::Op, instr.description);
      const auto start =
          profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      ins.clear();
      outs.clear();
      for (int i : instr.inputs) ins.push_back(i < 0 ? nullptr : &buffers[static_cast<size_t>(i)]);
      for (int o : instr.outputs)
        outs.push_back(o < 0 ? nullptr : &buffers[static_cast<size_t>(o)]);
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
        seconds_[k] +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
    }  // the op's span ends before its stores'
    traceRemote(instr, true);
    if (!checkedBufferNames_.empty()) checkFloatingPoint(instr, buffers);
    if (afterInstruction) afterInstruction(k);
  }
  if (profiling_ && end == instructions_.size()) ++runs_;
}

void Program::checkFloatingPoint(const Instruction& instr,
                                 const std::vector<HostTensor>& buffers) const {
  for (int o : instr.outputs) {
    if (o < 0) continue;
    const auto [element, what] = nonFinite(buffers[static_cast<size_t>(o)]);
    if (element < 0) continue;
    const auto b = static_cast<size_t>(o);
    throw runtime_error(
        "{}: floating-point check (SessionOptions.enableFloatingPointChecks): output '{}' holds "
        "{} at element {}",
        instr.description, b < checkedBufferNames_.size() ? checkedBufferNames_[b] : "?", what,
        element);
  }
}

void Program::setFloatingPointChecks(std::vector<std::string> bufferNames) {
  checkedBufferNames_ = std::move(bufferNames);
}

void Program::setProfiling(bool on) {
  profiling_ = on;
  resetProfile();
}

void Program::resetProfile() {
  seconds_.assign(instructions_.size(), 0.0);
  runs_ = 0;
}

}  // namespace xtrain::device
