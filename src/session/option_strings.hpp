// SessionOptions' text values must hold no NUL byte. A path or name reaches the C library, where
// text ends at its first NUL: engineOptions["trace.file"] = "run/t\0.json" would silently write
// "run/t". Every string member, and every key and value of the option maps, is checked at session
// creation; one holding a NUL throws xtrain::error naming the option (and the key) and showing the
// value with the NUL as \0.
#pragma once
#pragma GCC visibility push(default)

#include <map>
#include <string>
#include <string_view>

#include "xtrain/sessionoptions.hpp"

namespace xtrain::session {

// Every text member of `options` (the option maps, logDir, cachePath, dotChecks, ...).
void refuseNulBytes(const SessionOptions& options);
// The keys and values of one option map; `member` names it ("engineOptions").
void refuseNulBytes(const std::map<std::string, std::string>& options, std::string_view member);

}  // namespace xtrain::session

#pragma GCC visibility pop
