// QueuedCommunicator over a fake transport: sequence numbers, issue order, the collective's timeout
// and deadline, the fingerprint agreement, the first-failure abort, split bookkeeping, inline runs
// and the drain at destruction belong to the base, whatever the backend does.
#include "comm/queued_communicator.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "testing/error_testing.hpp"

namespace xtrain::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// What the fake saw, shared with the test (the transport itself belongs to the communicator).
struct Log {
  std::mutex mu;
  std::vector<Collective> executed;
  std::vector<std::thread::id> threads;
  std::vector<Clock::time_point> started;
  std::vector<SplitRequest> splits;
  std::atomic<bool> destroyed{false};
  std::atomic<int> running{0};
};

// A transport whose behaviour per collective the test chooses; by default it succeeds at once.
class FakeTransport : public Transport {
 public:
  using Behaviour = std::function<void(QueuedCommunicator&, const Collective&)>;
  FakeTransport(std::shared_ptr<Log> log, Behaviour behaviour)
      : log_(std::move(log)), behaviour_(std::move(behaviour)) {}
  ~FakeTransport() override {
    EXPECT_EQ(log_->running.load(), 0) << "destroyed while a collective runs";
    log_->destroyed = true;
  }

  void validate(const QueuedCommunicator& comm, const Collective& c) const override {
    if (c.fingerprint.count == 13) throw error("group '{}': 13 elements are unlucky", comm.name());
  }

  void execute(QueuedCommunicator& comm, const Collective& c) override {
    log_->running.fetch_add(1);
    {
      std::lock_guard lock(log_->mu);
      log_->executed.push_back(c);
      log_->threads.push_back(std::this_thread::get_id());
      log_->started.push_back(Clock::now());
    }
    struct Done {
      Log& log;
      ~Done() { log.running.fetch_sub(1); }
    } done{*log_};
    if (behaviour_) behaviour_(comm, c);
  }

  std::shared_ptr<Communicator> split(QueuedCommunicator& comm, const SplitRequest& r) override {
    {
      std::lock_guard lock(log_->mu);
      log_->splits.push_back(r);
    }
    return std::make_shared<QueuedCommunicator>(
        GroupInfo{comm.backendName(), r.childName, r.newRank, static_cast<int>(r.ranks.size()),
                  comm.timeout(), false},
        std::make_unique<FakeTransport>(log_, nullptr));
  }

 private:
  std::shared_ptr<Log> log_;
  Behaviour behaviour_;
};

struct Fixture {
  explicit Fixture(FakeTransport::Behaviour behaviour = nullptr, int rank = 0, int size = 2,
                   bool inlineSync = false, Milliseconds timeout = 5s)
      : log(std::make_shared<Log>()),
        comm(std::make_shared<QueuedCommunicator>(
            GroupInfo{"fake", "g", rank, size, timeout, inlineSync},
            std::make_unique<FakeTransport>(log, std::move(behaviour)))) {}
  std::shared_ptr<Log> log;
  std::shared_ptr<QueuedCommunicator> comm;
};

TEST(QueuedCommunicator, NumbersCollectivesInIssueOrderAndDescribesThem) {
  Fixture f;
  float a[4] = {};
  float b[2] = {};
  AllReduceOptions named;
  named.debugName = "grad/w";
  auto w0 = f.comm->allReduce(viewOf(a, 4, DataType::FLOAT), named);
  auto w1 = f.comm->reduceScatter(viewOf(a, 4, DataType::FLOAT), viewOf(b, 2, DataType::FLOAT));
  auto w2 = f.comm->allGather(viewOf(b, 2, DataType::FLOAT), viewOf(a, 4, DataType::FLOAT));
  BroadcastOptions fromOne;
  fromOne.root = 1;
  auto w3 = f.comm->broadcast(viewOf(a, 4, DataType::FLOAT), fromOne);
  f.comm->barrierSync();
  for (auto& w : {w0, w1, w2, w3}) EXPECT_TRUE(w->isSuccess());
  std::lock_guard lock(f.log->mu);
  ASSERT_EQ(f.log->executed.size(), 5u);
  const OpKind kinds[] = {OpKind::AllReduce, OpKind::ReduceScatter, OpKind::AllGather,
                          OpKind::Broadcast, OpKind::Barrier};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(f.log->executed[i].fingerprint.seq, i);
    EXPECT_EQ(f.log->executed[i].fingerprint.kind, kinds[i]);
  }
  EXPECT_EQ(f.log->executed[0].what, "allReduce seq 0 (count=4, type=FLOAT, op=Add) 'grad/w'");
  EXPECT_EQ(f.log->executed[1].fingerprint.count, 4u);  // reduceScatter: the full count
  EXPECT_EQ(f.log->executed[2].fingerprint.count, 4u);  // allGather: the full count
  EXPECT_EQ(f.log->executed[3].fingerprint.root, 1);
  EXPECT_EQ(f.log->executed[4].what, "barrier seq 4");
}

TEST(QueuedCommunicator, RejectedCallsTakeNoSequenceNumber) {
  Fixture f;
  float a[13] = {};
  float b[2] = {};
  testing::expectError(
      [&] {
        (void)f.comm->allReduce(viewOf(a, 2, DataType::FLOAT), viewOf(b, 1, DataType::FLOAT));
      },
      {"input has 2 elements but output has 1"});
  testing::expectError([&] { (void)f.comm->allReduce(viewOf(a, 13, DataType::FLOAT)); },
                       {"13 elements are unlucky"});  // the transport's validate()
  f.comm->allReduceSync(viewOf(a, 2, DataType::FLOAT));
  std::lock_guard lock(f.log->mu);
  ASSERT_EQ(f.log->executed.size(), 1u);
  EXPECT_EQ(f.log->executed[0].fingerprint.seq, 0u);
}

TEST(QueuedCommunicator, RunsOneCollectiveAtATimeOnItsOwnThreadUnlessInlineIsAllowed) {
  std::atomic<bool> overlapped{false};
  std::atomic<int> inside{0};
  auto slow = [&](QueuedCommunicator&, const Collective&) {
    if (inside.fetch_add(1) != 0) overlapped = true;
    std::this_thread::sleep_for(2ms);
    inside.fetch_sub(1);
  };
  for (bool inlineSync : {false, true}) {
    Fixture f(slow, 0, 2, inlineSync);
    f.comm->barrierSync();  // nothing queued: inline when allowed
    std::vector<std::shared_ptr<Work>> works;
    for (int i = 0; i < 5; ++i) works.push_back(f.comm->barrier());
    for (auto& w : works) w->wait();
    std::lock_guard lock(f.log->mu);
    ASSERT_EQ(f.log->threads.size(), 6u);
    EXPECT_EQ(f.log->threads[0] == std::this_thread::get_id(), inlineSync);
    for (size_t i = 1; i < 6; ++i) EXPECT_NE(f.log->threads[i], std::this_thread::get_id());
  }
  EXPECT_FALSE(overlapped);
}

TEST(QueuedCommunicator, DeadlineIsTheCollectivesTimeoutFromItsStart) {
  Fixture f(nullptr, 0, 2, false, 4s);
  BarrierOptions quick;
  quick.timeout = 250ms;
  f.comm->barrierSync(quick);
  f.comm->barrierSync();
  std::lock_guard lock(f.log->mu);
  ASSERT_EQ(f.log->executed.size(), 2u);
  EXPECT_EQ(f.log->executed[0].timeout, 250ms);
  EXPECT_EQ(f.log->executed[1].timeout, 4s);  // the communicator's default
  for (size_t i = 0; i < 2; ++i) {
    const auto slack = f.log->executed[i].deadline - f.log->started[i] - f.log->executed[i].timeout;
    EXPECT_LE(slack, 0ms);
    EXPECT_GT(slack, -100ms);
  }
}

// A fake that "exchanges" fingerprints with a scripted rank 1 and fails through the base.
FakeTransport::Behaviour peerIssues(std::function<Fingerprint(const Fingerprint&)> peer) {
  return [peer](QueuedCommunicator& comm, const Collective& c) {
    const Fingerprint mine = c.fingerprint;
    const Fingerprint theirs = peer(mine);
    if (auto msg = comm.disagreement(
            [&](int p) -> const Fingerprint& { return p == 0 ? mine : theirs; })) {
      comm.fail(FailureKind::Mismatch, *msg);
    }
  };
}

TEST(QueuedCommunicator, MismatchIsDetectedAndAbortsWithTheFirstFailure) {
  Fixture f(peerIssues([](const Fingerprint& mine) {
    Fingerprint other = mine;
    if (mine.seq == 1) other.count = 7;
    return other;
  }));
  float a[4] = {};
  f.comm->allReduceSync(viewOf(a, 4, DataType::FLOAT));  // seq 0 agrees
  try {
    f.comm->allReduceSync(viewOf(a, 4, DataType::FLOAT));
    ADD_FAILURE() << "no mismatch";
  } catch (const CommMismatchError& e) {
    EXPECT_STREQ(e.what(),
                 "collective mismatch in group 'g' (size 2): rank 0 called allReduce seq 1 "
                 "(count=4, type=FLOAT, op=Add) but rank 1 called allReduce seq 1 (count=7, "
                 "type=FLOAT, op=Add)");
  }
  EXPECT_TRUE(f.comm->aborted());
  // Later collectives and splits fail at once with the first failure; the transport is not asked.
  for (int i = 0; i < 2; ++i) {
    try {
      f.comm->barrierSync();
      ADD_FAILURE() << "no abort";
    } catch (const CommAbortedError& e) {
      EXPECT_CONTAINS(e.what(),
                      "group 'g' cannot be used after an earlier failure: collective "
                      "mismatch in group 'g'");
      EXPECT_EQ(std::string(e.what()).find("earlier failure: group"), std::string::npos)
          << "nested: " << e.what();
    }
  }
  EXPECT_THROW((void)f.comm->split({0, 1}, "sub"), CommAbortedError);
  std::lock_guard lock(f.log->mu);
  EXPECT_EQ(f.log->executed.size(), 2u);
  EXPECT_TRUE(f.log->splits.empty());
}

TEST(QueuedCommunicator, ErrorsEscapingTheTransportAbortToo) {
  {  // a timeout the transport throws itself
    Fixture f([](QueuedCommunicator& comm, const Collective& c) {
      std::this_thread::sleep_until(c.deadline);
      throw CommTimeoutError(timeoutMessage(c.what, comm.name(), comm.size(), c.timeout, {1}));
    });
    BarrierOptions quick;
    quick.timeout = 50ms;
    const auto t0 = Clock::now();
    try {
      f.comm->barrierSync(quick);
      ADD_FAILURE() << "no timeout";
    } catch (const CommTimeoutError& e) {
      EXPECT_STREQ(e.what(),
                   "barrier seq 0 in group 'g' (size 2) timed out after 50 ms: ranks [1] did not "
                   "arrive");
    }
    EXPECT_GE(Clock::now() - t0, 50ms);
    try {
      f.comm->barrierSync();
      ADD_FAILURE() << "no abort";
    } catch (const CommAbortedError& e) {
      EXPECT_CONTAINS(e.what(), "earlier failure: barrier seq 0 in group 'g' (size 2) timed out");
    }
  }
  {  // any other error part-way
    Fixture f([](QueuedCommunicator&, const Collective&) { throw std::runtime_error("wire cut"); });
    EXPECT_THROW(f.comm->barrierSync(), std::runtime_error);
    try {
      f.comm->barrierSync();
      ADD_FAILURE() << "no abort";
    } catch (const CommAbortedError& e) {
      EXPECT_CONTAINS(e.what(), "earlier failure: barrier seq 0 in group 'g' failed: wire cut");
    }
  }
  {  // CommAbortedError means the group failed before: nothing new to record
    Fixture f([](QueuedCommunicator&, const Collective&) {
      throw CommAbortedError("group 'g' cannot be used after an earlier failure: elsewhere");
    });
    EXPECT_THROW(f.comm->barrierSync(), CommAbortedError);
    EXPECT_FALSE(f.comm->aborted());
  }
}

TEST(QueuedCommunicator, FailRecordsOnlyTheFirstFailureAndThrowsByKind) {
  Fixture f;
  EXPECT_THROW(f.comm->fail(FailureKind::Timeout, "first"), CommTimeoutError);
  EXPECT_THROW(f.comm->fail(FailureKind::PeerLost, "second"), CommPeerLostError);
  EXPECT_THROW(f.comm->fail(FailureKind::Other, "third"), runtime_error);
  try {
    f.comm->fail(FailureKind::Aborted, "fourth");
  } catch (const CommAbortedError& e) {
    EXPECT_STREQ(e.what(), "group 'g' cannot be used after an earlier failure: fourth");
  }
  try {
    f.comm->throwIfAborted();
    ADD_FAILURE() << "not aborted";
  } catch (const CommAbortedError& e) {
    EXPECT_STREQ(e.what(), "group 'g' cannot be used after an earlier failure: first");
  }
}

TEST(QueuedCommunicator, SplitGivesTheTransportAnIdentityPerCall) {
  Fixture f(nullptr, 1, 3);
  auto a = f.comm->split({2, 1}, "pair");
  auto b = f.comm->split({2, 1}, "pair");
  auto c = f.comm->split({1, 0}, "pair");
  EXPECT_EQ(a->rank(), 1);
  EXPECT_EQ(a->size(), 2);
  EXPECT_EQ(a->name(), "g/pair");
  EXPECT_EQ(c->rank(), 0);
  std::lock_guard lock(f.log->mu);
  ASSERT_EQ(f.log->splits.size(), 3u);
  EXPECT_EQ(f.log->splits[0].identity, "pair|2,1,|0");
  EXPECT_EQ(f.log->splits[1].identity, "pair|2,1,|1");
  EXPECT_EQ(f.log->splits[2].identity, "pair|1,0,|0");
  EXPECT_EQ(f.log->splits[0].what, "split of group 'g' into 'pair' with parent ranks [2,1]");
  EXPECT_EQ(f.log->splits[0].childName, "g/pair");
}

TEST(QueuedCommunicator, DestructionRunsEveryIssuedCollectiveBeforeTheTransportGoes) {
  auto log = std::make_shared<Log>();
  std::atomic<int> ran{0};
  {
    Fixture f([&](QueuedCommunicator&, const Collective&) {
      std::this_thread::sleep_for(5ms);
      ran.fetch_add(1);
    });
    log = f.log;
    for (int i = 0; i < 4; ++i) (void)f.comm->barrier();
  }
  EXPECT_EQ(ran.load(), 4);
  EXPECT_TRUE(log->destroyed);
}

}  // namespace
}  // namespace xtrain::comm
