// GlooTransport: one rank of a gloo group, under a QueuedCommunicator (whose executor thread runs
// the collectives in issue order, so asynchronous collectives overlap with the caller's work).
//
// Every collective has two phases (docs/comm-gloo.md):
//   1. fingerprint exchange: each rank sends its Fingerprint to every peer and receives theirs
//      (all-to-all, one small message per pair). Once every fingerprint is in, every rank has
//      arrived (so a barrier is this phase alone), and every rank compares the same k fingerprints,
//      so a mismatch is reported identically on all ranks. A receive that does not complete by the
//      deadline names the rank that did not arrive; a receive whose connection broke names the rank
//      that died.
//      A small all-reduce (at most inlineCapacity(k) bytes, algorithms.hpp) sends its input in
//      the same message as its fingerprint: once the fingerprints agree, each rank reduces the k
//      inputs itself and the collective is done in this one round (no data phase).
//   2. data phase (algorithms.hpp): gloo's ring all-reduce, ring all-gather and tree broadcast, and
//      our ring reduce-scatter.
// A failure aborts the communicator: the first failing rank publishes the failure in the store
// (key "abort/msg" of the group's key space) before it closes its connections, so the peers that
// see those connections break report the original failure rather than a lost connection. A rank
// that closes its communicator publishes "left/<rank>" first: its peers then treat it as a rank
// that does not arrive (a timeout) rather than as a dead process.
//
// A watchdog thread per communicator keeps a receive that never completes posted on every
// connection (a sentinel): gloo fails it as soon as the connection breaks, whatever the collectives
// are doing. Unless the peer left, the watchdog then interrupts the running collective's waits
// (Interrupt, algorithms.hpp). Without it a wait on a healthy connection, or on a message gloo was
// writing or reading when its connection broke (gloo does not wake those), would last until the
// collective's timeout.
//
// The group's creation (rendezvous, TCP device, full mesh) is in group.cpp.
#include <gloo/common/error.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "comm/backends/gloo/algorithms.hpp"
#include "comm/backends/gloo/slots.hpp"
#include "comm/backends/gloo/transport.hpp"
#include "comm/queued_communicator.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm::gloo {

namespace {

using Clock = std::chrono::steady_clock;
using UnboundBuffer = ::gloo::transport::UnboundBuffer;
using Device = ::gloo::transport::Device;

const std::string kBackendName = "gloo";

// How long a rank whose connection to a peer broke waits for that peer's published failure before
// it concludes the peer died. A peer publishes right after its connections close (a gloo-internal
// timeout closes them first), so this only needs to cover a scheduling delay.
constexpr Milliseconds kGrace{500};

// How long a rank that failed waits for the failure record another rank is writing (it counted its
// failure first) before it closes its connections anyway. Only a store stalled for that long
// (a loaded file system) makes peers misname this rank as the dead one.
constexpr Milliseconds kRecordWait{5000};

// How long a rank that closes its communicator waits for its peers to close theirs (see
// awaitPeersLeaving()).
constexpr Milliseconds kLeaveWait{10000};

bool looksLikeTimeout(const std::string& msg) {
  std::string m = msg;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  return m.find("timed out") != std::string::npos || m.find("timeout") != std::string::npos;
}

enum class Failure : char {
  None = 'N',
  Timeout = 'T',
  Mismatch = 'M',
  Lost = 'L',  // a peer's connection broke: the process died, or its host or network failed
  Other = 'O',
};

// The failure of one collective, thrown inside the worker and turned into the public error by
// execute(). `publish`: this rank found the failure (rather than reading a peer's record).
struct Failed {
  Failure kind = Failure::Other;
  std::string message;
  bool publish = true;
};

[[noreturn]] void throwAs(Failure kind, const std::string& message) {
  switch (kind) {
    case Failure::Timeout: throw CommTimeoutError(message);
    case Failure::Mismatch: throw CommMismatchError(message);
    default: throw runtime_error(message);
  }
}

// A Fingerprint on the wire.
struct WireFingerprint {
  uint64_t seq = 0;
  uint64_t count = 0;
  int32_t root = 0;
  uint8_t kind = 0;
  uint8_t type = 0;
  uint8_t op = 0;
  uint8_t valid = 0;
};
static_assert(sizeof(WireFingerprint) == 24);

WireFingerprint encode(const Fingerprint& f) {
  WireFingerprint w;
  w.seq = f.seq;
  w.count = f.count;
  w.root = f.root;
  w.kind = static_cast<uint8_t>(f.kind);
  w.type = static_cast<uint8_t>(f.type);
  w.op = static_cast<uint8_t>(f.op);
  w.valid = 1;
  return w;
}

Fingerprint decode(const WireFingerprint& w) {
  Fingerprint f;
  f.kind = static_cast<OpKind>(w.kind);
  f.seq = w.seq;
  f.count = w.count;
  f.type = static_cast<DataType>(w.type);
  f.op = static_cast<CollectiveOperator>(w.op);
  f.root = w.root;
  return f;
}

std::string rankList(const std::vector<int>& ranks) {
  return ranks.size() == 1 ? format("rank {}", ranks[0]) : format("ranks {}", ranks);
}

class GlooTransport : public Transport {
 public:
  GlooTransport(std::shared_ptr<comm::Store> baseStore, std::string prefix,
                std::shared_ptr<comm::Store> store, std::string name, int rank, int size,
                std::shared_ptr<Device> device, std::shared_ptr<::gloo::Context> context)
      : baseStore_(std::move(baseStore)),
        prefix_(std::move(prefix)),
        store_(std::move(store)),
        name_(std::move(name)),
        rank_(rank),
        size_(size),
        device_(std::move(device)),
        context_(std::move(context)),
        inboxStride_((sizeof(WireFingerprint) + inlineCapacity(size) + 63) & ~size_t{63}) {
    peerBroken_.assign(static_cast<size_t>(size_), 0);
    if (size_ > 1) watchdog_ = std::thread([this] { watch(); });
  }

  ~GlooTransport() override {
    if (size_ > 1) {
      // Before the connections close: peers that wait for this rank then see a rank that left
      // (and time out as for any missing rank), not one that died.
      try {
        store_->set("left/" + std::to_string(rank_), "1");
      } catch (const std::exception& e) {
        logging::comm::warn("gloo: group '{}' rank {}: cannot record leaving: {}", name_, rank_,
                            e.what());
      }
      awaitPeersLeaving();
      {
        std::lock_guard lock(watchMu_);
        watchStop_ = true;
        if (sentinel_ != nullptr) sentinel_->abortWaitRecv();
      }
      watchCv_.notify_all();
      watchdog_.join();
    }
    context_.reset();
    device_.reset();
  }

  void execute(QueuedCommunicator& comm, const Collective& t) override;
  std::shared_ptr<Communicator> split(QueuedCommunicator& comm, const SplitRequest& r) override;

 private:
  // The bytes of t's input that travel with its fingerprint (0: none; the same on every rank
  // whose fingerprint is t's).
  size_t inlineInputBytes(const Collective& t) const;
  // Sends t's fingerprint, followed by `payloadBytes` of its input, to every peer; returns every
  // rank's fingerprint. The peers' payloads are then at inboxPayload(p) until the next exchange.
  std::vector<Fingerprint> exchangeFingerprints(const Collective& t, Deadline deadline,
                                                const std::string& what, size_t payloadBytes);
  const char* inboxPayload(int p) const {
    return inbox_ + static_cast<size_t>(p) * inboxStride_ + sizeof(WireFingerprint);
  }
  struct ArrivalWait {
    bool timedOut;
    bool interrupted;  // a connection of the group broke
  };
  ArrivalWait awaitFingerprints(std::vector<std::unique_ptr<TrackedBuffer>>& recvs,
                                std::vector<std::string>& peerError, std::vector<char>& arrived,
                                Deadline deadline);
  [[noreturn]] void peerErrors(const std::vector<std::string>& peerError,
                               const std::vector<char>& arrived, Deadline deadline,
                               const Collective& t, const std::string& what);
  void dataPhase(const Collective& t, Deadline deadline, const std::string& what);
  Failed classifyDataFailure(const std::string& glooMessage, Deadline deadline, const Collective& t,
                             const std::string& what);
  std::string lostMessage(const std::string& what, const std::vector<int>& ranks,
                          const std::string& glooMessage) const {
    return format(
        "{} in group '{}' (size {}): peer connection lost to {} (the process died, or its host or "
        "the network failed): {}",
        what, name_, size_, rankList(ranks), glooMessage);
  }

  struct Record {
    Failure kind;
    std::string message;
  };
  std::optional<Record> readAbortRecord() const;
  std::optional<Record> awaitAbortRecord(Milliseconds grace) const;
  bool failureCounted() const;  // a rank of the group counted a failure (its record may follow)
  bool hasLeft(int peer) const;
  void awaitPeersLeaving();
  std::vector<int> brokenPeers();
  void closeConnections();
  void watch();
  [[noreturn]] void fail(QueuedCommunicator& comm, const Failed& f);

  const std::shared_ptr<comm::Store> baseStore_;  // the job's store (splits derive their keys)
  const std::string prefix_;                      // this group's key space in baseStore_
  const std::shared_ptr<comm::Store> store_;      // baseStore_ under prefix_
  const std::string name_;
  const int rank_;
  const int size_;
  std::shared_ptr<Device> device_;            // shared with the sub-groups split from this one
  std::shared_ptr<::gloo::Context> context_;  // null for size 1; kept until destruction
  Scratch scratch_;           // used by one collective at a time (the executor's, or a sync call's)
  const size_t inboxStride_;  // bytes per rank in the fingerprint exchange's inbox (scratch_)
  const char* inbox_ = nullptr;  // the last exchange's messages, rank p's at p * inboxStride_
  Interrupt interrupt_;          // triggered by the watchdog

  std::mutex closeMu_;   // guards closed_
  bool closed_ = false;  // closeConnections() ran

  std::mutex watchMu_;  // guards watchStop_ and sentinel_
  std::condition_variable watchCv_;
  bool watchStop_ = false;
  ::gloo::transport::UnboundBuffer* sentinel_ = nullptr;  // the watchdog's current sentinel
  std::vector<char> peerBroken_;  // per rank: the watchdog saw its connection break

  std::atomic<bool> connectionBroke_{false};  // the watchdog saw a connection of the group break
  std::thread watchdog_;                      // size > 1 only; started in the constructor's body
};

std::optional<GlooTransport::Record> GlooTransport::readAbortRecord() const {
  try {
    if (!store_->check({"abort/msg"})) return std::nullopt;
    const std::string v = store_->get("abort/msg", Milliseconds(1000));
    if (v.empty()) return std::nullopt;
    return Record{static_cast<Failure>(v[0]), v.substr(1)};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A failure counted in "abort/n" is being written: its record is waited for beyond the grace.
std::optional<GlooTransport::Record> GlooTransport::awaitAbortRecord(Milliseconds grace) const {
  const auto start = Clock::now();
  for (;;) {
    if (auto r = readAbortRecord()) return r;
    const auto waited = Clock::now() - start;
    if (waited >= kRecordWait || (waited >= grace && !failureCounted())) return std::nullopt;
    std::this_thread::sleep_for(Milliseconds(10));
  }
}

bool GlooTransport::failureCounted() const {
  try {
    return store_->check({"abort/n"});
  } catch (const std::exception&) {
    return false;
  }
}

bool GlooTransport::hasLeft(int peer) const {
  try {
    return store_->check({"left/" + std::to_string(peer)});
  } catch (const std::exception&) {
    return false;
  }
}

// Closing a connection while a message from the peer is unread makes the close a reset, and a
// reset discards what this rank wrote but the kernel has not yet sent, such as the end of its last
// collective's message to a slow peer (which then waits for it until the timeout). Peers' watchdogs
// post new sentinels (a small message each) whenever a connection breaks, so such unread messages
// do arrive while ranks leave. So a rank closes its connections only once every peer has finished
// its collectives on the group: it left too (its "left/<rank>" is in the store), its connection
// broke (it died, or failed and closed), or kLeaveWait passed (a peer that stays in the group
// without further collectives; whatever this rank sent it was read by then unless it is stuck).
// A rank whose group failed closed its connections already and does not wait.
void GlooTransport::awaitPeersLeaving() {
  {
    std::lock_guard lock(closeMu_);
    if (closed_) return;
  }
  const auto end = Clock::now() + kLeaveWait;
  std::vector<int> waitingFor;
  for (int p = 0; p < size_; ++p) {
    if (p != rank_) waitingFor.push_back(p);
  }
  for (;;) {
    {
      std::lock_guard lock(watchMu_);
      std::erase_if(waitingFor, [&](int p) { return peerBroken_[static_cast<size_t>(p)] != 0; });
    }
    // One question per round (with the job's store over MPI each is a round trip to rank 0):
    // have all the peers still awaited left?
    std::vector<std::string> keys;
    for (int p : waitingFor) keys.push_back("left/" + std::to_string(p));
    try {
      if (keys.empty() || store_->check(keys)) return;
    } catch (const std::exception& e) {  // the job's store is gone: the job is ending
      logging::comm::debug("gloo: group '{}' rank {}: cannot read who left: {}", name_, rank_,
                           e.what());
      return;
    }
    if (Clock::now() >= end) {
      std::erase_if(waitingFor, [&](int p) { return hasLeft(p); });
      logging::comm::debug(
          "gloo: group '{}' rank {}: closing while {} still in the group after {} ms", name_,
          rank_, rankList(waitingFor), kLeaveWait.count());
      return;
    }
    std::this_thread::sleep_for(Milliseconds(5));
  }
}

// The peers whose connection is broken: posting a receive on a broken pair throws at once.
std::vector<int> GlooTransport::brokenPeers() {
  std::vector<int> broken;
  if (!context_) return broken;
  {
    std::lock_guard lock(closeMu_);
    if (closed_) {  // this rank closed them: probing a closed pair would only fail
      for (int p = 0; p < size_; ++p) {
        if (p != rank_) broken.push_back(p);
      }
      return broken;
    }
  }
  char probe = 0;
  auto ub = context_->createUnboundBuffer(&probe, 1);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    try {
      ub->recv(p, kProbeSlot, 0, 1);
    } catch (const std::exception&) {
      broken.push_back(p);
    }
  }
  return broken;
}

// Closes every connection of the group (at once: a reset, not an orderly shutdown), so that every
// peer's watchdog sees it break now, whatever that peer is waiting for. The context itself stays
// (the watchdog uses it) until destruction.
void GlooTransport::closeConnections() {
  std::lock_guard lock(closeMu_);
  if (closed_ || !context_) return;
  closed_ = true;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    try {
      context_->getPair(p)->close();
    } catch (const std::exception& e) {
      logging::comm::debug("gloo: group '{}' rank {}: closing the connection to rank {}: {}", name_,
                           rank_, p, e.what());
    }
  }
}

// The watchdog (size > 1). Generation g posts sentinel receives (slot sentinelSlot(g), never sent
// to) from every peer whose connection is still healthy and waits on them. gloo fails them when one
// of those connections breaks; the watchdog then probes which ones broke and interrupts the running
// and later collectives, unless every broken peer left (closed its communicator normally: its last
// collectives may still be completing here) and no failure was published. Then the next generation
// watches the connections that remain.
void GlooTransport::watch() {
  // gloo treats the end of a wait's timeout as a failure of the collective (it closes every
  // connection), so the sentinel's wait is unbounded in practice and ended by abortWaitRecv().
  constexpr Milliseconds kForever = std::chrono::hours(24 * 365 * 10);
  const auto K = static_cast<size_t>(size_);
  std::vector<char> healthy(K, 1);
  healthy[static_cast<size_t>(rank_)] = 0;
  char sink = 0;
  for (uint64_t generation = 0;; ++generation) {
    auto sentinel = context_->createUnboundBuffer(&sink, 1);
    bool watching = false;
    std::vector<int> broken;  // posting failed: already broken
    for (int p = 0; p < size_; ++p) {
      if (!healthy[static_cast<size_t>(p)]) continue;
      try {
        sentinel->recv(p, sentinelSlot(generation), 0, 1);
        watching = true;
      } catch (const std::exception&) {
        broken.push_back(p);
      }
    }
    bool broke = !broken.empty();
    {
      std::unique_lock lock(watchMu_);
      if (watchStop_) return;
      if (!watching && !broke) {  // nothing left to watch
        watchCv_.wait(lock, [&] { return watchStop_; });
        return;
      }
      sentinel_ = sentinel.get();
    }
    if (!broke) {
      try {
        sentinel->waitRecv(kForever);  // false: aborted by the destructor
      } catch (const std::exception&) {
        broke = true;
      }
    }
    {
      std::lock_guard lock(watchMu_);
      sentinel_ = nullptr;
      if (watchStop_) return;
    }
    if (!broke) continue;
    connectionBroke_ = true;
    bool interrupt = readAbortRecord().has_value();
    for (int p : brokenPeers()) broken.push_back(p);
    for (int p : broken) {
      if (healthy[static_cast<size_t>(p)] && !hasLeft(p)) interrupt = true;
      healthy[static_cast<size_t>(p)] = 0;
    }
    {
      std::lock_guard lock(watchMu_);
      for (int p : broken) peerBroken_[static_cast<size_t>(p)] = 1;
    }
    if (interrupt && !interrupt_.triggered()) {
      logging::comm::debug("gloo: group '{}' rank {}: a connection broke; interrupting", name_,
                           rank_);
      interrupt_.trigger();
    }
  }
}

void GlooTransport::fail(QueuedCommunicator& comm, const Failed& f) {
  comm.abort(f.message);
  if (f.publish) {
    logging::comm::err("{}", f.message);
    try {
      if (store_->add("abort/n", 1) == 1) {
        store_->set("abort/msg", std::string(1, static_cast<char>(f.kind)) + f.message);
      } else {
        // Another rank found a failure first and is writing it. Peers read the record when they see
        // a connection break, so it must be there before this rank closes its connections: without
        // it a peer would name this rank as a dead one.
        store_->wait({"abort/msg"}, kRecordWait);
      }
    } catch (const std::exception& e) {
      logging::comm::warn("gloo: group '{}' rank {}: cannot publish the failure: {}", name_, rank_,
                          e.what());
    }
  }
  // Closing the connections makes every peer fail at once (with the failure published above)
  // instead of at its timeout: its watchdog sees the connection to this rank break.
  closeConnections();
  throwAs(f.kind, f.message);
}

void GlooTransport::execute(QueuedCommunicator& comm, const Collective& t) {
  const std::string& what = t.what;
  // A peer that failed published its failure before closing its connections, so a group none of
  // whose connections broke has no failure to read: only then is the store asked (with the job's
  // store over MPI, every question is a round trip to rank 0, milliseconds per collective).
  if (size_ > 1 && connectionBroke_) {
    if (auto rec = readAbortRecord()) {
      comm.abort(rec->message);
      closeConnections();
      throw CommAbortedError("group '{}' cannot be used after an earlier failure: {}", name_,
                             rec->message);
    }
  }
  try {
    const size_t inlineBytes = inlineInputBytes(t);
    if (size_ > 1) {
      const auto fps = exchangeFingerprints(t, t.deadline, what, inlineBytes);
      if (auto msg = comm.disagreement(
              [&](int p) -> const Fingerprint& { return fps[static_cast<size_t>(p)]; })) {
        throw Failed{Failure::Mismatch, *msg, true};
      }
    }
    if (inlineBytes > 0) {  // every input is here: a small all-reduce ends without a data phase
      std::vector<const void*> inputs(static_cast<size_t>(size_));
      for (int p = 0; p < size_; ++p) {
        inputs[static_cast<size_t>(p)] = p == rank_ ? t.input.data : inboxPayload(p);
      }
      const Fingerprint& f = t.fingerprint;
      gloo::reduceInputs(scratch_, f.type, f.op, inputs.data(), size_, t.output.data, f.count);
      return;
    }
    dataPhase(t, t.deadline, what);
  } catch (const Failed& f) {
    fail(comm, f);
  }
}

// Waits for the fingerprint receives posted to the peers without an error: marks the peers that
// arrived, records the connections that failed in `peerError`.
GlooTransport::ArrivalWait GlooTransport::awaitFingerprints(
    std::vector<std::unique_ptr<TrackedBuffer>>& recvs, std::vector<std::string>& peerError,
    std::vector<char>& arrived, Deadline deadline) {
  bool timedOut = false;
  bool interrupted = false;
  for (int p = 0; p < size_ && !interrupted; ++p) {
    const auto P = static_cast<size_t>(p);
    if (p == rank_ || !peerError[P].empty()) continue;
    try {
      // After a timeout gloo has closed every connection of the context: completed receives still
      // report success, pending ones throw (or are interrupted) at once.
      const Milliseconds wait = timedOut ? Milliseconds(1) : remainingUntil(deadline);
      bool done = (*recvs[P])->waitRecv(wait);
      // After our own timeout the watchdog interrupts too (gloo closed the connections): the first
      // wait consumed the abort, the second tells whether the fingerprint had arrived.
      if (!done && timedOut) done = (*recvs[P])->waitRecv(Milliseconds(1));
      if (done) {
        arrived[P] = 1;
      } else if (!timedOut) {
        interrupted = true;  // a connection of the group broke
      }
    } catch (const std::exception& e) {
      if (timedOut || looksLikeTimeout(e.what()) || Clock::now() >= deadline) {
        timedOut = true;
      } else {
        peerError[P] = e.what();
      }
    }
  }
  return {timedOut, interrupted};
}

size_t GlooTransport::inlineInputBytes(const Collective& t) const {
  const Fingerprint& f = t.fingerprint;
  if (size_ < 2 || f.kind != OpKind::AllReduce || f.op == CollectiveOperator::Local ||
      f.count == 0) {
    return 0;
  }
  const size_t bytes = f.count * dataTypeSize(f.type);
  return bytes <= inlineCapacity(size_) ? bytes : 0;
}

std::vector<Fingerprint> GlooTransport::exchangeFingerprints(const Collective& t, Deadline deadline,
                                                             const std::string& what,
                                                             size_t payloadBytes) {
  const int k = size_;
  const auto K = static_cast<size_t>(k);
  // Every rank's message (fingerprint, then a small all-reduce's input) in one scratch block: this
  // rank's own at rank_ * inboxStride_. Every receive takes a whole stride, the most any peer
  // sends.
  char* inbox = scratch_.get(Scratch::kInbox, K * inboxStride_);
  inbox_ = inbox;
  char* own = inbox + static_cast<size_t>(rank_) * inboxStride_;
  const WireFingerprint mine = encode(t.fingerprint);
  std::memcpy(own, &mine, sizeof(mine));
  if (payloadBytes > 0) std::memcpy(own + sizeof(mine), t.input.data, payloadBytes);
  std::vector<std::string> peerError(K);
  std::vector<char> arrived(K, 0);
  arrived[static_cast<size_t>(rank_)] = 1;
  const uint64_t slot = fingerprintSlot(t.fingerprint.seq);
  // Registered with the interrupt, like the data phase's buffers: a wait ends at once when a
  // connection of the group breaks, even one this wait does not use.
  const Exchange x{context_, t.fingerprint.seq, deadline, &scratch_, &interrupt_};
  std::vector<std::unique_ptr<TrackedBuffer>> recvs(K);
  TrackedBuffer send(x, own, sizeof(mine) + payloadBytes);
  size_t sends = 0;
  for (int p = 0; p < k; ++p) {
    if (p == rank_) continue;
    const auto P = static_cast<size_t>(p);
    recvs[P] = std::make_unique<TrackedBuffer>(x, inbox + P * inboxStride_, inboxStride_);
    try {
      (*recvs[P])->recv(p, slot);
      send->send(p, slot);
      ++sends;
    } catch (const std::exception& e) {
      peerError[P] = e.what();
    }
  }
  const auto [timedOut, interrupted] = awaitFingerprints(recvs, peerError, arrived, deadline);
  if (interrupted) {
    for (int p : brokenPeers()) {
      auto& e = peerError[static_cast<size_t>(p)];
      if (e.empty()) e = "the connection broke";
    }
  }
  const bool anyPeerError =
      std::any_of(peerError.begin(), peerError.end(), [](const auto& e) { return !e.empty(); });
  if (anyPeerError) peerErrors(peerError, arrived, deadline, t, what);
  if (interrupted) {  // nothing broken to name: a failure published elsewhere, if any
    throw classifyDataFailure("the collective was interrupted", deadline, t, what);
  }
  if (timedOut) {
    std::vector<int> missing;
    for (int p = 0; p < k; ++p) {
      if (!arrived[static_cast<size_t>(p)]) missing.push_back(p);
    }
    throw Failed{Failure::Timeout, timeoutMessage(what, name_, size_, t.timeout, missing), true};
  }
  // Every peer arrived, so every peer posted its receive: our sends complete (unless a connection
  // breaks now).
  try {
    send.waitSends(sends);
  } catch (const std::exception& e) {
    throw classifyDataFailure(e.what(), deadline, t, what);
  }
  std::vector<Fingerprint> fps(K);
  for (int p = 0; p < k; ++p) {
    const auto P = static_cast<size_t>(p);
    if (p == rank_) {
      fps[P] = t.fingerprint;
    } else {
      WireFingerprint w;
      std::memcpy(&w, inbox + P * inboxStride_, sizeof(w));
      fps[P] = decode(w);
    }
  }
  return fps;
}

void GlooTransport::peerErrors(const std::vector<std::string>& peerError,
                               const std::vector<char>& arrived, Deadline deadline,
                               const Collective& t, const std::string& what) {
  std::vector<int> errored;
  for (int p = 0; p < size_; ++p) {
    if (!peerError[static_cast<size_t>(p)].empty()) errored.push_back(p);
  }
  // A peer that failed first published why before closing its connections (or just after, when
  // gloo closed them on a timeout): report its failure.
  const auto graceEnd = Clock::now() + kGrace;
  std::vector<int> lost;
  for (;;) {
    if (auto rec = readAbortRecord()) throw Failed{rec->kind, rec->message, false};
    lost.clear();
    for (int p : errored) {
      if (!hasLeft(p)) lost.push_back(p);
    }
    if (lost.empty() || Clock::now() >= graceEnd) break;
    std::this_thread::sleep_for(Milliseconds(10));
  }
  if (!lost.empty()) {
    if (auto rec = awaitAbortRecord(Milliseconds(0))) throw Failed{rec->kind, rec->message, false};
    throw Failed{Failure::Lost, lostMessage(what, lost, peerError[static_cast<size_t>(lost[0])]),
                 true};
  }
  // Every broken connection belongs to a rank that closed its communicator: it will never arrive.
  // As for any missing rank, the collective fails at its timeout.
  std::this_thread::sleep_until(deadline);
  std::vector<int> missing;
  for (int p = 0; p < size_; ++p) {
    if (!arrived[static_cast<size_t>(p)]) missing.push_back(p);
  }
  throw Failed{Failure::Timeout,
               timeoutMessage(what, name_, size_, t.timeout, missing) +
                   format(" ({} closed {} communicator)", rankList(errored),
                          errored.size() == 1 ? "its" : "their"),
               true};
}

void GlooTransport::dataPhase(const Collective& t, Deadline deadline, const std::string& what) {
  const Fingerprint& f = t.fingerprint;
  const Exchange x{context_, f.seq, deadline, &scratch_, &interrupt_};
  try {
    switch (f.kind) {
      case OpKind::Barrier: return;  // the fingerprint exchange was the barrier
      case OpKind::AllReduce:
        gloo::allReduce(x, f.type, f.op, t.input.data, t.output.data, f.count);
        return;
      case OpKind::ReduceScatter:
        gloo::reduceScatter(x, f.type, f.op, t.input.data, t.output.data, f.count);
        return;
      case OpKind::AllGather:
        gloo::allGather(x, dataTypeSize(f.type), t.input.data, t.output.data, f.count);
        return;
      case OpKind::Broadcast:
        gloo::broadcast(x, dataTypeSize(f.type), f.root, t.input.data, t.output.data, f.count);
        return;
    }
  } catch (const error&) {
    throw;  // xtrain's own (internal) errors
  } catch (const std::exception& e) {
    throw classifyDataFailure(e.what(), deadline, t, what);
  }
}

Failed GlooTransport::classifyDataFailure(const std::string& glooMessage, Deadline deadline,
                                          const Collective& t, const std::string& what) {
  if (looksLikeTimeout(glooMessage) || Clock::now() >= deadline) {
    return Failed{Failure::Timeout,
                  format("{} in group '{}' (size {}) timed out after {} ms while exchanging data "
                         "(every rank had arrived: a peer is stuck or too slow): {}",
                         what, name_, size_, t.timeout.count(), glooMessage),
                  true};
  }
  if (auto rec = awaitAbortRecord(kGrace)) return Failed{rec->kind, rec->message, false};
  const auto broken = brokenPeers();
  // A peer that failed publishes before it closes its connections: if the probe saw them closed,
  // the record is there now.
  if (auto rec = readAbortRecord()) return Failed{rec->kind, rec->message, false};
  if (!broken.empty()) return Failed{Failure::Lost, lostMessage(what, broken, glooMessage), true};
  return Failed{Failure::Other,
                format("{} in group '{}' (size {}) failed: {}", what, name_, size_, glooMessage),
                true};
}

}  // namespace

std::shared_ptr<Communicator> makeCommunicator(std::shared_ptr<comm::Store> baseStore,
                                               std::string prefix,
                                               std::shared_ptr<comm::Store> store, std::string name,
                                               int rank, int size, Milliseconds timeout,
                                               std::shared_ptr<Device> device,
                                               std::shared_ptr<::gloo::Context> context) {
  // A blocking collective runs on the calling thread when the executor is idle: gloo's unbound
  // buffers, the Interrupt and the scratch need no particular thread (the executor still runs one
  // collective at a time), and the hand-offs to the executor and back were two of the few thread
  // wake-ups a small collective costs.
  GroupInfo info{kBackendName, name, rank, size, timeout, true};
  return std::make_shared<QueuedCommunicator>(
      std::move(info), std::make_unique<GlooTransport>(
                           std::move(baseStore), std::move(prefix), std::move(store),
                           std::move(name), rank, size, std::move(device), std::move(context)));
}

std::shared_ptr<Communicator> GlooTransport::split(QueuedCommunicator& comm,
                                                   const SplitRequest& r) {
  return createGroup(baseStore_, prefix_ + "/split/" + r.identity, r.childName, r.newRank,
                     static_cast<int>(r.ranks.size()), comm.timeout(), device_, r.what);
}

}  // namespace xtrain::comm::gloo
