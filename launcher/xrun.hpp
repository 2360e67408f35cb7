// xrun's driver: command line -> plan -> dry run, or a job on an engine (launcher/job_runner.hpp
// runs the plan).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "device/ipu/ipu_pool.hpp"
#include "launcher/environment.hpp"
#include "launcher/options.hpp"
#include "launcher/topology.hpp"

namespace xtrain::launcher {

// Everything decided before anything starts.
struct JobPlan {
  Options options;
  Engine engine = Engine::Local;  // never Auto
  Topology topology;
  JobInfo job;
  EnvList userEnv;  // -x, resolved
  // Thread defaults (threadDefaults()); OMP_NUM_THREADS only when every instance runs on this host
  // (xrun knows no other host's cores).
  EnvList threadEnv;
  bool runAsRoot = false;  // mpirun then needs --allow-run-as-root
  // Set when every instance runs on this host (local engine; mpirun with no other host; srun in a
  // one-node allocation on this host, where the srun command maps SLURM_PROCID to the IPUs): the
  // pool the instances will use, from whose free IPUs xrun picks and reserves theirs
  // (launcher/ipu_allocation.hpp). Unset: instances take the layout's IPUs from 0 on their host.
  std::optional<device::PoolConfig> freePool;
  // srun engine: the MPI plugin xrun asks srun for ("pmix": --mpi=pmix on its command line; empty:
  // none added), and the line xrun prints on stderr saying how the instances meet.
  std::string srunMpi;
  std::string rendezvousNote;
  // Set when --comm-backend and a different XTRAIN_COMM_BACKEND in xrun's environment were both
  // given: the line xrun prints on stderr saying that the option wins.
  std::string commBackendNote;
  // mpirun with other hosts: Open MPI's TCP keepalive for its daemons' connections (mpirun
  // --mca oob_tcp_keepalive_*), unless the user set any of them, so that mpirun notices a host it
  // lost (a cut link, a dead machine) in seconds (kMpirunKeepalive), not after Open MPI's default
  // 300 s + 9 x 20 s. Empty otherwise.
  std::vector<std::string> mpirunKeepalive;
};

// The keepalive xrun gives mpirun's daemons with other hosts: idle seconds, interval, probes, so a
// host silent for about 10 + 3 x 5 = 25 s ends the job (28 s measured, tests/netns).
inline constexpr int kMpirunKeepalive[3] = {10, 5, 3};

// The MPI plugins this host's srun offers (`srun --mpi=list`, e.g. {"none", "pmi2", "pmix"}); empty
// when srun cannot say. makePlan asks only when the srun engine's instances may run on other nodes.
using SrunMpiProbe = std::function<std::vector<std::string>()>;
std::vector<std::string> srunMpiPlugins();
// The plugins in `srun --mpi=list`'s output: "MPI plugin types are...", then one a line, indented.
std::vector<std::string> parseSrunMpiList(const std::string& output);

// Auto: mpirun when hosts other than this one are given, srun inside a Slurm allocation
// (SLURM_JOB_ID), else local. An explicit --engine local with remote hosts is a UsageError.
Engine resolveEngine(const Options& options, const std::vector<std::string>& hosts,
                     const EnvLookup& lookup);

// The instances' XTRAIN_COMM_BACKEND: --comm-backend when given, else XTRAIN_COMM_BACKEND of xrun's
// environment (unset or empty: "auto"). Sets plan.job.commBackend, plan.options.commBackend and,
// when the option overrides a different value of the environment, plan.commBackendNote. Throws
// UsageError naming the variable when its value is not a backend xrun knows and no option is
// given.
void chooseCommBackend(JobPlan& plan, const EnvLookup& lookup);

// Reads the hostfile, the pool size (-x XTRAIN_NUM_IPUS=..., else xrun's XTRAIN_NUM_IPUS), plans
// the topology, resolves -x and the engine, and names the job (id, rendezvous directory under
// $TMPDIR or /tmp). The rendezvous directory is left empty (XTRAIN_RENDEZVOUS_DIR not exported)
// when instances may run on other hosts, where it would not exist: mpirun with a host other than
// this one; srun unless the allocation is one node and xrun runs on it (SLURM_JOB_NUM_NODES or
// SLURM_NNODES is 1, and SLURMD_NODENAME is set or SLURM_JOB_NODELIST names this host). There the
// srun engine's instances meet over PMIx instead: --mpi=pmix when `probe` lists it and the user
// chose no plugin (--mpi in --mpi-global-args, SLURM_MPI_TYPE). Throws UsageError.
// The IPUs in the topology are the default layout (from 0); the run moves them onto free ones.
JobPlan makePlan(const Options& options, const EnvLookup& lookup,
                 const SrunMpiProbe& probe = srunMpiPlugins);

// The exact commands, one line each, for --dry-run: per instance for local; one mpirun (MPMD, one
// app context per instance) or one srun command line otherwise.
std::vector<std::string> plannedCommands(const JobPlan& plan);

// The mpirun or srun command, word by word (what --dry-run prints for those engines).
std::vector<std::string> engineCommand(const JobPlan& plan);

// The program and its arguments, as the instances run it (argv).
std::vector<std::string> programWords(const Options& options);

// The whole program: returns the exit code. Prints on file descriptors 1 and 2.
int xrunMain(int argc, char** argv);

}  // namespace xtrain::launcher
