#include "comm/world.hpp"

#include "comm/backends/mpi/mpi.hpp"
#include "common/launch_environment.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm {

std::shared_ptr<Store> createJobStore(std::optional<Milliseconds> timeout) {
  const LaunchEnvironment env = readLaunchEnvironment();
  const Milliseconds limit = timeout ? *timeout : defaultTimeout();
  if (env.rendezvousDir) {
    return std::make_shared<FileStore>(*env.rendezvousDir, env.jobId, limit);
  }
  if (env.numInstances == 1) return std::make_shared<InMemoryStore>(env.jobId, limit);
  if (mpi::launchedByMpi()) return mpi::createBootstrapStore(env.jobId, limit);
  throw error(
      "instance {} of {} ({}) has no way to meet the others: XTRAIN_RENDEZVOUS_DIR is not set and "
      "the job was not started by mpirun or srun; start it with xrun",
      env.instanceIndex, env.numInstances, env.launcher);
}

std::shared_ptr<Communicator> createWorldCommunicator(const WorldOptions& options) {
  const LaunchEnvironment env = options.launch ? *options.launch : readLaunchEnvironment();
  CommConfig config;
  config.store = options.store ? options.store : createJobStore(options.timeout);
  config.rank = env.instanceIndex;
  config.size = env.numInstances;
  config.name = options.name;
  config.timeout = options.timeout;
  logging::comm::info("instance {} of {} joins '{}' (launcher {}, job {})", env.instanceIndex,
                      env.numInstances, options.name, env.launcher, env.jobId);
  return createCommunicator(config, options.backend);
}

}  // namespace xtrain::comm
