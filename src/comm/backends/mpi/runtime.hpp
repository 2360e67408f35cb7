// The process-wide MPI state of the mpi backend: lazy initialisation, finalisation, the lock that
// serialises MPI calls when the library lacks MPI_THREAD_MULTIPLE, and bounded polling of requests.
// Internal to src/comm/backends/mpi/ (the only place that includes mpi.h).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "comm/types.hpp"

#pragma GCC visibility push(default)

namespace xtrain::comm::mpi {

using Clock = std::chrono::steady_clock;

// Initialises MPI once per process (MPI_Init_thread asking for MPI_THREAD_MULTIPLE) unless the
// application did; when we initialised it, registers an exit handler (on_exit, which sees the exit
// status) that runs MPI_Finalize only on a clean exit: a process exiting with a non-zero status, or
// after a collective was poisoned, _exits at once with that status (stdio and the log flushed)
// instead, so mpirun sees the failure and ends the job whatever the peers do; exit code 75 (a
// preemption, dist::kPreemptedExitCode) finalises, bounded by the collective timeout. Throws
// xtrain::error when MPI was already finalised.
void ensureInitialized();

// True once MPI_Finalize started (or ran): communicators and stores then skip their MPI calls.
bool finalizing();

// Every MPI call goes through MpiLock: a no-op with MPI_THREAD_MULTIPLE, else one process-wide
// mutex (MPI_THREAD_SERIALIZED). Never held across a wait: polling loops lock around each MPI_Test.
class MpiLock {
 public:
  MpiLock();
  ~MpiLock();
  MpiLock(const MpiLock&) = delete;
  MpiLock& operator=(const MpiLock&) = delete;

 private:
  bool locked_;
};

// Throws xtrain::error "<what>: <MPI error string>" when rc is not MPI_SUCCESS.
void check(int rc, const std::string& what);

// Marks that a request could not be completed or cancelled (a timed-out non-blocking collective):
// MPI_Finalize could then hang, so the exit handler skips it and mpirun ends the job.
void markPoisoned(const std::string& why);
bool poisoned();

// Called from MPI_Finalize (through an attribute of MPI_COMM_SELF) before MPI goes away, in the
// reverse order of registration. Used by the store service to stop its thread.
void atFinalize(std::function<void()> fn);

// Pacing of a polling loop: spins with yields; unless `eager`, sleeps after 200 us with a backoff
// growing to 1 ms (waiting for peers to arrive costs little CPU; a collective in flight is polled
// eagerly because Open MPI progresses non-blocking collectives only inside MPI calls).
class Backoff {
 public:
  explicit Backoff(bool eager) : eager_(eager), start_(Clock::now()) {}
  // Pauses briefly; false once `deadline` has passed.
  bool pause(Clock::time_point deadline);

 private:
  bool eager_;
  Clock::time_point start_;
  std::chrono::microseconds sleep_{20};
  uint64_t calls_ = 0;
};

// Polls `request` with MPI_Test until it completes (true) or `deadline` passes (false; the request
// is left pending). `eager` spins with yields only (a collective in flight that needs MPI
// progress); otherwise, after a short spin, sleeps with a backoff up to 1 ms (waiting for peers to
// arrive).
bool pollUntil(MPI_Request& request, Clock::time_point deadline, bool eager,
               MPI_Status* status = nullptr);

// Cancels a pending receive and completes it. Returns true when it was cancelled, false when it
// had matched a message meanwhile (then it completed normally and `status` describes it).
bool cancelReceive(MPI_Request& request, MPI_Status* status = nullptr);

// Waits (`limit` at most) for a small send to complete, then leaves it to MPI (MPI_Request_free):
// small messages go out eagerly, so this rarely waits.
void completeOrRelease(MPI_Request& request, Milliseconds limit);

// The bounded MPI_Comm_idup of `comm` (collective over comm's processes).
MPI_Comm dupComm(MPI_Comm comm, Milliseconds timeout, const std::string& what);

// Whether this process was started by an MPI launcher (mpirun, srun with PMI/PMIx).
bool launchedByMpiEnv();

}  // namespace xtrain::comm::mpi

#pragma GCC visibility pop
