// The checks of SessionOptions made once at session creation from the option table
// (session/option_table.hpp): a refused member set to anything but its default, or a bad value of
// an honoured one, throws xtrain::error naming the member, the value and what is expected; each
// member with no effect on a simulated IPU that is set to anything but its default is logged once
// at debug level (module session), with the reason.
#pragma once
#pragma GCC visibility push(default)

#include "xtrain/sessionoptions.hpp"

namespace xtrain::session {

void checkSessionOptions(const SessionOptions& options);

}  // namespace xtrain::session

#pragma GCC visibility pop
