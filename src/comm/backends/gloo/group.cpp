// The creation of a gloo group: every rank announces itself in the store, the ranks agree on the
// address to bind (docs/comm-gloo.md) and gloo connects a full mesh of TCP pairs through its
// rendezvous; then communicator.cpp's transport runs the collectives.
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "comm/backends/gloo/bind_address.hpp"
#include "comm/backends/gloo/gloo.hpp"
#include "comm/backends/gloo/slots.hpp"
#include "comm/backends/gloo/transport.hpp"
#include "comm/job_secret.hpp"
#include "comm/queued_communicator.hpp"
#include "common/env_value.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm::gloo {

namespace {

using Clock = std::chrono::steady_clock;
using Device = ::gloo::transport::Device;

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

std::string envOr(const char* name) {
  return readEnvString(name).value_or(std::string());
}

// xtrain's store as gloo's rendezvous store (gloo connects its pairs through it).
class StoreAdapter : public ::gloo::rendezvous::Store {
 public:
  StoreAdapter(std::shared_ptr<comm::Store> store, Milliseconds timeout)
      : store_(std::move(store)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::string v = store_->get(key, timeout_);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout.count() > 0 ? timeout : timeout_);
  }

 private:
  std::shared_ptr<comm::Store> store_;
  Milliseconds timeout_;
};

// Announces this rank under "arrive/<rank>" (its size and host name) and waits, bounded by the
// timeout, for every rank; returns their host names. Ranks other than 0 first check rank 0's size.
std::vector<std::string> meet(comm::Store& store, const std::string& groupName, int rank, int size,
                              Milliseconds timeout, const std::string& what) {
  const auto deadline = Clock::now() + timeout;
  auto key = [](int r) { return "arrive/" + std::to_string(r); };
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(key(r));
  auto waitFor = [&](const std::vector<std::string>& ks) {
    try {
      store.wait(ks, remainingUntil(deadline));
    } catch (const CommTimeoutError&) {
      std::vector<int> missing;
      for (int r = 0; r < size; ++r) {
        if (!store.check({key(r)})) missing.push_back(r);
      }
      throw CommTimeoutError(timeoutMessage(what, groupName, size, timeout, missing));
    }
  };
  const std::string host = hostName();
  if (rank != 0) {
    waitFor({key(0)});
    const std::string v = store.get(key(0), remainingUntil(deadline));
    const int rootSize = std::atoi(v.substr(0, v.find(' ')).c_str());
    if (rootSize != size) {
      throw error("gloo: rank {} joins group '{}' with size {}, but rank 0 created it with size {}",
                  rank, groupName, size, rootSize);
    }
  }
  store.set(key(rank), std::to_string(size) + " " + host);
  waitFor(keys);
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) {
    const std::string v = store.get(key(r), remainingUntil(deadline));
    const auto space = v.find(' ');
    hosts.push_back(space == std::string::npos ? v : v.substr(space + 1));
  }
  return hosts;
}

// The address the TCP device binds to (docs/comm-gloo.md).
std::shared_ptr<Device> makeDevice(const std::vector<std::string>& hosts,
                                   const std::string& groupName) {
  ::gloo::transport::tcp::attr attr;
  std::string description;
  const std::string iface = envOr("XTRAIN_GLOO_IFNAME");
  const std::string hostname = envOr("XTRAIN_GLOO_HOSTNAME");
  if (!iface.empty()) {
    checkInterface(iface);
    attr.iface = iface;
    description = format("interface {} (XTRAIN_GLOO_IFNAME)", iface);
  } else if (!hostname.empty()) {
    checkHostname(hostname, "XTRAIN_GLOO_HOSTNAME");
    attr.hostname = hostname;
    description = format("{} (XTRAIN_GLOO_HOSTNAME)", hostname);
  } else if (std::all_of(hosts.begin(), hosts.end(),
                         [&](const std::string& h) { return h == hosts.front(); })) {
    attr.hostname = "127.0.0.1";
    description = format("127.0.0.1 (every rank runs on host {})", hosts.front());
  } else {
    attr.hostname = hostName();
    checkHostname(attr.hostname, "this host's name (gethostname; the ranks run on several hosts)");
    description = format("{} (this host's name; the ranks run on several hosts)", attr.hostname);
  }
  try {
    auto device = ::gloo::transport::tcp::CreateDevice(attr);
    logging::comm::debug("gloo: group '{}' binds to {}: {}", groupName, description, device->str());
    return device;
  } catch (const std::exception& e) {
    throw runtime_error(
        "gloo: cannot create a TCP device on {} for group '{}': {} (set XTRAIN_GLOO_IFNAME to a "
        "network interface or XTRAIN_GLOO_HOSTNAME to an address of this host)",
        description, groupName, e.what());
  }
}

// gloo writes to its sockets without MSG_NOSIGNAL: writing to the connection of a peer that died
// would kill this process with SIGPIPE instead of failing the collective. Ignore SIGPIPE unless the
// application installed a handler of its own.
void ignoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current = {};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      ::signal(SIGPIPE, SIG_IGN);
    }
  });
}

// The key the group's connections are authenticated with: the job's secret (XTRAIN_JOB_SECRET,
// from xrun), else one rank 0 draws and hands the others through the store (a program started
// without xrun: then the connections are as private as the store).
std::string authenticationKey(comm::Store& store, int rank, Milliseconds timeout) {
  if (auto secret = jobSecretFromEnvironment()) return *secret;
  if (rank == 0) store.set("auth/key", randomHex(32));
  return store.get("auth/key", timeout);
}

std::string proofOf(const std::string& key, const std::string& prefix, int from, int to,
                    const std::string& challengeOfReceiver, const std::string& challengeOfSender) {
  const auto mac = hmacSha256(key, format("xtrain gloo connection\n{}\n{}\n{}\n{}\n{}", prefix,
                                          from, to, challengeOfReceiver, challengeOfSender));
  return std::string(reinterpret_cast<const char*>(mac.data()), mac.size());
}

// gloo's TCP pairs have no handshake of their own: a listening pair takes the first connection
// that arrives. So over every connection gloo made, each rank sends its peer an HMAC of both
// ends' fresh challenges under the job's key, and checks the one it receives: a process without
// the key that connected to a listening port of the group fails the creation (naming the rank
// whose connection it took) instead of taking part in the collectives.
void authenticateConnections(::gloo::Context& ctx, const std::string& key,
                             const std::string& prefix, int rank, int size,
                             const std::vector<std::string>& challenges, Milliseconds timeout,
                             const std::string& what, const std::string& name) {
  constexpr size_t kProofBytes = 32;
  std::string sent(kProofBytes * static_cast<size_t>(size), '\0');
  std::string received(kProofBytes * static_cast<size_t>(size), '\0');
  auto out = ctx.createUnboundBuffer(sent.data(), sent.size());
  auto in = ctx.createUnboundBuffer(received.data(), received.size());
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    const size_t offset = kProofBytes * static_cast<size_t>(peer);
    const std::string proof = proofOf(key, prefix, rank, peer, challenges[peer], challenges[rank]);
    sent.replace(offset, kProofBytes, proof);
    out->send(peer, kAuthSlot, offset, kProofBytes);
    in->recv(peer, kAuthSlot, offset, kProofBytes);
  }
  const auto failed = [&](const std::string& why) {
    return runtime_error(
        "{} in group '{}' (size {}): rank {} could not authenticate its connections: {}; a "
        "process without the job's secret ({}) may have connected to this job's port in place of "
        "a rank (another user on this host or network?)",
        what, name, size, rank, why, kJobSecretVariable);
  };
  for (int i = 0; i < size - 1; ++i) {
    int from = -1;
    bool ok = false;
    try {
      ok = in->waitRecv(&from, timeout);
    } catch (const std::exception& e) {
      throw failed(format("a proof did not arrive within {} ms ({})", timeout.count(), e.what()));
    }
    if (!ok) throw failed("the receive was aborted");
  }
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    const std::string expected =
        proofOf(key, prefix, peer, rank, challenges[rank], challenges[peer]);
    if (!equalInConstantTime(received.substr(kProofBytes * static_cast<size_t>(peer), kProofBytes),
                             expected)) {
      throw failed(format("the connection that should be rank {}'s sent a wrong proof", peer));
    }
  }
  for (int i = 0; i < size - 1; ++i) {
    bool ok = false;
    try {
      ok = out->waitSend(timeout);
    } catch (const std::exception& e) {
      throw failed(format("a proof could not be sent ({})", e.what()));
    }
    if (!ok) throw failed("a send was aborted");
  }
}

}  // namespace

std::shared_ptr<Communicator> createGroup(const std::shared_ptr<comm::Store>& baseStore,
                                          const std::string& prefix, const std::string& name,
                                          int rank, int size, Milliseconds timeout,
                                          std::shared_ptr<Device> device, const std::string& what) {
  auto store = std::make_shared<PrefixStore>(baseStore, prefix);
  const auto hosts = meet(*store, name, rank, size, timeout, what);
  std::shared_ptr<::gloo::Context> context;
  if (size > 1) {
    // Every member arrived: connecting and authenticating share one budget of `timeout`, so a
    // member that stops now ends the creation within 2 x timeout in all, not one timeout per phase.
    const auto deadline = Clock::now() + timeout;
    const auto left = [&] { return std::max(remainingUntil(deadline), Milliseconds(1)); };
    if (!device) device = makeDevice(hosts, name);
    const std::string key = authenticationKey(*store, rank, left());
    // Published before connecting, so a peer that is connected has published its own.
    store->set("auth/challenge/" + std::to_string(rank), randomHex(16));
    auto ctx = std::make_shared<::gloo::rendezvous::Context>(rank, size);
    ctx->setTimeout(left());
    StoreAdapter adapter(store, left());
    try {
      ctx->connectFullMesh(adapter, device);
    } catch (const CommTimeoutError& e) {
      throw CommTimeoutError(
          format("{} in group '{}' (size {}): connecting to the peers timed out after {} ms: {}",
                 what, name, size, timeout.count(), e.what()));
    } catch (const std::exception& e) {
      throw runtime_error(format("{} in group '{}' (size {}): connecting to the peers failed: {}",
                                 what, name, size, e.what()));
    }
    std::vector<std::string> challenges;
    for (int r = 0; r < size; ++r) {
      challenges.push_back(store->get("auth/challenge/" + std::to_string(r), left()));
    }
    authenticateConnections(*ctx, key, prefix, rank, size, challenges, left(), what, name);
    // gloo's connectFullMesh can return on one rank while a peer is still completing its side of
    // the handshake; a rank that left at once (and closed its connections) would make that peer's
    // creation fail. So every rank waits, bounded, until all are connected.
    store->set("connected/" + std::to_string(rank), "1");
    std::vector<std::string> keys;
    for (int r = 0; r < size; ++r) keys.push_back("connected/" + std::to_string(r));
    try {
      store->wait(keys, left());
    } catch (const CommTimeoutError& e) {
      throw CommTimeoutError(
          format("{} in group '{}' (size {}): not every rank finished connecting "
                 "within {} ms: {}",
                 what, name, size, timeout.count(), e.what()));
    }
    ctx->setTimeout(timeout);  // the collectives' own
    context = std::move(ctx);
  }
  return makeCommunicator(baseStore, prefix, std::move(store), name, rank, size, timeout,
                          std::move(device), std::move(context));
}

std::shared_ptr<Communicator> createCommunicator(const CommConfig& c) {
  ignoreSigpipe();
  const Milliseconds timeout = c.timeout ? *c.timeout : defaultTimeout();
  const std::string prefix = "gloo/" + c.name;
  if (c.rank == 0 && c.store->add(prefix + "/created", 1) != 1) {
    throw error(
        "gloo: a group named '{}' was already created with this store (job '{}'); give each "
        "communicator its own name or store",
        c.name, c.store->jobId());
  }
  return createGroup(c.store, prefix, c.name, c.rank, c.size, timeout, nullptr,
                     format("creation of group '{}'", c.name));
}
}  // namespace xtrain::comm::gloo
