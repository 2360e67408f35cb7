// The cli target: random command lines for xtrain, xckpt and xbench. Numbers come from a boundary
// set (the values where parsing, overflow and division go wrong), paths from a zoo of awkward file
// system nodes made inside the case directory. Every command line keeps a small bound on the work
// (--steps, --reps, ...) so a case that is accepted still finishes in well under a second.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "boundary.hpp"
#include "pristine.hpp"
#include "targets.hpp"

namespace xfuzz {

namespace {

// For flags that set how much work is done (steps, repetitions, threads, bytes): the boundary set
// without the large values a tool may rightly accept and then work on for hours. 2^64 stays: it
// fits no 64-bit integer, so it must be refused.
const std::vector<std::string>& workValues() {
  static const std::vector<std::string> v{"0", "-1", "1", "2", "nan", "inf", "-inf", "1e-45", "",
                                          hugeString(), "abc", "--", "18446744073709551616"};
  return v;
}

const std::vector<std::string>& badWords() {
  static const std::vector<std::string> v{"", hugeString(), "abc", "--", "nan", "-1"};
  return v;
}

// Path values, relative to the case directory. All of them live there: the device nodes are made
// by mknod in the case directory, never the system's /dev entries.
std::vector<std::string> oddPaths(const Pristine& p, bool forOutput) {
  std::vector<std::string> v{"", "nodes/dir", "nodes/fifo", "nodes/dangling", "nodes/missing/sub/file"};
  if (p.deviceNodes) {
    v.push_back("nodes/null");
    v.push_back("nodes/full");
    if (!forOutput) v.push_back("nodes/zero");
  }
  return v;
}

enum class Kind { Number, Work, Word, Switch, PathIn, PathOut };

struct FlagSpec {
  std::string name;
  Kind kind;
  std::vector<std::string> good;  // valid values (drawn now and then, so other flags get past parsing)
};

// boundary: draw from the boundary sets; otherwise a valid value when the flag has one. A command
// line gets one boundary value and mostly valid others: a tool stops at the first bad value, so a
// line of many bad values only ever tests the parser of the first.
std::string drawValue(const FlagSpec& f, const Pristine& p, Rng& rng, bool boundary) {
  if (!f.good.empty() && (!boundary ? rng.chance(7, 8) : rng.chance(1, 6))) return rng.pick(f.good);
  switch (f.kind) {
    case Kind::Number: return rng.pick(boundaryValues());
    case Kind::Work: return rng.pick(workValues());
    case Kind::Word: return rng.pick(badWords());
    case Kind::PathIn: return rng.pick(oddPaths(p, false));
    case Kind::PathOut: return rng.pick(oddPaths(p, true));
    case Kind::Switch: return "";
  }
  return "";
}

// Appends the flag: usually "--flag value", sometimes "--flag=value" or the flag with its value
// missing at the end of the line.
void appendFlag(std::vector<std::string>& args, const FlagSpec& f, const Pristine& p, Rng& rng, bool boundary) {
  if (f.kind == Kind::Switch) {
    args.push_back(f.name);
    return;
  }
  const std::string v = drawValue(f, p, rng, boundary);
  if (rng.chance(1, 30)) {
    args.push_back(f.name + "=" + v);
  } else {
    args.push_back(f.name);
    args.push_back(v);
  }
}

// The first flag gets a boundary value, the others (with one chance in four) too.
void appendFlags(std::vector<std::string>& args, const std::vector<FlagSpec>& flags, const Pristine& p, Rng& rng) {
  for (size_t i = 0; i < flags.size(); ++i) appendFlag(args, flags[i], p, rng, i == 0 || rng.chance(1, 4));
}

void makeNodes(const Pristine& p, const fs::path& caseDir) {
  const fs::path n = caseDir / "nodes";
  fs::create_directories(n / "dir");
  mkfifo((n / "fifo").c_str(), 0644);
  fs::create_symlink("missing-target", n / "dangling");
  if (p.deviceNodes) {  // the same devices as /dev/null, /dev/zero, /dev/full, but in scratch
    mknod((n / "null").c_str(), S_IFCHR | 0666, makedev(1, 3));
    mknod((n / "zero").c_str(), S_IFCHR | 0666, makedev(1, 5));
    mknod((n / "full").c_str(), S_IFCHR | 0666, makedev(1, 7));
  }
}

// Adds 1-4 distinct flags of the table, then now and then something no parser expects.
std::vector<FlagSpec> chooseFlags(const std::vector<FlagSpec>& table, Rng& rng) {
  std::vector<FlagSpec> chosen;
  const uint64_t n = rng.between(1, 4);
  for (uint64_t i = 0; i < n; ++i) {
    const FlagSpec& f = rng.pick(table);
    if (std::none_of(chosen.begin(), chosen.end(), [&](const FlagSpec& c) { return c.name == f.name; }))
      chosen.push_back(f);
  }
  return chosen;
}

void maybeAddNoise(std::vector<std::string>& args, Rng& rng) {
  const uint64_t r = rng.below(40);
  if (r == 0) args.push_back("--help");
  if (r == 1) args.push_back("-h");
  if (r == 2) args.push_back("--no-such-option");
  if (r == 3) args.push_back("stray-positional");
  if (r == 4) args.push_back("--");
}

bool has(const std::vector<FlagSpec>& fs, const std::string& name) {
  return std::any_of(fs.begin(), fs.end(), [&](const FlagSpec& f) { return f.name == name; });
}

Command xtrainCommand(const Pristine& p, Rng& rng) {
  static const std::vector<FlagSpec> table{
      {"--lr", Kind::Number, {"0.1"}}, {"--weight-decay", Kind::Number, {"0.01"}},
      {"--momentum", Kind::Number, {"0.5"}}, {"--dampening", Kind::Number, {"0.1"}},
      {"--beta1", Kind::Number, {"0.9"}}, {"--beta2", Kind::Number, {"0.99"}},
      {"--eps", Kind::Number, {"1e-8"}}, {"--max-weight-norm", Kind::Number, {"5"}},
      {"--alpha", Kind::Number, {"0.9"}}, {"--loss-scaling", Kind::Number, {"128"}},
      {"--clip-norm", Kind::Number, {"1"}}, {"--warmup-steps", Kind::Number, {"2"}},
      {"--micro-batch-size", Kind::Number, {"4", "8"}}, {"--batches-per-step", Kind::Number, {"2"}},
      {"--accumulation-factor", Kind::Number, {"2"}}, {"--replicas", Kind::Number, {"2"}},
      {"--seed", Kind::Number, {"7"}}, {"--checkpoint-every", Kind::Number, {"1"}},
      {"--keep-last", Kind::Number, {"1"}},
      {"--steps", Kind::Work, {"2"}}, {"--epochs", Kind::Work, {"1"}},
      {"--optimizer", Kind::Word,
       {"sgd", "adam", "adamw", "lamb", "adamax", "adagrad", "rmsprop", "centered-rmsprop", "adadelta"}},
      {"--lr-schedule", Kind::Word, {"constant", "linear", "cosine"}},
      {"--reduction", Kind::Word, {"sum", "mean"}},
      {"--log-level", Kind::Word, {"trace", "off", "err"}},
      {"--anchor", Kind::Word, {p.loss + ":ALL", p.loss + ":EVERYN:0", "x:FINAL", "nosuch:SUM", ":"}},
      {"--loss", Kind::Word, {p.loss, "x", "labels", "nosuch"}},
      {"--virtual-graph-mode", Kind::Word, {"off", "manual", "auto"}},
      {"--ipus-per-replica", Kind::Number, {"2"}},
      {"--recompute", Kind::Word, {"none", "standard", "pipeline"}},
      {"--offchip", Kind::Word, {"weights", "optimizer-state,accumulators"}},
      {"--enable-pipelining", Kind::Switch, {}},
      {"--nesterov", Kind::Switch, {}}, {"--checkpoint-async", Kind::Switch, {}},
      {"--model", Kind::PathIn, {"model.onnx", "data.h5"}}, {"--data", Kind::PathIn, {"data.h5", "model.onnx"}},
      {"--resume", Kind::PathIn, {"auto", "ckpts/ckpt-00000002", "ckpts"}},
      {"--save-model", Kind::PathOut, {"out.onnx"}},
      {"--checkpoint-dir", Kind::PathOut, {"new-ckpts", "ckpts"}},
  };
  std::vector<FlagSpec> chosen = chooseFlags(table, rng);
  // --epochs trains on the whole set: only with the small data set (64 samples), never the 4096
  // samples of the built-in example.
  const bool epochs = has(chosen, "--epochs");
  if (epochs) std::erase_if(chosen, [](const FlagSpec& f) { return f.name == "--model" || f.name == "--data"; });

  Command c;
  c.args = {"xtrain"};
  if (epochs || rng.chance(1, 2)) {
    for (const char* a : {"--model", "model.onnx", "--data", "data.h5", "--loss"}) c.args.push_back(a);
    c.args.push_back(p.loss);
  }
  if (!has(chosen, "--micro-batch-size")) {
    c.args.push_back("--micro-batch-size");
    c.args.push_back(p.microBatch);
  }
  if (!epochs && !has(chosen, "--steps")) {
    c.args.push_back("--steps");
    c.args.push_back(rng.chance(1, 2) ? "1" : "2");
  }
  appendFlags(c.args, chosen, p, rng);
  maybeAddNoise(c.args, rng);
  // ckpts/ holds another run's checkpoints: only a run told to --resume may add to them and move
  // `latest` (and prune with --keep-last). A fresh run must leave them alone.
  if (std::find(c.args.begin(), c.args.end(), "--resume") != c.args.end()) c.mayChange.push_back("ckpts/");
  return c;
}

Command xckptCommand(const Pristine& p, Rng& rng) {
  static const std::vector<std::string> subs{"ls", "show", "verify", "diff", "export-onnx",
                                             "--help", "-h", "help", "bogus", ""};
  static const std::vector<std::string> ckpts{"ckpts", "ckpts/ckpt-00000002", "ckpts/ckpt-00000001",
                                              "ckpts/ckpt-00000002/checkpoint.h5", "ckpts/latest"};
  auto operand = [&](bool output) {
    const uint64_t r = rng.below(10);
    if (r < 5) return output ? std::string("out.onnx") : rng.pick(ckpts);
    if (r < 8) return rng.pick(oddPaths(p, output));
    return rng.pick(badWords());
  };
  Command c;
  const std::string sub = rng.pick(subs);
  c.args = {"xckpt", sub};
  const size_t operands = sub == "diff" ? 2 : sub == "export-onnx" ? 3 : 1;
  // Sometimes one operand too few or too many.
  size_t n = operands;
  if (rng.chance(1, 8)) n = operands - 1;
  if (rng.chance(1, 8)) n = operands + 1;
  for (size_t i = 0; i < n; ++i) {
    if (sub == "export-onnx" && i == 1 && rng.chance(2, 3))
      c.args.push_back("model.onnx");
    else
      c.args.push_back(operand(sub == "export-onnx" && i == 2));
  }
  if (sub == "export-onnx" && rng.chance(1, 3)) c.args.push_back("--with-optimizer-state");
  if (rng.chance(1, 10)) c.args.push_back("--bogus");
  maybeAddNoise(c.args, rng);
  return c;
}

Command xbenchCommand(const Pristine& p, Rng& rng) {
  struct Sub {
    std::string name;
    std::vector<std::string> base;  // small, valid values of every work flag
    std::vector<FlagSpec> flags;
  };
  static const std::vector<Sub> subs{
      {"mlp", {"--steps", "1", "--warmup", "0", "--batch", "8"},
       {{"--steps", Kind::Work, {"2"}}, {"--warmup", Kind::Work, {"1"}}, {"--batch", Kind::Number, {"4"}}}},
      {"matmul", {"--size", "16", "--reps", "1"},
       {{"--size", Kind::Number, {"8"}}, {"--reps", Kind::Work, {"2"}}}},
      {"comm", {"--threads", "2", "-b", "8", "-e", "64", "-n", "1", "-w", "0"},
       {{"--op", Kind::Word, {"allreduce", "reducescatter", "allgather", "broadcast", "all"}},
        {"-b", Kind::Number, {"4", "1K"}}, {"-e", Kind::Work, {"128", "1K"}}, {"-f", Kind::Number, {"2", "4"}},
        {"-n", Kind::Work, {"2"}}, {"-w", Kind::Work, {"1"}}, {"--threads", Kind::Work, {"1", "3"}},
        {"--backend", Kind::Word, {"gloo", "mpi", "local"}},
        {"--group", Kind::Word, {"all", "consecutive:2", "orthogonal:2", "consecutive:0", "orthogonal:"}},
        {"--check", Kind::Number, {"0", "1"}}}},
      {"checkpoint", {"--bytes", "64K", "--tensors", "4", "--reps", "1", "--dir", "bench-dir"},
       {{"--bytes", Kind::Work, {"1K", "1M"}}, {"--tensors", Kind::Work, {"1", "3"}},
        {"--reps", Kind::Work, {"2"}}, {"--dir", Kind::PathOut, {"bench-dir"}}, {"--keep", Kind::Switch, {}}}},
      {"checkpoint-stall", {"--mb", "1", "--reps", "1", "--dir", "bench-dir"},
       {{"--mb", Kind::Work, {"1"}}, {"--reps", Kind::Work, {"2"}}, {"--dir", Kind::PathOut, {"bench-dir"}}}},
      {"optimizer", {"--elements", "1K", "--reps", "1"},
       {{"--optimizer", Kind::Word, {"sgd", "adam", "lamb", "adadelta"}},
        {"--elements", Kind::Work, {"1K", "100"}}, {"--reps", Kind::Work, {"2"}}}},
  };
  Command c;
  c.args = {"xbench"};
  const uint64_t r = rng.below(20);
  if (r == 0) {  // no subcommand, or one that does not exist
    c.args.push_back(rng.pick(std::vector<std::string>{"--help", "bogus", "", "-h"}));
    return c;
  }
  const Sub& sub = rng.pick(subs);
  c.args.push_back(sub.name);
  // The base values come first; a fuzzed flag given again later is the one the parser sees last.
  c.args.insert(c.args.end(), sub.base.begin(), sub.base.end());
  appendFlags(c.args, chooseFlags(sub.flags, rng), p, rng);
  maybeAddNoise(c.args, rng);
  return c;
}

}  // namespace

Case makeCliCase(const Pristine& p, const fs::path& caseDir, Rng& rng) {
  copyPristineInputs(p, caseDir);
  makeNodes(p, caseDir);
  Case c;
  // The draw is the same with or without xbench, so a seed gives the same xtrain and xckpt cases.
  const uint64_t r = rng.below(10);
  if (r >= 8 && !p.hasXbench) {
    c.commands.push_back(xckptCommand(p, rng));
  } else {
    c.commands.push_back(r < 6   ? xtrainCommand(p, rng)
                         : r < 8 ? xckptCommand(p, rng)
                                 : xbenchCommand(p, rng));
  }
  return c;
}

}  // namespace xfuzz
