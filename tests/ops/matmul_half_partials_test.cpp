// Partials type "half" (PopART's Builder.setPartialsType / SessionOptions.partialsTypeMatMuls): a
// FLOAT16 MatMul keeps its running sum in FLOAT16 across the AMP's groups of 16 products.
#include "device/kernels/matmul_half_partials.hpp"

#include <gtest/gtest.h>

#include "ir/autodiff/autodiff.hpp"
#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

BuildFn matmulWith(const std::string& partials) {
  return [partials](ir::Graph& g, auto in) {
    Attributes a;
    if (!partials.empty()) a.set("__partials_type", partials);
    return addOp(g, "MatMul", in, a);
  };
}

// x = ones [1, k]; w [k, 1] holds 2048 at row 0 and 1 at the given rows, 0 elsewhere.
std::vector<HostTensor> onesTimes(int64_t k, const std::vector<int64_t>& ones) {
  std::vector<float> w(static_cast<size_t>(k), 0.0f);
  w[0] = 2048.0f;
  for (int64_t r : ones) w[static_cast<size_t>(r)] = 1.0f;
  return {HostTensor::fromVector<float>({1, k}, std::vector<float>(static_cast<size_t>(k), 1.0f))
              .castTo(DataType::FLOAT16),
          HostTensor::fromVector<float>({k, 1}, w).castTo(DataType::FLOAT16)};
}

// 2048 + 1 + 1 + 1, one 1 in each later group of 16: a FLOAT16 partial stays at 2048 (2049 is a
// tie between 2048 and 2050 and rounds to even); FLOAT partials reach 2051, stored as 2052.
TEST(MatMulHalfPartials, FloatSixteenPartialRoundsEachGroup) {
  const auto in = onesTimes(64, {16, 32, 48});
  for (const char* half : {"half", "HALF", "Half"}) {
    const auto out = runForward(matmulWith(half), in);
    ASSERT_EQ(out[0].dataType(), DataType::FLOAT16);
    EXPECT_EQ(out[0].getAsDouble(0), 2048.0) << half;
  }
  for (const char* other : {"", "float", "FLOAT"}) {
    EXPECT_EQ(runForward(matmulWith(other), in)[0].getAsDouble(0), 2052.0) << other;
  }
}

// Within one AMP group no partial is formed: both partials types give the FLOAT sum.
TEST(MatMulHalfPartials, OneGroupIsTheSameForBothTypes) {
  const auto in = onesTimes(device::kAmpProductsPerPartial, {1, 2, 3});
  EXPECT_EQ(runForward(matmulWith("half"), in)[0].getAsDouble(0), 2052.0);
  EXPECT_EQ(runForward(matmulWith("float"), in)[0].getAsDouble(0), 2052.0);
}

// FLOAT operands: the partials type is smaller than the output's and is ignored (as Poplar does).
TEST(MatMulHalfPartials, FloatOperandsIgnoreIt) {
  auto in = onesTimes(64, {16, 32, 48});
  for (auto& t : in) t = t.castTo(DataType::FLOAT);
  EXPECT_EQ(runForward(matmulWith("half"), in)[0].getAsDouble(0), 2051.0);
}

// Shapes, broadcast batches and transposes: random operands give what FLOAT partials give, to
// FLOAT16's precision over a short sum.
TEST(MatMulHalfPartials, LayoutsMatchFloatPartials) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c : {Case{{3, 40}, {40, 5}}, Case{{2, 1, 3, 40}, {3, 40, 2}},
                        Case{{40}, {2, 40, 3}}, Case{{2, 3, 40}, {40}}}) {
    const std::vector<HostTensor> in{randomTensor(c.a, 1).castTo(DataType::FLOAT16),
                                     randomTensor(c.b, 2).castTo(DataType::FLOAT16)};
    const auto half = runForward(matmulWith("half"), in);
    const auto flt = runForward(matmulWith("float"), in);
    EXPECT_EQ(half[0].shape(), flt[0].shape());
    EXPECT_TRUE(
        allClose(half[0].castTo(DataType::FLOAT), flt[0].castTo(DataType::FLOAT), 1e-2, 1e-2))
        << shapeToString(c.a) << " x " << shapeToString(c.b);
  }
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      const std::vector<HostTensor> in{
          randomTensor(ta ? Shape{1, 40, 3} : Shape{1, 3, 40}, 3).castTo(DataType::FLOAT16),
          randomTensor(tb ? Shape{2, 5, 40} : Shape{2, 40, 5}, 4).castTo(DataType::FLOAT16)};
      auto matmulT = [&](const std::string& partials) -> BuildFn {
        return [=](ir::Graph& g, auto ids) {
          Attributes a = attrs({{"transA", int64_t{ta}}, {"transB", int64_t{tb}}});
          a.set("alpha", 0.5f);
          a.set("__partials_type", partials);
          return addOp(g, "MatMulT", ids, a, 1, ir::kXtrainDomain);
        };
      };
      const auto half = runForward(matmulT("half"), in);
      const auto flt = runForward(matmulT("float"), in);
      EXPECT_TRUE(
          allClose(half[0].castTo(DataType::FLOAT), flt[0].castTo(DataType::FLOAT), 1e-2, 1e-2))
          << "transA " << ta << " transB " << tb;
    }
  }
}

// The gradients' products keep the forward MatMul's partials type.
TEST(MatMulHalfPartials, GradientsKeepThePartialsType) {
  ir::Graph g;
  const TensorInfo x(DataType::FLOAT16, {4, 40}), w(DataType::FLOAT16, {40, 3});
  g.addTensor("x", x, ir::TensorKind::Variable, std::make_shared<HostTensor>(x));
  g.addTensor("w", w, ir::TensorKind::Variable, std::make_shared<HostTensor>(w));
  const TensorId y = matmulWith("half")(g, std::vector<TensorId>{"x", "w"})[0];
  const TensorId l =
      addOp(g, "ReduceSumToShape", {y}, attrs({{"shape", Shape{}}}), 1, ir::kXtrainDomain)[0];
  ir::autodiff(g, l, {"x", "w"});
  int products = 0;
  for (const auto& [id, op] : g.ops()) {
    if (op->type != "MatMulT") continue;
    ++products;
    EXPECT_EQ(op->attrs.getString("__partials_type", ""), "half") << op->describe();
  }
  EXPECT_EQ(products, 2);
}

TEST(MatMulHalfPartials, OtherValuesAreRefused) {
  const auto in = onesTimes(64, {});
  expectError([&] { runForward(matmulWith("double"), in); },
              {"MatMul", "partialsTypeMatMul", "'double'", "'float' and 'half'"});
}

}  // namespace
}  // namespace xtrain::testing
