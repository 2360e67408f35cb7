// The environment contract between xrun and the instances it starts (docs/launcher-environment.md).
//
// Pure functions except makeJobId() (clock, pid, /dev/urandom) and the `lookup` callbacks callers
// pass in.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/options.hpp"
#include "launcher/topology.hpp"

namespace xtrain::launcher {

using EnvList = std::vector<std::pair<std::string, std::string>>;
// Returns a variable's value in xrun's own environment, or nullopt.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// Facts shared by every instance of one job.
struct JobInfo {
  std::string jobId;
  std::string rendezvousDir;  // empty: XTRAIN_RENDEZVOUS_DIR is not set (instances on other hosts)
  std::string commBackend = "auto";
  int restartCount = 0;  // XTRAIN_RESTART_COUNT: 0 on the first attempt, k on the k-th restart
  int maxRestarts = 0;   // XTRAIN_MAX_RESTARTS: --max-restarts
  // With --min-instances (else 0 and empty: the variables are not set): the job's -n, which a
  // shrunk attempt has more of than XTRAIN_NUM_INSTANCES (XTRAIN_ORIGINAL_NUM_INSTANCES), and
  // --keep-global-batch (XTRAIN_KEEP_GLOBAL_BATCH).
  int originalNumInstances = 0;
  std::string keepGlobalBatch = {};
  // XTRAIN_CHECKPOINT_DIR_SEEN, on restarts only (else empty: not set): "1" when an instance of an
  // earlier attempt reported that it found its checkpoint directory (the file
  // kCheckpointDirSeenFile in the attempt's rendezvous directory), "0" when none did; empty also
  // when xrun cannot tell (an earlier attempt had no rendezvous directory on this host) and none
  // did.
  std::string checkpointDirSeen = {};
  // XTRAIN_JOB_SECRET: 64 random hex digits, in the instances' environment only (never on a
  // command line or in --dry-run's output); the comm layer authenticates the job's TCP
  // connections with it.
  std::string secret = {};
};

// The file an instance creates in XTRAIN_RENDEZVOUS_DIR once it has found its checkpoint directory
// (xtrain: tools/xtrain/checkpoint_dir.hpp; docs/launcher-environment.md, "Restarts").
inline constexpr const char* kCheckpointDirSeenFile = "checkpoint-dir-seen";

// The variable that carries JobInfo::secret.
inline constexpr const char* kJobSecretVariable = "XTRAIN_JOB_SECRET";

// 32 bytes of the kernel's randomness (getrandom) as 64 lowercase hex digits.
std::string makeJobSecret();

// A job id unique on this host and, in practice, across hosts: "<UTC yyyymmddThhmmss>-<pid>-<8 hex
// random>".
std::string makeJobId();

// The contract variables for `instance`, in a fixed order: XTRAIN_* then POPDIST_*.
EnvList instanceEnvironment(const Topology& topology, int instance, const JobInfo& job);

// The variables of instanceEnvironment() that are the same for every instance (used by engines that
// pass a common environment, e.g. mpirun -x).
EnvList commonEnvironment(const Topology& topology, const JobInfo& job);

// Every variable name xrun sets; -x may not name one of these.
const std::vector<std::string>& contractVariableNames();

// -x assignments resolved to values: VAR=VALUE as given; bare VAR takes xrun's value (skipped when
// unset). Throws UsageError when an assignment names a contract variable, saying which option sets
// it instead.
EnvList resolveUserEnvironment(const std::vector<EnvAssignment>& assignments,
                               const EnvLookup& lookup);

// Thread defaults for instances sharing a host's `cores` cores: OMP_NUM_THREADS = max(1, cores /
// instancesOnHost) and, with several instances on the host, OMP_WAIT_POLICY=PASSIVE (OpenMP threads
// that spin after a parallel region steal the cores the other instances need). Only variables set
// neither in `base` (xrun's environment) nor in `user` (-x) are returned.
EnvList threadDefaults(const std::vector<std::string>& base, const EnvList& user,
                       int instancesOnHost, unsigned cores);

// The full "NAME=VALUE" list for execve: `base` (xrun's environ), minus every variable of the
// contract that xrun's own environment carries (a nested xrun, or a stale shell), then `user`, then
// `contract`. Later entries replace earlier ones with the same name; order of first appearance is
// kept.
std::vector<std::string> buildEnvp(const std::vector<std::string>& base, const EnvList& user,
                                   const EnvList& contract);

// xrun's own environ as a list.
std::vector<std::string> currentEnviron();

// Looks up PATH-style: `program` with a '/' is taken as is; otherwise the first executable regular
// file in `pathVar`'s directories. Throws UsageError with the reason (not found, not executable, a
// directory) and errorExitCode() 127 or 126.
class ProgramError : public UsageError {
 public:
  ProgramError(int exitCode, const std::string& what) : UsageError(what), exitCode_(exitCode) {}
  int exitCode() const { return exitCode_; }

 private:
  int exitCode_;
};
std::string resolveProgram(const std::string& program, const std::string& pathVar);

}  // namespace xtrain::launcher
