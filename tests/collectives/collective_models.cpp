#include "collective_models.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace xtrain::testing {

TensorId CollectiveCase::emit(Builder& b, const TensorId& x) const {
  auto gc = b.aiGraphcoreOpset1();
  switch (kind) {
    case CollectiveKind::AllReduce: return gc.replicatedallreduce({x}, op, group);
    case CollectiveKind::ReduceScatter: return gc.replicatedreducescatter({x}, op, group);
    case CollectiveKind::AllGather: return gc.replicatedallgather({x}, group);
  }
  return {};
}

namespace {

double reduce(CollectiveOperator op, const std::vector<double>& v) {
  double acc = 0;
  switch (op) {
    case CollectiveOperator::Add:
    case CollectiveOperator::Mean:
      for (double x : v) acc += x;
      return op == CollectiveOperator::Mean ? acc / static_cast<double>(v.size()) : acc;
    case CollectiveOperator::Mul:
      acc = 1;
      for (double x : v) acc *= x;
      return acc;
    case CollectiveOperator::Min: return *std::min_element(v.begin(), v.end());
    case CollectiveOperator::Max: return *std::max_element(v.begin(), v.end());
    case CollectiveOperator::LogicalAnd:
      return std::all_of(v.begin(), v.end(), [](double x) { return x != 0; }) ? 1 : 0;
    case CollectiveOperator::LogicalOr:
      return std::any_of(v.begin(), v.end(), [](double x) { return x != 0; }) ? 1 : 0;
    case CollectiveOperator::SquareAdd:
      for (double x : v) acc += x * x;
      return acc;
    case CollectiveOperator::Local: break;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

int64_t groupSize(const CollectiveCase& c, int64_t replicas) {
  return ReplicaGrouping::fromCommGroup(c.group, replicas).getGroupSize();
}

int64_t outputSize(const CollectiveCase& c, int64_t n, int64_t k) {
  switch (c.kind) {
    case CollectiveKind::AllReduce: return n;
    case CollectiveKind::ReduceScatter: return (n + k - 1) / k;
    case CollectiveKind::AllGather: return n * k;
  }
  return 0;
}

}  // namespace

std::vector<std::vector<double>> hostCollective(const CollectiveCase& c, int64_t replicas,
                                                const std::vector<std::vector<double>>& inputs) {
  const ReplicaGrouping g = ReplicaGrouping::fromCommGroup(c.group, replicas);
  const int64_t k = g.getGroupSize();
  std::vector<std::vector<double>> out(static_cast<size_t>(replicas));
  for (int64_t r = 0; r < replicas; ++r) {
    const auto members = g.getReplicasAt(g.getGroupAt(r));
    const auto n = static_cast<int64_t>(inputs[0].size());
    auto& o = out[static_cast<size_t>(r)];
    if (c.kind == CollectiveKind::AllGather) {
      for (int64_t m : members) {
        const auto& in = inputs[static_cast<size_t>(m)];
        o.insert(o.end(), in.begin(), in.end());
      }
      continue;
    }
    const int64_t s = outputSize(c, n, k);
    const int64_t begin = c.kind == CollectiveKind::ReduceScatter ? g.getIndexInGroupAt(r) * s : 0;
    for (int64_t j = begin; j < begin + s; ++j) {
      std::vector<double> v;
      for (int64_t m : members)
        v.push_back(j < n ? inputs[static_cast<size_t>(m)][static_cast<size_t>(j)] : 0.0);
      o.push_back(reduce(c.op, v));
    }
  }
  return out;
}

InferenceModel buildInferenceModel(int64_t n, const CollectiveCase& c) {
  auto b = Builder::create();
  InferenceModel m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {n}), "x");
  m.y = c.emit(*b, m.x);
  b->addOutputTensor(m.y);
  m.proto = b->getModelProto();
  return m;
}

TrainingModel buildTrainingModel(int64_t n, const std::vector<float>& w0, const CollectiveCase& c,
                                 int64_t replicas) {
  auto b = Builder::create();
  auto onnx = b->aiOnnxOpset13();
  TrainingModel m;
  m.x = b->addInputTensor(TensorInfo(DataType::FLOAT, {n}), "x");
  m.w = b->addInitializedInputTensor(ConstVoidData::fromVector<float>({n}, w0), "w");
  const TensorId coll = c.emit(*b, onnx.mul({m.x, m.w}));
  const int64_t size = outputSize(c, n, groupSize(c, replicas));
  for (int64_t i = 0; i < size; ++i) m.k.push_back(1.0f + 0.5f * static_cast<float>(i));
  const TensorId k = onnx.constant(ConstVoidData::fromVector<float>({size}, m.k), "k");
  const TensorId z = onnx.mul({coll, k});
  m.loss = b->aiGraphcoreOpset1().identityloss({onnx.mul({z, z})}, ReductionType::Sum);
  b->addOutputTensor(m.loss);
  m.proto = b->getModelProto();
  return m;
}

double hostTrainingLoss(const TrainingModel& m, const CollectiveCase& c, int64_t replicas,
                        const std::vector<double>& w, const std::vector<std::vector<double>>& x) {
  std::vector<std::vector<double>> h = x;
  for (auto& row : h) {
    for (size_t j = 0; j < row.size(); ++j) row[j] *= w[j];
  }
  double loss = 0;
  for (const auto& out : hostCollective(c, replicas, h)) {
    for (size_t i = 0; i < out.size(); ++i) {
      const double z = out[i] * m.k[i];
      loss += z * z;
    }
  }
  return loss;
}

std::vector<double> hostGradient(const TrainingModel& m, const CollectiveCase& c, int64_t replicas,
                                 const std::vector<double>& w,
                                 const std::vector<std::vector<double>>& x) {
  std::vector<double> grad(w.size());
  const double eps = 1e-5;
  for (size_t j = 0; j < w.size(); ++j) {
    std::vector<double> up = w, down = w;
    up[j] += eps;
    down[j] -= eps;
    grad[j] =
        (hostTrainingLoss(m, c, replicas, up, x) - hostTrainingLoss(m, c, replicas, down, x)) /
        (2 * eps);
  }
  return grad;
}

SessionOptions localReplicas(int64_t L) {
  SessionOptions o;
  if (L > 1) {
    o.enableReplicatedGraphs = true;
    o.replicatedGraphCount = L;
  }
  return o;
}

namespace {

std::shared_ptr<DeviceInfo> ipuModel(const SessionOptions& o) {
  return DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"numIPUs", std::to_string(o.getLocalReplicationFactor())}});
}

std::vector<float> flatten(const std::vector<std::vector<float>>& rows) {
  std::vector<float> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

}  // namespace

std::vector<std::vector<float>> runInference(const InferenceModel& m, const SessionOptions& o,
                                             const std::vector<std::vector<float>>& inputs) {
  auto s = InferenceSession::createFromOnnxModel(m.proto, DataFlow(1, std::vector<TensorId>{m.y}),
                                                 ipuModel(o), {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  std::vector<float> x = flatten(inputs);
  NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
  auto anchors = s->initAnchorArrays();
  StepIO io({{m.x, xa}}, {{m.y, *anchors.at(m.y)}});
  s->run(io);
  const float* y = anchors.at(m.y)->dataAs<float>();
  const auto per = static_cast<size_t>(anchors.at(m.y)->nelms()) / inputs.size();
  std::vector<std::vector<float>> out;
  for (size_t r = 0; r < inputs.size(); ++r) out.emplace_back(y + r * per, y + (r + 1) * per);
  return out;
}

std::vector<float> trainOneStep(const TrainingModel& m, const SessionOptions& o, float lr,
                                const std::vector<std::vector<float>>& inputs) {
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss, ConstSGD(lr),
                                                ipuModel(o), {}, o);
  s->prepareDevice();
  s->weightsFromHost();
  std::vector<float> x = flatten(inputs);
  NDArrayWrapper<float> xa(x.data(), s->expectedInputBufferShape(m.x));
  StepIO io({{m.x, xa}}, {});
  s->run(io);
  s->weightsToHost();
  std::vector<float> w(inputs.at(0).size());
  WeightsIO wio;
  wio.insert(m.w, {w.data(), TensorInfo(DataType::FLOAT, {static_cast<int64_t>(w.size())})});
  s->readWeights(wio);
  return w;
}

namespace {

int64_t offsetOf(const SessionOptions& o) {
  return o.enableDistributedReplicatedGraphs ? o.globalReplicaOffset : 0;
}

std::string describe(const CollectiveCase& c, int64_t replicas) {
  return format("{} over {} replicas, operator {}", toString(c.group), replicas, toString(c.op));
}

}  // namespace

void expectCollectiveMatchesHost(const CollectiveCase& c, const SessionOptions& o,
                                 const std::vector<std::vector<float>>& inputs) {
  const int64_t replicas = o.getGlobalReplicationFactor();
  const int64_t offset = offsetOf(o);
  const int64_t L = o.getLocalReplicationFactor();
  const auto n = static_cast<int64_t>(inputs.at(0).size());
  const std::vector<std::vector<float>> mine(inputs.begin() + offset, inputs.begin() + offset + L);
  const auto got = runInference(buildInferenceModel(n, c), o, mine);
  std::vector<std::vector<double>> in;
  for (const auto& v : inputs) in.push_back(toDouble(v));
  const auto want = hostCollective(c, replicas, in);
  ASSERT_EQ(static_cast<int64_t>(got.size()), L);
  for (int64_t r = 0; r < L; ++r) {
    const auto& w = want[static_cast<size_t>(offset + r)];
    const auto& y = got[static_cast<size_t>(r)];
    ASSERT_EQ(y.size(), w.size()) << "replica " << offset + r << ": " << describe(c, replicas);
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_NEAR(y[i], w[i], 1e-4 * std::max(1.0, std::abs(w[i])))
          << "replica " << offset + r << " element " << i << ": " << describe(c, replicas);
    }
  }
}

void expectGradientMatchesHost(const CollectiveCase& c, const SessionOptions& o, int64_t n) {
  const int64_t replicas = o.getGlobalReplicationFactor();
  const int64_t offset = offsetOf(o);
  const int64_t L = o.getLocalReplicationFactor();
  std::vector<float> w0;
  for (int64_t j = 0; j < n; ++j) w0.push_back(0.3f + 0.1f * static_cast<float>(j));
  std::vector<std::vector<float>> x;
  for (int64_t r = 0; r < replicas; ++r) {
    std::vector<float> row;
    for (int64_t j = 0; j < n; ++j) {
      row.push_back(0.5f + 0.25f * static_cast<float>((r * 7 + j * 3) % 5) -
                    0.4f * static_cast<float>(r % 2));
    }
    x.push_back(row);
  }
  const auto m = buildTrainingModel(n, w0, c, replicas);
  const float lr = 0.01f;
  const auto w1 = trainOneStep(m, o, lr, {x.begin() + offset, x.begin() + offset + L});
  std::vector<std::vector<double>> xd;
  for (const auto& row : x) xd.push_back(toDouble(row));
  const auto grad = hostGradient(m, c, replicas, toDouble(w0), xd);
  for (size_t j = 0; j < static_cast<size_t>(n); ++j) {
    const double got = (static_cast<double>(w0[j]) - w1[j]) / lr;
    EXPECT_NEAR(got, grad[j], 2e-3 * std::max(1.0, std::abs(grad[j])))
        << "dw[" << j << "]: " << describe(c, replicas);
  }
}

std::vector<std::vector<float>> distinctInputs(int64_t replicas, int64_t n) {
  std::vector<std::vector<float>> in;
  for (int64_t r = 0; r < replicas; ++r) in.push_back(arange(n, 100.0f * static_cast<float>(r)));
  return in;
}

std::vector<float> arange(int64_t n, float offset) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = offset + static_cast<float>(i);
  return v;
}

std::vector<double> toDouble(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

}  // namespace xtrain::testing
