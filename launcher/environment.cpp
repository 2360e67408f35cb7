#include "launcher/environment.hpp"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>

extern char** environ;

namespace xtrain::launcher {

std::string makeJobId() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);

  unsigned random = 0;
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  if (!urandom.read(reinterpret_cast<char*>(&random), sizeof random)) {
    auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
    random = static_cast<unsigned>(ticks) ^ static_cast<unsigned>(getpid() * 2654435761u);
  }
  char id[96];
  std::snprintf(id, sizeof id, "%s-%d-%08x", stamp, static_cast<int>(getpid()), random);
  return id;
}

std::string makeJobSecret() {
  unsigned char raw[32];
  size_t done = 0;
  while (done < sizeof raw) {
    const ssize_t n = ::getrandom(raw + done, sizeof raw - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw std::runtime_error(std::string("xrun: cannot draw the job's secret (getrandom): ") +
                               std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

namespace {
// XTRAIN_RENDEZVOUS_DIR only when the job has one, the shrinking variables only with
// --min-instances, XTRAIN_CHECKPOINT_DIR_SEEN only on restarts where xrun can tell (see JobInfo).
EnvList withoutEmptyRendezvous(EnvList vars) {
  std::erase_if(vars, [](const auto& v) {
    return v.second.empty() &&
           (v.first == "XTRAIN_RENDEZVOUS_DIR" || v.first == "XTRAIN_ORIGINAL_NUM_INSTANCES" ||
            v.first == "XTRAIN_KEEP_GLOBAL_BATCH" || v.first == "XTRAIN_CHECKPOINT_DIR_SEEN");
  });
  return vars;
}

std::string originalCount(const JobInfo& job) {
  return job.originalNumInstances > 0 ? std::to_string(job.originalNumInstances) : std::string();
}
}  // namespace

EnvList commonEnvironment(const Topology& t, const JobInfo& job) {
  return withoutEmptyRendezvous({
      {"XTRAIN_JOB_ID", job.jobId},
      {"XTRAIN_NUM_INSTANCES", std::to_string(t.numInstances)},
      {"XTRAIN_NUM_LOCAL_REPLICAS", std::to_string(t.numLocalReplicas)},
      {"XTRAIN_NUM_TOTAL_REPLICAS", std::to_string(t.numTotalReplicas)},
      {"XTRAIN_NUM_IPUS_PER_REPLICA", std::to_string(t.ipusPerReplica)},
      {"XTRAIN_COMM_BACKEND", job.commBackend},
      {"XTRAIN_RENDEZVOUS_DIR", job.rendezvousDir},
      {"XTRAIN_RESTART_COUNT", std::to_string(job.restartCount)},
      {"XTRAIN_MAX_RESTARTS", std::to_string(job.maxRestarts)},
      {"XTRAIN_ORIGINAL_NUM_INSTANCES", originalCount(job)},
      {"XTRAIN_KEEP_GLOBAL_BATCH", job.keepGlobalBatch},
      {"XTRAIN_CHECKPOINT_DIR_SEEN", job.checkpointDirSeen},
      {"POPDIST_NUM_TOTAL_REPLICAS", std::to_string(t.numTotalReplicas)},
      {"POPDIST_NUM_IPUS_PER_REPLICA", std::to_string(t.ipusPerReplica)},
      {"POPDIST_NUM_LOCAL_REPLICAS", std::to_string(t.numLocalReplicas)},
      {"POPDIST_UNIFORM_REPLICAS_PER_INSTANCE", "1"},
  });
}

EnvList instanceEnvironment(const Topology& t, int instance, const JobInfo& job) {
  const InstancePlacement& p = t.instances.at(static_cast<size_t>(instance));
  return withoutEmptyRendezvous({
      {"XTRAIN_JOB_ID", job.jobId},
      {"XTRAIN_NUM_INSTANCES", std::to_string(t.numInstances)},
      {"XTRAIN_INSTANCE_INDEX", std::to_string(p.index)},
      {"XTRAIN_LOCAL_INSTANCE_INDEX", std::to_string(p.localIndex)},
      {"XTRAIN_NUM_LOCAL_REPLICAS", std::to_string(t.numLocalReplicas)},
      {"XTRAIN_NUM_TOTAL_REPLICAS", std::to_string(t.numTotalReplicas)},
      {"XTRAIN_REPLICA_INDEX_OFFSET", std::to_string(p.replicaOffset)},
      {"XTRAIN_NUM_IPUS_PER_REPLICA", std::to_string(t.ipusPerReplica)},
      {"XTRAIN_IPU_IDS", formatIpuIds(p.firstIpu, p.numIpus)},
      {"XTRAIN_COMM_BACKEND", job.commBackend},
      {"XTRAIN_RENDEZVOUS_DIR", job.rendezvousDir},
      {"XTRAIN_RESTART_COUNT", std::to_string(job.restartCount)},
      {"XTRAIN_MAX_RESTARTS", std::to_string(job.maxRestarts)},
      {"XTRAIN_ORIGINAL_NUM_INSTANCES", originalCount(job)},
      {"XTRAIN_KEEP_GLOBAL_BATCH", job.keepGlobalBatch},
      {"XTRAIN_CHECKPOINT_DIR_SEEN", job.checkpointDirSeen},
      {"POPDIST_NUM_TOTAL_REPLICAS", std::to_string(t.numTotalReplicas)},
      {"POPDIST_NUM_IPUS_PER_REPLICA", std::to_string(t.ipusPerReplica)},
      {"POPDIST_NUM_LOCAL_REPLICAS", std::to_string(t.numLocalReplicas)},
      {"POPDIST_UNIFORM_REPLICAS_PER_INSTANCE", "1"},
      {"POPDIST_REPLICA_INDEX_OFFSET", std::to_string(p.replicaOffset)},
      {"POPDIST_LOCAL_INSTANCE_INDEX", std::to_string(p.localIndex)},
  });
}

const std::vector<std::string>& contractVariableNames() {
  static const std::vector<std::string> names = [] {
    Topology t;
    t.instances.push_back(InstancePlacement{});
    std::vector<std::string> out;
    JobInfo job;
    job.rendezvousDir = "/";  // so that the optional variables are listed
    job.originalNumInstances = 1;
    job.keepGlobalBatch.assign(1, 'x');
    job.checkpointDirSeen.assign(1, '1');  // (not = "1": GCC 12 warns, -Wrestrict)
    for (const auto& [name, value] : instanceEnvironment(t, 0, job)) out.push_back(name);
    out.push_back(kJobSecretVariable);  // set apart from the others: never on a command line
    return out;
  }();
  return names;
}

namespace {
// Which option sets a contract variable, for the -x refusal.
std::string optionFor(const std::string& name) {
  static const std::map<std::string, std::string> options = {
      {"XTRAIN_NUM_INSTANCES", "-n/--num-instances"},
      {"XTRAIN_NUM_TOTAL_REPLICAS", "--num-replicas"},
      {"POPDIST_NUM_TOTAL_REPLICAS", "--num-replicas"},
      {"XTRAIN_NUM_LOCAL_REPLICAS", "--num-replicas and -n"},
      {"POPDIST_NUM_LOCAL_REPLICAS", "--num-replicas and -n"},
      {"XTRAIN_NUM_IPUS_PER_REPLICA", "--ipus-per-replica"},
      {"POPDIST_NUM_IPUS_PER_REPLICA", "--ipus-per-replica"},
      {"XTRAIN_COMM_BACKEND", "--comm-backend"},
      {"XTRAIN_IPU_IDS", "the layout (XTRAIN_NUM_IPUS sets the pool size)"},
      {"XTRAIN_MAX_RESTARTS", "--max-restarts"},
      {"XTRAIN_ORIGINAL_NUM_INSTANCES", "-n and --min-instances"},
      {"XTRAIN_KEEP_GLOBAL_BATCH", "--keep-global-batch"},
  };
  auto it = options.find(name);
  return it == options.end() ? "xrun itself" : it->second;
}
}  // namespace

EnvList resolveUserEnvironment(const std::vector<EnvAssignment>& assignments,
                               const EnvLookup& lookup) {
  const auto& contract = contractVariableNames();
  EnvList out;
  for (const auto& a : assignments) {
    if (a.name == kJobSecretVariable) {
      throw UsageError(
          "-x {}: xrun draws a new secret for every job and hands it to every instance; it "
          "cannot be set (docs/launcher-environment.md, Security)",
          a.name);
    }
    if (std::find(contract.begin(), contract.end(), a.name) != contract.end()) {
      throw UsageError("-x {}: xrun sets {} for every instance; use {} instead", a.name, a.name,
                       optionFor(a.name));
    }
    if (a.value) {
      out.emplace_back(a.name, *a.value);
    } else if (auto v = lookup(a.name)) {
      out.emplace_back(a.name, *v);
    }
  }
  return out;
}

EnvList threadDefaults(const std::vector<std::string>& base, const EnvList& user,
                       int instancesOnHost, unsigned cores) {
  auto isSet = [&](const std::string& name) {
    for (const auto& entry : base) {
      if (entry.compare(0, name.size() + 1, name + "=") == 0) return true;
    }
    for (const auto& [n, v] : user) {
      if (n == name) return true;
    }
    return false;
  };
  EnvList out;
  const unsigned perInstance =
      std::max(1u, cores / static_cast<unsigned>(std::max(1, instancesOnHost)));
  if (!isSet("OMP_NUM_THREADS")) out.emplace_back("OMP_NUM_THREADS", std::to_string(perInstance));
  if (instancesOnHost > 1 && !isSet("OMP_WAIT_POLICY"))
    out.emplace_back("OMP_WAIT_POLICY", "PASSIVE");
  return out;
}

std::vector<std::string> buildEnvp(const std::vector<std::string>& base, const EnvList& user,
                                   const EnvList& contract) {
  std::vector<std::string> order;
  std::map<std::string, std::string> values;
  auto put = [&](const std::string& name, const std::string& value) {
    if (values.emplace(name, value).second) {
      order.push_back(name);
    } else {
      values[name] = value;
    }
  };
  const auto& names = contractVariableNames();
  for (const auto& entry : base) {
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    put(name, entry.substr(eq + 1));
  }
  for (const auto& [name, value] : user) put(name, value);
  for (const auto& [name, value] : contract) put(name, value);
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const auto& name : order) out.push_back(name + "=" + values[name]);
  return out;
}

std::vector<std::string> currentEnviron() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

namespace {
// 0 when `path` is an executable regular file; else 126 or 127 with `why` set.
int checkExecutable(const std::string& path, std::string& why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    why = "does not exist";
    return 127;
  }
  if (S_ISDIR(st.st_mode)) {
    why = "is a directory";
    return 126;
  }
  if (::access(path.c_str(), X_OK) != 0) {
    why = "is not executable (chmod +x?)";
    return 126;
  }
  return 0;
}
}  // namespace

std::string resolveProgram(const std::string& program, const std::string& pathVar) {
  std::string why;
  if (program.find('/') != std::string::npos) {
    int code = checkExecutable(program, why);
    if (code != 0)
      throw ProgramError(code, format("program '{}' {}; nothing was started", program, why));
    return program;
  }
  int bestCode = 127;
  std::string bestWhy;
  size_t start = 0;
  while (start <= pathVar.size()) {
    size_t colon = pathVar.find(':', start);
    std::string candidate =
        pathVar.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (candidate.empty()) candidate.push_back('.');
    candidate.append("/").append(program);
    int code = checkExecutable(candidate, why);
    if (code == 0) return candidate;
    if (code == 126 && bestCode == 127) {
      bestCode = 126;
      bestWhy = format("{} {}", candidate, why);
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (bestCode == 126)
    throw ProgramError(126, format("program '{}': {}; nothing was started", program, bestWhy));
  throw ProgramError(
      127,
      format("program '{}' not found in PATH ({}); give its path (e.g. ./{}); nothing was started",
             program, pathVar, program));
}

}  // namespace xtrain::launcher
