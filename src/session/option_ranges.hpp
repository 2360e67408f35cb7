// The ranges of SessionOptions' numeric members, checked once at session creation: a count,
// size, factor, proportion or limit outside what PopART documents (or xtrain's docs say) is an
// xtrain::error naming the member, its value and the range, whether the member takes effect or not
// (docs/session-options.md, "Ranges"). A negative count must never reach the session, where it
// would wrap into a huge unsigned size or be taken silently as some other setting. The relations
// between members (globalReplicationFactor a multiple of the local replicas, ...) are the session's
// own checks (SessionImpl::validateOptions).
#pragma once
#pragma GCC visibility push(default)

#include "xtrain/devicemanager.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain::session {

// `device` gives the tiles per IPU numIOTiles must stay below.
void checkOptionRanges(const SessionOptions& options, const DeviceInfo& device);

}  // namespace xtrain::session

#pragma GCC visibility pop
