#include "device/ipu/ipu_wait.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include "device/ipu/ipu_options.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::device {

double waitForIpuSeconds() {
  const char* raw = std::getenv("XTRAIN_WAIT_FOR_IPU");
  if (raw == nullptr) return 0;
  const std::string text(trimWhitespace(raw));
  if (text.empty()) return 0;
  const auto bad = [&](const char* why) {
    return error(
        "XTRAIN_WAIT_FOR_IPU='{}' {}; expected how many seconds to wait for busy IPUs: a "
        "non-negative number such as 30 or 0.5, at most {} (30 days)",
        raw, why, DeviceInfo::kMaxAttachWaitSeconds);
  };
  // strtod accepts a sign, "inf", "nan" and hexadecimal: only plain decimals are seconds here.
  if (text.find_first_not_of("0123456789.") != std::string::npos) {
    throw bad("is not a non-negative number");
  }
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno != 0 || !std::isfinite(seconds)) {
    throw bad("is not a non-negative number");
  }
  if (seconds > DeviceInfo::kMaxAttachWaitSeconds) throw bad("is too long");
  return seconds;
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
