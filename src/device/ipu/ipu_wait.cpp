#include "device/ipu/ipu_wait.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/env_value.hpp"
#include "device/ipu/ipu_options.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::device {

double waitForIpuSeconds() {
  const auto wait =
      readEnvDuration("XTRAIN_WAIT_FOR_IPU",
                      DurationRange{true, std::chrono::seconds(DeviceInfo::kMaxAttachWaitSeconds)});
  return wait ? std::chrono::duration<double>(*wait).count() : 0.0;
}

bool retryUntil(double seconds, const WaitSubject& subject, const std::function<bool()>& attempt) {
  if (attempt()) return true;
  if (!(seconds > 0)) return false;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const auto holdersText = [&] {
    const std::string h = subject.holders ? subject.holders() : std::string();
    return h.empty() ? std::string("busy a moment ago") : h;
  };
  logging::devicex::info("{}: waiting up to {} s ({}) for busy IPUs: {}", subject.what, seconds,
                         subject.source, holdersText());
  bool got = false;
  while (!got) {
    const auto now = Clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(kPollInterval, deadline - now));
    got = attempt();
  }
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  if (got) {
    logging::devicex::info("{}: got the IPUs after waiting {:.1f} s", subject.what, waited);
  } else {
    logging::devicex::info("{}: gave up after waiting {:.1f} s: {}", subject.what, waited,
                           holdersText());
  }
  return got;
}

}  // namespace xtrain::device
