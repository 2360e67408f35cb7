#include "device/kernel.hpp"

#include <optional>

#include "common/check.hpp"
#include "device/kernels/kernel_threads.hpp"

namespace xtrain::device {

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry registry;
  return registry;
}

void KernelRegistry::add(const std::string& domain, const std::string& type,
                         KernelFactory factory) {
  XT_CHECK(!has(domain, type), "kernel {}::{} registered twice", domain, type);
  factories_.emplace_back(domain, type, std::move(factory));
}

bool KernelRegistry::has(const std::string& domain, const std::string& type) const {
  for (const auto& [d, t, f] : factories_) {
    if (d == domain && t == type) return true;
  }
  return false;
}

namespace {

// The calling thread's kernel thread count set for a scope, then restored.
class KernelThreadsScope {
 public:
  explicit KernelThreadsScope(int threads) : before_(kernelThreadsForThisThread()) {
    setKernelThreadsForThisThread(threads);
  }
  ~KernelThreadsScope() { setKernelThreadsForThisThread(before_); }
  KernelThreadsScope(const KernelThreadsScope&) = delete;
  KernelThreadsScope& operator=(const KernelThreadsScope&) = delete;

 private:
  int before_;
};

// A kernel of little work, created and run on the calling thread alone (see isSmallWork).
class SingleThreadKernel final : public Kernel {
 public:
  explicit SingleThreadKernel(std::unique_ptr<Kernel> inner) : inner_(std::move(inner)) {}
  void run(const KernelIO& io) override {
    KernelThreadsScope one(1);
    inner_->run(io);
  }

 private:
  std::unique_ptr<Kernel> inner_;
};

}  // namespace

bool isSmallWork(const KernelSpec& spec) {
  int64_t elements = 0;
  for (const auto& t : spec.inputs) elements += t.isSet() ? t.nelms() : 0;
  for (const auto& t : spec.outputs) elements += t.isSet() ? t.nelms() : 0;
  return elements <= kSmallWorkElements;
}

std::unique_ptr<Kernel> KernelRegistry::create(const KernelSpec& spec) const {
  for (const auto& [d, t, f] : factories_) {
    if (d != spec.domain || t != spec.type) continue;
    const bool small = isSmallWork(spec);
    // A small kernel's primitive is made for one thread too (oneDNN sizes its split when the
    // primitive is created).
    std::optional<KernelThreadsScope> one;
    if (small) one.emplace(1);
    std::unique_ptr<Kernel> kernel;
    try {
      kernel = f(spec);
    } catch (const error&) {
      // A kernel that does not take FLOAT16 runs on FLOAT copies; other refusals stand.
      kernel = createFloat16Promoted(spec, f);
      if (!kernel) throw;
    }
    if (small) return std::make_unique<SingleThreadKernel>(std::move(kernel));
    return kernel;
  }
  throw error("{}: no CPU kernel for op type '{}' in domain '{}'", spec.description, spec.type,
              spec.domain);
}

}  // namespace xtrain::device
