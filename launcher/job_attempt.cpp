#include "launcher/job_attempt.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/timeline_merge.hpp"
#include "launcher/environment.hpp"
#include "launcher/restart_policy.hpp"
#include "xtrain/error.hpp"
#include "xtrain/format.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::launcher {
namespace {

void printTo(int fd, const std::string& text) {
  writeAll(fd, text);
}

void debugLog(const std::string& text) noexcept {
  try {
    logging::launcher::debug("{}", text);
  } catch (...) {
  }
}

bool isPowerOfTwo(int v) {
  return v > 0 && (v & (v - 1)) == 0;
}

std::string listIpus(const Topology& t) {
  std::string out;
  for (const auto& p : t.instances) {
    out += (out.empty() ? "" : ", ") + formatIpuIds(p.firstIpu, p.numIpus);
  }
  return out;
}

// The contract's variables plus XTRAIN_JOB_SECRET (in an environment, never on a command line).
EnvList withSecret(EnvList vars, const JobInfo& job) {
  if (!job.secret.empty()) vars.emplace_back(kJobSecretVariable, job.secret);
  return vars;
}

// Merges the trace parts the instances registered in `dir` (common/timeline_merge.hpp), saying
// what it wrote and what was missing.
void mergeTraces(const std::string& dir) noexcept {
  try {
    for (const auto& m : timeline::mergeRegisteredParts(dir)) {
      for (const auto& problem : m.problems) {
        printTo(2, format("xrun: trace {}: {}\n", m.path, problem));
      }
      if (m.written) {
        printTo(2, format("xrun: wrote the job's trace {} ({} instance(s))\n", m.path, m.merged));
      }
    }
  } catch (const std::exception& e) {
    printTo(2, format("xrun: merging the instances' traces failed: {}\n", e.what()));
  }
}

}  // namespace

IpuReservations placeOnFreeIpus(JobPlan& plan) {
  Topology& t = plan.topology;
  const int block = t.numLocalReplicas * t.ipusPerReplica;
  // A replica's device is an aligned range of ipusPerReplica IPUs; an instance's one device of all
  // its IPUs (dist::getDevice) needs the block aligned to its size.
  const int align = isPowerOfTwo(block) ? block : t.ipusPerReplica;
  const device::PoolConfig& pool = *plan.freePool;
  IpuReservations reserved =
      reserveFreeIpus(pool, t.numInstances, block, align,
                      format("xrun job {} (process {})", plan.job.jobId, ::getpid()));
  std::vector<bool> ours(static_cast<size_t>(pool.numIpus), false);
  int end = 0;
  bool moved = false;
  for (auto& p : t.instances) {
    const int first = reserved.firstIpus().at(static_cast<size_t>(p.index));
    moved = moved || first != p.firstIpu;
    p.firstIpu = first;
    for (int i = first; i < first + p.numIpus; ++i) ours[static_cast<size_t>(i)] = true;
    end = std::max(end, first + p.numIpus);
  }
  t.ipuNote = format("IPUs {}: free on this host, {} (locks in {})", listIpus(t),
                     plan.options.dryRun ? "a run would reserve them" : "reserved for the job",
                     pool.lockDir);
  if (moved) {
    std::vector<int> skipped;
    for (int i = 0; i < end; ++i) {
      if (!ours[static_cast<size_t>(i)]) skipped.push_back(i);
    }
    const std::string busy = device::describeHolders(pool.lockDir, skipped);
    printTo(2, format("xrun: IPUs of this host are busy ({}); the instances get IPUs {}\n",
                      busy.empty() ? std::string("a moment ago") : busy, listIpus(t)));
  }
  return reserved;
}

LocalJobSpec attemptSpec(const JobPlan& plan, const std::string& executable,
                         const std::string& xrunPath) {
  const Options& o = plan.options;
  LocalJobSpec spec;
  std::vector<std::string> base = currentEnviron();
  if (plan.engine == Engine::Local) {
    spec.executable = executable;
    spec.argv = programWords(o);
    EnvList user = plan.userEnv;
    user.insert(user.end(), plan.threadEnv.begin(), plan.threadEnv.end());
    for (const auto& p : plan.topology.instances) {
      spec.envPerInstance.push_back(buildEnvp(
          base, user, withSecret(instanceEnvironment(plan.topology, p.index, plan.job), plan.job)));
    }
  } else {
    spec.argv = engineCommand(plan);
    const std::string name = toString(plan.engine);
    try {
      spec.executable = resolveProgram(spec.argv.front(), xrunPath);
    } catch (const ProgramError& e) {
      const char* what = plan.engine == Engine::Mpirun ? "Open MPI's mpirun (Debian: openmpi-bin)"
                                                       : "Slurm's srun";
      if (e.exitCode() == 127) {
        throw ProgramError(127, format("--engine {} needs {}, but '{}' is not in PATH ({}); use "
                                       "--engine local on this host; nothing was started",
                                       name, what, name, xrunPath));
      }
      throw ProgramError(e.exitCode(), format("--engine {}: {}", name, e.what()));
    }
    // The engine gets xrun's environment minus the contract's variables (a nested xrun's must not
    // leak); -x and the contract are on its command line.
    // ... and the job's secret, which srun passes on to the tasks with the rest of its environment
    // and mpirun with "-x XTRAIN_JOB_SECRET" in every app context (its name only on the line).
    spec.envPerInstance.push_back(buildEnvp(base, {}, withSecret({}, plan.job)));
    spec.engine = EngineMode{plan.engine == Engine::Mpirun ? EngineTag::Mpirun : EngineTag::Srun,
                             name,
                             plan.topology.numInstances,
                             {}};
    for (const auto& p : plan.topology.instances) spec.engine->hostOfInstance.push_back(p.host);
  }
  spec.output.tag = o.tagOutput;
  spec.output.format = o.tagFormat;
  spec.output.onlyInstance = o.onlyOutputFromInstance;
  spec.outputDir = o.outputDir;
  spec.timeoutSeconds = o.timeoutSeconds;
  spec.gracePeriodSeconds = std::min(o.gracePeriodSeconds, kFailureGraceSeconds);
  spec.preemptionGraceSeconds = o.gracePeriodSeconds;
  spec.cleanupDir = plan.job.rendezvousDir;
  spec.traceDir = plan.job.rendezvousDir;
  return spec;
}

// One attempt: creates its rendezvous directory, runs it, and removes what it may have left (the
// directory, shared-memory segments of killed instances), after reading the instances' notes.
JobOutcome runAttempt(const JobPlan& plan, LocalJobSpec spec, AttemptNotes* notes) {
  const std::string& dir = plan.job.rendezvousDir;
  if (!dir.empty() && ::mkdir(dir.c_str(), 0700) != 0) {
    throw runtime_error("cannot create the rendezvous directory {}: {}", dir, std::strerror(errno));
  }
  auto cleanUp = [&] {
    // The instances' timelines (--trace, engineOptions "trace.file"): merged however the attempt
    // ended, before their notes go with the directory.
    if (!dir.empty()) mergeTraces(dir);
    if (!dir.empty() && notes != nullptr) {
      std::error_code ec;
      notes->checkpointDirSeen =
          std::filesystem::exists(std::filesystem::path(dir) / kCheckpointDirSeenFile, ec);
    }
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
    const int segments = removeJobSegments(plan.job.jobId);
    if (segments > 0) {
      debugLog(format("removed {} shared-memory segment(s) the job's instances left in /dev/shm",
                      segments));
    }
  };
  JobOutcome outcome;
  try {
    outcome = runJob(spec);
  } catch (...) {
    cleanUp();
    throw;
  }
  cleanUp();
  return outcome;
}

}  // namespace xtrain::launcher
