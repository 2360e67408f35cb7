// xrun --max-restarts: which failures start the job again, and how many may.
//
// A restart starts every instance again after a failed attempt has ended (every process gone).
// Only an instance failure is restarted: not a start failure (126, 127: the program would not start
// the next time either), not an instance's exit code 2 (xtrain's usage error: a bad option or input
// fails the same way again), not --timeout, not a signal xrun received (the user or the scheduler
// ends the job), not an attempt during which xrun forwarded SIGUSR1/SIGUSR2 (Slurm's warning before
// preemption: the instances may exit non-zero because of it, and the job should end so that the
// scheduler can requeue it, rather than start again on an allocation about to go).
//
// The budget: a failure at time t may be restarted when fewer than N restarts were made in the
// window (t - W, t] (W = --restart-window; without it, the whole job). So the job ends at the
// (N+1)-th failure within W seconds, and a job that fails now and then, less often than that, goes
// on for ever.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/local_engine.hpp"
#include "launcher/options.hpp"
#include "launcher/topology.hpp"

namespace xtrain::launcher {

inline constexpr int kNotRestartedUsageCode = 2;

class RestartBudget {
 public:
  RestartBudget(int maxRestarts, std::optional<double> windowSeconds)
      : max_(maxRestarts), window_(windowSeconds) {}

  // A failure at `now` (seconds, any monotonic origin): the restart's number within the budget
  // (1..N) when another attempt may start (the restart is then counted), nullopt when the budget is
  // spent.
  std::optional<int> onFailure(double now);

  // Restarts counted against the budget at `now`.
  int counted(double now) const;

  int maxRestarts() const { return max_; }
  const std::optional<double>& windowSeconds() const { return window_; }

 private:
  int max_;
  std::optional<double> window_;
  std::vector<double> restarts_;  // when each restart was granted
};

// Shrinking (--min-instances M). An instance slot is a place of the original layout: its index in
// -n, its host and its IPUs. An attempt's failure blames slots (blameFailure):
//   - a host lost: mpirun lost contact with a host's daemon, or every instance of one host (of a
//   job
//     on several hosts) did not arrive at a collective that the others waited for: all of that
//     host's slots, dropped at once at the next restart (starting on an unreachable host again
//     would only wait for the network's timeouts);
//   - instances that did not arrive at a collective (a hang, a stopped process): those slots;
//   - else the instance xrun or the engine names as the first to fail.
// Slots "keep failing" when the same slots were blamed in kFailuresToDropSlot failed attempts in a
// row; an attempt whose failure blames nobody (mpirun does not always say) is left out of the
// count, and does not break the row. Such slots are dropped at the next restart; the remaining
// slots keep their hosts and IPUs and are renumbered in slot order. With --keep-global-batch
// accumulation or micro-batch the instance count must divide the original -n (so that the
// accumulation factor or micro-batch can grow by a whole factor), so more slots are dropped if
// needed: first those on the failing slots' hosts, then the highest-numbered. A shrink that would
// leave fewer than M instances is not made: every current slot starts again (as without
// --min-instances), within the restart budget.
inline constexpr int kFailuresToDropSlot = 2;

enum class BlameKind { None, FirstToFail, DidNotArrive, HostLost };

struct FailureBlame {
  BlameKind kind = BlameKind::None;
  std::vector<int> slots;  // ascending, of the original layout
  std::string host;        // HostLost: which
  std::string clue;        // HostLost: how xrun knows ("mpirun lost contact with it", ...)
};

// Whom the failure of an attempt running `current` (slots of `full`; instance i is current[i])
// blames.
FailureBlame blameFailure(const JobOutcome& outcome, const Topology& full,
                          const std::vector<int>& current);

// "slot 1 (localhost, IPUs 1)", "slots 2, 3 (h2, IPUs 0, 1)".
std::string describeSlots(const Topology& full, const std::vector<int>& slots);

class SlotFailures {
 public:
  // Records the slots blamed for an attempt's failure (empty: none named). Returns the slots that
  // now keep failing, empty if none.
  std::vector<int> onFailure(const std::vector<int>& slots);
  // Forgets the row (after a shrink).
  void reset() { row_ = 0; }

 private:
  std::vector<int> last_;
  int row_ = 0;
};

struct ShrinkPlan {
  std::vector<int> keep;         // slots of the next attempt, ascending
  std::vector<int> alsoDropped;  // dropped besides the failing slots (for a divisor of -n)
  bool belowMinimum = false;     // the shrink would leave fewer than M: keep is every current slot
};

// The slots of the next attempt when `failing` (ascending, not empty) keep failing, from `current`
// (ascending) of `full` (the original layout).
ShrinkPlan planShrink(const Topology& full, const std::vector<int>& current,
                      const std::vector<int>& failing, int minInstances, KeepGlobalBatch keep);

// "1, 3"
std::string listSlots(const std::vector<int>& slots);

// Whether an attempt that ended so may be restarted (see above); when not, `why` says why.
bool isRestartable(const JobOutcome& outcome, std::string& why);

// The rendezvous directory of attempt `restartCount`: `base` for the first, `base`-restart<k>
// after (fresh for each attempt, so no key of an earlier attempt is ever read). Empty stays empty.
std::string attemptRendezvousDir(const std::string& base, int restartCount);

// The prefix of the shared-memory segments the shm backend creates for job `jobId`
// ("xtrain-<jobId, made safe>-", without the leading '/'), as listed in /dev/shm.
std::string shmSegmentPrefix(const std::string& jobId);

// Unlinks every segment of `jobId` left in `shmDir` (/dev/shm): those of instances killed between
// creating a segment and the others opening it. Call only when no process of the job runs.
// Returns how many were removed.
int removeJobSegments(const std::string& jobId, const std::string& shmDir = "/dev/shm");

}  // namespace xtrain::launcher
