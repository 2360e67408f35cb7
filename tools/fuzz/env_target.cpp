// The env target: a tool run (a short xtrain, xckpt, xbench, xrun -n 2 of a short xtrain) with one
// documented XTRAIN_* variable set to a hostile value. A tool reads its variables at start, so a bad
// value must end it with a clear error (exit 1 or 2) or be taken as documented (exit 0): never a
// signal, a hang, or a time-out that expires at once because the value overflowed ("timed out after
// -9223372036854775808 ms").
#include <algorithm>

#include "boundary.hpp"
#include "pristine.hpp"
#include "targets.hpp"

namespace xfuzz {

namespace {

enum class Var {
  Setting,   // a user's setting, read by the tools (docs/*.md)
  Path,      // a path: never "" (the default is a shared directory outside the scratch space)
  Launcher,  // the launcher's contract with an instance (docs/launcher-environment.md)
};

struct Variable {
  std::string name;
  Var kind;
  std::vector<std::string> good;  // documented values, drawn now and then
};

// Every XTRAIN_* variable the docs describe as read by the tools. Left out: build options
// (XTRAIN_WERROR, ...), XTRAIN_NETNS_DIR and XTRAIN_BENCH_PEERS (test and benchmark scripts only),
// the XTRAIN_REGISTER_CUSTOM_OP macro.
const std::vector<Variable>& variables() {
  static const std::vector<Variable> v{
      {"XTRAIN_COMM_TIMEOUT", Var::Setting, {"5", "0.5", "200ms", "30s", "5m"}},
      {"XTRAIN_CHECKPOINT_TIMEOUT", Var::Setting, {"60", "3600"}},
      {"XTRAIN_UNSEALED_INDEX_TIMEOUT", Var::Setting, {"5", "0.5"}},
      {"XTRAIN_WAIT_FOR_IPU", Var::Setting, {"0", "0.5", "30"}},
      {"XTRAIN_NUM_IPUS", Var::Setting, {"8", "64", "2"}},
      {"XTRAIN_IPU_IDS", Var::Setting, {"0", "0-1", "3"}},
      {"XTRAIN_COMM_BACKEND", Var::Setting, {"auto", "shm", "gloo", "inproc"}},
      {"XTRAIN_SHM_SLOT_BYTES", Var::Setting, {"1048576", "4MiB"}},
      {"XTRAIN_SHM_SINGLE_COPY", Var::Setting, {"0", "1", "on", "OFF"}},
      {"XTRAIN_GRAD_BUCKET_BYTES", Var::Setting, {"4", "1KiB", "4194304"}},
      {"XTRAIN_DATA_RESIDENT_BYTES", Var::Setting, {"0", "1MiB", "268435456"}},
      {"XTRAIN_GLOO_IFNAME", Var::Setting, {"lo"}},
      {"XTRAIN_GLOO_HOSTNAME", Var::Setting, {"localhost", "127.0.0.1"}},
      {"XTRAIN_COMM_TRACE", Var::Setting, {"0", "1"}},
      {"XTRAIN_FUSION", Var::Setting, {"0", "1", "false", "on"}},
      {"XTRAIN_BUFFER_REUSE", Var::Setting, {"0", "1"}},
      {"XTRAIN_BUFFER_POISON", Var::Setting, {"0", "1"}},
      {"XTRAIN_PROFILE_OPS", Var::Setting, {"0", "1"}},
      {"XTRAIN_LAYOUT", Var::Setting, {"plain"}},
      {"XTRAIN_TRACE_EVENTS", Var::Setting, {"16", "1024"}},
      {"XTRAIN_LOG_LEVEL", Var::Setting, {"debug", "off", "err", "trace"}},
      {"XTRAIN_LOG_DEST", Var::Path, {"stdout", "stderr", "log.txt"}},
      {"XTRAIN_LOG_CONFIG", Var::Path, {"model.onnx", "nodes-missing/x.json"}},
      {"XTRAIN_IPU_LOCK_DIR", Var::Path, {"locks"}},
      {"XTRAIN_JOB_ID", Var::Launcher, {"job-1"}},
      {"XTRAIN_NUM_INSTANCES", Var::Launcher, {"1"}},
      {"XTRAIN_INSTANCE_INDEX", Var::Launcher, {"0"}},
      {"XTRAIN_LOCAL_INSTANCE_INDEX", Var::Launcher, {"0"}},
      {"XTRAIN_NUM_LOCAL_REPLICAS", Var::Launcher, {"1"}},
      {"XTRAIN_NUM_TOTAL_REPLICAS", Var::Launcher, {"1"}},
      {"XTRAIN_REPLICA_INDEX_OFFSET", Var::Launcher, {"0"}},
      {"XTRAIN_NUM_IPUS_PER_REPLICA", Var::Launcher, {"1"}},
      {"XTRAIN_RENDEZVOUS_DIR", Var::Path, {"rdv"}},
      {"XTRAIN_RESTART_COUNT", Var::Launcher, {"0", "1"}},
      {"XTRAIN_MAX_RESTARTS", Var::Launcher, {"0", "2"}},
      {"XTRAIN_ORIGINAL_NUM_INSTANCES", Var::Launcher, {"2"}},
      {"XTRAIN_KEEP_GLOBAL_BATCH", Var::Launcher, {"accumulation", "micro-batch", "no"}},
      {"XTRAIN_JOB_SECRET", Var::Launcher, {std::string(64, 'a')}},
  };
  return v;
}

// What environment values get besides the boundary set: blanks around a number, other bases and
// notations, full-width digits, and printable junk (an environment value cannot hold a NUL).
const std::vector<std::string>& envValues() {
  static const std::vector<std::string> v{" 10", "10 ", "0x10", "010", "-1", "1e10", "1e16", "1e300",
                                          "inf", "nan", "", "\xef\xbc\x91\xef\xbc\x90" /* "１０" */,
                                          "10s", "-0", "+5", "1 2", "\t1", "1\n"};
  return v;
}

std::string junk(Rng& rng) {
  std::string s(1 + rng.below(64), ' ');
  for (auto& c : s) c = static_cast<char>(1 + rng.below(255));
  return s;
}

std::string drawValue(const Variable& var, Rng& rng) {
  std::string v;
  const uint64_t r = rng.below(10);
  if (r < 2 && !var.good.empty()) v = rng.pick(var.good);
  else if (r < 6) v = rng.pick(boundaryValues());
  else if (r < 9) v = rng.pick(envValues());
  else v = junk(rng);
  // A path variable that is empty means the default: a directory shared with every other process
  // (the IPU pool's locks in /tmp), which a fuzz case must not touch.
  if (var.kind == Var::Path && v.empty()) v = "empty";
  // Nor may a path leave the case directory (junk may start with '/').
  if (var.kind == Var::Path && (v[0] == '/' || v.find("..") != std::string::npos)) v = "p" + v;
  std::replace(v.begin(), v.end(), '/', '_');
  return v;
}

std::vector<std::string> xtrainArgs(const Pristine& p, Rng& rng) {
  std::vector<std::string> a{"--micro-batch-size", p.microBatch, "--steps", "2"};
  if (rng.chance(1, 2)) {
    for (const std::string& s : {std::string("--model"), std::string("model.onnx"), std::string("--data"),
                                 std::string("data.h5"), std::string("--loss"), p.loss})
      a.push_back(s);
  }
  if (rng.chance(1, 3)) {
    a.push_back("--trace");
    a.push_back("trace.json");
  }
  if (rng.chance(1, 3)) {
    for (const char* s : {"--checkpoint-dir", "new-ckpts", "--checkpoint-every", "1"}) a.push_back(s);
  }
  if (rng.chance(1, 4)) {
    a.push_back("--metrics");
    a.push_back("metrics.jsonl");
  }
  return a;
}

Command toolCommand(const Pristine& p, Rng& rng) {
  Command c;
  const uint64_t r = rng.below(20);
  if (r < 8) {
    c.args = {"xtrain"};
    for (auto& s : xtrainArgs(p, rng)) c.args.push_back(s);
    c.allowedExits = {0, 1, 2, 75};  // 75: preempted, the documented code of a stopped run
  } else if (r < 14) {
    // xrun's own environment: it passes settings on and replaces its contract's variables.
    c.args = {"xrun", "-n", "2", (p.binDir / "xtrain").string()};
    c.timeoutAtLeast = std::chrono::seconds(30);
    for (auto& s : xtrainArgs(p, rng)) c.args.push_back(s);
    c.allowedExits = {0, 1, 2, 75};
  } else if (r < 17 || !p.hasXbench) {
    static const std::vector<std::vector<std::string>> xckpt{
        {"verify", "ckpts/ckpt-00000002"}, {"ls", "ckpts"}, {"show", "ckpts/ckpt-00000001"},
        {"export-onnx", "ckpts/ckpt-00000002", "model.onnx", "out.onnx"}};
    c.args = {"xckpt"};
    for (const auto& s : rng.pick(xckpt)) c.args.push_back(s);
  } else {
    static const std::vector<std::vector<std::string>> xbench{
        {"comm", "--threads", "2", "-b", "8", "-e", "64", "-n", "1", "-w", "0"},
        {"matmul", "--size", "16", "--reps", "1"},
        {"mlp", "--steps", "1", "--warmup", "0", "--batch", "8"},
        {"checkpoint", "--bytes", "64K", "--tensors", "2", "--reps", "1", "--dir", "bench-dir"}};
    c.args = {"xbench"};
    for (const auto& s : rng.pick(xbench)) c.args.push_back(s);
  }
  return c;
}

}  // namespace

Case makeEnvCase(const Pristine& p, const fs::path& caseDir, Rng& rng) {
  copyPristineInputs(p, caseDir);
  const Variable& var = rng.pick(variables());
  const std::string value = drawValue(var, rng);
  Command c = toolCommand(p, rng);
  c.env[var.name] = value;
  // A time-out computed from an overflowed value expires at once, printing a negative time or one
  // longer than the run (checkTimeouts); an uncaught C++ exception says "terminate called".
  c.forbiddenOutput = {"terminate called"};
  c.checkTimeouts = true;
  Case out;
  out.mutation = var.name + "=" + shellLine({value});
  out.commands.push_back(std::move(c));
  return out;
}

}  // namespace xfuzz
