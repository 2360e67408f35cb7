#include "launcher/xrun.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "common/timeline_merge.hpp"
#include "launcher/ipu_allocation.hpp"
#include "launcher/local_engine.hpp"
#include "launcher/output.hpp"
#include "launcher/restart_policy.hpp"
#include "xtrain/logging.hpp"

#ifndef XRUN_VERSION
#define XRUN_VERSION "unknown"
#endif

namespace xtrain::launcher {

namespace {

bool isThisHost(const std::string& host) {
  if (host == "localhost" || host == "127.0.0.1" || host == "::1") return true;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0 && host == name) return true;
  return false;
}

std::string joinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += shellQuote(w);
  }
  return out;
}

std::vector<std::string> envWords(const EnvList& vars) {
  std::vector<std::string> out;
  for (const auto& [name, value] : vars) out.push_back(format("{}={}", name, value));
  return out;
}

std::vector<std::string> programWords(const Options& o) {
  std::vector<std::string> out{o.program};
  out.insert(out.end(), o.programArgs.begin(), o.programArgs.end());
  return out;
}

void printTo(int fd, const std::string& text) {
  writeAll(fd, text);
}

void debugLog(const std::string& text) noexcept {
  try {
    logging::launcher::debug("{}", text);
  } catch (...) {
  }
}

// A Slurm node name (SLURM_JOB_NODELIST of a one-node allocation) is this host: its full name, or
// the name's first label (Slurm's node names are usually short).
bool isThisSlurmNode(const std::string& node) {
  if (isThisHost(node)) return true;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return false;
  const std::string host = name;
  return !node.empty() && host.substr(0, host.find('.')) == node;
}

// The MPI plugin the user chose for srun: --mpi=X or --mpi X in --mpi-global-args, else
// SLURM_MPI_TYPE (srun reads it too). Also says where it came from.
std::optional<std::pair<std::string, std::string>> userSrunMpi(const Options& o,
                                                               const EnvLookup& lookup) {
  const auto& a = o.mpiGlobalArgs;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].rfind("--mpi=", 0) == 0) {
      return std::pair{a[i].substr(6), a[i] + " in --mpi-global-args"};
    }
    if (a[i] == "--mpi" && i + 1 < a.size()) {
      return std::pair{a[i + 1], "--mpi " + a[i + 1] + " in --mpi-global-args"};
    }
  }
  if (auto v = lookup("SLURM_MPI_TYPE"); v && !v->empty()) {
    return std::pair{*v, "SLURM_MPI_TYPE=" + *v};
  }
  return std::nullopt;
}

// How the srun engine's instances meet (docs/launcher-environment.md, "srun"): in the job's
// rendezvous directory when the allocation is one node and it is this host (where xrun creates the
// directory); otherwise over srun's MPI plugin: the user's, else PMIx when srun offers it (Debian's
// Open MPI initialises under srun --mpi=pmix, not under pmi2). Sets plan.srunMpi and the note.
void chooseSrunRendezvous(JobPlan& plan, const EnvLookup& lookup, const SrunMpiProbe& probe) {
  auto nodes = lookup("SLURM_JOB_NUM_NODES");
  if (!nodes) nodes = lookup("SLURM_NNODES");
  auto nodeList = lookup("SLURM_JOB_NODELIST");
  if (!nodeList) nodeList = lookup("SLURM_NODELIST");
  const bool oneNode = nodes && *nodes == "1";
  const bool here =
      lookup("SLURMD_NODENAME").has_value() || (nodeList && isThisSlurmNode(*nodeList));
  const auto user = userSrunMpi(plan.options, lookup);
  auto pmixOffered = [&] {
    const std::vector<std::string> plugins = probe ? probe() : std::vector<std::string>{};
    return std::find(plugins.begin(), plugins.end(), "pmix") != plugins.end();
  };
  if (oneNode && here) {
    plan.rendezvousNote = format(
        "the instances meet in the job's rendezvous directory {} (the allocation is one "
        "node, this host)",
        plan.job.rendezvousDir);
    // The mpi backend needs the instances to be one MPI job.
    if (plan.options.commBackend == "mpi" && !user && pmixOffered()) {
      plan.srunMpi = "pmix";
      plan.rendezvousNote += "; --comm-backend mpi: srun --mpi=pmix makes them one MPI job";
    }
    return;
  }
  plan.job.rendezvousDir.clear();
  std::string why;
  if (oneNode) {
    why = format("the allocation's node ({}) is not this host", nodeList.value_or("unnamed"));
  } else if (nodes) {
    why = format("the allocation has {} nodes", *nodes);
  } else {
    why = "the allocation's nodes are unknown (no SLURM_JOB_NUM_NODES)";
  }
  if (user && user->first != "none") {
    plan.rendezvousNote = format("the instances meet over srun's MPI plugin '{}' ({}), since {}",
                                 user->first, user->second, why);
    return;
  }
  if (!user && pmixOffered()) {
    plan.srunMpi = "pmix";
    plan.rendezvousNote = format("the instances meet over PMIx (srun --mpi=pmix), since {}", why);
    return;
  }
  plan.rendezvousNote = format(
      "warning: {} and {}, so the instances have no way to meet; run xrun in a one-node "
      "allocation, or name a PMI plugin that works with --mpi-global-args --mpi=...",
      why,
      user ? format("srun's MPI plugin is '{}' ({})", user->first, user->second)
           : std::string("this srun offers no PMIx plugin (srun --mpi=list)"));
}

}  // namespace

std::vector<std::string> srunMpiPlugins() {
  // Bounded: srun --mpi=list reads its configuration and plugins, it does not ask the controller.
  FILE* f = ::popen("timeout 10 srun --mpi=list 2>&1", "r");
  if (f == nullptr) return {};
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  ::pclose(f);
  return parseSrunMpiList(out);
}

std::vector<std::string> parseSrunMpiList(const std::string& out) {
  std::vector<std::string> plugins;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    std::string line = out.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || (line[0] != '\t' && line[0] != ' ')) continue;
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (!line.empty() && line.find(' ') == std::string::npos) plugins.push_back(line);
  }
  return plugins;
}

Engine resolveEngine(const Options& options, const std::vector<std::string>& hosts,
                     const EnvLookup& lookup) {
  bool remote = false;
  for (const auto& h : hosts) remote = remote || !isThisHost(h);
  switch (options.engine) {
    case Engine::Local:
      if (remote) {
        throw UsageError(
            "--engine local starts instances on this host only, but hosts were given; drop "
            "-H/--hostfile, or use --engine mpirun");
      }
      return Engine::Local;
    case Engine::Mpirun:
    case Engine::Srun: return options.engine;
    case Engine::Auto: break;
  }
  if (remote) return Engine::Mpirun;
  if (lookup("SLURM_JOB_ID")) return Engine::Srun;
  return Engine::Local;
}

void chooseCommBackend(JobPlan& plan, const EnvLookup& lookup) {
  const std::optional<std::string> env = lookup("XTRAIN_COMM_BACKEND");
  const bool set = env && !env->empty();
  if (plan.options.commBackendGiven) {
    if (set && *env != plan.options.commBackend) {
      plan.commBackendNote =
          format("--comm-backend {} overrides XTRAIN_COMM_BACKEND={} of xrun's environment",
                 plan.options.commBackend, *env);
    }
  } else if (set) {
    if (*env != "auto" && *env != "shm" && *env != "gloo" && *env != "mpi") {
      throw UsageError(
          "XTRAIN_COMM_BACKEND='{}' in xrun's environment is not a backend xrun knows: it must be "
          "one of auto, shm, gloo, mpi (it is the default of --comm-backend); correct or unset it, "
          "or give --comm-backend",
          *env);
    }
    plan.options.commBackend = *env;
  }
  plan.job.commBackend = plan.options.commBackend;
}

JobPlan makePlan(const Options& options, const EnvLookup& lookup, const SrunMpiProbe& probe) {
  JobPlan plan;
  plan.options = options;
  std::vector<std::string> hosts = options.hosts;
  if (!options.hostfile.empty()) hosts = readHostfile(options.hostfile);

  plan.userEnv = resolveUserEnvironment(options.env, lookup);
  std::optional<std::string> pool = lookup("XTRAIN_NUM_IPUS");
  for (const auto& [name, value] : plan.userEnv) {
    if (name == "XTRAIN_NUM_IPUS") pool = value;
  }

  TopologyRequest request;
  request.numInstances = options.numInstances;
  request.numReplicas = options.numReplicas;
  request.ipusPerReplica = options.ipusPerReplica;
  request.poolSize = poolSizeFromEnvironment(pool ? pool->c_str() : nullptr);
  plan.engine = resolveEngine(options, hosts, lookup);
  if (plan.engine == Engine::Local) hosts.clear();
  // The collective timeout must be the same in every instance (docs/comm.md, "Faults"): mpirun and
  // srun give instances on other hosts the environment of their remote daemons, not xrun's, so
  // xrun's XTRAIN_COMM_TIMEOUT goes on the command line like a -x variable (-x wins).
  if (plan.engine != Engine::Local) {
    const bool given = std::any_of(plan.userEnv.begin(), plan.userEnv.end(),
                                   [](const auto& v) { return v.first == "XTRAIN_COMM_TIMEOUT"; });
    if (auto v = lookup("XTRAIN_COMM_TIMEOUT"); v && !given) {
      plan.userEnv.emplace_back("XTRAIN_COMM_TIMEOUT", *v);
    }
  }
  request.hosts = hosts;
  plan.topology = planTopology(request);
  const bool allHere = std::all_of(plan.topology.hosts.begin(), plan.topology.hosts.end(),
                                   [](const std::string& h) { return isThisHost(h); });

  plan.job.jobId = makeJobId();
  plan.job.secret = makeJobSecret();
  std::string tmp = lookup("TMPDIR").value_or("/tmp");
  if (tmp.empty()) tmp = "/tmp";
  plan.job.rendezvousDir = tmp + "/xrun-" + plan.job.jobId;
  chooseCommBackend(plan, lookup);
  if (plan.engine == Engine::Mpirun && !allHere) plan.job.rendezvousDir.clear();
  if (plan.engine == Engine::Srun) chooseSrunRendezvous(plan, lookup, probe);
  if (plan.engine == Engine::Mpirun && !allHere) {
    bool userSet = false;
    for (const auto& w : options.mpiGlobalArgs) {
      userSet = userSet || w.find("oob_tcp_keepalive") != std::string::npos;
    }
    for (const char* name : {"OMPI_MCA_oob_tcp_keepalive_time", "OMPI_MCA_oob_tcp_keepalive_intvl",
                             "OMPI_MCA_oob_tcp_keepalive_probes"}) {
      userSet = userSet || lookup(name).has_value();
    }
    if (!userSet) {
      const char* names[3] = {"oob_tcp_keepalive_time", "oob_tcp_keepalive_intvl",
                              "oob_tcp_keepalive_probes"};
      for (int i = 0; i < 3; ++i) {
        plan.mpirunKeepalive.insert(plan.mpirunKeepalive.end(),
                                    {"--mca", names[i], std::to_string(kMpirunKeepalive[i])});
      }
    }
  }
  plan.job.maxRestarts = options.maxRestarts;
  if (options.minInstances) {
    plan.job.originalNumInstances = plan.topology.numInstances;
    plan.job.keepGlobalBatch =
        toString(options.keepGlobalBatch.value_or(KeepGlobalBatch::Accumulation));
  }

  std::vector<std::string> threadBase;
  for (const char* name : {"OMP_NUM_THREADS", "OMP_WAIT_POLICY"}) {
    if (auto v = lookup(name)) threadBase.push_back(std::string(name) + "=" + *v);
  }
  plan.threadEnv = threadDefaults(threadBase, plan.userEnv, plan.topology.instancesPerHost,
                                  std::thread::hardware_concurrency());
  const bool coresKnown =
      plan.engine == Engine::Local || (plan.engine == Engine::Mpirun && allHere);
  if (!coresKnown) {
    std::erase_if(plan.threadEnv, [](const auto& v) { return v.first == "OMP_NUM_THREADS"; });
  }
  plan.runAsRoot = ::geteuid() == 0;
  // xrun sees only this host's pool: with instances elsewhere they take the layout's IPUs there.
  // srun in a one-node allocation on this host (the rendezvous directory is kept then): the node
  // may be shared with other jobs, so free IPUs as for the local engine.
  const bool srunHere = plan.engine == Engine::Srun && !plan.job.rendezvousDir.empty();
  if (plan.engine == Engine::Local || (plan.engine == Engine::Mpirun && allHere) || srunHere) {
    plan.freePool = poolForJob(plan.userEnv, lookup, request.poolSize);
  }
  return plan;
}

std::vector<std::string> plannedCommands(const JobPlan& plan) {
  const Options& o = plan.options;
  const Topology& t = plan.topology;
  std::vector<std::string> lines;
  if (plan.engine == Engine::Local) {
    for (const auto& p : t.instances) {
      std::vector<std::string> words{"env"};
      for (auto& w : envWords(plan.userEnv)) words.push_back(w);
      for (auto& w : envWords(instanceEnvironment(t, p.index, plan.job))) words.push_back(w);
      for (auto& w : programWords(o)) words.push_back(w);
      lines.push_back(joinWords(words));
    }
    return lines;
  }
  lines.push_back(joinWords(engineCommand(plan)));
  return lines;
}

std::vector<std::string> engineCommand(const JobPlan& plan) {
  const Options& o = plan.options;
  const Topology& t = plan.topology;
  if (plan.engine == Engine::Mpirun) {
    // One app context per instance (MPMD), so each gets its own variables. "-H host:P" gives the
    // host P slots, P = the instances placed there, so no --oversubscribe is needed.
    std::map<std::string, int> perHost;
    for (const auto& p : t.instances) ++perHost[p.host];
    std::vector<std::string> words{"mpirun", "--tag-output", "--bind-to", "none"};
    if (plan.runAsRoot) words.push_back("--allow-run-as-root");
    words.insert(words.end(), plan.mpirunKeepalive.begin(), plan.mpirunKeepalive.end());
    words.insert(words.end(), o.mpiGlobalArgs.begin(), o.mpiGlobalArgs.end());
    // -x variables go with each app context's env (mpirun's own -x applies to one app context
    // only).
    for (const auto& p : t.instances) {
      if (p.index > 0) words.push_back(":");
      words.insert(words.end(), {"-np", "1", "-H", p.host + ":" + std::to_string(perHost[p.host])});
      words.insert(words.end(), o.mpiLocalArgs.begin(), o.mpiLocalArgs.end());
      words.insert(words.end(), {"-x", kJobSecretVariable});
      words.push_back("env");
      for (auto& w : envWords(plan.userEnv)) words.push_back(w);
      for (auto& w : envWords(plan.threadEnv)) words.push_back(w);
      for (auto& w : envWords(instanceEnvironment(t, p.index, plan.job))) words.push_back(w);
      for (auto& w : programWords(o)) words.push_back(w);
    }
    return words;
  }
  // srun: one task per instance; the per-instance variables come from SLURM_PROCID / SLURM_LOCALID.
  // --label tags each line with the task ("2: "); --disable-status makes one SIGINT reach the tasks
  // (without it srun only prints their status).
  const int perInstance = t.numLocalReplicas * t.ipusPerReplica;
  std::vector<std::string> words{"srun",
                                 "--ntasks=" + std::to_string(t.numInstances),
                                 "--ntasks-per-node=" + std::to_string(t.instancesPerHost),
                                 "--kill-on-bad-exit=1",
                                 "--label",
                                 "--disable-status"};
  if (!plan.srunMpi.empty()) words.push_back("--mpi=" + plan.srunMpi);
  words.insert(words.end(), o.mpiGlobalArgs.begin(), o.mpiGlobalArgs.end());
  words.push_back("env");
  for (auto& w : envWords(plan.userEnv)) words.push_back(w);
  for (auto& w : envWords(plan.threadEnv)) words.push_back(w);
  for (auto& w : envWords(commonEnvironment(t, plan.job))) words.push_back(w);
  std::string ipuIds = perInstance == 1 ? "$SLURM_LOCALID"
                                        : "$((SLURM_LOCALID*" + std::to_string(perInstance) +
                                              "))-$((SLURM_LOCALID*" + std::to_string(perInstance) +
                                              "+" + std::to_string(perInstance - 1) + "))";
  // IPUs xrun chose free on this host (one node, here): instance i = task i gets its block.
  std::string pick;
  if (plan.freePool) {
    pick = "case $SLURM_PROCID in";
    for (const auto& p : t.instances) {
      pick += format(" {}) ipus={};;", p.index, formatIpuIds(p.firstIpu, p.numIpus));
    }
    pick += " esac; ";
    ipuIds = "$ipus";
  }
  std::string offset = "$((SLURM_PROCID*" + std::to_string(t.numLocalReplicas) + "))";
  std::string script = pick +
                       "exec env XTRAIN_INSTANCE_INDEX=\"$SLURM_PROCID\" "
                       "XTRAIN_LOCAL_INSTANCE_INDEX=\"$SLURM_LOCALID\" "
                       "XTRAIN_REPLICA_INDEX_OFFSET=\"" +
                       offset + "\" XTRAIN_IPU_IDS=\"" + ipuIds +
                       "\" POPDIST_REPLICA_INDEX_OFFSET=\"" + offset +
                       "\" POPDIST_LOCAL_INSTANCE_INDEX=\"$SLURM_LOCALID\" \"$@\"";
  words.insert(words.end(), {"sh", "-c", script, "xrun-instance"});
  for (auto& w : programWords(o)) words.push_back(w);
  return words;
}

namespace {

EnvLookup processLookup() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

// fds 0-2 must be open, or a pipe created later could land on them.
void ensureStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int n = ::open("/dev/null", O_RDWR);
      if (n >= 0 && n != fd) {
        ::dup2(n, fd);
        ::close(n);
      }
    }
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

// Moves the instances onto blocks of IPUs free now on this host and reserves them for the job
// (held until the returned object is destroyed). Says so on stderr when other processes hold the
// default ones, so a user of a shared host sees why the IPUs are not 0, 1, ...
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

// The job's command for one attempt: the instances' environments (XTRAIN_RESTART_COUNT, the
// attempt's rendezvous directory) or the engine's command line.
// The contract's variables plus XTRAIN_JOB_SECRET (in an environment, never on a command line).
EnvList withSecret(EnvList vars, const JobInfo& job) {
  if (!job.secret.empty()) vars.emplace_back(kJobSecretVariable, job.secret);
  return vars;
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

// What xrun learns from an attempt's rendezvous directory for the next ones.
struct AttemptNotes {
  // An instance created kCheckpointDirSeenFile: it found its checkpoint directory.
  bool checkpointDirSeen = false;
};

// One attempt: creates its rendezvous directory, runs it, and removes what it may have left (the
// directory, shared-memory segments of killed instances), after reading the instances' notes.
JobOutcome runAttempt(const JobPlan& plan, LocalJobSpec spec, AttemptNotes* notes = nullptr) {
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

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "SIGTERM (a preemption request)": how xrun names a signal that ends the job.
std::string describeEndSignal(int sig) {
  if (sig == SIGTERM) return "SIGTERM (a preemption request)";
  if (sig == SIGUSR1 || sig == SIGUSR2) {
    return signalName(sig) + " (Slurm's warning before preemption)";
  }
  return signalName(sig);
}

// "; exit code 75, as at a preemption: ..." (SIGTERM, SIGUSR1, SIGUSR2), or "; exit code 130".
std::string describeEndCode(int sig) {
  const int code = exitCodeForSignalBeforeStart(sig);
  if (code == kPreemptedExitCode) {
    return format("; exit code {}, as at a preemption: run it again to continue", code);
  }
  return format("; exit code {}", code);
}

// A signal that ends the job came before `attempt` could start (runJob started nothing): says so
// and returns xrun's exit code.
int endedBeforeStart(int sig, const std::string& attempt) {
  printTo(2, format("xrun: received {} before {} started; nothing was started{}\n",
                    describeEndSignal(sig), attempt, describeEndCode(sig)));
  return exitCodeForSignalBeforeStart(sig);
}

std::string nameAttempt(int attempt) {
  return attempt == 0 ? std::string("the instances")
                      : format("the attempt with XTRAIN_RESTART_COUNT={}", attempt);
}

// "instance 1 was killed by signal 9 (SIGKILL)", or the engine's words.
std::string describeFailure(const JobOutcome& outcome, bool engineMode) {
  if (!engineMode) return format("instance {} {}", outcome.instance.value_or(-1), outcome.what);
  if (outcome.instance) return format("instance {} failed ({})", *outcome.instance, outcome.what);
  return outcome.what + " (it named no instance)";
}

int runPlan(JobPlan plan) {
  // Reserved from before the instances start until the job has ended (across restarts: the next
  // attempt gets the same IPUs).
  IpuReservations reservations;
  if (plan.freePool) reservations = placeOnFreeIpus(plan);
  const Options& o = plan.options;
  if (o.printTopology || o.dryRun) printTo(1, describeTopology(plan.topology));
  if (!plan.rendezvousNote.empty()) printTo(2, "xrun: srun engine: " + plan.rendezvousNote + "\n");
  if (!plan.commBackendNote.empty()) printTo(2, "xrun: " + plan.commBackendNote + "\n");
  if (o.dryRun) {
    printTo(1, format("xrun: dry run, engine {}; nothing was started. The commands:\n",
                      toString(plan.engine)));
    for (const auto& line : plannedCommands(plan)) printTo(1, line + "\n");
    if (o.maxRestarts > 0) {
      printTo(1, format("xrun: when an instance fails, every instance starts again, up to {} "
                        "time(s){}{}, with XTRAIN_RESTART_COUNT=1, 2, ...\n",
                        o.maxRestarts,
                        o.restartWindowSeconds ? format(" within any {} s", *o.restartWindowSeconds)
                                               : std::string(),
                        o.restartDelaySeconds > 0
                            ? format(", {} s after the failure", o.restartDelaySeconds)
                            : std::string()));
      if (o.minInstances) {
        printTo(1, format("xrun: an instance slot that is the first to fail, or does not arrive "
                          "at a collective, in {} attempts in a row is dropped at the next "
                          "restart, and a lost host at once, down to {} instance(s) "
                          "(--keep-global-batch {})\n",
                          kFailuresToDropSlot, *o.minInstances, plan.job.keepGlobalBatch));
      }
    }
    return 0;
  }
  std::string xrunPath = "/usr/local/bin:/usr/bin:/bin";
  if (const char* p = std::getenv("PATH")) xrunPath = p;
  std::string path = xrunPath;
  for (const auto& [name, value] : plan.userEnv) {
    if (name == "PATH") path = value;
  }
  // Checked on this host before anything starts, whatever the engine.
  const std::string executable = resolveProgram(o.program, path);

  if (o.maxRestarts == 0) {
    const JobOutcome outcome = runAttempt(plan, attemptSpec(plan, executable, xrunPath));
    if (outcome.end == JobEnd::NotStarted)
      return endedBeforeStart(outcome.endSignal, "the instances");
    return outcome.exitCode;
  }

  // With restarts: xrun's signal handlers stay for every attempt and the pauses between them.
  SignalHandlers signals;
  RestartBudget budget(o.maxRestarts, o.restartWindowSeconds);
  const std::string firstDir = plan.job.rendezvousDir;
  const auto jobStart = std::chrono::steady_clock::now();
  const bool engineMode = plan.engine != Engine::Local;
  // Shrinking (--min-instances): the original layout, the slots of the current attempt (indices
  // into it; instance i of the attempt is slot slots[i]) and the row of failures per slot.
  const Topology full = plan.topology;
  std::vector<int> slots;
  for (int i = 0; i < full.numInstances; ++i) slots.push_back(i);
  SlotFailures slotFailures;
  const KeepGlobalBatch keep = o.keepGlobalBatch.value_or(KeepGlobalBatch::Accumulation);
  // The next attempts run on `next` (ascending slots of `full`).
  auto useSlots = [&](std::vector<int> next) {
    slots = std::move(next);
    plan.topology = topologyOfSlots(full, slots);
    slotFailures.reset();
    // Fewer (or more) instances per host: each gets more (fewer) threads, when xrun sets them.
    const bool threadsSet = std::any_of(plan.threadEnv.begin(), plan.threadEnv.end(),
                                        [](const auto& v) { return v.first == "OMP_NUM_THREADS"; });
    plan.threadEnv = threadDefaults(currentEnviron(), plan.userEnv, plan.topology.instancesPerHost,
                                    std::thread::hardware_concurrency());
    if (!threadsSet) {
      std::erase_if(plan.threadEnv, [](const auto& v) { return v.first == "OMP_NUM_THREADS"; });
    }
  };
  std::vector<int> allSlots = slots;
  // Whether an earlier attempt found its checkpoint directory (XTRAIN_CHECKPOINT_DIR_SEEN), and
  // whether xrun could tell for every one (each had a rendezvous directory on this host).
  bool checkpointDirSeen = false;
  bool checkpointDirKnown = true;
  for (int attempt = 0;; ++attempt) {
    plan.job.restartCount = attempt;
    plan.job.rendezvousDir = attemptRendezvousDir(firstDir, attempt);
    plan.job.checkpointDirSeen = attempt == 0         ? std::string()
                                 : checkpointDirSeen  ? std::string("1")
                                 : checkpointDirKnown ? std::string("0")
                                                      : std::string();
    LocalJobSpec spec = attemptSpec(plan, executable, xrunPath);
    if (o.timeoutSeconds) {
      spec.timeoutSeconds = *o.timeoutSeconds - secondsSince(jobStart);
      spec.timeoutShownSeconds = o.timeoutSeconds;
    }
    spec.appendOutput = attempt > 0;  // --output-dir keeps every attempt's lines
    const bool shrunk = slots.size() < allSlots.size();
    if (o.growAfterSeconds && shrunk) {
      spec.growAfterSeconds = *o.growAfterSeconds;
      spec.growMessage = format(
          "growing back: the job ran {} s on {} of its {} instances (slots {}); asking them to "
          "stop at a checkpoint (SIGUSR1, as a preemption warning) to start all {} again",
          *o.growAfterSeconds, slots.size(), full.numInstances, listSlots(slots),
          full.numInstances);
    }
    // Every decision below to start another attempt first reads signals.endRequested(): a signal
    // that ends the job, received at any time (consumed by runJob or not), starts nothing more.
    // runJob reads it once more with the signals blocked, just before it starts the instances.
    if (const int sig = signals.endRequested(); sig != 0) {
      return endedBeforeStart(sig, nameAttempt(attempt));
    }
    AttemptNotes notes;
    const JobOutcome outcome = runAttempt(plan, std::move(spec), &notes);
    checkpointDirSeen = checkpointDirSeen || notes.checkpointDirSeen;
    checkpointDirKnown = checkpointDirKnown && !plan.job.rendezvousDir.empty();
    if (outcome.end == JobEnd::NotStarted) {
      return endedBeforeStart(outcome.endSignal, nameAttempt(attempt));
    }
    if (outcome.growRequested && outcome.end == JobEnd::Preempted &&
        outcome.exitCode == kPreemptedExitCode) {
      if (const int sig = signals.endRequested(); sig != 0) {
        // The instances stopped at a checkpoint for the grow request and for this signal alike:
        // the job ends preempted, as it would have without --grow-after.
        printTo(2, format("xrun: growing back: every instance stopped at a checkpoint, but xrun "
                          "received {}; the job ends without starting all {} again; exit code "
                          "{}: run it again to continue\n",
                          describeEndSignal(sig), full.numInstances, kPreemptedExitCode));
        return kPreemptedExitCode;
      }
      // Not a failure: the restart budget is not charged.
      useSlots(allSlots);
      printTo(2, format("xrun: growing back: every instance stopped at a checkpoint; starting all "
                        "{} instances (slots {}) with XTRAIN_NUM_INSTANCES={} "
                        "XTRAIN_RESTART_COUNT={}\n",
                        full.numInstances, listSlots(slots), full.numInstances, attempt + 1));
      continue;
    }
    if (outcome.end != JobEnd::InstanceFailed) return outcome.exitCode;
    std::string failure = describeFailure(outcome, engineMode);
    const FailureBlame blame = blameFailure(outcome, full, slots);
    if (blame.kind == BlameKind::FirstToFail &&
        static_cast<int>(slots.size()) != full.numInstances) {
      failure += format(" (slot {})", blame.slots[0]);
    }
    std::string why;
    if (!isRestartable(outcome, why)) {
      printTo(2, format("xrun: not restarting: {}: {}\n", failure, why));
      return outcome.exitCode;
    }
    // A signal that came while the failed attempt was stopping (runJob kills at once then).
    if (const int sig = signals.endRequested(); sig != 0) {
      printTo(2, format("xrun: not restarting: {}: xrun received {} while the attempt ended{}\n",
                        failure, describeEndSignal(sig), describeEndCode(sig)));
      return exitCodeForSignalBeforeStart(sig);
    }
    const double now = secondsSince(jobStart);
    const std::optional<int> k = budget.onFailure(now);
    const std::string window =
        o.restartWindowSeconds ? format(" within the last {} s", *o.restartWindowSeconds) : "";
    if (!k) {
      printTo(2, format("xrun: not restarting: {}; --max-restarts {} used up ({} restart(s){}); "
                        "exit code {}\n",
                        failure, o.maxRestarts, budget.counted(now), window, outcome.exitCode));
      return outcome.exitCode;
    }
    // Slots that keep failing, or a lost host, are left out of the next attempt
    // (restart_policy.hpp).
    std::string starting = "starting every instance again with";
    std::vector<int> failing;
    std::string verdict;
    if (blame.kind == BlameKind::HostLost) {
      slotFailures.reset();
      failing = blame.slots;
      verdict = format("host {} (slot{} {}) was lost: {}", blame.host,
                       failing.size() == 1 ? "" : "s", listSlots(failing), blame.clue);
    } else {
      failing = slotFailures.onFailure(blame.slots);
      verdict =
          format("{} {} in {} attempts in a row", describeSlots(full, failing),
                 blame.kind == BlameKind::DidNotArrive
                     ? "did not arrive at a collective that the others waited for"
                     : (failing.size() == 1 ? "was the first to fail" : "were the first to fail"),
                 kFailuresToDropSlot);
    }
    if (o.minInstances && !failing.empty()) {
      const ShrinkPlan shrink = planShrink(full, slots, failing, *o.minInstances, keep);
      if (shrink.belowMinimum) {
        starting = format(
            "{}, but the job cannot shrink below --min-instances {}{}; starting every instance "
            "again with",
            verdict, *o.minInstances,
            keep != KeepGlobalBatch::No
                ? format(" (with --keep-global-batch {} the instances must be a divisor of {})",
                         toString(keep), full.numInstances)
                : std::string());
      } else {
        starting = format(
            "{}: dropping {}{}; starting {} of the {} instances (slots {}) with "
            "XTRAIN_NUM_INSTANCES={}",
            verdict, failing.size() == 1 ? "it" : "them",
            shrink.alsoDropped.empty()
                ? std::string()
                : format(" and slot(s) {} (with --keep-global-batch {} the instances must be a "
                         "divisor of {})",
                         listSlots(shrink.alsoDropped), toString(keep), full.numInstances),
            shrink.keep.size(), full.numInstances, listSlots(shrink.keep), shrink.keep.size());
        useSlots(shrink.keep);
      }
    }
    printTo(2, format("xrun: restart {} of {}: {}; {} XTRAIN_RESTART_COUNT={}{}{}\n", *k,
                      o.maxRestarts, failure, starting, attempt + 1,
                      o.restartDelaySeconds > 0 ? format(" in {} s", o.restartDelaySeconds) : "",
                      o.restartWindowSeconds ? format(" ({} restart(s){})", *k, window) : ""));
    double delay = o.restartDelaySeconds;
    if (o.timeoutSeconds) delay = std::min(delay, std::max(0.0, *o.timeoutSeconds - now));
    // A signal now ends the job: SIGTERM (a preemption request) and SIGUSR1/SIGUSR2 (Slurm's
    // warning before preemption: the allocation is about to go) with 75, so that the scheduler
    // requeues the job and it continues where this restart would have; SIGINT, SIGHUP with
    // 128 + signal.
    if (const int sig = signals.waitForSignal(delay); sig != 0) {
      printTo(2, format("xrun: received {} before restart {}; the job ends without it{}\n",
                        describeEndSignal(sig), *k, describeEndCode(sig)));
      return exitCodeForSignalBeforeStart(sig);
    }
    if (o.timeoutSeconds && secondsSince(jobStart) >= *o.timeoutSeconds) {
      printTo(2, format("xrun: the job reached --timeout {} s before restart {} could start\n",
                        *o.timeoutSeconds, *k));
      return kTimeoutExitCode;
    }
  }
}

}  // namespace

int xrunMain(int argc, char** argv) {
  ensureStandardFds();
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    Options options = parseOptions(args);
    if (options.help) {
      printTo(1, helpText());
      return 0;
    }
    if (options.version) {
      printTo(1, std::string("xrun (xtrain) ") + XRUN_VERSION + "\n");
      return 0;
    }
    try {
      logging::configureFromEnvironment();
    } catch (const std::exception& e) {
      printTo(2, std::string("xrun: warning: ") + e.what() + "; xrun's own log is off\n");
    }
    JobPlan plan = makePlan(options, processLookup());
    return runPlan(plan);
  } catch (const ProgramError& e) {
    printTo(2, std::string("xrun: error: ") + e.what() + "\n");
    return e.exitCode();
  } catch (const UsageError& e) {
    printTo(2, std::string("xrun: error: ") + e.what() + "\n");
    return kUsageExitCode;
  } catch (const std::exception& e) {
    printTo(2, std::string("xrun: error: ") + e.what() + "\n");
    return 1;
  }
}

}  // namespace xtrain::launcher
