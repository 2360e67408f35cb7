#include "pristine.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "rng.hpp"
#include "runner.hpp"

namespace xfuzz {

namespace {

// Must match the built-in example of tools/toolkit/example_models.cpp as xtrain builds it: input
// "x" [batch, 32] FLOAT, "labels" [batch] INT32 (8 classes), loss tensor "loss:0".
constexpr int kFeatures = 32;
constexpr int kClasses = 8;
constexpr int kSamples = 64;
constexpr const char* kMicroBatch = "8";
constexpr const char* kLoss = "loss:0";

void runOrThrow(const ToolRunner& tools, const std::vector<std::string>& args, const fs::path& dir,
                const std::string& what) {
  const fs::path log = dir / ".xfuzz-pristine.log";
  RunResult r = tools.run(args, dir, log);
  if (r.ending != RunResult::Ending::Exited || r.exitCode != 0) {
    throw std::runtime_error("making the pristine " + what + " failed (" + r.describe() + "): " +
                             shellLine(args) + "\n" + tailOfFile(log, 20));
  }
}

std::string findOnPath(const std::string& name) {
  const char* path = getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    fs::path cand = fs::path(p.substr(start, end - start)) / name;
    if (access(cand.c_str(), X_OK) == 0) return cand.string();
    start = end + 1;
  }
  throw std::runtime_error(name + " not found on PATH (Debian package hdf5-tools)");
}

// Writes data.h5 with h5import: a text file and a small configuration per dataset.
void writeDataSet(const ToolRunner& tools, const fs::path& dir) {
  Rng rng(1234);
  std::string x, labels;
  for (int s = 0; s < kSamples; ++s) {
    for (int f = 0; f < kFeatures; ++f) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4f ", static_cast<double>(rng.below(20001)) / 10000.0 - 1.0);
      x += buf;
    }
    x += "\n";
    labels += std::to_string(s % kClasses) + "\n";
  }
  writeFile(dir / "x.txt", x);
  writeFile(dir / "labels.txt", labels);
  writeFile(dir / "x.conf", "PATH x\nINPUT-CLASS TEXTFP\nRANK 2\nDIMENSION-SIZES " + std::to_string(kSamples) +
                                " " + std::to_string(kFeatures) +
                                "\nOUTPUT-CLASS FP\nOUTPUT-SIZE 32\nOUTPUT-ARCHITECTURE NATIVE\n");
  writeFile(dir / "labels.conf", "PATH labels\nINPUT-CLASS TEXTIN\nRANK 1\nDIMENSION-SIZES " +
                                     std::to_string(kSamples) +
                                     "\nOUTPUT-CLASS IN\nOUTPUT-SIZE 32\nOUTPUT-ARCHITECTURE NATIVE\n");
  runOrThrow(tools,
             {findOnPath("h5import"), "x.txt", "-c", "x.conf", "labels.txt", "-c", "labels.conf", "-o", "data.h5"},
             dir, "data set (h5import)");
  for (const char* f : {"x.txt", "labels.txt", "x.conf", "labels.conf"}) fs::remove(dir / f);
}

// Whether this process may make device nodes (root with CAP_MKNOD; not in every container).
bool canMakeDeviceNodes(const fs::path& dir) {
  const fs::path probe = dir / ".xfuzz-mknod-probe";
  const bool ok = mknod(probe.c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0;
  if (ok) fs::remove(probe);
  return ok;
}

}  // namespace

Pristine makePristine(const ToolRunner& tools, const fs::path& dir) {
  fs::create_directories(dir);
  Pristine p{dir, tools.binDir, kLoss, kMicroBatch, canMakeDeviceNodes(dir), fs::exists(tools.binDir / "xbench"), ""};
  runOrThrow(tools, {"xtrain", "--micro-batch-size", kMicroBatch, "--steps", "1", "--save-model", "model.onnx"},
             dir, "model");
  writeDataSet(tools, dir);
  // The model and data must train as they are, or every case of model/data fuzzing is meaningless.
  runOrThrow(tools, {"xtrain", "--model", "model.onnx", "--data", "data.h5", "--loss", kLoss,
                     "--micro-batch-size", kMicroBatch, "--steps", "1"},
             dir, "model and data check");
  runOrThrow(tools, {"xtrain", "--micro-batch-size", kMicroBatch, "--steps", "2", "--checkpoint-every", "1",
                     "--checkpoint-dir", "ckpts"},
             dir, "checkpoint");
  for (const char* f : {"ckpts/latest", "ckpts/ckpt-00000001/checkpoint.h5", "ckpts/ckpt-00000002/part-0.h5"})
    if (!fs::exists(dir / f)) throw std::runtime_error(std::string("the pristine checkpoint has no ") + f);
  // The plot target's inputs: a trace and a metrics file as xtrain writes them.
  runOrThrow(tools, {"xtrain", "--micro-batch-size", kMicroBatch, "--steps", "3", "--trace", "trace.json",
                     "--metrics", "metrics.jsonl"},
             dir, "trace and metrics");
  // Drop what the runs left besides the inputs (logs, temp dirs), so cases copy only inputs.
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name != "model.onnx" && name != "data.h5" && name != "ckpts" && name != "trace.json" &&
        name != "metrics.jsonl")
      fs::remove_all(e.path());
  }
  return p;
}

void copyPristineInputs(const Pristine& p, const fs::path& caseDir) {
  fs::copy_file(p.dir / "model.onnx", caseDir / "model.onnx");
  fs::copy_file(p.dir / "data.h5", caseDir / "data.h5");
  copyTree(p.dir / "ckpts", caseDir / "ckpts");
}

}  // namespace xfuzz
