// xfuzz: seeded fuzzing of the xtrain tools as subprocesses (see docs/fuzzing.md).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <stdexcept>

#include "options.hpp"
#include "pristine.hpp"
#include "runner.hpp"

namespace {

xfuzz::fs::path selfDir() {
  std::error_code ec;
  xfuzz::fs::path exe = xfuzz::fs::read_symlink("/proc/self/exe", ec);
  return ec ? xfuzz::fs::current_path() : exe.parent_path();
}

// Drops from `targets` those whose programs are not there: with --target all, with a note; a
// target named on the command line must be runnable (false: bad usage).
bool usableTargets(const xfuzz::ToolRunner& tools, const xfuzz::Options& o, std::vector<std::string>& targets) {
  using namespace xfuzz;
  const bool all = o.targets == allTargets();
  auto missing = [&](const std::string& t) -> std::string {
    if (t == "plot" && (access((tools.scriptsDir / "plot-trace").c_str(), X_OK) != 0 ||
                        access((tools.scriptsDir / "plot-metrics").c_str(), X_OK) != 0))
      return "no plot-trace and plot-metrics in " + tools.scriptsDir.string() + " (--scripts-dir)";
    if (t == "python" && !fs::exists(tools.pythonDir / "xtrain" / "__init__.py"))
      return "no xtrain package in " + tools.pythonDir.string() + " (--python-dir; built with the target xtrain_python)";
    if (t == "python" && access(o.python.c_str(), X_OK) != 0) return "no interpreter " + o.python + " (--python)";
    return "";
  };
  std::vector<std::string> kept;
  for (const auto& t : targets) {
    const std::string why = missing(t);
    if (why.empty()) {
      kept.push_back(t);
    } else if (all) {
      std::cout << "xfuzz: skipping the " << t << " target: " << why << "\n";
    } else {
      std::cerr << "xfuzz: --target " << t << ": " << why << "\n";
      return false;
    }
  }
  targets = kept;
  return true;
}

// The python target's program with a valid call must train a step: otherwise every case would
// only test the harness's own set-up code.
void checkPythonProgram(const xfuzz::ToolRunner& tools, const xfuzz::Pristine& pristine, const xfuzz::fs::path& dir) {
  using namespace xfuzz;
  ScratchDir scratch(dir);
  writeFile(dir / "check.py", pythonProgram("run(session())", "0"));
  const fs::path log = dir / ".xfuzz-check.log";
  const RunResult r = tools.run({pristine.python, "check.py"}, dir, log, {}, std::chrono::seconds(60));
  const std::string out = tailOfFile(log, 20);
  if (r.ending != RunResult::Ending::Exited || r.exitCode != 0 || out.find("xfuzz-python: returned") == std::string::npos)
    throw std::runtime_error("the python target's program does not train with a valid call (" + r.describe() +
                             "):\n" + out);
}

int run(const xfuzz::Options& o) {
  using namespace xfuzz;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();

  ToolRunner tools;
  tools.binDir = o.binDir.empty() ? selfDir() : fs::absolute(o.binDir);
  tools.scriptsDir = o.scriptsDir.empty() ? fs::path(XFUZZ_SCRIPTS_DIR) : fs::absolute(o.scriptsDir);
  tools.pythonDir = o.pythonDir.empty() ? tools.binDir.parent_path() / "python" : fs::absolute(o.pythonDir);
  tools.timeout = std::chrono::milliseconds(static_cast<long long>(o.timeoutSeconds * 1000));
  tools.addressSpaceMb = o.memoryLimitMb;

  // A wrong --bin-dir is bad usage, not a tool being rebuilt: say so at once instead of waiting.
  if (!fs::is_directory(tools.binDir)) {
    std::cerr << "xfuzz: --bin-dir " << tools.binDir.string() << " is not a directory\n";
    return 2;
  }
  const char* tmp = getenv("TMPDIR");
  const fs::path workParent = !o.workDir.empty() ? fs::path(o.workDir) : fs::path(tmp && *tmp ? tmp : "/tmp");
  // The work root is removed on every way out (RAII); failing cases were moved out of it before.
  ScratchDir workRoot(makeUniqueDir(fs::absolute(workParent), "xfuzz"));
  // matplotlib's font cache, made by the first plot case and read by the others (named .xfuzz* so
  // the work root's snapshots skip it).
  tools.mplConfigDir = workRoot.path() / ".xfuzz-matplotlib";
  fs::create_directories(tools.mplConfigDir);
  std::vector<std::string> targets = o.targets;
  if (!usableTargets(tools, o, targets)) return 2;
  Pristine pristine;
  try {
    pristine = makePristine(tools, workRoot.path() / "pristine");
    pristine.python = o.python;
    if (std::find(targets.begin(), targets.end(), "python") != targets.end())
      checkPythonProgram(tools, pristine, workRoot.path() / ".xfuzz-python-check");
  } catch (const std::exception& e) {
    std::cerr << "xfuzz: " << e.what() << "\n";
    return 1;
  }
  if (!o.savePristine.empty()) {
    copyTree(pristine.dir, fs::absolute(o.savePristine));
    std::cout << "xfuzz: pristine inputs copied to " << o.savePristine << "\n";
  }
  if (!pristine.deviceNodes)
    std::cout << "xfuzz: cannot make device nodes here (no CAP_MKNOD): the cli target runs without them\n";

  RunConfig cfg;
  cfg.seed = o.seed;
  cfg.workRoot = workRoot.path();
  cfg.keepDir = fs::absolute(o.keepDir);
  cfg.verbose = o.verbose;

  uint64_t ran = 0, failed = 0;
  bool outOfTime = false;
  const uint64_t first = o.onlyCase.value_or(0);
  const uint64_t last = o.onlyCase ? *o.onlyCase + 1 : o.cases;
  // Case-major order: under a time limit every target still gets its share of cases.
  for (uint64_t k = first; k < last && !outOfTime; ++k) {
    for (const auto& target : targets) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (stopRequested() || (o.timeLimitSeconds > 0 && elapsed >= o.timeLimitSeconds)) {
        outOfTime = true;
        break;
      }
      cfg.target = target;
      ++ran;
      try {
        if (!runCase(tools, cfg, pristine, k)) ++failed;
      } catch (const std::exception& e) {  // a harness defect: say so, count it, go on
        std::cout << "FAIL target=" << target << " seed=" << o.seed << " case=" << k
                  << ": harness error: " << e.what() << std::endl;
        ++failed;
      }
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << "xfuzz: " << ran << " cases (targets:";
  for (const auto& t : targets) std::cout << " " << t;
  std::cout << "; seed " << o.seed << ") in " << seconds << " s" << (outOfTime ? ", stopped by --time-limit" : "")
            << ": " << failed << " failed" << (failed ? ", kept in " + cfg.keepDir.string() : "") << "\n";
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A tool that dies of SIGPIPE must not take the harness along; the harness writes no pipes itself.
  signal(SIGPIPE, SIG_IGN);
  struct sigaction stop {};
  stop.sa_handler = [](int) { xfuzz::requestStop(); };
  sigaction(SIGINT, &stop, nullptr);
  sigaction(SIGTERM, &stop, nullptr);
  xfuzz::Options o;
  try {
    o = xfuzz::parseOptions(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::cerr << "xfuzz: " << e.what() << "\n";
    return 2;
  }
  if (o.help) {
    std::cout << xfuzz::kUsage;
    return 0;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "xfuzz: " << e.what() << "\n";
    return 1;
  }
}
