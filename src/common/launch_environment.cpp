#include "common/launch_environment.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "common/env_value.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

namespace {

// The value of `name`, or nullptr when it is unset or empty (env_value.hpp's rule).
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

// A non-negative whole number from `name`, or nullopt when unset or empty; read by the one reader
// (env_value.hpp), so "XTRAIN_NUM_INSTANCES= 4" and "0x4" are refused like everywhere else.
std::optional<int> intFromEnv(const char* name) {
  const auto v = readEnvWholeNumber(name, 0, INT_MAX);
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

int required(const char* name, const char* because) {
  const auto v = intFromEnv(name);
  if (!v) throw error("environment variable {} is not set, but {} is", name, because);
  return *v;
}

// Replica layout: POPDIST_* or XTRAIN_* where a launcher set them, else one replica per instance.
void readReplicas(LaunchEnvironment& e) {
  const auto local = intFromEnv("XTRAIN_NUM_LOCAL_REPLICAS")
                         ? intFromEnv("XTRAIN_NUM_LOCAL_REPLICAS")
                         : intFromEnv("POPDIST_NUM_LOCAL_REPLICAS");
  const auto total = intFromEnv("XTRAIN_NUM_TOTAL_REPLICAS")
                         ? intFromEnv("XTRAIN_NUM_TOTAL_REPLICAS")
                         : intFromEnv("POPDIST_NUM_TOTAL_REPLICAS");
  const auto ipus = intFromEnv("XTRAIN_NUM_IPUS_PER_REPLICA")
                        ? intFromEnv("XTRAIN_NUM_IPUS_PER_REPLICA")
                        : intFromEnv("POPDIST_NUM_IPUS_PER_REPLICA");
  e.numLocalReplicas = local.value_or(1);
  e.numTotalReplicas = total.value_or(e.numLocalReplicas * e.numInstances);
  e.ipusPerReplica = ipus.value_or(1);
  if (e.numLocalReplicas < 1 || e.ipusPerReplica < 1) {
    throw error("the launcher gave {} local replicas and {} IPUs per replica; both must be >= 1",
                e.numLocalReplicas, e.ipusPerReplica);
  }
  if (e.numTotalReplicas != e.numLocalReplicas * e.numInstances) {
    throw error(
        "the launcher's replica layout is inconsistent: {} total replicas, but {} instances x {} "
        "local replicas",
        e.numTotalReplicas, e.numInstances, e.numLocalReplicas);
  }
  e.replicaIndexOffset = e.instanceIndex * e.numLocalReplicas;
}

}  // namespace

LaunchEnvironment readLaunchEnvironment() {
  LaunchEnvironment e;
  if (env("XTRAIN_NUM_INSTANCES") != nullptr) {
    e.launcher = "xrun";
    e.numInstances = required("XTRAIN_NUM_INSTANCES", "an xrun job");
    e.instanceIndex = required("XTRAIN_INSTANCE_INDEX", "XTRAIN_NUM_INSTANCES");
    e.localInstanceIndex = intFromEnv("XTRAIN_LOCAL_INSTANCE_INDEX").value_or(e.instanceIndex);
    e.numLocalInstances = e.numInstances;
    if (const char* id = env("XTRAIN_JOB_ID")) e.jobId = id;
  } else if (env("OMPI_COMM_WORLD_SIZE") != nullptr) {
    e.launcher = "mpirun";
    e.numInstances = required("OMPI_COMM_WORLD_SIZE", "an Open MPI job");
    e.instanceIndex = required("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
    e.localInstanceIndex = intFromEnv("OMPI_COMM_WORLD_LOCAL_RANK").value_or(e.instanceIndex);
    e.numLocalInstances = intFromEnv("OMPI_COMM_WORLD_LOCAL_SIZE").value_or(e.numInstances);
    if (const char* id = env("OMPI_MCA_ess_base_jobid")) e.jobId = std::string("ompi-") + id;
    if (const char* ns = env("PMIX_NAMESPACE"); e.jobId.empty() && ns != nullptr) e.jobId = ns;
  } else if (env("SLURM_NTASKS") != nullptr && env("SLURM_PROCID") != nullptr) {
    e.launcher = "srun";
    e.numInstances = required("SLURM_NTASKS", "a Slurm step");
    e.instanceIndex = required("SLURM_PROCID", "SLURM_NTASKS");
    e.localInstanceIndex = intFromEnv("SLURM_LOCALID").value_or(e.instanceIndex);
    e.numLocalInstances = intFromEnv("SLURM_NTASKS_PER_NODE").value_or(e.numInstances);
    e.jobId = std::string("slurm-") + (env("SLURM_JOB_ID") ? env("SLURM_JOB_ID") : "0") + "." +
              (env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : "0");
  } else if (env("PMI_SIZE") != nullptr) {
    e.launcher = "pmi";
    e.numInstances = required("PMI_SIZE", "a PMI job");
    e.instanceIndex = required("PMI_RANK", "PMI_SIZE");
    e.localInstanceIndex = e.instanceIndex;
    e.numLocalInstances = e.numInstances;
  }
  if (e.numInstances < 1) throw error("the launcher says the job has {} instances", e.numInstances);
  if (e.instanceIndex >= e.numInstances) {
    throw error("the launcher gives instance index {} in a job of {} instances", e.instanceIndex,
                e.numInstances);
  }
  if (e.jobId.empty()) {
    e.jobId = e.numInstances == 1 ? "pid-" + std::to_string(::getpid()) : e.launcher + "-job";
  }
  if (const char* dir = env("XTRAIN_RENDEZVOUS_DIR")) e.rendezvousDir = dir;
  readReplicas(e);
  return e;
}

}  // namespace xtrain
