#include "device/kernel.hpp"

#include "common/check.hpp"

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

std::unique_ptr<Kernel> KernelRegistry::create(const KernelSpec& spec) const {
  for (const auto& [d, t, f] : factories_) {
    if (d != spec.domain || t != spec.type) continue;
    try {
      return f(spec);
    } catch (const error&) {
      // A kernel that does not take FLOAT16 runs on FLOAT copies; other refusals stand.
      if (auto promoted = createFloat16Promoted(spec, f)) return promoted;
      throw;
    }
  }
  throw error("{}: no CPU kernel for op type '{}' in domain '{}'", spec.description, spec.type,
              spec.domain);
}

}  // namespace xtrain::device
