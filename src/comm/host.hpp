// Host identity: what tells two ranks whether they share a host (and its /dev/shm).
#pragma once
#pragma GCC visibility push(default)

#include <string>

namespace xtrain::comm {

// "<hostname>/<boot id>": equal for processes of one host and boot, different across hosts.
std::string hostIdentity();

}  // namespace xtrain::comm

#pragma GCC visibility pop
