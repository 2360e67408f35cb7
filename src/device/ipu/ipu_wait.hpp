// Waiting for busy IPUs: XTRAIN_WAIT_FOR_IPU and the retry loop that acquisitions and
// DeviceInfo::tryAttachUntilTimeout share. Internal.
//
// The wait polls (every kPollInterval) rather than blocking on the lock files: a device of several
// IPUs must take all its locks or none, and blocking on one IPU's lock while holding another's
// could deadlock two processes that want overlapping devices.
#pragma once
#pragma GCC visibility push(default)

#include <chrono>
#include <functional>
#include <string>

namespace xtrain::device {

inline constexpr std::chrono::milliseconds kPollInterval{50};

// Seconds from XTRAIN_WAIT_FOR_IPU: 0 when it is unset or empty. A value that is not a duration
// of 0 to DeviceInfo::kMaxAttachWaitSeconds (common/env_value.hpp: 30, 0.5, 200ms, 5m) throws
// xtrain::error naming the variable. Read at each call.
double waitForIpuSeconds();

// What a wait is for, for its log lines: "acquireDeviceById: device 9 (IPUs [2,3])".
struct WaitSubject {
  std::string what;
  // Who holds the IPUs now ("IPU 2 is held by process 1234"), or "" when nobody does.
  std::function<std::string()> holders;
  // Where the wait's length comes from: "XTRAIN_WAIT_FOR_IPU" or "the attach timeout".
  std::string source = "XTRAIN_WAIT_FOR_IPU";
};

// Calls `attempt` until it returns true or `seconds` have passed since the first call, sleeping
// kPollInterval between calls; returns the last result. seconds <= 0: one call. When the first call
// fails and there is time to wait, logs at info level (module devicex) that it waits, for how long
// and for whom; then once that it got the IPUs or gave up, and after how long.
bool retryUntil(double seconds, const WaitSubject& subject, const std::function<bool()>& attempt);

}  // namespace xtrain::device

#pragma GCC visibility pop
