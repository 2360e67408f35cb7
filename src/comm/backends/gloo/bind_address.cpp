#include "comm/backends/gloo/bind_address.hpp"

#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <set>

#include "xtrain/error.hpp"

namespace xtrain::comm::gloo {
namespace {

struct IfaddrsDeleter {
  void operator()(ifaddrs* list) const { ::freeifaddrs(list); }
};

struct AddrinfoDeleter {
  void operator()(addrinfo* list) const { ::freeaddrinfo(list); }
};

bool isIpAddress(const sockaddr* addr) {
  return addr != nullptr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6);
}

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? std::string("none") : out;
}

// Whether a TCP socket can bind to `addr` (port 0) on this host: gloo binds the first address of a
// name that it can, and a name of another host has none.
bool canBind(const addrinfo& addr) {
  const int fd = ::socket(addr.ai_family, addr.ai_socktype | SOCK_CLOEXEC, addr.ai_protocol);
  if (fd < 0) return false;
  const bool ok = ::bind(fd, addr.ai_addr, addr.ai_addrlen) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

void checkInterface(const std::string& iface) {
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0) {
    throw runtime_error("XTRAIN_GLOO_IFNAME={}: cannot list this host's network interfaces", iface);
  }
  const std::unique_ptr<ifaddrs, IfaddrsDeleter> list(raw);
  std::set<std::string> withAddress;
  bool exists = false;
  for (const ifaddrs* a = list.get(); a != nullptr; a = a->ifa_next) {
    if (a->ifa_name == nullptr) continue;
    const bool ip = isIpAddress(a->ifa_addr);
    if (ip) withAddress.insert(a->ifa_name);
    if (iface == a->ifa_name) {
      exists = true;
      if (ip) return;
    }
  }
  throw error(
      "XTRAIN_GLOO_IFNAME={}: {}; set it to one of this host's interfaces with an address ({}) or "
      "unset it",
      iface, exists ? "the interface has no IPv4 or IPv6 address" : "no such network interface",
      joined(withAddress));
}

void checkHostname(const std::string& hostname, const std::string& source) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const int rc = ::getaddrinfo(hostname.c_str(), nullptr, &hints, &raw);
  const std::unique_ptr<addrinfo, AddrinfoDeleter> list(raw);
  if (rc != 0 || list == nullptr) {
    throw error(
        "{}: cannot resolve '{}' to an address ({}); set XTRAIN_GLOO_HOSTNAME to an address or "
        "host name of this host, or XTRAIN_GLOO_IFNAME to a network interface",
        source, hostname, rc != 0 ? ::gai_strerror(rc) : "no addresses");
  }
  for (const addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
    if (canBind(*a)) return;
  }
  throw error(
      "{}: '{}' is not an address of this host (no socket can bind to it); set "
      "XTRAIN_GLOO_HOSTNAME to an address or host name of this host, or XTRAIN_GLOO_IFNAME to a "
      "network interface",
      source, hostname);
}

}  // namespace xtrain::comm::gloo
