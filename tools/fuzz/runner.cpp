#include "runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <thread>

namespace xfuzz {

namespace {

bool brokenByRebuild(const RunResult& r, const fs::path& logPath) {
  if (r.ending == RunResult::Ending::NotStarted) return true;
  if (r.ending != RunResult::Ending::Exited || r.exitCode != 127) return false;
  return tailOfFile(logPath, 5).find("error while loading shared libraries") != std::string::npos;
}

}  // namespace

fs::path ToolRunner::location(const std::string& tool) const {
  if (tool.find('/') != std::string::npos) return tool;
  if (tool.rfind("plot-", 0) == 0) return scriptsDir / tool;
  return binDir / tool;
}

std::string reproduceLine(const ToolRunner& tools, const Command& cmd) {
  std::string line;
  for (const auto& [k, v] : cmd.env) line += k + "=" + shellLine({v}) + " ";
  std::vector<std::string> args = cmd.args;
  args[0] = tools.location(args[0]).string();
  return line + shellLine(args);
}

std::string ToolRunner::resolve(const std::string& tool, Clock::time_point deadline) const {
  if (tool.find('/') != std::string::npos) return tool;
  const fs::path p = location(tool);
  // Another engineer's rebuild may replace the binary under us: wait for it rather than fail.
  bool said = false;
  while (access(p.c_str(), X_OK) != 0 && Clock::now() < deadline && !stopRequested()) {
    if (!said) std::cerr << "xfuzz: " << p.string() << " is missing; waiting for it (being rebuilt?)\n";
    said = true;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return p.string();
}

RunResult ToolRunner::run(const std::vector<std::string>& args, const fs::path& workDir, const fs::path& logPath,
                          const std::map<std::string, std::string>& env,
                          std::chrono::milliseconds timeoutAtLeast) const {
  RunSpec spec;
  spec.argv = args;
  // All waiting for a tool that is being rebuilt shares one bound of two minutes.
  const auto deadline = Clock::now() + std::chrono::minutes(2);
  spec.argv[0] = resolve(args[0], deadline);
  spec.workDir = workDir.string();
  spec.logPath = logPath.string();
  // TMPDIR and HOME inside the case directory: what a tool writes to either stays in its scratch
  // space (and is removed with it) instead of the shared /tmp or the user's home.
  const fs::path tmp = workDir / ".xfuzz-tmp", home = workDir / ".xfuzz-home";
  fs::create_directories(tmp);
  fs::create_directories(home);
  // A private IPU pool (its lock files) per run: a fuzz case must not hold an IPU that a test of the
  // suite running beside it needs, nor wait for one.
  const fs::path ipus = workDir / ".xfuzz-ipus";
  // One OpenMP thread: four engineers share two cores, and the cases are about input, not speed.
  // Python (the plot scripts, the python target): the build's package, no bytecode files written
  // next to it, matplotlib's font cache made once per run rather than once per case, one BLAS
  // thread.
  spec.env = {{"TMPDIR", tmp.string()},
              {"HOME", home.string()},
              {"XTRAIN_IPU_LOCK_DIR", ipus.string()},
              {"OMP_NUM_THREADS", "1"},
              {"OPENBLAS_NUM_THREADS", "1"},
              {"PYTHONPATH", pythonDir.string()},
              {"PYTHONDONTWRITEBYTECODE", "1"},
              {"MPLBACKEND", "Agg"}};
  if (!mplConfigDir.empty()) spec.env["MPLCONFIGDIR"] = mplConfigDir.string();
  for (const auto& [k, v] : env) spec.env[k] = v;
  spec.timeout = std::max(timeout, timeoutAtLeast);
  spec.addressSpaceMb = addressSpaceMb;
  RunResult r = runProcess(spec);
  // The binaries may be rebuilt under us (another engineer's build): a binary replaced between the
  // check and exec, or a shared library half written when the loader maps it (exit 127 with the
  // loader's message). Neither says anything about the tool's input handling: wait and retry, up to
  // two minutes, before reporting it.
  for (int attempt = 0; brokenByRebuild(r, logPath) && Clock::now() < deadline && !stopRequested(); ++attempt) {
    if (attempt == 0) std::cerr << "xfuzz: " << args[0] << " did not load (being rebuilt?); retrying\n";
    std::this_thread::sleep_for(std::chrono::seconds(5));
    spec.argv[0] = resolve(args[0], deadline);
    r = runProcess(spec);
  }
  return r;
}

namespace {

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

struct CommandVerdict {
  RunResult result;
  std::vector<std::string> problems;
};

// The checks of one finished command: how it ended, what it did to its inputs, and whether it
// wrote anywhere but its case directory.
std::string codesText(const std::vector<int>& codes) {
  std::string s;
  for (size_t i = 0; i < codes.size(); ++i)
    s += (i == 0 ? "" : i + 1 == codes.size() ? " or " : ", ") + std::to_string(codes[i]);
  return s;
}

// The problems of the "timed out after N ms|s" claims in output: a negative time, or one longer than
// the whole run took (give or take a second of start-up).
std::vector<std::string> impossibleTimeouts(const std::string& output, std::chrono::milliseconds elapsed) {
  std::vector<std::string> problems;
  const std::string phrase = "timed out after ";
  for (size_t at = output.find(phrase); at != std::string::npos; at = output.find(phrase, at + 1)) {
    size_t i = at + phrase.size();
    const bool negative = i < output.size() && output[i] == '-';
    if (negative) ++i;
    const size_t digits = i;
    double value = 0;
    while (i < output.size() && (std::isdigit(static_cast<unsigned char>(output[i])) || output[i] == '.')) {
      if (output[i] != '.') value = value * 10 + (output[i] - '0');
      ++i;
    }
    if (i == digits) continue;
    const std::string claim = output.substr(at, std::min<size_t>(i - at + 3, 80));
    const bool ms = output.compare(i, 3, " ms") == 0;
    const bool s = !ms && output.compare(i, 2, " s") == 0;
    if (negative) {
      problems.push_back("its output says '" + claim + "': a negative time-out");
    } else if ((ms || s) && output.find('.', digits) >= i) {  // whole numbers only
      const double claimedMs = ms ? value : value * 1000;
      if (claimedMs > static_cast<double>(elapsed.count()) + 1000)
        problems.push_back("its output says '" + claim + "' but the run took " + std::to_string(elapsed.count()) +
                           " ms: a time-out that expired at once");
    }
    if (problems.size() >= 3) break;
  }
  return problems;
}

CommandVerdict judge(const RunResult& r, const Command& cmd, const fs::path& log, const Snapshot& caseBefore,
                     const Snapshot& caseAfter, const Snapshot& rootBefore, const Snapshot& rootAfter,
                     const Snapshot& pristineBefore, const Snapshot& pristineAfter) {
  CommandVerdict v{r, {}};
  const bool allowed = r.ending == RunResult::Ending::Exited &&
                       std::find(cmd.allowedExits.begin(), cmd.allowedExits.end(), r.exitCode) !=
                           cmd.allowedExits.end();
  if (r.ending == RunResult::Ending::NotStarted)
    v.problems.push_back("harness: " + r.error);
  else if (!allowed)
    v.problems.push_back(r.describe() + " (only exit " + codesText(cmd.allowedExits) + " is acceptable)");
  if (r.ending == RunResult::Ending::Exited &&
      (!cmd.forbiddenOutput.empty() || !cmd.requiredOutput.empty() || cmd.checkTimeouts)) {
    std::string output;
    try {
      output = readFile(log);
    } catch (const std::exception&) {
    }
    for (const auto& f : cmd.forbiddenOutput)
      if (output.find(f) != std::string::npos) v.problems.push_back("its output has '" + f + "'");
    if (cmd.checkTimeouts)
      for (auto& p : impossibleTimeouts(output, r.elapsed)) v.problems.push_back(std::move(p));
    if (!cmd.requiredOutput.empty() && output.find(cmd.requiredOutput) == std::string::npos)
      v.problems.push_back("its output lacks '" + cmd.requiredOutput + "' (it did not run to its end)");
  }

  auto inputAllowed = [&](const std::string& path) {
    for (const auto& m : cmd.mayChange)
      if (path == m || startsWith(path, m)) return true;
    return false;
  };
  // New files inside the case directory are the tool's outputs and fine.
  for (const auto& d : compareSnapshots(caseBefore, caseAfter, false, inputAllowed))
    v.problems.push_back("input modified: " + d);
  // The work root holds pristine/ and the case directories only; nothing new may appear next to them.
  // (xfuzz's own working directory is not watched: other processes may write there, and the tool
  // runs elsewhere. The work root is private to this run.)
  for (const auto& d : compareSnapshots(rootBefore, rootAfter, true, [](const std::string&) { return false; }))
    v.problems.push_back("outside the case directory: " + d);
  for (const auto& d : compareSnapshots(pristineBefore, pristineAfter, true, [](const std::string&) { return false; }))
    v.problems.push_back("pristine input modified: " + d);
  return v;
}

}  // namespace

bool runCase(const ToolRunner& tools, const RunConfig& cfg, const Pristine& pristine, uint64_t caseNumber) {
  const std::string name = cfg.target + "-" + std::to_string(caseNumber);
  ScratchDir dir(cfg.workRoot / name);
  Rng rng = Rng::forCase(cfg.seed, cfg.target, caseNumber);
  Case c = caseMakerFor(cfg.target)(pristine, dir.path(), rng);

  struct Failure {
    size_t index;
    Command command;
    CommandVerdict verdict;
  };
  std::vector<Failure> failures;
  if (cfg.verbose && !c.mutation.empty()) std::cout << name << " mutation: " << c.mutation << "\n";
  for (size_t i = 0; i < c.commands.size(); ++i) {
    const Command& cmd = c.commands[i];
    const Snapshot caseBefore = snapshot(dir.path());
    const Snapshot rootBefore = snapshot(cfg.workRoot, 0);
    const Snapshot pristineBefore = snapshot(pristine.dir);
    const fs::path log = dir.path() / (".xfuzz-out-" + std::to_string(i) + ".log");
    RunResult r = tools.run(cmd.args, dir.path(), log, cmd.env, cmd.timeoutAtLeast);
    if (r.ending == RunResult::Ending::Interrupted) return true;  // not the tool's fault; main stops
    CommandVerdict v = judge(r, cmd, log, caseBefore, snapshot(dir.path()), rootBefore, snapshot(cfg.workRoot, 0),
                             pristineBefore, snapshot(pristine.dir));
    if (cfg.verbose) {
      std::string env;
      for (const auto& [k, val] : cmd.env) env += k + "=" + shellLine({val}) + " ";
      std::cout << name << " [" << i << "] " << r.describe() << " " << r.elapsed.count() << " ms: " << env
                << shellLine(cmd.args) << "\n";
    }
    if (!v.problems.empty()) failures.push_back({i, cmd, std::move(v)});
  }
  if (failures.empty()) return true;

  // Keep the case directory (mutated inputs, tool output) and say how to reproduce it.
  const fs::path kept = cfg.keepDir / (cfg.target + "-seed" + std::to_string(cfg.seed) + "-case" +
                                       std::to_string(caseNumber));
  std::string report;
  for (const auto& f : failures) {
    report += "FAIL target=" + cfg.target + " seed=" + std::to_string(cfg.seed) +
              " case=" + std::to_string(caseNumber) + " command " + std::to_string(f.index) + "\n";
    if (!c.mutation.empty()) report += "  mutation: " + c.mutation + "\n";
    report += "  command:  cd " + kept.string() + " && " + reproduceLine(tools, f.command) + "\n";
    for (const auto& p : f.verdict.problems) report += "  problem:  " + p + "\n";
    const std::string tail = tailOfFile(dir.path() / (".xfuzz-out-" + std::to_string(f.index) + ".log"), 6);
    if (!tail.empty()) {
      report += "  output (last lines):\n";
      size_t start = 0;
      while (start < tail.size()) {
        size_t end = tail.find('\n', start);
        if (end == std::string::npos) end = tail.size();
        std::string line = tail.substr(start, end - start);
        if (line.size() > 300) line = line.substr(0, 300) + "...";
        report += "    | " + line + "\n";
        start = end + 1;
      }
    }
  }
  report += "  reproduce: xfuzz --target " + cfg.target + " --seed " + std::to_string(cfg.seed) +
            " --case " + std::to_string(caseNumber) + " --bin-dir " + tools.binDir.string() + "\n";
  report += "  kept in:  " + kept.string() + "\n";
  std::cout << report << std::flush;
  // The kept directory gets the report and a script with every command of the case.
  writeFile(dir.path() / "FAILURE.txt", report);
  std::string script = "#!/bin/sh\n# xfuzz " + cfg.target + " seed " + std::to_string(cfg.seed) + " case " +
                       std::to_string(caseNumber) + "\n# mutation: " + c.mutation + "\ncd \"$(dirname \"$0\")\"\n";
  for (const auto& cmd : c.commands) script += reproduceLine(tools, cmd) + "\n";
  writeFile(dir.path() / "commands.sh", script);
  dir.keepAs(kept);
  return false;
}

}  // namespace xfuzz
