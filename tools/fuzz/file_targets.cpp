// The model, data and checkpoint targets: one mutated input file, then every tool that reads it.
#include <algorithm>

#include "mutation.hpp"
#include "targets.hpp"

namespace xfuzz {

namespace {

// Mutates caseDir/rel in place; returns "<rel>: <what was done>".
std::string mutateFile(const fs::path& caseDir, const std::string& rel, Rng& rng) {
  std::string bytes = readFile(caseDir / rel);
  const uint64_t size = bytes.size();
  Mutation m = Mutation::draw(rng, size);
  m.apply(bytes);
  writeFile(caseDir / rel, bytes);
  return rel + ": " + m.describe(size);
}

std::vector<std::string> trainArgs(const Pristine& p) {
  return {"xtrain", "--model", "model.onnx", "--data", "data.h5", "--loss", p.loss,
          "--micro-batch-size", p.microBatch, "--steps", "1"};
}

// Model and data cases differ only in which file is damaged.
Case trainOnMutated(const Pristine& p, const fs::path& caseDir, Rng& rng, const std::string& victim) {
  fs::copy_file(p.dir / "model.onnx", caseDir / "model.onnx");
  fs::copy_file(p.dir / "data.h5", caseDir / "data.h5");
  Case c;
  c.mutation = mutateFile(caseDir, victim, rng);
  Command train{trainArgs(p), {}};
  // Now and then also save the model: a damaged model that imports must still export cleanly.
  if (rng.chance(1, 3)) {
    train.args.push_back("--save-model");
    train.args.push_back("out.onnx");
  }
  c.commands.push_back(std::move(train));
  return c;
}

}  // namespace

Case makeModelCase(const Pristine& p, const fs::path& caseDir, Rng& rng) {
  return trainOnMutated(p, caseDir, rng, "model.onnx");
}

Case makeDataCase(const Pristine& p, const fs::path& caseDir, Rng& rng) {
  return trainOnMutated(p, caseDir, rng, "data.h5");
}

Case makeCheckpointCase(const Pristine& p, const fs::path& caseDir, Rng& rng) {
  copyTree(p.dir / "ckpts", caseDir / "ckpts");
  copyTree(p.dir / "ckpts", caseDir / "pristine-ckpts");
  fs::copy_file(p.dir / "model.onnx", caseDir / "model.onnx");

  // Any file of the checkpoint directory may be damaged: the index, the part files, `latest` and
  // whatever else the writer adds (a seal, a manifest). Listed and sorted, so the draw is the same
  // for the same seed whatever order the directory returns. The index gets extra weight: HDF5
  // parses it before anything else.
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(caseDir / "ckpts"))
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), caseDir).string());
  std::sort(files.begin(), files.end());
  const std::vector<std::string> checkpoints{"ckpt-00000001", "ckpt-00000002"};
  const std::string ckpt = rng.pick(checkpoints);
  const std::string victim = rng.chance(2, 5) ? "ckpts/" + ckpt + "/checkpoint.h5" : rng.pick(files);
  const std::string victimCkpt = victim.find("ckpt-00000001") != std::string::npos ? "ckpt-00000001"
                                 : victim.find("ckpt-00000002") != std::string::npos ? "ckpt-00000002"
                                                                                     : ckpt;
  Case c;
  c.mutation = mutateFile(caseDir, victim, rng);
  // One case in four also drops the checkpoint's files other than the index and its parts, as a
  // checkpoint written before those files existed looks: the readers must not rely on them.
  if (rng.chance(1, 4)) {
    for (const auto& f : files) {
      const std::string name = fs::path(f).filename().string();
      if (f.find(victimCkpt + "/") != std::string::npos && name != "checkpoint.h5" && name.rfind("part-", 0) != 0 &&
          f != victim) {
        fs::remove(caseDir / f);
        c.mutation += "; removed " + f;
      }
    }
  }
  const std::string C = "ckpts/" + victimCkpt;
  const std::vector<std::string> trainBase{"xtrain", "--micro-batch-size", p.microBatch, "--steps", "3"};
  auto train = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = trainBase;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // The xckpt commands only read: nothing of the case directory may change.
  c.commands.push_back({{"xckpt", "verify", C}, {}});
  c.commands.push_back({{"xckpt", "ls", "ckpts"}, {}});
  c.commands.push_back({{"xckpt", "show", C}, {}});
  c.commands.push_back({{"xckpt", "diff", C, "pristine-" + C}, {}});
  c.commands.push_back({{"xckpt", "export-onnx", C, "model.onnx", "exported.onnx"}, {}});
  // Resuming from an explicit path writes its checkpoints elsewhere: the damaged one stays as it was.
  c.commands.push_back({train({"--checkpoint-dir", "out-ckpts", "--resume", C}), {}});
  // --resume auto continues in the damaged directory: it may move `latest` and write its pid into
  // the directory's lock file, never rewrite a checkpoint.
  c.commands.push_back({train({"--checkpoint-dir", "ckpts", "--resume", "auto"}),
                        {"ckpts/latest", "ckpts/.xtrain-lock"}});
  return c;
}

CaseMaker caseMakerFor(std::string_view target) {
  if (target == "model") return makeModelCase;
  if (target == "data") return makeDataCase;
  if (target == "checkpoint") return makeCheckpointCase;
  if (target == "cli") return makeCliCase;
  if (target == "plot") return makePlotCase;
  if (target == "env") return makeEnvCase;
  if (target == "python") return makePythonCase;
  return nullptr;
}

}  // namespace xfuzz
