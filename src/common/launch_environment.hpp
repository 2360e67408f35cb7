// LaunchEnvironment: where this process stands in its job, read from what the launcher exported:
// xrun's XTRAIN_* variables, else Open MPI's OMPI_COMM_WORLD_*, PMIx's PMIX_RANK, Slurm's SLURM_*,
// or PMI's PMI_* (docs/launcher-environment.md). Used by the comm layer to form the world and by
// the PopDist-style queries.
#pragma once
#pragma GCC visibility push(default)

#include <optional>
#include <string>

namespace xtrain {

struct LaunchEnvironment {
  // "xrun", "mpirun", "srun", "pmi" or "none" (a process started by hand).
  std::string launcher = "none";
  std::string jobId;  // the same in every instance of the job
  int numInstances = 1;
  int instanceIndex = 0;
  int localInstanceIndex = 0;  // among the instances on this host
  int numLocalInstances = 1;   // instances on this host, where the launcher says
  int numLocalReplicas = 1;
  int numTotalReplicas = 1;
  int replicaIndexOffset = 0;
  int ipusPerReplica = 1;
  std::optional<std::string> rendezvousDir;  // XTRAIN_RENDEZVOUS_DIR

  bool isDistributed() const { return numInstances > 1; }
};

// Reads the environment at each call. Throws xtrain::error naming the variable when a value is
// malformed or inconsistent (index out of range, replicas not divisible by instances, ...).
LaunchEnvironment readLaunchEnvironment();

}  // namespace xtrain

#pragma GCC visibility pop
