// The GELU fusion pass (src/ir/fusion) on hand-built graphs of the subgraphs torch.onnx writes, and
// the ai.xtrain Gelu / GeluGrad kernels it leads to: fused results equal the unfused ones to 1e-5
// relative, forward and gradient; a subgraph whose intermediates are needed elsewhere stays.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "device/kernels/kernel_threads.hpp"
#include "ir/autodiff/autodiff.hpp"
#include "ir/fusion/fusion.hpp"
#include "session/lowered_graph.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// The forms exporters write (see gelu_fusion.hpp).
enum class Form { TanhTorch, TanhPow, ErfDiv, ErfMul };

struct Gelu {
  TensorId y;
  std::vector<TensorId> intermediates;
};

TensorId scalarConst(ir::Graph& g, float v) {
  const TensorId id = g.uniqueId("c");
  g.addTensor(id, TensorInfo(DataType::FLOAT, {}), ir::TensorKind::Const,
              std::make_shared<HostTensor>(HostTensor::scalar(v)));
  return id;
}

// Builds GELU of x in `form`; every op's output but y is listed as an intermediate.
Gelu buildGelu(ir::Graph& g, const TensorId& x, Form form) {
  Gelu r;
  auto op = [&](const std::string& type, std::vector<TensorId> in) {
    const TensorId out = addOp(g, type, std::move(in))[0];
    r.intermediates.push_back(out);
    return out;
  };
  const float c = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  switch (form) {
    case Form::TanhTorch: {  // torch.onnx's: 0.5 * (x * (1 + tanh(c * (x + a * (x * (x * x))))))
      const TensorId x3 = op("Mul", {x, op("Mul", {x, x})});
      const TensorId s = op("Add", {x, op("Mul", {scalarConst(g, 0.044715f), x3})});
      const TensorId t = op("Tanh", {op("Mul", {scalarConst(g, c), s})});
      r.y = op("Mul", {scalarConst(g, 0.5f), op("Mul", {x, op("Add", {scalarConst(g, 1.0f), t})})});
      break;
    }
    case Form::TanhPow: {  // (0.5 * x) * (tanh((x + pow(x, 3) * a) * c) + 1)
      const TensorId x3 = op("Pow", {x, scalarConst(g, 3.0f)});
      const TensorId s = op("Add", {op("Mul", {x3, scalarConst(g, 0.044715f)}), x});
      const TensorId t = op("Tanh", {op("Mul", {s, scalarConst(g, c)})});
      r.y = op("Mul", {op("Mul", {scalarConst(g, 0.5f), x}), op("Add", {t, scalarConst(g, 1.0f)})});
      break;
    }
    case Form::ErfDiv: {  // torch.onnx's: (x * (erf(x / sqrt(2)) + 1)) * 0.5
      const TensorId e = op("Erf", {op("Div", {x, scalarConst(g, std::numbers::sqrt2_v<float>)})});
      r.y = op("Mul", {op("Mul", {x, op("Add", {e, scalarConst(g, 1.0f)})}), scalarConst(g, 0.5f)});
      break;
    }
    case Form::ErfMul: {  // (x * 0.5) * (1 + erf(x * (1 / sqrt(2))))
      const TensorId e =
          op("Erf", {op("Mul", {x, scalarConst(g, 1.0f / std::numbers::sqrt2_v<float>)})});
      r.y = op("Mul", {op("Mul", {x, scalarConst(g, 0.5f)}), op("Add", {scalarConst(g, 1.0f), e})});
      break;
    }
  }
  r.intermediates.pop_back();  // y
  return r;
}

const char* approximation(Form form) {
  return form == Form::TanhTorch || form == Form::TanhPow ? "tanh" : "none";
}

std::string formName(Form form) {
  switch (form) {
    case Form::TanhTorch: return "TanhTorch";
    case Form::TanhPow: return "TanhPow";
    case Form::ErfDiv: return "ErfDiv";
    case Form::ErfMul: return "ErfMul";
  }
  return "";
}

size_t countConsts(const ir::Graph& g) {
  return g.tensorsOfKind(ir::TensorKind::Const).size();
}

class GeluFusion : public ::testing::TestWithParam<Form> {};

TEST_P(GeluFusion, BecomesOneGeluOp) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {4, 6}), ir::TensorKind::Stream);
  g.inputs().push_back("x");
  const Gelu gelu = buildGelu(g, "x", GetParam());
  g.outputs().push_back(gelu.y);
  const ir::FusionReport report = ir::fuseGraph(g, {});
  EXPECT_EQ(report.gelu, 1);
  ASSERT_EQ(g.ops().size(), 1u);
  const ir::Op& op = *g.ops().begin()->second;
  EXPECT_EQ(op.type, "Gelu");
  EXPECT_EQ(op.domain, ir::kXtrainDomain);
  EXPECT_EQ(op.attrs.getString("approximate"), approximation(GetParam()));
  EXPECT_EQ(op.inputs, std::vector<TensorId>{"x"});
  EXPECT_EQ(op.outputs, std::vector<TensorId>{gelu.y});
  EXPECT_EQ(g.tensor(gelu.y).producer, op.id);
  EXPECT_EQ(countConsts(g), 0u) << "the pattern's constants are left unread";
  for (const auto& t : gelu.intermediates) EXPECT_FALSE(g.hasTensor(t)) << t;
}

TEST_P(GeluFusion, ReadersOfTheResultReadTheGeluOp) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {3, 5}), ir::TensorKind::Stream);
  const Gelu gelu = buildGelu(g, "x", GetParam());
  const TensorId z = addOp(g, "Relu", {gelu.y})[0];
  ASSERT_EQ(ir::fuseGraph(g, {}).gelu, 1);
  ASSERT_EQ(g.ops().size(), 2u);
  const auto schedule = g.schedule();
  EXPECT_EQ(g.op(schedule[0]).type, "Gelu");
  EXPECT_EQ(g.op(schedule[1]).inputs, std::vector<TensorId>{gelu.y});
  EXPECT_EQ(g.tensor(gelu.y).consumers, std::vector<OpId>{schedule[1]});
  EXPECT_EQ(g.tensor(z).producer, schedule[1]);
}

// Each intermediate in turn read by another op, kept (an anchor, the loss) or a graph output: no
// fusion, the graph unchanged.
TEST_P(GeluFusion, NotFusedWhenAnIntermediateIsNeededElsewhere) {
  size_t count = 0;
  {
    ir::Graph g;
    g.addTensor("x", TensorInfo(DataType::FLOAT, {2, 3}), ir::TensorKind::Stream);
    count = buildGelu(g, "x", GetParam()).intermediates.size();
  }
  for (size_t i = 0; i < count; ++i) {
    for (int how = 0; how < 3; ++how) {
      ir::Graph g;
      g.addTensor("x", TensorInfo(DataType::FLOAT, {2, 3}), ir::TensorKind::Stream);
      const Gelu gelu = buildGelu(g, "x", GetParam());
      const TensorId& t = gelu.intermediates[i];
      std::set<TensorId> keep;
      if (how == 0) addOp(g, "Relu", {t});
      if (how == 1) keep.insert(t);
      if (how == 2) g.outputs().push_back(t);
      const size_t ops = g.ops().size();
      EXPECT_EQ(ir::fuseGraph(g, keep).gelu, 0) << t << " way " << how;
      EXPECT_EQ(g.ops().size(), ops);
      EXPECT_TRUE(g.hasTensor(t));
    }
  }
}

TEST_P(GeluFusion, NotFusedWithAnotherConstant) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT, {2, 3}), ir::TensorKind::Stream);
  const Gelu gelu = buildGelu(g, "x", GetParam());
  // The last op's constant (0.5 or the 1 of 1 + tanh/erf, depending on the form) made 0.49.
  for (const auto& [id, t] : g.tensors()) {
    if (t->kind == ir::TensorKind::Const && t->value->data<float>()[0] == 0.5f) {
      t->value->data<float>()[0] = 0.49f;
    }
  }
  EXPECT_EQ(ir::fuseGraph(g, {}).gelu, 0);
}

BuildFn geluBuild(Form form, bool fuse) {
  return [form, fuse](ir::Graph& g, const std::vector<TensorId>& in) {
    const TensorId y = buildGelu(g, in[0], form).y;
    if (fuse) {
      EXPECT_EQ(ir::fuseGraph(g, {}).gelu, 1);
    }
    return std::vector<TensorId>{y};
  };
}

TEST_P(GeluFusion, FusedForwardMatchesUnfused) {
  for (const Shape& shape : {Shape{3, 7, 11}, Shape{}, Shape{0, 3}, Shape{1037}}) {
    const HostTensor x = randomTensor(shape, 5, -6.0f, 6.0f);
    const auto unfused = runForward(geluBuild(GetParam(), false), {x});
    const auto fused = runForward(geluBuild(GetParam(), true), {x});
    EXPECT_TRUE(allClose(fused[0], unfused[0], 1e-5, 1e-6)) << shapeToString(shape);
  }
}

// d/dx of sum(gelu(x) * r) through the graph, fused or not.
HostTensor geluGradient(Form form, bool fuse, const HostTensor& x) {
  ir::Graph g;
  g.addTensor("x", x.info(), ir::TensorKind::Variable, std::make_shared<HostTensor>(x));
  const TensorId y = geluBuild(form, fuse)(g, {"x"})[0];
  g.addTensor("r", x.info(), ir::TensorKind::Const,
              std::make_shared<HostTensor>(randomTensor(x.shape(), 9)));
  Attributes a;
  a.set("shape", std::vector<int64_t>{});
  const TensorId loss =
      addOp(g, "ReduceSumToShape", {addOp(g, "Mul", {y, "r"})[0]}, a, 1, ir::kXtrainDomain)[0];
  const auto grads = ir::autodiff(g, loss, {"x"});
  session::LoweredGraph lowered(g);
  auto buffers = lowered.makeBuffers();
  lowered.run(ir::Phase::Forward, buffers, 1);
  lowered.run(ir::Phase::Backward, buffers, 1);
  return buffers[static_cast<size_t>(lowered.bufferIndex(grads.at("x")))];
}

TEST_P(GeluFusion, FusedGradientMatchesUnfused) {
  const HostTensor x = randomTensor({5, 203}, 3, -6.0f, 6.0f);
  EXPECT_TRUE(
      allClose(geluGradient(GetParam(), true, x), geluGradient(GetParam(), false, x), 1e-5, 1e-6));
}

TEST_P(GeluFusion, FusedGradientMatchesFiniteDifferences) {
  expectGradientsMatch(geluBuild(GetParam(), true), {randomTensor({3, 5}, 21, -3.0f, 3.0f)});
}

INSTANTIATE_TEST_SUITE_P(Forms, GeluFusion,
                         ::testing::Values(Form::TanhTorch, Form::TanhPow, Form::ErfDiv,
                                           Form::ErfMul),
                         [](const auto& info) { return formName(info.param); });

TEST(GeluFusionPass, LeavesFloat16Alone) {
  ir::Graph g;
  g.addTensor("x", TensorInfo(DataType::FLOAT16, {2, 3}), ir::TensorKind::Stream);
  // A FLOAT16 GELU: its scalars stay FLOAT16 too.
  auto half = [&](float v) {
    const TensorId id = g.uniqueId("h");
    HostTensor t(TensorInfo(DataType::FLOAT16, {}));
    t.data<uint16_t>()[0] = floatToHalf(v);
    g.addTensor(id, t.info(), ir::TensorKind::Const, std::make_shared<HostTensor>(t));
    return id;
  };
  const TensorId e = addOp(g, "Erf", {addOp(g, "Div", {"x", half(1.4142135f)})[0]})[0];
  const TensorId p = addOp(g, "Add", {e, half(1.0f)})[0];
  addOp(g, "Mul", {addOp(g, "Mul", {"x", p})[0], half(0.5f)});
  EXPECT_EQ(ir::fuseGraph(g, {}).gelu, 0);
}

// ---- the kernels

double geluRef(double x, bool tanhForm) {
  if (!tanhForm) return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

double geluDerivativeRef(double x, bool tanhForm) {
  if (!tanhForm) {
    return 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2)) +
           x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  }
  const double c = std::sqrt(2.0 / std::numbers::pi);
  const double t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

class GeluKernel : public ::testing::TestWithParam<const char*> {
 protected:
  bool tanhForm() const { return std::string(GetParam()) == "tanh"; }
  BuildFn forward() const {
    return [a = std::string(GetParam())](ir::Graph& g, const std::vector<TensorId>& in) {
      return addOp(g, "Gelu", in, attrs({{"approximate", a}}), 1, ir::kXtrainDomain);
    };
  }
  BuildFn backward() const {
    return [a = std::string(GetParam())](ir::Graph& g, const std::vector<TensorId>& in) {
      return addOp(g, "GeluGrad", in, attrs({{"approximate", a}}), 1, ir::kXtrainDomain);
    };
  }
};

TEST_P(GeluKernel, ForwardAndGradientMatchReference) {
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{}, Shape{0, 3}, Shape{4099}}) {
    const HostTensor x = randomTensor(shape, 11, -8.0f, 8.0f);
    const HostTensor gy = randomTensor(shape, 12);
    HostTensor y(x.info()), gx(x.info());
    for (int64_t i = 0; i < x.nelms(); ++i) {
      const double v = x.data<float>()[i];
      y.data<float>()[i] = static_cast<float>(geluRef(v, tanhForm()));
      gx.data<float>()[i] =
          static_cast<float>(gy.data<float>()[i] * geluDerivativeRef(v, tanhForm()));
    }
    EXPECT_TRUE(allClose(runForward(forward(), {x})[0], y, 1e-5, 1e-6)) << shapeToString(shape);
    EXPECT_TRUE(allClose(runForward(backward(), {gy, x})[0], gx, 1e-5, 1e-6))
        << shapeToString(shape);
  }
}

TEST_P(GeluKernel, GradientMatchesFiniteDifferences) {
  expectGradientsMatch(forward(), {randomTensor({3, 5}, 21, -3.0f, 3.0f)});
}

// The elements are split over the kernel threads; each is computed the same way whatever the split.
TEST_P(GeluKernel, ResultsDoNotDependOnTheThreadCount) {
  const HostTensor x = randomTensor({100003}, 31, -8.0f, 8.0f);
  const HostTensor gy = randomTensor({100003}, 32);
  const int before = device::kernelThreadsForThisThread();
  std::vector<std::vector<HostTensor>> results;
  for (int threads : {1, 2, 3}) {
    device::setKernelThreadsForThisThread(threads);
    results.push_back({runForward(forward(), {x})[0], runForward(backward(), {gy, x})[0]});
  }
  device::setKernelThreadsForThisThread(before);
  for (size_t k = 1; k < results.size(); ++k) {
    for (size_t j = 0; j < 2; ++j) {
      EXPECT_TRUE(allClose(results[k][j], results[0][j], 0.0, 0.0)) << k << " " << j;
    }
  }
}

TEST_P(GeluKernel, RejectsAnUnknownApproximation) {
  expectError(
      [] {
        runForward(
            [](ir::Graph& g, const std::vector<TensorId>& in) {
              return addOp(g, "Gelu", in, attrs({{"approximate", std::string("fast")}}), 1,
                           ir::kXtrainDomain);
            },
            {randomTensor({2}, 1)});
      },
      {"approximate", "expected \"none\" or \"tanh\""});
}

INSTANTIATE_TEST_SUITE_P(Approximations, GeluKernel, ::testing::Values("none", "tanh"));

}  // namespace
}  // namespace xtrain::testing
