// xfuzz: seeded fuzzing of the xtrain tools as subprocesses (see docs/fuzzing.md).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "options.hpp"
#include "pristine.hpp"
#include "runner.hpp"

namespace {

xfuzz::fs::path selfDir() {
  std::error_code ec;
  xfuzz::fs::path exe = xfuzz::fs::read_symlink("/proc/self/exe", ec);
  return ec ? xfuzz::fs::current_path() : exe.parent_path();
}

int run(const xfuzz::Options& o) {
  using namespace xfuzz;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();

  ToolRunner tools;
  tools.binDir = o.binDir.empty() ? selfDir() : fs::absolute(o.binDir);
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
  Pristine pristine;
  try {
    pristine = makePristine(tools, workRoot.path() / "pristine");
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
    for (const auto& target : o.targets) {
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
  for (const auto& t : o.targets) std::cout << " " << t;
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
