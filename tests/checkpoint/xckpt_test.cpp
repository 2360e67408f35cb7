// The xckpt program as a user runs it (exit codes 0 / 1 / 2 and what it prints), and checkpoints
// read by HDF5's own tools (h5dump) and h5py from another working directory.
#include "checkpoint_testing.hpp"
#include "session/model_io.hpp"
#include "testing/process_testing.hpp"
#include "xtrain/builder.hpp"

namespace xtrain::checkpoint::testing {
namespace {

using Result = xtrain::testing::CommandResult;

// Runs a program (bounded by 120 s) from the working directory `cwd` (the current one when empty),
// capturing stdout and stderr.
Result shell(const std::string& cmd, const std::string& cwd = "") {
  return xtrain::testing::runCommand(cmd, {cwd.empty() ? fs::current_path().string() : cwd, 120});
}

Result xckpt(const std::string& args) {
  return shell(std::string(XTRAIN_BIN_DIR) + "/xckpt " + args);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class XckptCli : public CheckpointTest {
 protected:
  // The path quoted for the shell. (Appended piecewise: GCC 12 reports a false -Wrestrict for
  // "'" + s + "'".)
  static std::string q(const fs::path& p) {
    std::string s(1, '\'');
    s.append(p.string());
    s.push_back('\'');
    return s;
  }
};

TEST_F(XckptCli, HelpAndBadArguments) {
  const Result help = xckpt("--help");
  EXPECT_EQ(help.exitCode, 0) << help.output;
  EXPECT_TRUE(has(help.output, "export-onnx"));
  for (const std::string bad : {"", "frobnicate", "ls", "show a b", "diff onlyone",
                                "verify --bogus x", "export-onnx a b"}) {
    const Result r = xckpt(bad);
    EXPECT_EQ(r.exitCode, 2) << bad << "\n" << r.output;
    EXPECT_TRUE(has(r.output, "xckpt: ")) << r.output;
  }
}

TEST_F(XckptCli, LsShowsStepsSizesAndCompleteness) {
  save(root_, 5, sampleParts(1));
  const std::string broken = save(root_, 9, sampleParts(2));
  fs::remove(fs::path(broken) / "part-0.h5");
  writePart((root_ / "ckpt-00000012.tmp-abc").string(), 0, sampleParts(0)[0]);
  const Result r = xckpt("ls " + q(root_));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "ckpt-00000005")) << r.output;
  EXPECT_TRUE(has(r.output, "complete")) << r.output;
  EXPECT_TRUE(has(r.output, "INCOMPLETE")) << r.output;
  EXPECT_TRUE(has(r.output, "2024-05-01T12:00:00Z")) << r.output;
  EXPECT_TRUE(has(r.output, "KiB")) << r.output;
  EXPECT_TRUE(has(r.output, "ckpt-00000009  <- latest")) << r.output;
  EXPECT_TRUE(has(r.output, "1 staging directory")) << r.output;
  EXPECT_FALSE(has(r.output, "ckpt-00000012")) << r.output;
  EXPECT_EQ(xckpt("ls " + q(root_ / "missing")).exitCode, 2);
}

TEST_F(XckptCli, ShowPrintsAttributesAndDatasets) {
  std::vector<std::vector<Dataset>> parts = sampleParts(1);
  parts[0].push_back({"/weights/" + encodeName("enc/oder"), floatTensor({2}, 0)});
  const std::string dir = save(root_, 5, parts);
  const Result r = xckpt("show " + q(dir));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  for (const std::string part :
       {"formatVersion", "step", "samplesSeen", "globalReplicationFactor", "SGD",
        "learningRate=0.01", "momentum=0.9", "fp-1234", "/weights/W1", "FLOAT", "[4,3]",
        "/optimizer/W1/velocity", "/state/rng", "UINT32", "[2,2]", "/state/data", "INT64",
        "part-1.h5", "(tensor 'enc/oder')"}) {
    EXPECT_TRUE(has(r.output, part)) << part << "\n" << r.output;
  }
  EXPECT_EQ(xckpt("show " + q(root_ / "nope")).exitCode, 2);
}

TEST_F(XckptCli, VerifyExitCodes) {
  const std::string dir = save(root_, 5, sampleParts(1));
  Result r = xckpt("verify " + q(dir));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "ok")) << r.output;
  ASSERT_TRUE(flipByteOf(fs::path(dir) / "part-0.h5", floatTensor({4, 3}, 1), 8));
  fs::remove(fs::path(dir) / "part-1.h5");
  r = xckpt("verify " + q(dir));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(has(r.output, "/weights/W1")) << r.output;
  EXPECT_TRUE(has(r.output, "part-1.h5")) << r.output;
  EXPECT_TRUE(has(r.output, "2 problems")) << r.output;
  EXPECT_EQ(xckpt("verify " + q(root_ / "nope")).exitCode, 2);
}

// A checkpoint written by the release before format version 3 (tests/data/checkpoint-v2: the
// built-in example after 2 steps, its graphFingerprint "fnv1a64:{:016x} 5251146103361099495"): it
// verifies, and it reads with the fingerprint in today's form, so it matches the same graph.
TEST_F(XckptCli, ReadsAndVerifiesAVersion2Checkpoint) {
  const fs::path dir = root_ / "ckpt-00000002";
  fs::copy(fs::path(XTRAIN_TEST_DATA_DIR) / "checkpoint-v2" / "ckpt-00000002", dir);
  const Contents c = read(dir.string());
  EXPECT_EQ(c.attributes.formatVersion, 2);
  EXPECT_EQ(c.attributes.step, 2);
  EXPECT_EQ(c.attributes.graphFingerprint, "fnv1a64:48dfd18f2a83d6e7");
  Result r = xckpt("verify " + q(dir));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  r = xckpt("show " + q(dir));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "fnv1a64:48dfd18f2a83d6e7")) << r.output;
  EXPECT_FALSE(has(r.output, "{:")) << r.output;
}

TEST(CheckpointFingerprint, WrittenAsHexAndVersion2FormNormalized) {
  EXPECT_EQ(graphFingerprint(5251146103361099495ULL), "fnv1a64:48dfd18f2a83d6e7");
  EXPECT_EQ(graphFingerprint(1), "fnv1a64:0000000000000001");
  EXPECT_EQ(normalizeGraphFingerprint("fnv1a64:{:016x} 5251146103361099495", 2),
            "fnv1a64:48dfd18f2a83d6e7");
  EXPECT_EQ(normalizeGraphFingerprint("fnv1a64:{:016x} 18446744073709551615", 1),
            "fnv1a64:ffffffffffffffff");
  // Only version 2 and earlier wrote the old form; anything malformed is left as it is.
  for (const std::string kept :
       {"fnv1a64:{:016x} 5251146103361099495", "fnv1a64:{:016x} 18446744073709551616",
        "fnv1a64:{:016x} 12x", "fnv1a64:{:016x} ", "fnv1a64:48dfd18f2a83d6e7", "fp-1234"}) {
    EXPECT_EQ(normalizeGraphFingerprint(kept, kept.starts_with("fnv1a64:{:016x} 52") ? 3 : 2),
              kept);
  }
}

// A flipped byte anywhere in the index (48 offsets spread over it, to stay fast; the library test
// EveryFlippedIndexByteIsDamageNotACrash tries them all): verify says "damaged" and exits 1, never
// dies of a signal inside HDF5.
TEST_F(XckptCli, VerifyCallsAFlippedIndexDamagedWithoutCrashing) {
  const std::string dir = save(root_, 5, sampleParts(1));
  const fs::path index = fs::path(dir) / "checkpoint.h5";
  const size_t size = fs::file_size(index);
  for (size_t offset = 0; offset < size; offset += size / 48 + 1) {
    flipByteAt(index, offset);
    const Result r = xckpt("verify " + q(dir));
    flipByteAt(index, offset);
    ASSERT_EQ(r.exitCode, 1) << "byte " << offset << "\n" << r.output;
    ASSERT_TRUE(has(r.output, "damaged")) << "byte " << offset << "\n" << r.output;
  }
  EXPECT_EQ(xckpt("verify " + q(dir)).exitCode, 0);
}

// ls lists a damaged checkpoint with the reason; show and diff refuse it (exit 2, naming it).
TEST_F(XckptCli, DamagedIndexIsListedAndRefused) {
  const std::string sound = save(root_, 4, sampleParts(1));
  const std::string dir = save(root_, 5, sampleParts(2));
  flipByteAt(fs::path(dir) / "checkpoint.h5", 200);
  Result r = xckpt("ls " + q(root_));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "INCOMPLETE")) << r.output;
  EXPECT_TRUE(has(r.output, "ckpt-00000005: ") && has(r.output, "damaged")) << r.output;
  r = xckpt("show " + q(dir));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "checkpoint.h5") && has(r.output, "damaged")) << r.output;
  r = xckpt("diff " + q(sound) + " " + q(dir));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "damaged")) << r.output;
}

TEST_F(XckptCli, VerifyRefusesANegativeStep) {
  const std::string dir = save(root_, 5, sampleParts(1));
  ASSERT_TRUE(rewriteRootInt64(dir, "step", -7));
  const Result r = xckpt("verify " + q(dir));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(has(r.output, "'step' is -7") && has(r.output, "damaged")) << r.output;
}

TEST_F(XckptCli, DiffReportsPerDatasetDifferences) {
  const std::string a = save(root_ / "a", 5, sampleParts(1));
  const std::string same = save(root_ / "b", 5, sampleParts(1));
  Result r = xckpt("diff " + q(a) + " " + q(same));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "0 of 5 datasets differ")) << r.output;

  auto parts = sampleParts(1);
  parts[0][0].value.data<float>()[3] += 0.5f;                 // W1 differs by 0.5
  parts[1][0].value = floatTensor({3, 4}, 3);                 // velocity reshaped
  parts[1].push_back({"/state/extra", floatTensor({1}, 0)});  // only in B
  parts[1].erase(parts[1].begin() + 2);                       // /state/data only in A
  const std::string b = save(root_ / "c", 6, parts);
  r = xckpt("diff " + q(a) + " " + q(b));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(has(r.output, "max_abs 5.000e-01")) << r.output;
  EXPECT_TRUE(has(r.output, "FLOAT[4,3] vs FLOAT[3,4]")) << r.output;
  EXPECT_TRUE(has(r.output, "/state/extra")) << r.output;
  EXPECT_TRUE(has(r.output, "only in B")) << r.output;
  EXPECT_TRUE(has(r.output, "only in A")) << r.output;
  EXPECT_TRUE(has(r.output, "attribute step: 5 vs 6")) << r.output;
  EXPECT_TRUE(has(r.output, "4 of 6 datasets differ")) << r.output;
  EXPECT_EQ(xckpt("diff " + q(a) + " " + q(root_ / "nope")).exitCode, 2);
}

// A model with weights W [4,2] and B [2].
std::string writeModel(const fs::path& path) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  auto x = b->addInputTensor(TensorInfo(DataType::FLOAT, {8, 4}), "x");
  auto w = b->addInitializedInputTensor(
      ConstVoidData::fromVector<float>({4, 2}, std::vector<float>(8, 0.5f)), "W");
  auto bias = b->addInitializedInputTensor(
      ConstVoidData::fromVector<float>({2}, std::vector<float>(2, 0.0f)), "B");
  b->addOutputTensor(onnx.add({onnx.matmul({x, w}), bias}));
  b->saveModelProto(path.string());
  return path.string();
}

TEST_F(XckptCli, ExportOnnxWritesWeightsAndOptimizerState) {
  const std::string model = writeModel(root_ / "model.onnx");
  const HostTensor w = floatTensor({4, 2}, 7), bias = floatTensor({2}, 8);
  const HostTensor vw = floatTensor({4, 2}, -1), vb = floatTensor({2}, -2);
  const std::string dir = save(root_ / "run", 5,
                               {{{"/weights/W", w}, {"/weights/B", bias}},
                                {{"/optimizer/W/velocity", vw},
                                 {"/optimizer/B/velocity", vb},
                                 {"/optimizer/W/accumulator", vw},
                                 {"/state/rng", floatTensor({2}, 0)}}});
  Result r = xckpt("export-onnx " + q(dir) + " " + q(model) + " " + q(root_ / "out.onnx"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  auto init = session::readInitializers((root_ / "out.onnx").string());
  EXPECT_TRUE(sameBytes(init.at("W"), w));
  EXPECT_TRUE(sameBytes(init.at("B"), bias));
  EXPECT_EQ(init.count("Accl___W"), 0u);

  r = xckpt("export-onnx --with-optimizer-state " + q(dir) + " " + q(model) + " " +
            q(root_ / "state.onnx"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  init = session::readInitializers((root_ / "state.onnx").string());
  EXPECT_TRUE(sameBytes(init.at("W"), w));
  EXPECT_TRUE(sameBytes(init.at("Accl___W"), vw));
  EXPECT_TRUE(sameBytes(init.at("Accl___B"), vb));
  EXPECT_TRUE(sameBytes(init.at("Accum___W"), vw));
  // Exporting again into a model that already carries state replaces it.
  r = xckpt("export-onnx --with-optimizer-state " + q(dir) + " " + q(root_ / "state.onnx") + " " +
            q(root_ / "again.onnx"));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(
      sameBytes(session::readInitializers((root_ / "again.onnx").string()).at("Accl___B"), vb));
}

TEST_F(XckptCli, ExportOnnxRefusesMismatches) {
  const std::string model = writeModel(root_ / "model.onnx");
  const std::string wrongShape =
      save(root_ / "a", 1,
           {{{"/weights/W", floatTensor({2, 4}, 0)}, {"/weights/B", floatTensor({2}, 0)}}});
  Result r = xckpt("export-onnx " + q(wrongShape) + " " + q(model) + " " + q(root_ / "o.onnx"));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "'W'") && has(r.output, "FLOAT[4,2]") && has(r.output, "FLOAT[2,4]"))
      << r.output;
  const std::string missing = save(root_ / "b", 1, {{{"/weights/W", floatTensor({4, 2}, 0)}}});
  r = xckpt("export-onnx " + q(missing) + " " + q(model) + " " + q(root_ / "o.onnx"));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(has(r.output, "'B'") && has(r.output, "/weights/B")) << r.output;
  EXPECT_FALSE(fs::exists(root_ / "o.onnx"));
  r = xckpt("export-onnx " + q(missing) + " " + q(root_ / "no.onnx") + " " + q(root_ / "o.onnx"));
  EXPECT_EQ(r.exitCode, 2) << r.output;
}

TEST_F(XckptCli, H5dumpReadsAWeightFromAnotherDirectory) {
  if (shell("which h5dump").exitCode != 0) GTEST_SKIP() << "h5dump (hdf5-tools) not installed";
  const std::string dir = save(
      root_ / "run", 5, {{{"/weights/W", HostTensor::fromVector<float>({2}, {1.5f, -2.25f})}}});
  const fs::path moved = root_ / "moved";
  fs::rename(root_ / "run", moved);
  const Result r =
      shell("h5dump -d /weights/W " + q(moved / checkpointName(5) / "checkpoint.h5"), "/");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "1.5, -2.25")) << r.output;
  EXPECT_TRUE(has(r.output, "crc32")) << r.output;
}

TEST_F(XckptCli, H5pyReadsDatasetsAndChecksums) {
  const std::string python = "/usr/bin/python3";
  if (shell(python + " -c 'import h5py, numpy'").exitCode != 0)
    GTEST_SKIP() << "h5py not installed";
  HostTensor half(TensorInfo(DataType::FLOAT16, {3}));
  for (int i = 0; i < 3; ++i) half.data<uint16_t>()[i] = floatToHalf(0.5f * static_cast<float>(i));
  HostTensor flag(TensorInfo(DataType::BOOL, {2}));
  flag.raw()[0] = std::byte{1};
  const std::string dir =
      save(root_, 5,
           {{{"/weights/W", floatTensor({2, 3}, 1)}, {"/weights/H", half}, {"/state/flag", flag}}});
  const std::string script = R"(
import sys, zlib, h5py, numpy as np
f = h5py.File(sys.argv[1] + '/checkpoint.h5', 'r')
assert f.attrs['formatName'] == 'xtrain-checkpoint', f.attrs['formatName']
assert f.attrs['step'] == 5
assert abs(f['hyperparameters'].attrs['momentum'] - 0.9) < 1e-12
for p in ['weights/W', 'weights/H', 'state/flag']:
    a = f[p][()]
    assert zlib.crc32(np.ascontiguousarray(a).tobytes()) == f[p].attrs['crc32'], p
assert f['weights/H'].dtype == np.float16 and list(f['weights/H'][()]) == [0.0, 0.5, 1.0]
assert f['state/flag'].dtype == np.bool_ and list(f['state/flag'][()]) == [True, False]
assert abs(f['weights/W'][1, 2] - 1.005) < 1e-6
print('h5py ok')
)";
  writeFile(root_ / "check.py", script);
  const Result r = shell(python + " " + q(root_ / "check.py") + " " + q(dir), "/");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(has(r.output, "h5py ok")) << r.output;
}

}  // namespace
}  // namespace xtrain::checkpoint::testing
