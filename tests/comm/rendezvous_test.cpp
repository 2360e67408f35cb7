// Rendezvous and ThreadBarrier on their own: rounds of slots, the last party's step, bounded waits
// naming the missing parties, refused slots, double arrivals, aborts, and reset.
#include "comm/rendezvous.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "xtrain/format.hpp"

namespace xtrain::comm {
namespace {

using namespace std::chrono_literals;
using Kind = RendezvousFailure::Kind;

RendezvousWait bounded(Milliseconds timeout) {
  RendezvousWait w;
  w.timeout = timeout;
  w.twice = [](int p) { return format("party {} twice", p); };
  w.timedOut = [](const std::vector<int>& missing) { return format("missing {}", missing); };
  return w;
}

TEST(Rendezvous, EveryPartySeesEveryOnesSlotUntilTheDeparture) {
  constexpr int kParties = 4;
  Rendezvous<int> r(kParties);
  auto party = [&](int p) {
    int total = 0;
    for (int round = 0; round < 100; ++round) {
      EXPECT_FALSE(r.arrive(p, p + round, bounded(10s)));
      for (int q = 0; q < kParties; ++q) total += r.slot(q);
      EXPECT_FALSE(r.wait(p, bounded(10s)));
    }
    return total;
  };
  std::vector<std::future<int>> results;
  for (int p = 0; p < kParties; ++p) results.push_back(std::async(std::launch::async, party, p));
  // Per round: 0 + 1 + 2 + 3 + 4 * round.
  const int want = 100 * 6 + 4 * (99 * 100 / 2);
  for (auto& f : results) EXPECT_EQ(f.get(), want);
}

TEST(Rendezvous, TheLastPartysStepRunsBeforeAnyoneIsReleased) {
  Rendezvous<int> r(3);
  std::atomic<int> steps{0};
  std::atomic<bool> early{false};
  auto party = [&](int p) {
    RendezvousWait w = bounded(50ms);  // shorter than the step: the step is not bounded by it
    w.last = [&] {
      std::this_thread::sleep_for(200ms);
      ++steps;
    };
    EXPECT_FALSE(r.arrive(p, p, w));
    if (steps.load() != 1) early = true;
  };
  auto a = std::async(std::launch::async, party, 0);
  auto b = std::async(std::launch::async, party, 1);
  party(2);
  a.get();
  b.get();
  EXPECT_EQ(steps.load(), 1);
  EXPECT_FALSE(early.load());
}

TEST(Rendezvous, APartyThatDoesNotComeIsNamedAndLaterArrivalsFailAtOnce) {
  Rendezvous<int> r(3);
  auto waiter = std::async(std::launch::async, [&] { return r.arrive(0, 0, bounded(10s)); });
  std::this_thread::sleep_for(50ms);
  const auto start = std::chrono::steady_clock::now();
  const auto failed = r.arrive(2, 2, bounded(100ms));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->kind, Kind::Timeout);
  EXPECT_EQ(failed->message, "missing [1]");
  EXPECT_FALSE(failed->earlier);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // The other waiter is released by the same failure.
  const auto other = waiter.get();
  ASSERT_TRUE(other);
  EXPECT_EQ(other->message, "missing [1]");
  EXPECT_FALSE(other->earlier);
  const auto late = r.arrive(1, 1, bounded(10s));
  ASSERT_TRUE(late);
  EXPECT_TRUE(late->earlier);
  EXPECT_EQ(late->message, "missing [1]");
}

TEST(Rendezvous, ASlotTheCheckRefusesFailsTheRound) {
  Rendezvous<int> r(2);
  const Rendezvous<int>::Check same = [](int p, const int& mine,
                                         const int& first) -> std::optional<std::string> {
    if (mine == first) return std::nullopt;
    return format("party {} published {}, the first {}", p, mine, first);
  };
  auto first = std::async(std::launch::async, [&] { return r.arrive(0, 7, bounded(10s), same); });
  std::this_thread::sleep_for(50ms);
  const auto refused = r.arrive(1, 8, bounded(10s), same);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, Kind::Mismatch);
  EXPECT_EQ(refused->message, "party 1 published 8, the first 7");
  const auto released = first.get();
  ASSERT_TRUE(released);
  EXPECT_EQ(released->kind, Kind::Mismatch);
}

TEST(Rendezvous, ArrivingTwiceAtOneBarrierIsAFailure) {
  Rendezvous<int> r(2);
  auto waiter = std::async(std::launch::async, [&] { return r.arrive(0, 0, bounded(10s)); });
  std::this_thread::sleep_for(50ms);
  const auto twice = r.arrive(0, 0, bounded(10s));
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->kind, Kind::Other);
  EXPECT_EQ(twice->message, "party 0 twice");
  ASSERT_TRUE(waiter.get());
}

TEST(Rendezvous, AnAbortReleasesTheWaitersAndTheFirstFailureWins) {
  Rendezvous<int> r(2);
  auto waiter = std::async(std::launch::async, [&] { return r.arrive(0, 0, bounded(60s)); });
  std::this_thread::sleep_for(50ms);
  const auto start = std::chrono::steady_clock::now();
  r.abort(Kind::Other, "party 1 failed");
  r.abort(Kind::Timeout, "a later failure");
  const auto failed = waiter.get();
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->kind, Kind::Other);
  EXPECT_EQ(failed->message, "party 1 failed");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ASSERT_TRUE(r.failure());
  EXPECT_TRUE(r.failure()->earlier);
}

TEST(Rendezvous, AThrowingStepFailsTheRoundAndPropagates) {
  Rendezvous<int> r(2);
  auto waiter = std::async(std::launch::async, [&] { return r.arrive(0, 0, bounded(60s)); });
  std::this_thread::sleep_for(50ms);
  RendezvousWait w = bounded(60s);
  w.last = [] { throw std::runtime_error("the exchange broke"); };
  EXPECT_THROW((void)r.arrive(1, 1, w), std::runtime_error);
  const auto failed = waiter.get();
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->message, "the exchange broke");
}

TEST(Rendezvous, ResetForgetsTheFailureAndThePartialRound) {
  Rendezvous<int> r(2);
  EXPECT_TRUE(r.arrive(0, 0, bounded(20ms)));  // party 1 never comes
  r.reset();
  EXPECT_FALSE(r.failure());
  auto a = std::async(std::launch::async, [&] { return r.arrive(0, 10, bounded(10s)); });
  EXPECT_FALSE(r.arrive(1, 11, bounded(10s)));
  EXPECT_FALSE(a.get());
  EXPECT_EQ(r.slot(0) + r.slot(1), 21);
}

TEST(Rendezvous, OnePartyNeverWaits) {
  Rendezvous<int> r(1);
  bool stepped = false;
  RendezvousWait w = bounded(1ms);
  w.last = [&] { stepped = true; };
  EXPECT_FALSE(r.arrive(0, 5, w));
  EXPECT_TRUE(stepped);
  EXPECT_EQ(r.slot(0), 5);
  EXPECT_FALSE(r.wait(0, bounded(1ms)));
}

}  // namespace
}  // namespace xtrain::comm
