// Every optimizer and mode of issue 7 against independent numbers: 10 steps of a linear model
// compared with tests/data/optimizer_reference (PyTorch where its rule is PopART's, NumPy
// otherwise; see the README there). Each case runs on one replica, on 4 replicas with a Mean
// reduction (the batch of 8 split 2 per replica) and on 4 replicas with the optimizer state
// sharded: all must match the same numbers, per step for the weights and the loss, and after step
// 10 for the optimizer state.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "testing/reference_data.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {
namespace {

const std::string kDir = std::string(XTRAIN_TEST_DATA_DIR) + "/optimizer_reference";

ConstVoidData valueOf(const HostTensor& t) {
  std::vector<float> v(t.span<float>().begin(), t.span<float>().end());
  return ConstVoidData::fromVector<float>(t.shape(), v);
}

struct Model {
  std::string proto;
  TensorId x, y, loss;
};

// pred = x W + b, loss = mean((pred - y)^2) over this replica's rows.
Model buildModel(const ReferenceData& ref, int64_t rowsPerReplica) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  Model m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {rowsPerReplica, 4}), "x");
  m.y = b->addInputTensor(TensorInfo(DataType::FLOAT, {rowsPerReplica, 3}), "y");
  auto w = b->addInitializedInputTensor(valueOf(ref.at("W")), "W");
  auto bias = b->addInitializedInputTensor(valueOf(ref.at("b")), "b");
  auto d = onnx.sub({onnx.add({onnx.matmul({m.x, w}), bias}), m.y});
  m.loss = b->aiGraphcoreOpset1().identityloss({onnx.mul({d, d})}, ReductionType::Mean);
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

float number(const ReferenceData& ref, const std::string& key) {
  return std::stof(ref.hyper.at(key));
}

std::vector<ClipNormSettings> clipping(const ReferenceData& ref) {
  const std::string clip = ref.hyper.at("clip");
  if (clip == "none") return {};
  const float maxNorm = number(ref, "clipMaxNorm");
  if (clip == "clipAllWeights") return {ClipNormSettings::clipAllWeights(maxNorm)};
  std::vector<TensorId> ids;
  std::stringstream list(ref.hyper.at("clipWeightIds"));
  for (std::string id; std::getline(list, id, ',');) ids.push_back(id);
  return {ClipNormSettings::clipWeights(ids, maxNorm)};
}

// The map-constructor values ("default..." keys, lossScaling, maxWeightNorm), all constant, and the
// "<weight>.<key>" specific values.
std::map<std::string, std::pair<float, bool>> mapValues(const ReferenceData& ref,
                                                        const std::vector<std::string>& names) {
  std::map<std::string, std::pair<float, bool>> out;
  for (const auto& name : names) {
    if (ref.hyper.count(name)) out[name] = {number(ref, name), true};
  }
  return out;
}

template <typename Opt>
void insertSpecifics(Opt& opt, const ReferenceData& ref) {
  std::map<std::string, std::map<std::string, std::pair<float, bool>>> specific;
  for (const auto& [key, value] : ref.hyper) {
    const auto dot = key.find('.');
    if (dot == std::string::npos) continue;
    specific[key.substr(0, dot)][key.substr(dot + 1)] = {std::stof(value), true};
  }
  for (const auto& [weight, values] : specific) opt.insertSpecific(weight, values);
}

std::unique_ptr<Optimizer> makeOptimizer(const ReferenceData& ref) {
  const std::string kind = ref.hyper.at("optimizer");
  const auto clip = clipping(ref);
  auto decayMode = [&] {
    return ref.hyper.at("weightDecayMode") == "Decay" ? WeightDecayMode::Decay
                                                      : WeightDecayMode::L2Regularization;
  };
  if (kind == "SGD") {
    auto names = SGD::hyperParameterNames();
    auto sgd = std::make_unique<SGD>(mapValues(ref, names), clip);
    insertSpecifics(*sgd, ref);
    return sgd;
  }
  if (kind == "Adam") {
    const std::map<std::string, AdamMode> modes = {{"Adam", AdamMode::Adam},
                                                   {"AdamNoBias", AdamMode::AdamNoBias},
                                                   {"AdaMax", AdamMode::AdaMax},
                                                   {"Lamb", AdamMode::Lamb},
                                                   {"LambNoBias", AdamMode::LambNoBias}};
    auto adam = std::make_unique<Adam>(mapValues(ref, Adam::hyperParameterNames()),
                                       modes.at(ref.hyper.at("adamMode")), decayMode(),
                                       DataType::FLOAT, DataType::FLOAT, DataType::FLOAT, clip);
    insertSpecifics(*adam, ref);
    return adam;
  }
  const std::map<std::string, AdaptiveMode> modes = {
      {"AdaGrad", AdaptiveMode::AdaGrad},
      {"RMSProp", AdaptiveMode::RMSProp},
      {"CenteredRMSProp", AdaptiveMode::CenteredRMSProp},
      {"AdaDelta", AdaptiveMode::AdaDelta}};
  auto adaptive = std::make_unique<Adaptive>(
      mapValues(ref, Adaptive::hyperParameterNames()), modes.at(ref.hyper.at("adaptiveMode")),
      decayMode(), DataType::FLOAT, DataType::FLOAT, DataType::FLOAT, DataType::FLOAT, false, clip);
  insertSpecifics(*adaptive, ref);
  return adaptive;
}

// PopART's tensor name of a state slot (docs/optimizers.md section 8).
std::string stateTensor(const std::string& slot, const std::string& weight) {
  const std::map<std::string, std::string> prefix = {
      {"velocity", "Accl"}, {"m", "Accl1"},  {"v", "Accl2"}, {"step", "Step"},
      {"v1", "Accl1"},      {"v2", "Accl2"}, {"v3", "Accl3"}};
  return prefix.at(slot) + "___" + weight;
}

// |got - want| <= 1e-5 (|want| + 0.1 max|want|), element by element (README of the reference data).
void expectClose(const HostTensor& got, const HostTensor& want, const std::string& what) {
  ASSERT_EQ(got.info(), want.info()) << what;
  float scale = 0;
  for (float w : want.span<float>()) scale = std::max(scale, std::fabs(w));
  int reported = 0;
  for (int64_t i = 0; i < want.nelms() && reported < 3; ++i) {
    const float w = want.data<float>()[i];
    const float g = got.data<float>()[i];
    if (!(std::fabs(g - w) <= 1e-5f * (std::fabs(w) + 0.1f * scale))) {
      ADD_FAILURE() << what << " element " << i << ": xtrain " << g << ", reference " << w;
      ++reported;
    }
  }
}

struct Layout {
  int64_t replicas = 1;
  bool shardedState = false;
  std::string name() const {
    return replicas == 1 ? "OneReplica" : shardedState ? "FourReplicasSharded" : "FourReplicas";
  }
};

void PrintTo(const Layout& layout, std::ostream* os) {
  *os << layout.name();
}

void trainAndCompare(const std::string& file, const Layout& layout) {
  const ReferenceData ref = loadReferenceData(kDir + "/" + file);
  const int64_t batch = std::stoll(ref.hyper.at("batch"));
  const int64_t R = layout.replicas;
  const Model m = buildModel(ref, batch / R);
  const auto optimizer = makeOptimizer(ref);
  SessionOptions o;
  if (R > 1) {
    o.enableReplicatedGraphs = true;
    o.replicatedGraphCount = R;
    o.accumulationAndReplicationReductionType = ReductionType::Mean;
  }
  if (layout.shardedState) {
    o.optimizerStateTensorLocationSettings.location.replicatedTensorSharding =
        ReplicatedTensorSharding::On;
    o.optimizerStateTensorLocationSettings.minElementsForReplicatedTensorSharding = 1;
  }
  auto device =
      DeviceManager::createDeviceManager().createIpuModelDevice({{"numIPUs", std::to_string(R)}});
  auto session = TrainingSession::createFromOnnxModel(
      m.proto, DataFlow(1, {{m.loss, AnchorReturnType("ALL")}}), m.loss, *optimizer, device, {}, o);
  session->prepareDevice();
  session->weightsFromHost();
  auto read = [&](const TensorId& id, const TensorInfo& info) {
    HostTensor out(info);
    WeightsIO io;
    io.insert(id, {out.raw(), out.info()});
    session->readWeights(io);
    return out;
  };
  const int steps = std::stoi(ref.hyper.at("steps"));
  for (int k = 1; k <= steps; ++k) {
    const std::string step = "/step" + std::to_string(k);
    // [8, n] rows in order: replica r takes rows [r 8/R, (r + 1) 8/R), i.e. the buffer [R, 8/R, n].
    HostTensor x = ref.at("x" + step);
    HostTensor y = ref.at("y" + step);
    NDArrayWrapper<float> xa(x.data<float>(), {R, batch / R, 4});
    NDArrayWrapper<float> ya(y.data<float>(), {R, batch / R, 3});
    std::vector<float> losses(static_cast<size_t>(R));
    NDArrayWrapper<float> la(losses.data(), R == 1 ? Shape{} : Shape{R});
    StepIO io({{m.x, xa}, {m.y, ya}}, {{m.loss, la}});
    session->run(io);
    float loss = 0;
    for (float l : losses) loss += l / static_cast<float>(R);
    const float wantLoss = ref.at("loss" + step).data<float>()[0];
    EXPECT_NEAR(loss, wantLoss, 1e-5f * std::fabs(wantLoss) + 1e-6f) << "loss of step " << k;
    session->weightsToHost();
    for (const std::string w : {"W", "b"}) {
      const HostTensor& want = ref.at(w + step);
      expectClose(read(w, want.info()), want, w + " after step " + std::to_string(k));
    }
  }
  int states = 0;
  for (const auto& [name, want] : ref.tensors) {
    if (name.rfind("state/", 0) != 0) continue;
    const auto slash = name.find('/', 6);
    const std::string slot = name.substr(6, slash - 6);
    const std::string weight = name.substr(slash + 1);
    expectClose(read(stateTensor(slot, weight), want.info()), want,
                "state " + slot + " of " + weight + " after step " + std::to_string(steps));
    ++states;
  }
  const bool stateless = ref.hyper.at("optimizer") == "SGD" && number(ref, "defaultMomentum") == 0;
  EXPECT_EQ(states > 0, !stateless) << "the reference's optimizer state does not fit its optimizer";
}

std::vector<std::string> referenceFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    if (entry.path().extension() == ".txt") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class OptimizerReference : public ::testing::TestWithParam<std::tuple<std::string, Layout>> {};

TEST_P(OptimizerReference, TenStepsMatchTheReference) {
  const auto& [file, layout] = GetParam();
  trainAndCompare(file, layout);
}

TEST(OptimizerReferenceData, EveryCaseIsPresent) {
  // The generator's 37 cases; a missing file would silently drop a case from the suite.
  EXPECT_EQ(referenceFiles().size(), 37u);
}

INSTANTIATE_TEST_SUITE_P(Cases, OptimizerReference,
                         ::testing::Combine(::testing::ValuesIn(referenceFiles()),
                                            ::testing::Values(Layout{1, false}, Layout{4, false},
                                                              Layout{4, true})),
                         [](const auto& info) {
                           std::string file = std::get<0>(info.param);
                           file = file.substr(0, file.size() - 4);
                           return file + "_" + std::get<1>(info.param).name();
                         });

}  // namespace
}  // namespace xtrain::testing
