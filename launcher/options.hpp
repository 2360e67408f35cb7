// xrun's command line: `xrun [options] [--] PROGRAM [ARGS...]`, with poprun's long option names.
//
// Parsing is pure: no environment, no file system (the hostfile is read later, by the planner's
// caller). Every problem throws UsageError whose message names the option and says what would work;
// xrun prints it and exits with kUsageExitCode.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::launcher {

inline constexpr int kUsageExitCode = 2;
// --grace-period's bound, and the part of it a failure or --timeout waits before SIGKILL (so a
// failed job ends within 10 s, to be restarted or reported).
inline constexpr double kMaxGracePeriodSeconds = 3600;
inline constexpr double kFailureGraceSeconds = 5;

// A bad command line or an impossible layout: the user can fix it.
class UsageError : public xtrain::error {
 public:
  using error::error;
};

// How instances are started. Auto: mpirun when hosts are given, srun inside a Slurm allocation,
// else local.
enum class Engine { Auto, Local, Mpirun, Srun };
const char* toString(Engine engine);

// --keep-global-batch: how a job shrunk by --min-instances keeps its global batch (the instances
// read XTRAIN_KEEP_GLOBAL_BATCH; xtrain raises --accumulation-factor or --micro-batch-size).
enum class KeepGlobalBatch { Accumulation, MicroBatch, No };
const char* toString(KeepGlobalBatch keep);

// `[i] ` (xrun) or Open MPI's `[1,i]<stdout>:` (mpi).
enum class TagFormat { Xrun, Mpi };

// -x VAR (pass xrun's value of VAR) or -x VAR=VALUE.
struct EnvAssignment {
  std::string name;
  std::optional<std::string> value;
};

struct Options {
  int numInstances = 1;
  std::optional<int> numReplicas;  // default: numInstances
  int ipusPerReplica = 1;

  std::vector<std::string> hosts;  // -H/--host h1,h2 (repeatable)
  std::string hostfile;            // --hostfile F
  Engine engine = Engine::Auto;
  std::vector<std::string> mpiGlobalArgs;  // --mpi-global-args "...", split like a shell would
  std::vector<std::string> mpiLocalArgs;   // --mpi-local-args "..."

  std::optional<int> onlyOutputFromInstance;
  std::string outputDir;
  bool tagOutput = true;
  TagFormat tagFormat = TagFormat::Xrun;
  bool printTopology = false;
  bool dryRun = false;

  std::optional<double> timeoutSeconds;  // end the whole job after this long
  // SIGTERM -> SIGKILL when the job is asked to stop (SIGTERM to xrun, an instance preempted); at
  // most kFailureGraceSeconds of it after a failure or --timeout.
  double gracePeriodSeconds = 30.0;

  // Restarts (launcher/restart_policy.hpp): after a failed attempt, start every instance again, up
  // to maxRestarts times (counting only failures within restartWindowSeconds when set), waiting
  // restartDelaySeconds first.
  int maxRestarts = 0;
  double restartDelaySeconds = 0;
  std::optional<double> restartWindowSeconds;
  // Shrinking (launcher/restart_policy.hpp, planShrink): a slot that keeps failing is dropped at a
  // restart, down to minInstances instances; unset: every restart starts every instance.
  std::optional<int> minInstances;
  std::optional<KeepGlobalBatch> keepGlobalBatch;  // default Accumulation (with minInstances)
  // Growing back: an attempt that runs shrunk is asked, after this long, to stop at a checkpoint
  // (SIGUSR1, the preemption request), and the job starts again on every slot. Unset: never.
  std::optional<double> growAfterSeconds;

  std::vector<EnvAssignment> env;  // -x, in command-line order
  // --comm-backend; when not given, makePlan takes XTRAIN_COMM_BACKEND from xrun's environment
  // (docs/launcher-environment.md), else "auto".
  std::string commBackend = "auto";
  bool commBackendGiven = false;

  bool help = false;
  bool version = false;

  std::string program;
  std::vector<std::string> programArgs;
};

// Parses the arguments after argv[0]. Throws UsageError. With --help or --version no program is
// required.
Options parseOptions(const std::vector<std::string>& args);

// Splits "a 'b c' \"d\\\"e\"" into words the way a POSIX shell would (quotes and backslashes; no
// expansion). Throws UsageError on an unterminated quote.
std::vector<std::string> splitShellWords(const std::string& text);

// Quotes a word for a POSIX shell when it needs it (used by --dry-run).
std::string shellQuote(const std::string& word);

// The --help text.
std::string helpText();

}  // namespace xtrain::launcher
