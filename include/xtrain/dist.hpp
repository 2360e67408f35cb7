// xtrain::dist: PopDist's queries for a program started by xrun (or poprun-style launchers, mpirun,
// srun): where this instance stands in the job, and the helpers that set a session up for it, so a
// training script runs unchanged under `xrun -n 1` and `xrun -n 8`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "xtrain/api.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain::dist {

// The queries answer from the environment (docs/launcher-environment.md) as the process found it
// at the first of them (it is read once per process, by the job every instance meets through):
// xrun's XTRAIN_* and POPDIST_* variables, else OMPI_COMM_WORLD_*, PMIX/PMI or SLURM_* with one
// replica per instance, else a single instance of one replica. Malformed values throw xtrain::error
// naming the variable (at every call until the environment is fixed).

// True when a launcher started this process (xrun, mpirun, srun).
XTRAIN_API bool isPopdistEnvSet();
// True when the job has more than one instance.
XTRAIN_API bool isDistributed();
XTRAIN_API int64_t getNumInstances();
XTRAIN_API int64_t getInstanceIndex();
XTRAIN_API int64_t getLocalInstanceIndex();
XTRAIN_API int64_t getNumLocalReplicas();
XTRAIN_API int64_t getNumTotalReplicas();
XTRAIN_API int64_t getReplicaIndexOffset();
XTRAIN_API int64_t getNumIpusPerReplica();
// The job's id: the same in every instance of one job and new for each job (xrun's XTRAIN_JOB_ID,
// or what the launcher gives, docs/launcher-environment.md; "pid-<pid>" for a process no launcher
// started). What instances use for a seed they must share without talking (xtrain.torch's
// shuffling).
XTRAIN_API std::string getJobId();

// Sets the replication options of docs/replication-semantics.md section 1 from the environment:
// enableReplicatedGraphs and replicatedGraphCount (the local replicas), and when the job has
// several instances enableDistributedReplicatedGraphs, globalReplicationFactor and
// globalReplicaOffset. Leaves every other option alone.
XTRAIN_API void configureSessionOptions(SessionOptions& options);

// Acquires this instance's device: getNumLocalReplicas() x ipusPerReplica IPUs (ipusPerReplica 0:
// getNumIpusPerReplica()) from the IPUs the launcher gave it (XTRAIN_IPU_IDS). Throws xtrain::error
// when the count is not a power of two or no such device is free.
XTRAIN_API std::shared_ptr<DeviceInfo> getDevice(int64_t ipusPerReplica = 0);

// ---- Preemption (docs/launcher-environment.md, "Preemption") ----
//
// A scheduler warns a job before it takes its nodes away: Slurm sends SIGUSR1 with
// `--signal=USR1@60`, SIGTERM at `scancel` or preemption (then SIGKILL after its KillWait). xrun
// passes both on to every instance and gives them `--grace-period` seconds (default 30) to end.
// A training script that wants to stop cleanly after a whole step, with a checkpoint:
//
//   dist::handlePreemption();                         // once, early: installs the handlers
//   for (int64_t step = first; step < steps; ++step) {
//     session->run(stepio);
//     if (step + 1 < steps && dist::preemptionAgreed()) {  // collective: every instance, every
//     step
//       session->saveCheckpoint(dir + "/step-" + std::to_string(step + 1));
//       dist::preemptionAgreed();                      // again: nobody exits before all have saved
//       return dist::kPreemptedExitCode;               // 75: xrun passes it on
//     }
//   }
//
// Nothing is installed by surprise: until handlePreemption() is called SIGUSR1 and SIGTERM keep
// whatever action the program gave them (by default they end the process), and the two queries
// below throw xtrain::error saying so.

// The exit code of a process that stopped because of a preemption request, having saved what it
// needs to continue (EX_TEMPFAIL of <sysexits.h>: "try again later"). xrun exits with it when every
// instance did (docs/launcher-environment.md, "Exit codes"); `xtrain` uses it.
inline constexpr int kPreemptedExitCode = 75;

// Installs handlers for SIGUSR1 and SIGTERM (SA_RESTART) that only note the request; the program
// goes on and looks at it with the calls below. Idempotent and thread-safe; call it early (before
// the session is built), since a signal arriving before it ends the process.
XTRAIN_API void handlePreemption();

// True once this process received SIGUSR1 or SIGTERM after handlePreemption(). Local and cheap (an
// atomic load): no other instance is asked. Throws xtrain::error when handlePreemption() was not
// called.
XTRAIN_API bool preemptionRequested();

// The signal behind the request (SIGUSR1 or SIGTERM), 0 when none: this process's first one, or,
// after preemptionAgreed() returned true because of another instance, the one that instance got.
XTRAIN_API int preemptionSignal();

// Collective: true on every instance when any of them has received a request, so all stop after
// the same step and their checkpoint is consistent. Every instance of the job must call it at the
// same points (for example after every step), like any collective; the first call joins a small
// communicator of its own ("preemption", over the job's rendezvous store), and each call is one
// all-reduce of 4 bytes, bounded by XTRAIN_COMM_TIMEOUT. With one instance it is
// preemptionRequested(). Throws xtrain::error when handlePreemption() was not called, and the
// comm layer's errors when another instance is gone.
XTRAIN_API bool preemptionAgreed();

}  // namespace xtrain::dist
