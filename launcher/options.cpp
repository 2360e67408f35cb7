#include "launcher/options.hpp"

#include <limits>

#include "common/env_value.hpp"
#include "common/flag_table.hpp"
#include "common/flag_values.hpp"

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

using flags::Given;
using O = Options;

// Counts: "-n expects a whole number, got 'x'", "-n must be at least 1, got 0".
flags::Parser<int> count(int minimum) {
  return flags::integer<int>(minimum, std::numeric_limits<int>::max(),
                             {.notInteger = "{flag} expects a whole number, got '{text}'",
                              .belowMinimum = "{flag} must be at least {min}, got {value}",
                              .aboveMaximum = "{flag} expects a whole number, got '{text}'"});
}

// Words: "--engine must be one of auto, local, mpirun, srun; got 'x'".
constexpr const char* kOneOf = "{flag} must be one of {choices}; got '{text}'";

void addLayoutFlags(flags::FlagTable<O>& t) {
  t.value("-n", "N", &O::numInstances, count(1))
      .alias("--num-instances")
      .section("Layout:\n")
      .help("instances to start (default 1)");
  t.value("--num-replicas", "R", &O::numReplicas, count(1))
      .help("replicas in total (default N; a multiple of N)");
  t.value("--ipus-per-replica", "K", &O::ipusPerReplica, count(1))
      .help("simulated IPUs per replica (default 1; a power of two)");
  t.custom("-H", "h1,h2",
           [](O& o, const Given& g) {
             auto hosts = splitComma(g.text);
             if (hosts.empty()) {
               throw UsageError("{} expects host names, e.g. {} h1,h2", g.flag, g.flag);
             }
             o.hosts.insert(o.hosts.end(), hosts.begin(), hosts.end());
           })
      .alias("--host")
      .help("hosts (engine mpirun); --hostfile F reads one per line");
  t.value("--hostfile", "F", &O::hostfile, flags::text());  // in -H's help
  t.value("--engine", "E", &O::engine,
          flags::choice<Engine>({{"auto", Engine::Auto},
                                 {"local", Engine::Local},
                                 {"mpirun", Engine::Mpirun},
                                 {"srun", Engine::Srun}},
                                kOneOf))
      .help(
          "auto|local|mpirun|srun (default auto: mpirun with hosts,\n"
          "srun inside Slurm, else local); with srun the instances\n"
          "meet in a job directory on one node here, else over PMIx\n"
          "(xrun adds --mpi=pmix) and xrun says which");
  t.custom("--mpi-global-args", "\"...\"", [](O& o, const Given& g) {
     auto w = splitShellWords(g.text);
     o.mpiGlobalArgs.insert(o.mpiGlobalArgs.end(), w.begin(), w.end());
   }).help("extra mpirun (or srun) arguments");
  t.custom("--mpi-local-args", "\"...\"", [](O& o, const Given& g) {
     auto w = splitShellWords(g.text);
     o.mpiLocalArgs.insert(o.mpiLocalArgs.end(), w.begin(), w.end());
   }).help("extra arguments per mpirun app context");
  t.custom("--comm-backend", "B",
           [](O& o, const Given& g) {
             o.commBackend = flags::word({"auto", "shm", "gloo", "mpi"}, kOneOf)(g.flag, g.text);
             o.commBackendGiven = true;
           })
      .help(
          "auto|shm|gloo|mpi, passed as XTRAIN_COMM_BACKEND\n"
          "(default: xrun's XTRAIN_COMM_BACKEND, else auto)");
  t.custom("-x", "VAR[=VALUE]", [](O& o, const Given& g) {
     auto eq = g.text.find('=');
     EnvAssignment a;
     a.name = g.text.substr(0, eq);
     if (eq != std::string::npos) a.value = g.text.substr(eq + 1);
     if (!validEnvName(a.name)) {
       throw UsageError(
           "{} expects VAR or VAR=VALUE with VAR made of letters, digits and '_'; got "
           "'{}'",
           g.flag, g.text);
     }
     o.env.push_back(a);
   }).help("pass VAR (xrun's value, or VALUE) to every instance");
}

void addOutputFlags(flags::FlagTable<O>& t) {
  t.toggle("--tag-output", &O::tagOutput)
      .section("\nOutput:\n")
      .help(
          "prefix each line with its instance, \"[i] \" (default;\n"
          "mpirun's \"[1,i]<stdout>:\" and srun's \"i: \" with those engines)");
  t.custom("--no-tag-output", "", [](O& o, const Given&) {
     o.tagOutput = false;
   }).help("print lines untagged");
  t.value("--tag-format", "F", &O::tagFormat,
          flags::choice<TagFormat>(
              {{"xrun", TagFormat::Xrun}, {"mpi", TagFormat::Mpi}},
              "{flag} must be 'xrun' ([i] ) or 'mpi' ([1,i]<stdout>:); got '{text}'"))
      .help("xrun (\"[i] \") or mpi (\"[1,i]<stdout>:\")");
  t.value("--only-output-from-instance", "I", &O::onlyOutputFromInstance, count(0))
      .help(
          "print only instance I's output (and every instance's\n"
          "stderr lines that look like errors)");
  t.value("--output-dir", "DIR", &O::outputDir, flags::nonEmpty("{flag} expects a directory"))
      .help("also write DIR/instance-<i>.out and .err");
  t.toggle("--print-topology", &O::printTopology).help("print the layout before starting");
  t.toggle("--dry-run", &O::dryRun).help("print the layout and the exact commands; start nothing");
}

void addEndingFlags(flags::FlagTable<O>& t) {
  t.value("--timeout", "SECONDS", &O::timeoutSeconds, flags::duration())
      .section(
          "\nEnding (SECONDS: a number of seconds such as 30 or 0.5, or with a unit: 200ms, 5m,\n"
          "2h; at most 30 days):\n")
      .help("end the whole job after that long (exit code 124)");
  const DurationRange grace{
      false, std::chrono::milliseconds(static_cast<int64_t>(kMaxGracePeriodSeconds * 1000))};
  t.value("--grace-period", "SECONDS", &O::gracePeriodSeconds, flags::duration(grace))
      .help(
          "time the instances get to end after SIGTERM to xrun or\n"
          "a preempted instance, before SIGKILL (default 30; at\n"
          "most 5 of it after a failure or the timeout)");
}

void addRestartFlags(flags::FlagTable<O>& t) {
  t.value("--max-restarts", "N", &O::maxRestarts, count(0))
      .section("\nRestarts:\n")
      .help(
          "when an instance fails, end the attempt, then start\n"
          "every instance again, up to N times (default 0); the\n"
          "instances see XTRAIN_RESTART_COUNT (0, 1, ...)");
  t.value("--restart-delay", "SECONDS", &O::restartDelaySeconds,
          flags::duration(DurationRange{true}))
      .help("wait that long before each restart (default 0)");
  t.value("--restart-window", "SECONDS", &O::restartWindowSeconds, flags::duration())
      .help(
          "count only the failures of the last SECONDS against N\n"
          "(default: every failure of the job counts)");
  t.value("--min-instances", "M", &O::minInstances, count(1))
      .help(
          "shrink: an instance slot that was the first to fail, or\n"
          "hung, in 2 attempts in a row is dropped at the next\n"
          "restart (a lost host at once), and the job goes on with\n"
          "fewer instances, down to M");
  t.value("--keep-global-batch", "K", &O::keepGlobalBatch,
          flags::choice<KeepGlobalBatch>({{"accumulation", KeepGlobalBatch::Accumulation},
                                          {"micro-batch", KeepGlobalBatch::MicroBatch},
                                          {"no", KeepGlobalBatch::No}},
                                         kOneOf))
      .help(
          "accumulation|micro-batch|no (default accumulation): how\n"
          "a shrunk xtrain keeps the global batch (it raises\n"
          "--accumulation-factor or --micro-batch-size); with\n"
          "accumulation or micro-batch the instance count stays a\n"
          "divisor of -n");
  t.value("--grow-after", "SECONDS", &O::growAfterSeconds, flags::duration())
      .help(
          "grow back: after SECONDS on fewer instances, ask them\n"
          "to stop at a checkpoint (SIGUSR1, as a preemption) and\n"
          "start every slot again (the program must handle it,\n"
          "as xtrain does)");
  t.toggle("-h", &O::help).alias("--help").section("\n").help("this text");
  t.toggle("--version", &O::version).help("xrun's version");
}

// xrun's flags, one row each: the parser and the usage rows are made from it. The defaults are
// Options' own (tests and the planner build Options directly).
const flags::FlagTable<Options>& xrunFlags() {
  static const flags::FlagTable<Options> table = [] {
    flags::FlagTable<O> t(
        flags::Syntax{.unknown = "unknown option '{arg}'{hint}; see xrun --help (the program and "
                                 "its own options go after the xrun options, or after '--')",
                      .needsValue = "option {flag} needs a value",
                      .takesNoValue = "option {flag} takes no value, got '{arg}'",
                      .shortInline = true,
                      .programFollows = true},
        flags::UsageLayout{.indent = 2, .longOnlyIndent = 4, .column = 31, .width = 85});
    addLayoutFlags(t);
    addOutputFlags(t);
    addEndingFlags(t);
    addRestartFlags(t);
    return t;
  }();
  return table;
}

}  // namespace

Options parseOptions(const std::vector<std::string>& args) {
  std::vector<std::string> program;
  Options o;
  try {
    o = xrunFlags().parse(args, &program);
  } catch (const flags::FlagError& e) {
    throw UsageError(std::string(e.what()));
  }
  if (!program.empty()) {
    o.program = program.front();
    o.programArgs.assign(program.begin() + 1, program.end());
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

)" + xrunFlags().usage() +
         R"(
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
