#include "device/kernel.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <optional>

#include "common/check.hpp"
#include "device/kernels/kernel_threads.hpp"

namespace xtrain::device {

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry registry;
  return registry;
}

void KernelRegistry::add(const std::string& domain, const std::string& type, KernelFactory factory,
                         KernelThreadCount threads) {
  XT_CHECK(!has(domain, type), "kernel {}::{} registered twice", domain, type);
  factories_.emplace_back(domain, type, std::move(factory), threads);
}

bool KernelRegistry::has(const std::string& domain, const std::string& type) const {
  for (const auto& [d, t, f, threads] : factories_) {
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

// The kernel for `spec` from `factory`, or its FLOAT16-promoted form (createFloat16Promoted).
std::unique_ptr<Kernel> createKernel(const KernelSpec& spec, const KernelFactory& factory) {
  try {
    return factory(spec);
  } catch (const error&) {
    // A kernel that does not take FLOAT16 runs on FLOAT copies; other refusals stand.
    std::unique_ptr<Kernel> kernel = createFloat16Promoted(spec, factory);
    if (!kernel) throw;
    return kernel;
  }
}

// A kernel made once for each kernel thread count it runs with. oneDNN sizes a primitive's split of
// the work for the threads there are when the primitive is created, and runs that many whatever the
// count is when it runs (its parallel(nthr) asks OpenMP for nthr threads): a convolution created
// for two threads runs on two even on a thread whose count is one. So the kernel created at prepare
// time, for the preparing thread's count, is created again for each other count a thread runs it
// with: a replica's or a pipeline stage's share of the cores, adaptive kernel threads' probes and
// moves (issue 32: without this, a one-thread probe of a CNN still ran its convolutions on two).
// Program::run may run a kernel from several replica threads at once: the variants are looked up
// without a lock and created under one.
class ThreadCountKernels final : public Kernel {
 public:
  ThreadCountKernels(KernelSpec spec, KernelFactory factory, std::unique_ptr<Kernel> first,
                     int threads)
      : spec_(std::move(spec)), factory_(std::move(factory)) {
    byThreads_[static_cast<size_t>(slotOf(threads))].store(first.get());
    owned_.push_back(std::move(first));
  }
  void run(const KernelIO& io) override { forThreads(kernelThreadsForThisThread()).run(io); }

 private:
  static constexpr int kMaxSlot = 256;  // counts above share the kernel made for this many
  static int slotOf(int threads) { return std::clamp(threads, 1, kMaxSlot); }

  Kernel& forThreads(int threads) {
    const int slot = slotOf(threads);
    std::atomic<Kernel*>& entry = byThreads_[static_cast<size_t>(slot)];
    if (Kernel* k = entry.load(std::memory_order_acquire)) return *k;
    const std::lock_guard lock(mu_);
    if (Kernel* k = entry.load(std::memory_order_relaxed)) return *k;
    const KernelThreadsScope scope(slot);
    owned_.push_back(createKernel(spec_, factory_));
    entry.store(owned_.back().get(), std::memory_order_release);
    return *owned_.back();
  }

  const KernelSpec spec_;
  const KernelFactory factory_;
  std::array<std::atomic<Kernel*>, kMaxSlot + 1> byThreads_{};
  std::mutex mu_;
  std::vector<std::unique_ptr<Kernel>> owned_;
};

}  // namespace

bool isSmallWork(const KernelSpec& spec) {
  int64_t elements = 0;
  for (const auto& t : spec.inputs) elements += t.isSet() ? t.nelms() : 0;
  for (const auto& t : spec.outputs) elements += t.isSet() ? t.nelms() : 0;
  return elements <= kSmallWorkElements;
}

std::unique_ptr<Kernel> KernelRegistry::create(const KernelSpec& spec) const {
  for (const auto& [d, t, f, threads] : factories_) {
    if (d != spec.domain || t != spec.type) continue;
    const bool small = isSmallWork(spec);
    // A small kernel's primitive is made for one thread too (oneDNN sizes its split when the
    // primitive is created).
    std::optional<KernelThreadsScope> one;
    if (small) one.emplace(1);
    std::unique_ptr<Kernel> kernel = createKernel(spec, f);
    if (small) return std::make_unique<SingleThreadKernel>(std::move(kernel));
    if (threads == KernelThreadCount::ReadWhenRun) return kernel;
    return std::make_unique<ThreadCountKernels>(spec, f, std::move(kernel),
                                                kernelThreadsForThisThread());
  }
  throw error("{}: no CPU kernel for op type '{}' in domain '{}'", spec.description, spec.type,
              spec.domain);
}

}  // namespace xtrain::device
