// TrainingSession checkpoints (issue 6): exact resume (bit-identical to training without a stop),
// with sharding and across instances; resharding into another replica layout; what loading refuses.
// CheckpointSession.* runs CheckpointWorker.* under xrun for the multi-instance cases.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.hpp"
#include "session/model_io.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/dist.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

SessionOptions layout(int64_t localReplicas, bool sharded = false, int64_t af = 1) {
  SessionOptions o;
  o.enableReplicatedGraphs = localReplicas > 1;
  o.replicatedGraphCount = localReplicas;
  o.accumulationAndReplicationReductionType = ReductionType::Mean;
  if (af > 1) {
    o.enableGradientAccumulation = true;
    o.accumulationFactor = af;
  }
  if (sharded) {
    for (auto* s : {&o.weightTensorLocationSettings, &o.optimizerStateTensorLocationSettings}) {
      s->location.replicatedTensorSharding = ReplicatedTensorSharding::On;
      s->minElementsForReplicatedTensorSharding = 10;
    }
  }
  return o;
}

const ConstSGD kSgd(0.1f, 0.01f, 0.9f);

using CheckpointTest = ScratchDirTest;

// 6 steps without a stop, against 3 steps, save, a new session, load, 3 more: bit-identical weights
// and velocities, with and without sharding, with gradient accumulation, synchronous or not.
TEST_F(CheckpointTest, ResumeIsExact) {
  const MlpModel m = buildMlpModel();
  for (bool sharded : {false, true}) {
    for (int64_t af : {int64_t{1}, int64_t{2}}) {
      const std::string what =
          std::string(sharded ? "sharded" : "whole") + " af " + std::to_string(af);
      auto straight = makeMlpSession(m, layout(4, sharded, af), kSgd);
      trainMlpSteps(*straight, m, 4, 0, af, 0, 6);
      const auto want = readTensors(*straight, mlpWeightsAndVelocities());

      auto first = makeMlpSession(m, layout(4, sharded, af), kSgd);
      trainMlpSteps(*first, m, 4, 0, af, 0, 3);
      CheckpointOptions co;
      co.dataPosition = {3, 7};
      co.asynchronous = af == 2;
      first->saveCheckpoint(path("c-" + what), co);
      trainMlpSteps(*first, m, 4, 0, af, 3, 1);  // training goes on while an async save writes
      first->waitForCheckpoint();

      auto second = makeMlpSession(m, layout(4, sharded, af), kSgd);
      const CheckpointInfo info = second->loadCheckpoint(path("c-" + what));
      EXPECT_EQ(info.step, 3) << what;
      EXPECT_EQ(info.dataPosition, (std::vector<int64_t>{3, 7})) << what;
      trainMlpSteps(*second, m, 4, 0, af, 3, 3);
      EXPECT_EQ(readTensors(*second, mlpWeightsAndVelocities()), want) << what;
    }
  }
}

// loadLatestCheckpoint: nothing in an empty directory, else the newest complete checkpoint.
TEST_F(CheckpointTest, LatestCheckpointOfADirectory) {
  const MlpModel m = buildMlpModel();
  auto s = makeMlpSession(m, layout(2), kSgd);
  EXPECT_FALSE(s->loadLatestCheckpoint(dir_.string()).has_value());
  trainMlpSteps(*s, m, 2, 0, 1, 0, 2);
  s->saveCheckpoint(path(checkpoint::checkpointName(2)));
  trainMlpSteps(*s, m, 2, 0, 1, 2, 2);
  s->saveCheckpoint(path(checkpoint::checkpointName(4)));
  auto other = makeMlpSession(m, layout(2), kSgd);
  const auto info = other->loadLatestCheckpoint(dir_.string());
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->step, 4);
  EXPECT_EQ(readTensors(*other, mlpWeightsAndVelocities()),
            readTensors(*s, mlpWeightsAndVelocities()));
}

// A checkpoint of 4 sharded replicas loads into 2 unsharded ones (and 1): the same weights and
// state, and training continues.
TEST_F(CheckpointTest, LoadsIntoAnotherLayout) {
  const MlpModel m = buildMlpModel();
  auto four = makeMlpSession(m, layout(4, true), kSgd);
  trainMlpSteps(*four, m, 4, 0, 1, 0, 3);
  const auto saved = readTensors(*four, mlpWeightsAndVelocities());
  four->saveCheckpoint(path("four"));
  for (int64_t replicas : {int64_t{2}, int64_t{1}}) {
    auto other = makeMlpSession(m, layout(replicas), kSgd);
    const CheckpointInfo info = other->loadCheckpoint(path("four"));
    EXPECT_EQ(info.globalReplicationFactor, 4);
    EXPECT_EQ(readTensors(*other, mlpWeightsAndVelocities()), saved) << replicas << " replicas";
    trainMlpSteps(*other, m, replicas, 0, 1, 3, 1);
  }
}

std::string loadError(TrainingSession& s, const std::string& path) {
  try {
    s.loadCheckpoint(path);
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

// What loading refuses, with what it says; a refused load changes nothing.
TEST_F(CheckpointTest, MismatchesAreRefusedAndNothingIsLoaded) {
  const MlpModel m = buildMlpModel();
  auto s = makeMlpSession(m, layout(1), kSgd);
  trainMlpSteps(*s, m, 1, 0, 1, 0, 2);
  s->saveCheckpoint(path("good"));

  // Another hidden size: both shapes named.
  auto wider = makeMlpSession(buildMlpModel(4, 8, 16, 5), layout(1), kSgd);
  const auto before = readTensors(*wider, {"W1"});
  std::string e = loadError(*wider, path("good"));
  EXPECT_NE(e.find("/weights/W1 is FLOAT[8,15] but this session's 'W1' is FLOAT[8,16]"),
            std::string::npos)
      << e;
  EXPECT_EQ(readTensors(*wider, {"W1"}), before) << "nothing is half-loaded";

  // Without momentum the session has no velocity: the checkpoint's are extra.
  auto plain = makeMlpSession(m, layout(1), ConstSGD(0.1f));
  e = loadError(*plain, path("good"));
  EXPECT_NE(e.find("/optimizer/"), std::string::npos) << e;
  EXPECT_NE(e.find("another optimizer"), std::string::npos) << e;

  // Same tensors, another activation: the model's fingerprint differs.
  auto sigmoid = makeMlpSession(buildMlpModel(4, 8, 15, 5, 5, "Sigmoid"), layout(1), kSgd);
  e = loadError(*sigmoid, path("good"));
  EXPECT_NE(e.find("written for another model"), std::string::npos) << e;
  // A missing checkpoint, and a file that is not one.
  e = loadError(*s, path("nowhere"));
  EXPECT_NE(e.find("nowhere"), std::string::npos) << e;
  std::ofstream(dir_ / "junk.h5") << "not hdf5";
  e = loadError(*s, (dir_ / "junk.h5").string());
  EXPECT_NE(e.find("junk.h5"), std::string::npos) << e;
  EXPECT_FALSE(loadError(*s, path("good")).size()) << "the good one still loads";
}

// modelToHost with the optimizer state (PopART's Accl___<w> initializers): a session created from
// that model starts with that state and trains on as the first would have; the model also loads a
// checkpoint of the original (the state initializers are not part of the model's fingerprint).
TEST_F(CheckpointTest, OnnxWithOptimizerStateContinuesTraining) {
  const MlpModel m = buildMlpModel();
  auto straight = makeMlpSession(m, layout(2), kSgd);
  trainMlpSteps(*straight, m, 2, 0, 1, 0, 6);
  const auto want = readTensors(*straight, mlpWeightsAndVelocities());

  auto first = makeMlpSession(m, layout(2), kSgd);
  trainMlpSteps(*first, m, 2, 0, 1, 0, 3);
  first->saveCheckpoint(path("c"));
  const std::string withState = (dir_ / "with-state.onnx").string();
  first->modelToHost(withState, true);
  const auto inits = session::readInitializers(withState);
  ASSERT_TRUE(inits.count("Accl___W1")) << "velocity written as PopART's initializer";
  // PopART's modelToHost writes a training session's state by default; false leaves it out.
  first->modelToHost(path("default.onnx"));
  EXPECT_EQ(session::readInitializers(path("default.onnx")).count("Accl___W1"), 1u);
  first->modelToHost(path("weights-only.onnx"), false);
  EXPECT_EQ(session::readInitializers(path("weights-only.onnx")).count("Accl___W1"), 0u);

  MlpModel exported = m;
  exported.proto = withState;
  auto second = makeMlpSession(exported, layout(2), kSgd);
  EXPECT_EQ(readTensors(*second, mlpWeightsAndVelocities()),
            readTensors(*first, mlpWeightsAndVelocities()));
  trainMlpSteps(*second, m, 2, 0, 1, 3, 3);
  EXPECT_EQ(readTensors(*second, mlpWeightsAndVelocities()), want);
  EXPECT_EQ(loadError(*second, path("c")), "");
}

// ---- Several instances: CheckpointSession.* runs CheckpointWorker.* under xrun. ----

bool startedByXrun() {
  return std::getenv("XTRAIN_NUM_INSTANCES") != nullptr &&
         std::getenv("XTRAIN_TEST_OUT") != nullptr;
}

// XTRAIN_TEST_PHASE=first: 3 steps, save to <out>/ckpt; =second: load <out>/ckpt, 3 more steps;
// =straight: 6 steps. Writes the weights and velocities to <out>/<phase>-<instance>.bin.
TEST(CheckpointWorker, Train) {
  if (!startedByXrun()) GTEST_SKIP() << "an instance of CheckpointSession.*, started by xrun";
  const fs::path out = std::getenv("XTRAIN_TEST_OUT");
  const std::string phase = std::getenv("XTRAIN_TEST_PHASE");
  const bool sharded = std::getenv("XTRAIN_TEST_SHARDED") != nullptr;
  const MlpModel m = buildMlpModel();
  SessionOptions o = layout(dist::getNumLocalReplicas(), sharded);
  dist::configureSessionOptions(o);
  auto s = makeMlpSession(m, o, kSgd);
  const int64_t G = dist::getNumTotalReplicas(), offset = dist::getReplicaIndexOffset();
  if (phase == "second") {
    const CheckpointInfo info = s->loadCheckpoint((out / "ckpt").string());
    trainMlpSteps(*s, m, G, offset, 1, info.step, 3);
  } else {
    trainMlpSteps(*s, m, G, offset, 1, 0, phase == "first" ? 3 : 6);
    if (phase == "first") s->saveCheckpoint((out / "ckpt").string());
  }
  const auto all = readTensors(*s, mlpWeightsAndVelocities());
  std::ofstream f(out / (phase + "-" + std::to_string(dist::getInstanceIndex()) + ".bin"),
                  std::ios::binary);
  f.write(reinterpret_cast<const char*>(all.data()), static_cast<std::streamsize>(all.size() * 4));
}

std::vector<float> readBin(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// 2 instances x 2 replicas save (each writing its part); the same layout resumes bit-identically;
// 4 instances x 1 and one instance of 4 (sharded) load the same checkpoint and continue.
TEST_F(CheckpointTest, InstancesSaveInParallelAndResume) {
  auto phase = [&](const std::string& xrunLayout, const std::string& name,
                   const std::string& extra) {
    const CommandResult r = runTestsUnderXrun(
        xrunLayout, "test_session", "CheckpointWorker.*",
        "XTRAIN_TEST_OUT=" + dir_.string() + " XTRAIN_TEST_PHASE=" + name + " " + extra);
    EXPECT_EQ(r.exitCode, 0) << xrunLayout << " " << name << ":\n" << r.output;
  };
  phase("-n 2 --num-replicas 4", "first", "");
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / "part-0.h5") && fs::exists(dir_ / "ckpt" / "part-1.h5"))
      << "each instance writes its part";
  phase("-n 2 --num-replicas 4", "straight", "");
  phase("-n 2 --num-replicas 4", "second", "");
  const auto straight = readBin(dir_ / "straight-0.bin");
  ASSERT_FALSE(straight.empty());
  EXPECT_EQ(readBin(dir_ / "second-0.bin"), straight);
  EXPECT_EQ(readBin(dir_ / "second-1.bin"), straight);
  // Other layouts: the same weights up to the order of the sums.
  for (const auto& [xrunLayout, extra] : std::vector<std::pair<std::string, std::string>>{
           {"-n 4", ""}, {"-n 1 --num-replicas 4", "XTRAIN_TEST_SHARDED=1"}}) {
    phase(xrunLayout, "second", extra);
    const auto got = readBin(dir_ / "second-0.bin");
    ASSERT_EQ(got.size(), straight.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], straight[i], 1e-5f * std::max(1.0f, std::abs(straight[i])))
          << xrunLayout << " " << i;
    }
  }
}

}  // namespace
}  // namespace xtrain::testing
