// PhaseTimes: the wall time of a session's creation and of prepareDevice, phase by phase, written
// to the session module's debug log. It is what tells how much of starting a session a cache of
// the compiled program could skip (SessionOptions.enableEngineCaching; docs/performance.md,
// "Session creation").
#pragma once
#pragma GCC visibility push(default)

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "xtrain/format.hpp"

namespace xtrain::session {

class PhaseTimes {
 public:
  // Ends the phase running since the previous lap (or since construction) and names it.
  void lap(std::string phase) {
    const auto now = Clock::now();
    phases_.emplace_back(std::move(phase),
                         std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

  double totalMs() const {
    double total = 0;
    for (const auto& p : phases_) total += p.second;
    return total;
  }

  // "12.3 ms: import 9.1 ms, training graph 0.8 ms, ..."
  std::string summary() const {
    std::string s = xtrain::format("{:.1f} ms:", totalMs());
    const char* sep = " ";
    for (const auto& [name, ms] : phases_) {
      s += xtrain::format("{}{} {:.1f} ms", sep, name, ms);
      sep = ", ";
    }
    return s;
  }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_ = Clock::now();
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
