// Checks of the address a gloo TCP device is told to bind to, before gloo sees it: libgloo
// dereferences a failed name lookup (an unresolvable XTRAIN_GLOO_HOSTNAME crashed the process inside
// CreateDevice), so every name is resolved here first and a bad one becomes an xtrain::error naming
// the variable and the value.
#pragma once
#pragma GCC visibility push(default)

#include <string>

namespace xtrain::comm::gloo {

// XTRAIN_GLOO_IFNAME: the interface must exist and have an IPv4 or IPv6 address. Throws
// xtrain::error naming the variable, the interface and the interfaces this host has.
void checkInterface(const std::string& iface);

// `hostname` must resolve (getaddrinfo) to an address a socket of this host can bind to. `source` says where the name came
// from ("XTRAIN_GLOO_HOSTNAME", "this host's name"). Throws xtrain::error naming both and the
// resolver's reason.
void checkHostname(const std::string& hostname, const std::string& source);

}  // namespace xtrain::comm::gloo

#pragma GCC visibility pop
