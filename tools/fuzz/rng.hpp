// Rng: a small deterministic generator (splitmix64). The standard distributions are
// implementation-defined, so the harness draws with its own arithmetic: the same --seed and
// --case give the same mutation and command line with any standard library.
#pragma once

#include <cstdint>
#include <string_view>

namespace xfuzz {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  // The generator of one case: independent of every other case, so `--case K` reproduces case K
  // of a long run without replaying the cases before it.
  static Rng forCase(uint64_t seed, std::string_view target, uint64_t caseNumber) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a of the target name
    for (char c : target) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    Rng mix(seed ^ h);
    mix.state_ ^= caseNumber * 0x9e3779b97f4a7c15ull;
    mix.next();
    return mix;
  }

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); n > 0. The modulo bias is irrelevant for fuzzing.
  uint64_t below(uint64_t n) { return next() % n; }
  // Uniform in [lo, hi].
  uint64_t between(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }
  // True with probability num/den.
  bool chance(uint64_t num, uint64_t den) { return below(den) < num; }
  template <typename C>
  const auto& pick(const C& items) {
    return items[static_cast<size_t>(below(items.size()))];
  }

 private:
  uint64_t state_;
};

}  // namespace xfuzz
