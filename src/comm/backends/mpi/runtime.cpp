#include "comm/backends/mpi/runtime.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "xtrain/dist.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm::mpi {

namespace {

struct Runtime {
  std::mutex initMu;         // guards initialisation and the finaliser list
  bool initialized = false;  // by anyone (checked once)
  bool ownedByUs = false;    // we called MPI_Init_thread, so we finalise
  bool multiple = false;     // MPI_THREAD_MULTIPLE granted
  std::atomic<bool> finalizing{false};
  std::atomic<bool> poisoned{false};
  std::string poisonReason;
  std::vector<std::function<void()>> finalizers;
  std::recursive_mutex callMu;  // serialises MPI calls without MPI_THREAD_MULTIPLE
};

Runtime& runtime() {
  static Runtime* r = new Runtime;  // never destroyed: used from exit handlers
  return *r;
}

// Deletion callback of our attribute on MPI_COMM_SELF: MPI_Finalize calls it first, while MPI is
// still usable.
int onFinalize(MPI_Comm, int, void*, void*) {
  auto& r = runtime();
  std::vector<std::function<void()>> fns;
  {
    std::lock_guard lock(r.initMu);
    fns.swap(r.finalizers);
  }
  for (auto it = fns.rbegin(); it != fns.rend(); ++it) {
    try {
      (*it)();
    } catch (const std::exception& e) {
      logging::comm::warn("mpi: cleanup before MPI_Finalize failed: {}", e.what());
    }
  }
  r.finalizing = true;
  return MPI_SUCCESS;
}

// The process is ending on an error path: exit at once with `status`, without MPI_Finalize.
// MPI_Finalize waits for every peer (Open MPI's closing fence), and after a failure a peer may be
// stopped, unreachable, or waiting in a collective for this very process, so the process would
// never exit and mpirun would never learn of the failure. Exiting non-zero without it is what
// mpirun watches for: it ends the whole job at once with this code. What must reach the user is
// flushed first; the remaining exit handlers and static destructors are skipped (other threads,
// e.g. the store service's, may still be inside MPI or use those objects).
[[noreturn]] void exitWithoutFinalize(int status, const std::string& why) {
  try {  // nothing may throw here: an exception would turn the exit code into SIGABRT's
    logging::comm::err(
        "mpi: exiting with code {} without MPI_Finalize ({}); the launcher ends the job", status,
        why);
    logging::flush();
  } catch (...) {
  }
  std::fflush(nullptr);
  ::_exit(status);
}

// Bounds MPI_Finalize on the preemption path: every instance exits 75 right after agreeing to, so
// the peers are there and MPI_Finalize returns at once; should one vanish meanwhile, the process
// still exits (after the collective timeout) instead of waiting forever.
void boundFinalize(int status) {
  const Milliseconds limit = [] {
    try {
      return defaultTimeout();
    } catch (const std::exception&) {
      return Milliseconds(300'000);
    }
  }();
  try {
    std::thread([status, limit] {
      std::this_thread::sleep_for(limit);
      exitWithoutFinalize(status,
                          format("MPI_Finalize did not complete within {} ms", limit.count()));
    }).detach();
  } catch (const std::exception&) {
    // No thread to bound it with: finalise unbounded, as a clean exit does.
  }
}

// Registered with on_exit, which passes the exit status: MPI_Finalize only on a clean exit.
void finalizeOnExit(int status, void*) {
  auto& r = runtime();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (r.poisoned) {
    // A timed-out collective is still pending: MPI_Finalize could wait for it forever.
    exitWithoutFinalize(
        status != 0 ? status : 1,
        format("a collective is still pending after a failure: {}", r.poisonReason));
  }
  if (status == dist::kPreemptedExitCode) {
    boundFinalize(status);
  } else if (status != 0) {
    exitWithoutFinalize(status, "the process failed; its peers may be gone or stuck");
  }
  MPI_Finalize();
}

}  // namespace

bool launchedByMpiEnv() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    const char* s = std::getenv(v);
    if (s != nullptr && *s != '\0') return true;
  }
  return false;
}

void ensureInitialized() {
  auto& r = runtime();
  std::lock_guard lock(r.initMu);
  if (r.initialized) {
    if (r.finalizing) throw error("mpi: MPI was already finalised in this process");
    return;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw error("mpi: MPI was already finalised in this process");
  int already = 0;
  MPI_Initialized(&already);
  int provided = MPI_THREAD_SINGLE;
  if (already) {
    MPI_Query_thread(&provided);
  } else {
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) throw error("mpi: MPI_Init_thread failed with code {}", rc);
    r.ownedByUs = true;
    ::on_exit(finalizeOnExit, nullptr);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    throw error(
        "mpi: MPI was initialised with thread level {} but the mpi backend needs at least "
        "MPI_THREAD_SERIALIZED (call MPI_Init_thread, or let xtrain initialise MPI)",
        provided);
  }
  r.multiple = provided >= MPI_THREAD_MULTIPLE;
  // Errors come back as codes (turned into exceptions) instead of aborting the job at once; the
  // application's own MPI_COMM_WORLD is left alone (our duplicates get MPI_ERRORS_RETURN).
  if (r.ownedByUs) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, onFinalize, &keyval, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  r.initialized = true;
  logging::comm::debug("mpi: {} MPI (thread level {})", r.ownedByUs ? "initialised" : "joined",
                       r.multiple ? "MPI_THREAD_MULTIPLE" : "MPI_THREAD_SERIALIZED");
}

bool finalizing() {
  auto& r = runtime();
  if (r.finalizing) return true;
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

MpiLock::MpiLock() : locked_(!runtime().multiple) {
  if (locked_) runtime().callMu.lock();
}
MpiLock::~MpiLock() {
  if (locked_) runtime().callMu.unlock();
}

void check(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw runtime_error("{}: MPI error {} ({})", what, rc,
                      std::string(text, static_cast<size_t>(len)));
}

void markPoisoned(const std::string& why) {
  auto& r = runtime();
  std::lock_guard lock(r.initMu);
  if (!r.poisoned) r.poisonReason = why;
  r.poisoned = true;
}

bool poisoned() {
  return runtime().poisoned;
}

void atFinalize(std::function<void()> fn) {
  auto& r = runtime();
  std::lock_guard lock(r.initMu);
  r.finalizers.push_back(std::move(fn));
}

bool Backoff::pause(Clock::time_point deadline) {
  ++calls_;
  if (eager_ && (calls_ & 31) != 0) {
    std::this_thread::yield();
    return true;
  }
  const auto now = Clock::now();
  if (now >= deadline) return false;
  if (!eager_ && now - start_ > std::chrono::microseconds(200)) {
    std::this_thread::sleep_for(
        std::min(sleep_, std::chrono::duration_cast<std::chrono::microseconds>(deadline - now) +
                             std::chrono::microseconds(1)));
    sleep_ = std::min(sleep_ * 2, std::chrono::microseconds(1000));
  } else {
    std::this_thread::yield();
  }
  return true;
}

bool pollUntil(MPI_Request& request, Clock::time_point deadline, bool eager, MPI_Status* status) {
  MPI_Status ignored;
  MPI_Status* st = status != nullptr ? status : &ignored;
  Backoff backoff(eager);
  for (;;) {
    int done = 0;
    {
      MpiLock lock;
      check(MPI_Test(&request, &done, st), "MPI_Test");
    }
    if (done) return true;
    if (!backoff.pause(deadline)) return false;
  }
}

void completeOrRelease(MPI_Request& request, Milliseconds limit) {
  if (request == MPI_REQUEST_NULL) return;
  if (!pollUntil(request, Clock::now() + limit, true)) {
    MpiLock lock;
    MPI_Request_free(&request);
  }
}

bool cancelReceive(MPI_Request& request, MPI_Status* status) {
  if (request == MPI_REQUEST_NULL) return true;
  MPI_Status st;
  {
    MpiLock lock;
    MPI_Cancel(&request);
  }
  // Cancelling a receive completes at once (or it had matched and completes with its message).
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  if (!pollUntil(request, deadline, false, &st)) {
    markPoisoned("a cancelled receive did not complete");
    return true;
  }
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  if (status != nullptr) *status = st;
  return cancelled != 0;
}

MPI_Comm dupComm(MPI_Comm comm, Milliseconds timeout, const std::string& what) {
  MPI_Comm out = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  {
    MpiLock lock;
    check(MPI_Comm_idup(comm, &out, &req), what + ": MPI_Comm_idup");
  }
  if (!pollUntil(req, Clock::now() + timeout, false)) {
    markPoisoned(what + " timed out");
    throw CommTimeoutError(
        "{} timed out after {} ms: not every process of the MPI job arrived (every process must "
        "make the same calls in the same order); the pending MPI call cannot be cancelled, so end "
        "this process (the launcher then ends the job)",
        what, timeout.count());
  }
  MpiLock lock;
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  return out;
}

}  // namespace xtrain::comm::mpi
