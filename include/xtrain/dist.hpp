// xtrain::dist: PopDist's queries for a program started by xrun (or poprun-style launchers, mpirun,
// srun): where this instance stands in the job, and the helpers that set a session up for it, so a
// training script runs unchanged under `xrun -n 1` and `xrun -n 8`.
#pragma once

#include <cstdint>
#include <memory>

#include "xtrain/api.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain::dist {

// Every query reads the environment (docs/launcher-environment.md) at each call: xrun's XTRAIN_*
// and POPDIST_* variables, else OMPI_COMM_WORLD_*, PMIX/PMI or SLURM_* with one replica per
// instance, else a single instance of one replica. Malformed values throw xtrain::error naming the
// variable.

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

// Sets the replication options of docs/replication-semantics.md section 1 from the environment:
// enableReplicatedGraphs and replicatedGraphCount (the local replicas), and when the job has
// several instances enableDistributedReplicatedGraphs, globalReplicationFactor and
// globalReplicaOffset. Leaves every other option alone.
XTRAIN_API void configureSessionOptions(SessionOptions& options);

// Acquires this instance's device: getNumLocalReplicas() x ipusPerReplica IPUs (ipusPerReplica 0:
// getNumIpusPerReplica()) from the IPUs the launcher gave it (XTRAIN_IPU_IDS). Throws xtrain::error
// when the count is not a power of two or no such device is free.
XTRAIN_API std::shared_ptr<DeviceInfo> getDevice(int64_t ipusPerReplica = 0);

}  // namespace xtrain::dist
