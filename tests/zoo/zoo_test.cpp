// The model zoo (issue 14, item 6): models written in PyTorch and exported by torch.onnx.export in
// training mode (tests/data/zoo, made by tests/zoo/make_zoo.py) train with xtrain, unchanged, to
// PyTorch's own weights: every model at opsets 13 and 17, with a fixed and with a dynamic batch,
// for SGD with momentum and for Adam, on one replica and (dynamic batch) on 2 instances x 2
// replicas.
//
// Each case runs the xtrain tool as a user would (`xtrain --model ... --data ... --loss loss`, or
// `xrun -n 2 --num-replicas 4 xtrain ...`) and compares the initializers of the saved model with
// reference_<optimizer>[_2x2].h5: |xtrain - torch| <= 1e-4 * (|torch| + 0.1 * max|torch tensor|)
// element by element (relative 1e-4, with the tensor's scale as the floor near zero, as
// tests/data/README.md recommends for reference data).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <numeric>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/dataset_reader.hpp"
#include "session/model_io.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

// make_zoo.py's STEPS and BATCH: step k of the reference trains on samples [k*8, k*8 + 8) of
// data.h5; with 4 replicas, replica r of step k on k*8 + 2r + {0, 1}.
constexpr int64_t kSteps = 4;
constexpr int64_t kBatch = 8;
constexpr int64_t kReplicas = 4;
constexpr double kTolerance = 1e-4;

// make_zoo.py's optimizers as xtrain options (its docstring says why these are the same rules).
const std::map<std::string, std::string> kOptimizerFlags = {
    {"sgd", "--optimizer sgd --lr 0.05 --momentum 0.9 --dampening 0 --weight-decay 0.001"},
    {"adam", "--optimizer adam --lr 0.01 --beta1 0.9 --beta2 0.99 --eps 0.0001 --weight-decay 0"},
};

struct ZooModel {
  std::string name;
  bool batchNorm;  // per-replica batch statistics: the 2x2 weights differ from 1 replica's
};

const std::vector<ZooModel> kModels = {
    {"mlp", false},  {"lenet", false}, {"resnet", true}, {"mobilenet", true}, {"gpt", false},
    {"bert", false}, {"lstm", false},  {"gru", false},   {"unet", false},
};

struct ZooCase {
  ZooModel model;
  int opset;
  bool dynamic;
  std::string optimizer;
  bool twoByTwo;  // 2 instances x 2 replicas (xrun), else 1 replica
};

std::string caseName(const ZooCase& c) {
  return c.model.name + "_op" + std::to_string(c.opset) + (c.dynamic ? "_dyn" : "") + "_" +
         c.optimizer + (c.twoByTwo ? "_2x2" : "_1x1");
}

// gtest prints the case's name rather than its bytes.
void PrintTo(const ZooCase& c, std::ostream* os) {
  *os << caseName(c);
}

std::vector<ZooCase> allCases() {
  std::vector<ZooCase> cases;
  for (const ZooModel& m : kModels) {
    for (int opset : {13, 17}) {
      for (bool dynamic : {false, true}) {
        for (const char* opt : {"sgd", "adam"}) {
          cases.push_back({m, opset, dynamic, opt, false});
          // A model exported with a fixed batch of 8 cannot take micro-batches of 2.
          if (dynamic) cases.push_back({m, opset, dynamic, opt, true});
        }
      }
    }
  }
  return cases;
}

std::string zooDir(const std::string& model) {
  return std::string(XTRAIN_TEST_DATA_DIR) + "/zoo/" + model;
}

// The order in which xtrain (tools/xtrain/sample_order.cpp, SampleOrder) hands out the samples of
// its first epoch with --seed 0. Must follow SampleOrder: if that changes, every case here fails
// with wrong weights (each step would see other samples than PyTorch's).
std::vector<int64_t> xtrainFirstEpochOrder(int64_t samples) {
  std::vector<int64_t> order(static_cast<size_t>(samples));
  std::iota(order.begin(), order.end(), 0);
  const uint64_t seed = 0, epoch = 0;
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + epoch);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

// Writes data.h5 with its samples permuted so that xtrain's shuffled order feeds step k (and
// replica r) exactly the samples the PyTorch reference used: file sample order[i] = sample i.
void writeDataInXtrainOrder(const std::string& from, const std::string& to) {
  checkpoint::DatasetReader reader(from);
  checkpoint::DatasetWriter writer(to);
  for (const std::string& name : reader.datasetNames()) {
    const TensorInfo info = reader.info(name);
    ASSERT_EQ(info.dim(0), kSteps * kBatch) << from << ": " << name;
    const std::vector<int64_t> order = xtrainFirstEpochOrder(info.dim(0));
    std::vector<int64_t> source(order.size());
    for (size_t i = 0; i < order.size(); ++i)
      source[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
    HostTensor data(info);
    reader.readSamples(name, source, info.dataType(), data.raw());
    writer.write(name, info, data.raw());
  }
}

// PyTorch's trained weights: every dataset of reference_<case>.h5, as doubles.
std::map<std::string, std::vector<double>> readReference(const std::string& path,
                                                         std::map<std::string, Shape>* shapes) {
  checkpoint::DatasetReader reader(path);
  std::map<std::string, std::vector<double>> out;
  for (const std::string& name : reader.datasetNames()) {
    const TensorInfo info = reader.info(name);
    std::vector<int64_t> all(static_cast<size_t>(info.dim(0)));
    std::iota(all.begin(), all.end(), 0);
    std::vector<float> values(static_cast<size_t>(info.nelms()));
    reader.readSamples(name, all, DataType::FLOAT, values.data());
    out[name] = std::vector<double>(values.begin(), values.end());
    (*shapes)[name] = info.shape();
  }
  return out;
}

// Every tensor of `reference` is an initializer of the trained model `trained` within kTolerance
// (the measure in the file comment).
void expectInitializersEqual(const std::string& trained,
                             const std::map<std::string, std::vector<double>>& reference,
                             const std::map<std::string, Shape>& shapes, const std::string& what) {
  const auto weights = session::readInitializers(trained);
  for (const auto& [name, want] : reference) {
    const auto it = weights.find(name);
    ASSERT_NE(it, weights.end()) << name << " is missing from the trained model";
    const HostTensor& got = it->second;
    ASSERT_EQ(got.shape(), shapes.at(name)) << name;
    ASSERT_EQ(static_cast<size_t>(got.nelms()), want.size()) << name;
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    double worst = 0;
    int64_t worstAt = 0;
    for (int64_t i = 0; i < got.nelms(); ++i) {
      const double w = want[static_cast<size_t>(i)];
      const double d = std::abs(got.getAsDouble(i) - w) / (std::abs(w) + 0.1 * scale);
      if (d > worst) worst = d, worstAt = i;
    }
    EXPECT_LE(worst, kTolerance) << name << "[" << worstAt << "]: xtrain "
                                 << got.getAsDouble(worstAt) << ", " << what << " "
                                 << want[static_cast<size_t>(worstAt)];
  }
}

// Every dataset of `referenceFile` is an initializer of the trained model `trained`
// (expectInitializersEqual).
void expectInitializersMatch(const std::string& trained, const std::string& referenceFile,
                             const std::string& what) {
  std::map<std::string, Shape> shapes;
  const auto reference = readReference(referenceFile, &shapes);
  ASSERT_FALSE(reference.empty()) << referenceFile;
  expectInitializersEqual(trained, reference, shapes, what);
}

class ZooTraining : public ScratchDirTest, public ::testing::WithParamInterface<ZooCase> {
 protected:
  // Trains the case's export with xtrain (under xrun for 2x2) on the data in xtrain's order and
  // returns the path of the saved model, or "" after a test failure.
  std::string train(const ZooCase& c, const std::string& extraFlags = "") {
    const std::string dir = zooDir(c.model.name);
    const std::string model = dir + "/" + c.model.name + "_op" + std::to_string(c.opset) +
                              (c.dynamic ? "_dyn" : "") + ".onnx";
    const std::string data = path("data.h5");
    writeDataInXtrainOrder(dir + "/data.h5", data);
    if (HasFailure()) return "";
    const std::string trained = path("trained.onnx");
    std::ostringstream cmd;
    if (c.twoByTwo) cmd << "./xrun -n 2 --num-replicas " << kReplicas << " ";
    cmd << "./xtrain --model " << model << " --data " << data << " --loss loss"
        << " --micro-batch-size " << (c.twoByTwo ? kBatch / kReplicas : kBatch) << " --steps "
        << kSteps << " --seed 0 --reduction mean " << kOptimizerFlags.at(c.optimizer)
        << " --log-level warn --save-model " << trained << extraFlags;
    const CommandResult r = runCommand(cmd.str());
    EXPECT_EQ(r.exitCode, 0) << cmd.str() << "\n" << r.output;
    return r.exitCode == 0 ? trained : "";
  }
};

TEST_P(ZooTraining, TrainsToPyTorchWeights) {
  const ZooCase& c = GetParam();
  const std::string trained = train(c);
  if (trained.empty()) return;
  // Without BatchNormalization the mean over 4 equal quarters is the mean over the batch.
  const std::string refCase = c.optimizer + (c.twoByTwo && c.model.batchNorm ? "_2x2" : "");
  expectInitializersMatch(trained, zooDir(c.model.name) + "/reference_" + refCase + ".h5",
                          "PyTorch");
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooTraining, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<ZooCase>& info) {
                           return caseName(info.param);
                         });

// BatchNormalization's running statistics (running_mean, running_var initializers) after SGD on
// one replica follow the ONNX operator: momentum * running + (1 - momentum) * the batch's mean and
// population variance, once per step (running_sgd.h5, computed from PyTorch's forward passes).
class ZooRunningStatistics : public ZooTraining {};

TEST_P(ZooRunningStatistics, FollowTheOnnxDefinition) {
  const ZooCase& c = GetParam();
  const std::string trained = train(c);
  if (trained.empty()) return;
  expectInitializersMatch(trained, zooDir(c.model.name) + "/running_sgd.h5",
                          "ONNX BatchNormalization on PyTorch's batches");
}

std::vector<ZooCase> runningStatisticsCases() {
  std::vector<ZooCase> cases;
  for (const ZooModel& m : kModels) {
    if (!m.batchNorm) continue;
    for (int opset : {13, 17}) {
      for (bool dynamic : {false, true}) cases.push_back({m, opset, dynamic, "sgd", false});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooRunningStatistics, ::testing::ValuesIn(runningStatisticsCases()),
                         [](const ::testing::TestParamInfo<ZooCase>& info) {
                           return caseName(info.param);
                         });

// With PyTorch's convention (--batchnorm-running-var pytorch, or auto: the zoo's models are
// PyTorch's exports, producer_name "pytorch"), running_var ends where PyTorch's own buffer does.
// PyTorch's running_var takes the batch's unbiased variance f * v_k (f = M / (M - 1), M = batch *
// H * W values per channel) where ONNX's takes v_k; the batch variances v_k are the same (Y is
// normalised with the population variance either way, so the weights follow the same path). After
// K steps from r_0 with momentum m, ONNX's r_K = m^K r_0 + (1 - m) sum_k m^(K-1-k) v_k, so
// PyTorch's is m^K r_0 + f (r_K - m^K r_0): derived here from running_sgd.h5 (ONNX's r_K from
// PyTorch's batches), each BatchNormalization's M and m from the model, r_0 from its initializer.
class ZooPyTorchRunningVariance : public ZooTraining {};

std::map<std::string, std::vector<double>> pytorchRunningStatistics(
    const std::string& model, const std::map<std::string, std::vector<double>>& onnxReference) {
  std::map<std::string, std::vector<double>> out;
  const session::ImportedModel imported = session::importModel(model, {}, 1);
  for (const auto& [id, op] : imported.graph->ops()) {
    if (op->type != "BatchNormalization") continue;
    const TensorInfo& x = imported.graph->tensor(op->inputs.at(0)).info;
    const double perChannel = static_cast<double>(x.nelms() / x.dim(1));
    const double f = perChannel / (perChannel - 1);
    const double decay = std::pow(static_cast<double>(op->attrs.getFloat("momentum")), kSteps);
    const TensorId& var = op->inputs.at(4);
    const HostTensor& initial = *imported.graph->tensor(var).value;
    const auto it = onnxReference.find(var);
    if (it == onnxReference.end()) {
      ADD_FAILURE() << var << " (running_var of " << op->name << ") is not in running_sgd.h5";
      continue;
    }
    std::vector<double>& want = out[var];
    for (size_t i = 0; i < it->second.size(); ++i) {
      const double start = decay * initial.getAsDouble(static_cast<int64_t>(i));
      want.push_back(start + f * (it->second[i] - start));
    }
    out[op->inputs.at(3)] = onnxReference.at(op->inputs.at(3));  // running_mean: unchanged
  }
  return out;
}

TEST_P(ZooPyTorchRunningVariance, EndsWherePyTorchsBuffersDo) {
  const ZooCase& c = GetParam();
  const std::string model =
      zooDir(c.model.name) + "/" + c.model.name + "_op" + std::to_string(c.opset) + ".onnx";
  std::map<std::string, Shape> shapes;
  const auto onnxReference = readReference(zooDir(c.model.name) + "/running_sgd.h5", &shapes);
  const auto reference = pytorchRunningStatistics(model, onnxReference);
  ASSERT_FALSE(reference.empty()) << model << " has no BatchNormalization";
  // Not what ONNX's convention gives: by the comparison's measure, the two are several tolerances
  // apart (the zoo's feature maps are large, M >= 128, so f - 1 is small but not rounding).
  double apart = 0;
  for (const auto& [name, want] : reference) {
    const auto& onnx = onnxReference.at(name);
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < want.size(); ++i) {
      apart = std::max(apart, std::abs(want[i] - onnx[i]) / (std::abs(want[i]) + 0.1 * scale));
    }
  }
  EXPECT_GT(apart, 4 * kTolerance);
  // opset 13 with the explicit choice, opset 17 through auto (the producer is pytorch).
  const std::string trained =
      train(c, std::string(" --batchnorm-running-var ") + (c.opset == 13 ? "pytorch" : "auto"));
  if (trained.empty()) return;
  expectInitializersEqual(trained, reference, shapes,
                          "PyTorch's running statistics (unbiased running_var)");
}

std::vector<ZooCase> pytorchRunningVarianceCases() {
  std::vector<ZooCase> cases;
  for (const ZooModel& m : kModels) {
    if (!m.batchNorm) continue;
    for (int opset : {13, 17}) cases.push_back({m, opset, false, "sgd", false});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooPyTorchRunningVariance,
                         ::testing::ValuesIn(pytorchRunningVarianceCases()),
                         [](const ::testing::TestParamInfo<ZooCase>& info) {
                           return caseName(info.param);
                         });

// The committed files are what the cases above expect: every model has its four exports, its data
// and its references, and the data has a whole number of steps.
TEST(ZooFiles, EveryModelHasItsExportsDataAndReferences) {
  for (const ZooModel& m : kModels) {
    const std::string dir = zooDir(m.name);
    for (const char* variant : {"_op13", "_op13_dyn", "_op17", "_op17_dyn"}) {
      EXPECT_TRUE(std::filesystem::exists(dir + "/" + m.name + variant + ".onnx"))
          << m.name << variant;
    }
    std::vector<std::string> refs = {"sgd", "adam"};
    if (m.batchNorm) refs.insert(refs.end(), {"sgd_2x2", "adam_2x2"});
    for (const std::string& ref : refs) {
      EXPECT_TRUE(std::filesystem::exists(dir + "/reference_" + ref + ".h5"))
          << m.name << " " << ref;
    }
    checkpoint::DatasetReader data(dir + "/data.h5");
    for (const std::string& name : data.datasetNames()) {
      EXPECT_EQ(data.info(name).dim(0), kSteps * kBatch) << m.name << ": " << name;
    }
  }
}

}  // namespace
}  // namespace xtrain::testing
