// xrun's driver: command line -> plan -> dry run, or a job on an engine.
#pragma once

#include <string>
#include <vector>

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
};

// Auto: mpirun when hosts other than this one are given, srun inside a Slurm allocation
// (SLURM_JOB_ID), else local. An explicit --engine local with remote hosts is a UsageError.
Engine resolveEngine(const Options& options, const std::vector<std::string>& hosts,
                     const EnvLookup& lookup);

// Reads the hostfile, the pool size (-x XTRAIN_NUM_IPUS=..., else xrun's XTRAIN_NUM_IPUS), plans
// the topology, resolves -x and the engine, and names the job (id, rendezvous directory under
// $TMPDIR or /tmp). Throws UsageError.
JobPlan makePlan(const Options& options, const EnvLookup& lookup);

// The exact commands, one line each, for --dry-run: per instance for local; one mpirun (MPMD, one
// app context per instance) or one srun command line otherwise.
std::vector<std::string> plannedCommands(const JobPlan& plan);

// The whole program: returns the exit code. Prints on file descriptors 1 and 2.
int xrunMain(int argc, char** argv);

}  // namespace xtrain::launcher
