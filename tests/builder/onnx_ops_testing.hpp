// Helpers of the tests of the Builder's ai.onnx op methods: run a Builder model in an
// InferenceSession, and check one SGD step against a finite difference of a naive reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "xtrain/builder.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/session.hpp"

namespace xtrain::testing {

using Values = std::vector<double>;
using RefFn = std::function<Values(const Values&)>;

inline std::vector<float> randomFloats(size_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = d(gen);
    // Off the kinks and integers of the ops tested here (0, +-1, +-2, +-3).
    const float r = std::round(x);
    if (std::abs(x - r) < 0.15f) x = r + (x >= r ? 0.15f : -0.15f);
  }
  return v;
}

inline Values toDoubles(const std::vector<float>& v) {
  return Values(v.begin(), v.end());
}

// One inference step of b's model with float inputs `feeds`: every output's values as doubles.
inline std::vector<Values> run(
    Builder& b, const std::vector<TensorId>& outs,
    std::map<TensorId, std::pair<Shape, std::vector<float>>> feeds = {}) {
  for (const auto& o : outs) b.addOutputTensor(o);
  auto device = DeviceManager::createDeviceManager().createCpuDevice();
  auto s = InferenceSession::createFromOnnxModel(b.getModelProto(), DataFlow(1, outs), device);
  s->prepareDevice();
  s->weightsFromHost();
  auto anchors = s->initAnchorArrays();
  std::map<TensorId, IArray&> outArrays;
  for (auto& [id, a] : anchors) outArrays.emplace(id, *a);
  std::vector<NDArrayWrapper<float>> wrappers;
  wrappers.reserve(feeds.size());
  std::map<TensorId, IArray&> inArrays;
  for (auto& [id, f] : feeds) {
    wrappers.emplace_back(f.second.data(), f.first);
    inArrays.emplace(id, wrappers.back());
  }
  StepIO io(inArrays, outArrays);
  s->run(io);
  std::vector<Values> result;
  for (const auto& o : outs) {
    OwnedArray& a = *anchors.at(o);
    Values v(a.nelms());
    for (size_t i = 0; i < v.size(); ++i) {
      switch (a.dataType()) {
        case DataType::FLOAT: v[i] = a.dataAs<float>()[i]; break;
        case DataType::INT64: v[i] = static_cast<double>(a.dataAs<int64_t>()[i]); break;
        case DataType::INT32: v[i] = a.dataAs<int32_t>()[i]; break;
        case DataType::BOOL: v[i] = a.dataAs<bool>()[i] ? 1.0 : 0.0; break;
        default: ADD_FAILURE() << "output " << o << " of type " << dataTypeName(a.dataType());
      }
    }
    result.push_back(v);
  }
  return result;
}

inline void expectNear(const Values& got, const Values& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " at " << i;
  }
}

// Builds op(w) from weight w; the test's opset object comes from the builder it is given.
template <class Ops>
using OpFn = std::function<TensorId(Builder&, Ops&, const TensorId&)>;

// One SGD step (lr 1) on w (shape, w0) through op, loss sum(op(w) * r): w must move by the central
// finite difference of sum(ref(w) * r).
template <class Ops>
void expectGradient(Ops (Builder::*opset)(), const Shape& shape, const std::vector<float>& w0,
                    const OpFn<Ops>& op, const RefFn& ref, const std::string& what,
                    double tol = 2e-3) {
  SCOPED_TRACE(what);
  auto b = Builder::create();
  Ops o = ((*b).*opset)();
  auto gc = b->aiGraphcoreOpset1();
  const TensorId w = b->addInitializedInputTensor(ConstVoidData::fromVector<float>(shape, w0), "w");
  const TensorId y = op(*b, o, w);
  const size_t n = ref(toDoubles(w0)).size();
  const std::vector<float> r = randomFloats(n, 99, 0.5f, 1.5f);
  const TensorId rt = o.constant(ConstVoidData::fromVector<float>(b->getTensorShape(y), r), "r");
  const TensorId loss = gc.identityloss({o.mul({y, rt})}, ReductionType::Sum);
  b->addOutputTensor(loss);
  auto device = DeviceManager::createDeviceManager().createCpuDevice();
  auto s = TrainingSession::createFromOnnxModel(b->getModelProto(), DataFlow(1), loss,
                                                ConstSGD(1.0f), device);
  s->prepareDevice();
  s->weightsFromHost();
  StepIO io({}, {});
  s->run(io);
  s->weightsToHost();
  std::vector<float> w1(w0.size());
  WeightsIO wio;
  wio.insert(w, {w1.data(), TensorInfo(DataType::FLOAT, shape)});
  s->readWeights(wio);
  const double h = 1e-3;
  for (size_t i = 0; i < w0.size(); ++i) {
    Values plus = toDoubles(w0), minus = toDoubles(w0);
    plus[i] += h;
    minus[i] -= h;
    const Values fp = ref(plus), fm = ref(minus);
    double g = 0;
    for (size_t k = 0; k < n; ++k) g += (fp[k] - fm[k]) * r[k] / (2 * h);
    EXPECT_NEAR(w1[i], w0[i] - g, tol * (1.0 + std::abs(g))) << "element " << i;
  }
}

inline Values mapValues(const Values& v, const std::function<double(double)>& f) {
  Values out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), f);
  return out;
}

}  // namespace xtrain::testing
