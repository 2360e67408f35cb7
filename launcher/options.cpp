#include "launcher/options.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>

#include "common/env_value.hpp"

namespace xtrain::launcher {

const char* toString(Engine engine) {
  switch (engine) {
    case Engine::Auto: return "auto";
    case Engine::Local: return "local";
    case Engine::Mpirun: return "mpirun";
    case Engine::Srun: return "srun";
  }
  return "?";
}

const char* toString(KeepGlobalBatch keep) {
  switch (keep) {
    case KeepGlobalBatch::Accumulation: return "accumulation";
    case KeepGlobalBatch::MicroBatch: return "micro-batch";
    case KeepGlobalBatch::No: return "no";
  }
  return "?";
}

namespace {

int parseInt(const std::string& option, const std::string& text, int minimum) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    throw UsageError("{} expects a whole number, got '{}'", option, text);
  }
  if (value < minimum) throw UsageError("{} must be at least {}, got {}", option, minimum, value);
  return value;
}

// A duration flag, read as every duration of xtrain's is (common/env_value.hpp: 30, 0.5, 200ms,
// 5m; at most 30 days, so that no deadline overflows the clock).
double parseSeconds(const std::string& option, const std::string& text, DurationRange range = {}) {
  try {
    return parseDurationSeconds(text, option, range);
  } catch (const error& e) {
    throw UsageError(e.what());
  }
}

// Like parseSeconds, but 0 is allowed.
double parseDelay(const std::string& option, const std::string& text) {
  return parseSeconds(option, text, DurationRange{true});
}

std::vector<std::string> splitComma(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool validEnvName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

struct OptionSpec {
  bool takesValue;
  std::function<void(Options&, const std::string& name, const std::string& value)> apply;
};

const std::map<std::string, OptionSpec>& optionTable() {
  static const std::map<std::string, OptionSpec> table = [] {
    std::map<std::string, OptionSpec> t;
    auto numInstances =
        OptionSpec{true, [](Options& o, const std::string& n, const std::string& v) {
                     o.numInstances = parseInt(n, v, 1);
                   }};
    t["-n"] = numInstances;
    t["--num-instances"] = numInstances;
    t["--num-replicas"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                             o.numReplicas = parseInt(n, v, 1);
                           }};
    t["--ipus-per-replica"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                                 o.ipusPerReplica = parseInt(n, v, 1);
                               }};
    auto host = OptionSpec{true, [](Options& o, const std::string& n, const std::string& v) {
                             auto hosts = splitComma(v);
                             if (hosts.empty())
                               throw UsageError("{} expects host names, e.g. {} h1,h2", n, n);
                             o.hosts.insert(o.hosts.end(), hosts.begin(), hosts.end());
                           }};
    t["-H"] = host;
    t["--host"] = host;
    t["--hostfile"] = {
        true, [](Options& o, const std::string&, const std::string& v) { o.hostfile = v; }};
    t["--engine"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                       if (v == "auto")
                         o.engine = Engine::Auto;
                       else if (v == "local")
                         o.engine = Engine::Local;
                       else if (v == "mpirun")
                         o.engine = Engine::Mpirun;
                       else if (v == "srun")
                         o.engine = Engine::Srun;
                       else
                         throw UsageError("{} must be one of auto, local, mpirun, srun; got '{}'",
                                          n, v);
                     }};
    t["--mpi-global-args"] = {true, [](Options& o, const std::string&, const std::string& v) {
                                auto w = splitShellWords(v);
                                o.mpiGlobalArgs.insert(o.mpiGlobalArgs.end(), w.begin(), w.end());
                              }};
    t["--mpi-local-args"] = {true, [](Options& o, const std::string&, const std::string& v) {
                               auto w = splitShellWords(v);
                               o.mpiLocalArgs.insert(o.mpiLocalArgs.end(), w.begin(), w.end());
                             }};
    t["--only-output-from-instance"] = {true,
                                        [](Options& o, const std::string& n, const std::string& v) {
                                          o.onlyOutputFromInstance = parseInt(n, v, 0);
                                        }};
    t["--output-dir"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                           if (v.empty()) throw UsageError("{} expects a directory", n);
                           o.outputDir = v;
                         }};
    t["--tag-output"] = {
        false, [](Options& o, const std::string&, const std::string&) { o.tagOutput = true; }};
    t["--no-tag-output"] = {
        false, [](Options& o, const std::string&, const std::string&) { o.tagOutput = false; }};
    t["--tag-format"] = {
        true, [](Options& o, const std::string& n, const std::string& v) {
          if (v == "xrun")
            o.tagFormat = TagFormat::Xrun;
          else if (v == "mpi")
            o.tagFormat = TagFormat::Mpi;
          else
            throw UsageError("{} must be 'xrun' ([i] ) or 'mpi' ([1,i]<stdout>:); got '{}'", n, v);
        }};
    t["--print-topology"] = {
        false, [](Options& o, const std::string&, const std::string&) { o.printTopology = true; }};
    t["--dry-run"] = {false,
                      [](Options& o, const std::string&, const std::string&) { o.dryRun = true; }};
    t["--timeout"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                        o.timeoutSeconds = parseSeconds(n, v);
                      }};
    t["--grace-period"] = {
        true, [](Options& o, const std::string& n, const std::string& v) {
          o.gracePeriodSeconds = parseSeconds(
              n, v,
              DurationRange{false, std::chrono::milliseconds(
                                       static_cast<int64_t>(kMaxGracePeriodSeconds * 1000))});
        }};
    t["--max-restarts"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                             o.maxRestarts = parseInt(n, v, 0);
                           }};
    t["--restart-delay"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                              o.restartDelaySeconds = parseDelay(n, v);
                            }};
    t["--restart-window"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                               o.restartWindowSeconds = parseSeconds(n, v);
                             }};
    t["--min-instances"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                              o.minInstances = parseInt(n, v, 1);
                            }};
    t["--grow-after"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                           o.growAfterSeconds = parseSeconds(n, v);
                         }};
    t["--keep-global-batch"] = {
        true, [](Options& o, const std::string& n, const std::string& v) {
          if (v == "accumulation")
            o.keepGlobalBatch = KeepGlobalBatch::Accumulation;
          else if (v == "micro-batch")
            o.keepGlobalBatch = KeepGlobalBatch::MicroBatch;
          else if (v == "no")
            o.keepGlobalBatch = KeepGlobalBatch::No;
          else
            throw UsageError("{} must be one of accumulation, micro-batch, no; got '{}'", n, v);
        }};
    t["-x"] = {
        true, [](Options& o, const std::string& n, const std::string& v) {
          auto eq = v.find('=');
          EnvAssignment a;
          a.name = v.substr(0, eq);
          if (eq != std::string::npos) a.value = v.substr(eq + 1);
          if (!validEnvName(a.name)) {
            throw UsageError(
                "{} expects VAR or VAR=VALUE with VAR made of letters, digits and '_'; got '{}'", n,
                v);
          }
          o.env.push_back(a);
        }};
    t["--comm-backend"] = {true, [](Options& o, const std::string& n, const std::string& v) {
                             if (v != "auto" && v != "shm" && v != "gloo" && v != "mpi") {
                               throw UsageError("{} must be one of auto, shm, gloo, mpi; got '{}'",
                                                n, v);
                             }
                             o.commBackend = v;
                             o.commBackendGiven = true;
                           }};
    auto help = OptionSpec{
        false, [](Options& o, const std::string&, const std::string&) { o.help = true; }};
    t["-h"] = help;
    t["--help"] = help;
    t["--version"] = {false,
                      [](Options& o, const std::string&, const std::string&) { o.version = true; }};
    return t;
  }();
  return table;
}

// Long names close to `name`, for "did you mean".
std::string suggestion(const std::string& name) {
  std::string best;
  size_t bestScore = 0;
  for (const auto& [candidate, spec] : optionTable()) {
    if (candidate.size() < 3) continue;
    // Longest common prefix after the dashes, a cheap and predictable measure.
    size_t i = 0;
    while (i < name.size() && i < candidate.size() && name[i] == candidate[i]) ++i;
    if (i > bestScore && i >= 4) {
      bestScore = i;
      best = candidate;
    }
  }
  return best;
}

}  // namespace

Options parseOptions(const std::vector<std::string>& args) {
  Options o;
  const auto& table = optionTable();
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // the program

    std::string name = arg;
    std::optional<std::string> inlineValue;
    if (arg.rfind("--", 0) == 0) {
      auto eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        inlineValue = arg.substr(eq + 1);
      }
    } else if (arg.size() > 2) {
      // -n4, -xVAR=1, -Hh1
      name = arg.substr(0, 2);
      inlineValue = arg.substr(2);
    }
    auto it = table.find(name);
    if (it == table.end()) {
      std::string hint = suggestion(name);
      throw UsageError(
          "unknown option '{}'{}; see xrun --help (the program and its own options go after the "
          "xrun options, or after '--')",
          arg, hint.empty() ? std::string() : " (did you mean " + hint + "?)");
    }
    const OptionSpec& spec = it->second;
    std::string value;
    if (spec.takesValue) {
      if (inlineValue) {
        value = *inlineValue;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        throw UsageError("option {} needs a value", name);
      }
    } else if (inlineValue) {
      throw UsageError("option {} takes no value, got '{}'", name, arg);
    }
    spec.apply(o, name, value);
  }
  if (i < args.size()) {
    o.program = args[i];
    o.programArgs.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  }
  if (o.program.empty() && !o.help && !o.version) {
    throw UsageError(
        "no program given; usage: xrun [options] [--] PROGRAM [ARGS...], e.g. xrun -n 2 hostname");
  }
  if (!o.hosts.empty() && !o.hostfile.empty()) {
    throw UsageError("give hosts with -H/--host or --hostfile, not both");
  }
  if (o.maxRestarts == 0 && (o.restartDelaySeconds > 0 || o.restartWindowSeconds)) {
    throw UsageError("{} applies to restarts, but --max-restarts is 0; give --max-restarts N too",
                     o.restartWindowSeconds ? "--restart-window" : "--restart-delay");
  }
  if (o.minInstances) {
    if (*o.minInstances > o.numInstances) {
      throw UsageError(
          "--min-instances {} is larger than -n {}: a job can shrink to at most its own size; give "
          "--min-instances between 1 and {}",
          *o.minInstances, o.numInstances, o.numInstances);
    }
    if (o.maxRestarts == 0) {
      throw UsageError(
          "--min-instances applies to restarts (a job shrinks when it starts again), but "
          "--max-restarts is 0; give --max-restarts N too");
    }
  } else if (o.keepGlobalBatch || o.growAfterSeconds) {
    throw UsageError("{} applies to a job that shrinks; give --min-instances M too",
                     o.keepGlobalBatch ? "--keep-global-batch" : "--grow-after");
  }
  if (o.onlyOutputFromInstance && *o.onlyOutputFromInstance >= o.numInstances) {
    throw UsageError("--only-output-from-instance {} names no instance: instances are 0..{}",
                     *o.onlyOutputFromInstance, o.numInstances - 1);
  }
  return o;
}

std::vector<std::string> splitShellWords(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  bool inWord = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord) words.push_back(cur);
      cur.clear();
      inWord = false;
    } else if (c == '\'') {
      auto close = text.find('\'', i + 1);
      if (close == std::string::npos) throw UsageError("unterminated ' in \"{}\"", text);
      cur += text.substr(i + 1, close - i - 1);
      i = close;
      inWord = true;
    } else if (c == '"') {
      ++i;
      for (; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size() &&
            (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$' ||
             text[i + 1] == '`')) {
          ++i;
        }
        cur += text[i];
      }
      if (i >= text.size()) throw UsageError("unterminated \" in '{}'", text);
      inWord = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      cur += text[++i];
      inWord = true;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) words.push_back(cur);
  return words;
}

std::string shellQuote(const std::string& word) {
  if (word.empty()) return "''";
  bool plain = true;
  for (char c : word) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("_-./=:,+@%").find(c) != std::string_view::npos;
    if (!ok) plain = false;
  }
  if (plain) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string helpText() {
  return R"(Usage: xrun [options] [--] PROGRAM [ARGS...]

Starts PROGRAM as a job of instances, gives each its replicas and simulated IPUs
(environment: docs/launcher-environment.md), shows their output tagged with the
instance, and ends the whole job when an instance fails.

Layout:
  -n, --num-instances N        instances to start (default 1)
      --num-replicas R         replicas in total (default N; a multiple of N)
      --ipus-per-replica K     simulated IPUs per replica (default 1; a power of two)
  -H, --host h1,h2             hosts (engine mpirun); --hostfile F reads one per line
      --engine E               auto|local|mpirun|srun (default auto: mpirun with hosts,
                               srun inside Slurm, else local); with srun the instances
                               meet in a job directory on one node here, else over PMIx
                               (xrun adds --mpi=pmix) and xrun says which
      --mpi-global-args "..."  extra mpirun (or srun) arguments
      --mpi-local-args "..."   extra arguments per mpirun app context
      --comm-backend B         auto|shm|gloo|mpi, passed as XTRAIN_COMM_BACKEND
                               (default: xrun's XTRAIN_COMM_BACKEND, else auto)
  -x VAR[=VALUE]               pass VAR (xrun's value, or VALUE) to every instance

Output:
      --tag-output             prefix each line with its instance, "[i] " (default;
                               mpirun's "[1,i]<stdout>:" and srun's "i: " with those engines)
      --no-tag-output          print lines untagged
      --tag-format F           xrun ("[i] ") or mpi ("[1,i]<stdout>:")
      --only-output-from-instance I
                               print only instance I's output (and every instance's
                               stderr lines that look like errors)
      --output-dir DIR         also write DIR/instance-<i>.out and .err
      --print-topology         print the layout before starting
      --dry-run                print the layout and the exact commands; start nothing

Ending (SECONDS: a number of seconds such as 30 or 0.5, or with a unit: 200ms, 5m,
2h; at most 30 days):
      --timeout SECONDS        end the whole job after that long (exit code 124)
      --grace-period SECONDS   time the instances get to end after SIGTERM to xrun or
                               a preempted instance, before SIGKILL (default 30; at
                               most 5 of it after a failure or the timeout)

Restarts:
      --max-restarts N         when an instance fails, end the attempt, then start
                               every instance again, up to N times (default 0); the
                               instances see XTRAIN_RESTART_COUNT (0, 1, ...)
      --restart-delay SECONDS  wait that long before each restart (default 0)
      --restart-window SECONDS count only the failures of the last SECONDS against N
                               (default: every failure of the job counts)
      --min-instances M        shrink: an instance slot that was the first to fail, or
                               hung, in 2 attempts in a row is dropped at the next
                               restart (a lost host at once), and the job goes on with
                               fewer instances, down to M
      --keep-global-batch K    accumulation|micro-batch|no (default accumulation): how
                               a shrunk xtrain keeps the global batch (it raises
                               --accumulation-factor or --micro-batch-size); with
                               accumulation or micro-batch the instance count stays a
                               divisor of -n
      --grow-after SECONDS     grow back: after SECONDS on fewer instances, ask them
                               to stop at a checkpoint (SIGUSR1, as a preemption) and
                               start every slot again (the program must handle it,
                               as xtrain does)

  -h, --help                   this text
      --version                xrun's version

When an instance exits non-zero or dies by a signal, xrun stops the others and
exits with that instance's code (128+signal for a signal), unless --max-restarts
allows a restart: then the exit code is the last attempt's. SIGINT, SIGTERM and
SIGHUP sent to xrun are forwarded to every instance's process group, SIGUSR1 and
SIGUSR2 to every instance (with mpirun or srun: to the engine, which forwards
them). SIGUSR1 and SIGTERM are preemption requests to xtrain, which saves a
checkpoint and exits with 75; xrun exits with 75 when every instance did.
SIGQUIT (kill -QUIT) prints a hang report: each instance's last
collectives and which instance holds the job up; the job goes on. The same
report is printed when a collective times out or mismatches and at --timeout.
Usage errors exit with 2.
)";
}

}  // namespace xtrain::launcher
