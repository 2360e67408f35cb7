#include "testing/op_testing.hpp"

#include <cmath>
#include <random>
#include <sstream>

#include "ir/autodiff/autodiff.hpp"
#include "ir/op_registry.hpp"
#include "session/lowered_graph.hpp"

namespace xtrain::testing {

std::vector<TensorId> addOp(ir::Graph& graph, const std::string& type, std::vector<TensorId> inputs,
                            Attributes attrs, int numOutputs, const std::string& domain, int opset) {
  ir::OpSpec spec;
  spec.type = type;
  spec.domain = domain;
  spec.inputs = std::move(inputs);
  spec.attrs = std::move(attrs);
  spec.numOutputs = numOutputs;
  spec.opset = domain == ir::kOnnxDomain ? opset : 0;
  spec.name = "op_under_test";
  return graph.addOp(std::move(spec)).outputs;
}

namespace {

std::vector<TensorId> addInputs(ir::Graph& graph, const std::vector<HostTensor>& inputs) {
  std::vector<TensorId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorId id = "in" + std::to_string(i);
    const bool isFloat = isFloatingPoint(inputs[i].dataType());
    graph.addTensor(id, inputs[i].info(), isFloat ? ir::TensorKind::Variable : ir::TensorKind::Const,
                    std::make_shared<HostTensor>(inputs[i]));
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

std::vector<HostTensor> runForward(const BuildFn& build, const std::vector<HostTensor>& inputs) {
  ir::Graph graph;
  auto ids = addInputs(graph, inputs);
  auto outs = build(graph, ids);
  session::LoweredGraph lowered(graph);
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, 1);
  std::vector<HostTensor> result;
  for (const auto& o : outs) result.push_back(buffers[static_cast<size_t>(lowered.bufferIndex(o))]);
  return result;
}

void expectGradientsMatch(const BuildFn& build, const std::vector<HostTensor>& inputs,
                          const GradCheckOptions& options) {
  ir::Graph graph;
  auto ids = addInputs(graph, inputs);
  auto outs = build(graph, ids);

  // loss = sum_k ReduceSumToShape(out_k * R_k, [])
  std::vector<TensorId> terms;
  for (size_t k = 0; k < outs.size(); ++k) {
    const TensorInfo& info = graph.tensor(outs[k]).info;
    if (!isFloatingPoint(info.dataType())) continue;
    TensorId r = "projection" + std::to_string(k);
    graph.addTensor(r, info, ir::TensorKind::Const,
                    std::make_shared<HostTensor>(randomTensor(info.shape(), options.seed + k)));
    TensorId prod = addOp(graph, "Mul", {outs[k], r})[0];
    Attributes a;
    a.set("shape", std::vector<int64_t>{});
    terms.push_back(addOp(graph, "ReduceSumToShape", {prod}, a, 1, ir::kXtrainDomain)[0]);
  }
  ASSERT_FALSE(terms.empty()) << "no floating-point output to differentiate";
  TensorId loss = terms.size() == 1 ? terms[0] : addOp(graph, "Sum", terms)[0];

  std::vector<size_t> wrt = options.wrt;
  if (wrt.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (isFloatingPoint(inputs[i].dataType())) wrt.push_back(i);
    }
  }
  std::vector<TensorId> wrtIds;
  for (size_t i : wrt) wrtIds.push_back(ids[i]);
  auto grads = ir::autodiff(graph, loss, wrtIds);

  session::LoweredGraph lowered(graph);
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, 1);
  lowered.run(ir::Phase::Backward, buffers, 1);
  const int lossIndex = lowered.bufferIndex(loss);

  for (size_t w = 0; w < wrt.size(); ++w) {
    const TensorId& x = wrtIds[w];
    auto g = grads.find(x);
    HostTensor analytic(inputs[wrt[w]].info());
    if (g != grads.end()) analytic = buffers[static_cast<size_t>(lowered.bufferIndex(g->second))];

    HostTensor& xb = buffers[static_cast<size_t>(lowered.bufferIndex(x))];
    int failures = 0;
    std::ostringstream report;
    for (int64_t i = 0; i < xb.nelms(); ++i) {
      const double orig = xb.getAsDouble(i);
      xb.setFromDouble(i, orig + options.eps);
      lowered.run(ir::Phase::Forward, buffers, 1);
      const double up = buffers[static_cast<size_t>(lossIndex)].getAsDouble(0);
      xb.setFromDouble(i, orig - options.eps);
      lowered.run(ir::Phase::Forward, buffers, 1);
      const double down = buffers[static_cast<size_t>(lossIndex)].getAsDouble(0);
      xb.setFromDouble(i, orig);
      const double numeric = (up - down) / (2 * options.eps);
      const double got = analytic.getAsDouble(i);
      if (std::abs(got - numeric) > options.atol + options.rtol * std::abs(numeric)) {
        if (failures < 8) {
          report << "\n  d loss / d " << x << "[" << i << "]: autodiff " << got << ", numeric "
                 << numeric;
        }
        ++failures;
      }
    }
    EXPECT_EQ(failures, 0) << failures << " of " << xb.nelms()
                           << " gradient elements differ from finite differences for input " << wrt[w]
                           << " " << inputs[wrt[w]].info().toString() << report.str();
  }
}

HostTensor randomTensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  HostTensor t(TensorInfo(DataType::FLOAT, shape));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (auto& v : t.span<float>()) v = dist(rng);
  return t;
}

::testing::AssertionResult allClose(const HostTensor& actual, const HostTensor& expected,
                                    double rtol, double atol) {
  if (actual.info() != expected.info()) {
    return ::testing::AssertionFailure() << "actual is " << actual.info().toString()
                                         << ", expected " << expected.info().toString();
  }
  int failures = 0;
  std::ostringstream report;
  for (int64_t i = 0; i < actual.nelms(); ++i) {
    const double a = actual.getAsDouble(i);
    const double e = expected.getAsDouble(i);
    if (!(std::abs(a - e) <= atol + rtol * std::abs(e))) {
      if (failures < 8) report << "\n  [" << i << "] actual " << a << ", expected " << e;
      ++failures;
    }
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << failures << " of " << actual.nelms()
                                       << " elements differ" << report.str();
}

}  // namespace xtrain::testing
