// Kernels: the code that runs one op on the host CPU. The device knows op types and attributes, not
// ONNX.
//
// Contract:
//  - A KernelFactory is called once per op when a program is built (prepare time) with the op's
//  attributes and
//    its inputs' and outputs' TensorInfo, and (unless registered as KernelThreadCount::ReadWhenRun)
//    again, once, for each other kernel thread count a thread runs the op with (oneDNN fixes a
//    primitive's thread count when it is created). It validates what it needs (throwing
//    xtrain::error naming the op via spec.fail) and may precompute (e.g. a oneDNN primitive).
//    Kernels are keyed by (domain, type).
//  - Kernel::run is called every time the op executes, with buffers of exactly the infos given at
//  prepare time.
//    Absent optional inputs/outputs are nullptr. Inputs listed in the OpDef's modifiesInputs are
//    written in place.
//  - Kernels compute in FLOAT (integer types for indices, labels and shapes). A kernel is used by
//  one thread at a
//    time; different kernels may run concurrently on different replicas.
//  - FLOAT16: a kernel whose factory refuses a spec with FLOAT16 tensors is run promoted
//  (float16_promotion.cpp):
//    its FLOAT16 inputs converted to FLOAT, the FLOAT kernel run, its FLOAT16 outputs and modified
//    inputs rounded back to FLOAT16 (to nearest even, or stochastically when the op's attribute
//    stochasticRounding is 1). So every op works on FLOAT16 tensors, computing in FLOAT and storing
//    FLOAT16, as an IPU stores them.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/attributes.hpp"
#include "common/host_tensor.hpp"
#include "xtrain/device_program_error.hpp"
#include "xtrain/error.hpp"

namespace xtrain::device {

// The memory layout of a tensor's buffer. Plain is row-major in the tensor's shape (NCHW for an
// activation); ChannelsLast is a rank-4 [N, C, H, W] tensor stored as NHWC, chosen by the lowering
// (session/layout_plan.hpp) only for tensors that never leave the ops that declare they accept it.
enum class Layout : uint8_t { Plain, ChannelsLast };

struct KernelSpec {
  std::string type;
  std::string domain;
  std::string description;  // the op's describe(): "Conv 'conv1' (ai.onnx opset 13)"
  Attributes attrs;
  std::vector<TensorInfo> inputs;   // UNDEFINED info for an absent input
  std::vector<TensorInfo> outputs;  // UNDEFINED info for an absent output
  std::vector<int> modifiedInputs;  // inputs the op writes in place (the OpDef's modifiesInputs)
  // Layouts of the inputs' and outputs' buffers; empty (or shorter than inputs/outputs) means
  // Plain.
  std::vector<Layout> inputLayouts;
  std::vector<Layout> outputLayouts;

  bool hasInput(size_t i) const { return i < inputs.size() && inputs[i].isSet(); }
  bool hasOutput(size_t i) const { return i < outputs.size() && outputs[i].isSet(); }
  Layout inputLayout(size_t i) const {
    return i < inputLayouts.size() ? inputLayouts[i] : Layout::Plain;
  }
  Layout outputLayout(size_t i) const {
    return i < outputLayouts.size() ? outputLayouts[i] : Layout::Plain;
  }
  template <typename... Args>
  [[noreturn]] void fail(std::string_view f, const Args&... args) const {
    throw error(description + ": " + xtrain::format(f, args...));
  }
  // The kernel has no form for the op's element type: device_program_error, which PopART's programs
  // see as Poplar's compile failure (poplar_exception).
  template <typename... Args>
  [[noreturn]] void failType(std::string_view f, const Args&... args) const {
    throw device_program_error(description + ": " + xtrain::format(f, args...));
  }
  // Fails unless every present input is FLOAT (a spec with FLOAT16 inputs then runs promoted).
  void requireFloatInputs() const {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (hasInput(i) && inputs[i].dataType() != DataType::FLOAT) {
        fail("input {} is {}; only FLOAT is supported", i, inputs[i].toString());
      }
    }
  }
};

struct KernelIO {
  std::span<HostTensor* const> inputs;
  std::span<HostTensor* const> outputs;
  // Seed for ops that draw random numbers (Dropout): distinct per op, replica and execution,
  // reproducible from the session's seed.
  uint64_t seed = 0;

  HostTensor& in(size_t i) const { return *inputs[i]; }
  HostTensor& out(size_t i) const { return *outputs[i]; }
  bool hasIn(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  bool hasOut(size_t i) const { return i < outputs.size() && outputs[i] != nullptr; }
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(const KernelIO& io) = 0;
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelSpec&)>;

// A kernel made of a function; for kernels with nothing to precompute beyond what the lambda
// captures.
template <typename F>
class FunctionKernel final : public Kernel {
 public:
  explicit FunctionKernel(F f) : f_(std::move(f)) {}
  void run(const KernelIO& io) override { f_(io); }

 private:
  F f_;
};

template <typename F>
std::unique_ptr<Kernel> makeKernel(F f) {
  return std::make_unique<FunctionKernel<F>>(std::move(f));
}

// Whether a factory's kernels depend on the kernel thread count when they are created (oneDNN
// primitives: made again for each count they run with) or only when they run (made once).
enum class KernelThreadCount : uint8_t { FixedWhenCreated, ReadWhenRun };

class KernelRegistry {
 public:
  static KernelRegistry& instance();
  void add(const std::string& domain, const std::string& type, KernelFactory factory,
           KernelThreadCount threads = KernelThreadCount::FixedWhenCreated);
  bool has(const std::string& domain, const std::string& type) const;
  // Throws xtrain::error naming the op when no kernel is registered for it. A kernel of small work
  // (isSmallWork) is created and run with one kernel thread; any other is created for the calling
  // thread's count and, when its factory's kernels fix the count when created and it runs on a
  // thread with another count, created again for that count (the first run with each count pays
  // for it).
  std::unique_ptr<Kernel> create(const KernelSpec& spec) const;

 private:
  std::vector<std::tuple<std::string, std::string, KernelFactory, KernelThreadCount>> factories_;
};

// Kernels whose inputs and outputs hold at most this many elements in all run on the calling thread
// alone: waking a second OpenMP thread (a futex round trip when threads wait passively, as xrun
// makes them) costs more than such an op's work. A tiny model's step is all such ops: the zoo's MLP
// trained 5x faster on one thread than on two.
inline constexpr int64_t kSmallWorkElements = 32768;
bool isSmallWork(const KernelSpec& spec);

// The FLOAT16 fallback of KernelRegistry::create: when `spec` has FLOAT16 tensors, `factory` is
// called with them as FLOAT and the kernel is wrapped to convert; nullptr when `spec` has none (or
// the FLOAT spec is refused too).
std::unique_ptr<Kernel> createFloat16Promoted(const KernelSpec& spec, const KernelFactory& factory);

// Rounds `x` to FLOAT16 stochastically with the uniform [0, 1) draw `u`: to the neighbour above |x|
// with probability (|x| - lo) / (hi - lo), else to the one below; exact values, inf, nan and values
// beyond the FLOAT16 range round as floatToHalf does.
uint16_t floatToHalfStochastic(float x, float u);

struct KernelRegistrar {
  KernelRegistrar(const std::string& domain, const std::string& type, KernelFactory factory) {
    KernelRegistry::instance().add(domain, type, std::move(factory));
  }
};

#define XT_KERNEL_CONCAT_(a, b) a##b
#define XT_KERNEL_CONCAT(a, b) XT_KERNEL_CONCAT_(a, b)
// XT_REGISTER_KERNEL("ai.onnx", "Relu", factory); at namespace scope in a src/device/kernels/ file.
#define XT_REGISTER_KERNEL(domain, type, ...)                                             \
  static ::xtrain::device::KernelRegistrar XT_KERNEL_CONCAT(xt_kernel_reg_, __COUNTER__)( \
      domain, type, __VA_ARGS__)

}  // namespace xtrain::device

#pragma GCC visibility pop
