#include "launcher/xrun.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

#include "common/usable_cpus.hpp"
#include "launcher/ipu_allocation.hpp"
#include "launcher/job_runner.hpp"
#include "launcher/output.hpp"
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

void printTo(int fd, const std::string& text) {
  writeAll(fd, text);
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

std::vector<std::string> programWords(const Options& o) {
  std::vector<std::string> out{o.program};
  out.insert(out.end(), o.programArgs.begin(), o.programArgs.end());
  return out;
}

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
                                  static_cast<unsigned>(usableCpus()));
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
