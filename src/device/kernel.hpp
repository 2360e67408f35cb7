// Kernels: the code that runs one op on the host CPU. The device knows op types and attributes, not ONNX.
//
// Contract:
//  - A KernelFactory is called once per op when a program is built (prepare time) with the op's attributes and
//    its inputs' and outputs' TensorInfo. It validates what it needs (throwing xtrain::error naming the op via
//    spec.fail) and may precompute (e.g. a oneDNN primitive). Kernels are keyed by (domain, type).
//  - Kernel::run is called every time the op executes, with buffers of exactly the infos given at prepare time.
//    Absent optional inputs/outputs are nullptr. Inputs listed in the OpDef's modifiesInputs are written in place.
//  - Kernels compute in FLOAT (integer types for indices, labels and shapes). A kernel is used by one thread at a
//    time; different kernels may run concurrently on different replicas.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/attributes.hpp"
#include "common/host_tensor.hpp"
#include "xtrain/error.hpp"

namespace xtrain::device {

struct KernelSpec {
  std::string type;
  std::string domain;
  std::string description;  // the op's describe(): "Conv 'conv1' (ai.onnx opset 13)"
  Attributes attrs;
  std::vector<TensorInfo> inputs;   // UNDEFINED info for an absent input
  std::vector<TensorInfo> outputs;  // UNDEFINED info for an absent output

  bool hasInput(size_t i) const { return i < inputs.size() && inputs[i].isSet(); }
  bool hasOutput(size_t i) const { return i < outputs.size() && outputs[i].isSet(); }
  template <typename... Args>
  [[noreturn]] void fail(std::string_view f, const Args&... args) const {
    throw error(description + ": " + xtrain::format(f, args...));
  }
};

struct KernelIO {
  std::span<HostTensor* const> inputs;
  std::span<HostTensor* const> outputs;
  // Seed for ops that draw random numbers (Dropout): distinct per op, replica and execution, reproducible
  // from the session's seed.
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

// A kernel made of a function; for kernels with nothing to precompute beyond what the lambda captures.
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

class KernelRegistry {
 public:
  static KernelRegistry& instance();
  void add(const std::string& domain, const std::string& type, KernelFactory factory);
  bool has(const std::string& domain, const std::string& type) const;
  // Throws xtrain::error naming the op when no kernel is registered for it.
  std::unique_ptr<Kernel> create(const KernelSpec& spec) const;

 private:
  std::vector<std::tuple<std::string, std::string, KernelFactory>> factories_;
};

struct KernelRegistrar {
  KernelRegistrar(const std::string& domain, const std::string& type, KernelFactory factory) {
    KernelRegistry::instance().add(domain, type, std::move(factory));
  }
};

#define XT_KERNEL_CONCAT_(a, b) a##b
#define XT_KERNEL_CONCAT(a, b) XT_KERNEL_CONCAT_(a, b)
// XT_REGISTER_KERNEL("ai.onnx", "Relu", factory); at namespace scope in a src/device/kernels/ file.
#define XT_REGISTER_KERNEL(domain, type, ...)                                  \
  static ::xtrain::device::KernelRegistrar XT_KERNEL_CONCAT(xt_kernel_reg_, \
                                                            __COUNTER__)(domain, type, __VA_ARGS__)

}  // namespace xtrain::device
