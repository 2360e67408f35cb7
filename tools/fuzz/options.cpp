#include "options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "targets.hpp"

namespace xfuzz {

const char* const kUsage = R"(usage: xfuzz [options]

Seeded, reproducible fuzzing of the xtrain tools: mutated models, data sets, checkpoints, traces
and metrics files, command lines and XTRAIN_* variables with boundary values, and calls of the
Python package with hostile arguments. Every tool run must end with exit 0, 1 or 2 (no signal, no
timeout), leave its input files as they were and write nothing outside its scratch directory; the
plot scripts exit 0 or 2 without a traceback; a Python call returns or raises.

  --target T            model, data, checkpoint, cli, plot, env, python or all (all); a comma
                        list names several
  --seed S              seed of the run (1)
  --cases N             cases per target (100)
  --case K              run only case K (0-based) of the seed: reproduces a reported failure
  --bin-dir DIR         where xtrain, xckpt, xbench and xrun are (the directory of xfuzz itself)
  --scripts-dir DIR     where plot-trace and plot-metrics are (the source tree's scripts/)
  --python-dir DIR      the directory holding the built xtrain package (BINDIR/../python)
  --python PATH         the interpreter of the python target (/usr/bin/python3)
  --time-limit SECONDS  start no case after this long (no limit)
  --timeout SECONDS     per tool run; on expiry its process group is killed (10)
  --memory-limit MB     address-space limit of each tool run (4096)
  --work-dir DIR        where the scratch directories go ($TMPDIR or /tmp)
  --keep-dir DIR        where failing cases are kept (./xfuzz-failures)
  --save-pristine DIR   also copy the pristine inputs there (model.onnx, data.h5, ckpts/), e.g.
                        as seed corpora of the libFuzzer entry points
  -v, --verbose         print every command and how it ended
  -h, --help            this text

Exit codes: 0 no failure, 1 failures found (or the pristine inputs could not be made), 2 bad usage.
)";

namespace {

uint64_t parseCount(const std::string& flag, const std::string& v) {
  if (v.empty() || v[0] == '-') throw std::invalid_argument(flag + " needs a non-negative integer, got '" + v + "'");
  errno = 0;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') throw std::invalid_argument(flag + " needs a non-negative integer, got '" + v + "'");
  return n;
}

double parseSeconds(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(d) || d < 0)
    throw std::invalid_argument(flag + " needs a non-negative number of seconds, got '" + v + "'");
  return d;
}

}  // namespace

Options parseOptions(int argc, char** argv) {
  Options o;
  std::string target = "all";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") o.help = true;
    else if (a == "-v" || a == "--verbose") o.verbose = true;
    else if (a == "--target") target = value();
    else if (a == "--seed") o.seed = parseCount(a, value());
    else if (a == "--cases") o.cases = parseCount(a, value());
    else if (a == "--case") o.onlyCase = parseCount(a, value());
    else if (a == "--bin-dir") o.binDir = value();
    else if (a == "--scripts-dir") o.scriptsDir = value();
    else if (a == "--python-dir") o.pythonDir = value();
    else if (a == "--python") o.python = value();
    else if (a == "--time-limit") o.timeLimitSeconds = parseSeconds(a, value());
    else if (a == "--timeout") o.timeoutSeconds = parseSeconds(a, value());
    else if (a == "--memory-limit") o.memoryLimitMb = static_cast<long long>(parseCount(a, value()));
    else if (a == "--work-dir") o.workDir = value();
    else if (a == "--keep-dir") o.keepDir = value();
    else if (a == "--save-pristine") o.savePristine = value();
    else throw std::invalid_argument("unknown option '" + a + "' (see xfuzz --help)");
  }
  if (target == "all") {
    o.targets = allTargets();
  } else {
    for (size_t start = 0; start <= target.size();) {
      size_t end = target.find(',', start);
      if (end == std::string::npos) end = target.size();
      const std::string t = target.substr(start, end - start);
      if (!caseMakerFor(t))
        throw std::invalid_argument("--target must be model, data, checkpoint, cli, plot, env, python or all, got '" +
                                    target + "'");
      o.targets.push_back(t);
      start = end + 1;
    }
  }
  if (o.python.empty()) throw std::invalid_argument("--python needs the path of an interpreter");
  if (o.timeoutSeconds <= 0) throw std::invalid_argument("--timeout must be positive");
  if (o.timeoutSeconds > 3600) throw std::invalid_argument("--timeout is at most 3600 seconds");
  return o;
}

}  // namespace xfuzz
