// Gather (embedding lookups) and its scatter-add gradient GatherGrad.
#include <gtest/gtest.h>

#include <numeric>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

Attributes axisAttr(int64_t axis) {
  Attributes a;
  a.set("axis", axis);
  return a;
}

HostTensor iota(const Shape& shape) {
  HostTensor t(TensorInfo(DataType::FLOAT, shape));
  std::iota(t.span<float>().begin(), t.span<float>().end(), 0.0f);
  return t;
}

// out[i..., j..., k...] = data[i..., indices[j...], k...] with plain loops.
HostTensor gatherRef(const HostTensor& data, const HostTensor& indices, int64_t axis) {
  const Shape& s = data.shape();
  const auto rank = static_cast<int64_t>(s.size());
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= s[static_cast<size_t>(d)];
    if (d > axis) inner *= s[static_cast<size_t>(d)];
  }
  const int64_t dim = s[static_cast<size_t>(axis)];
  Shape os(s.begin(), s.begin() + axis);
  os.insert(os.end(), indices.shape().begin(), indices.shape().end());
  os.insert(os.end(), s.begin() + axis + 1, s.end());
  HostTensor y(TensorInfo(data.dataType(), os));
  int64_t o = 0;
  for (int64_t i = 0; i < outer; ++i) {
    for (int64_t j = 0; j < indices.nelms(); ++j) {
      auto idx = static_cast<int64_t>(indices.getAsDouble(j));
      if (idx < 0) idx += dim;
      for (int64_t k = 0; k < inner; ++k)
        y.setFromDouble(o++, data.getAsDouble((i * dim + idx) * inner + k));
    }
  }
  return y;
}

TEST(GatherOp, EmbeddingLookupWithNegativeIndices) {
  auto table = iota({5, 3});
  auto ids = HostTensor::fromVector<int64_t>({2, 2}, {0, 4, -1, 2});
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in); }, {table, ids});
  EXPECT_EQ(out[0].shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(out[0].toVector<float>(),
            (std::vector<float>{0, 1, 2, 12, 13, 14, 12, 13, 14, 6, 7, 8}));
  EXPECT_TRUE(allClose(out[0], gatherRef(table, ids, 0), 0, 0));
}

// UINT32 indices (PopART's gathers take them), values beyond INT32's range included, for the gather
// and its gradient.
TEST(GatherOp, Uint32IndicesGatherAndScatterBack) {
  auto table = iota({5, 3});
  auto ids = HostTensor::fromVector<uint32_t>({3}, {4, 0, 4});
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in); }, {table, ids});
  EXPECT_TRUE(
      allClose(out[0], gatherRef(table, HostTensor::fromVector<int64_t>({3}, {4, 0, 4}), 0), 0, 0));
  Attributes a = axisAttr(0);
  a.set("shape", Shape{5, 3});
  auto dy = iota({3, 3});
  auto grad = runForward(
      [&](ir::Graph& g, auto in) { return addOp(g, "GatherGrad", in, a, 1, ir::kXtrainDomain); },
      {dy, ids});
  // Rows 4 and 0 receive dy's rows; row 4 twice (rows 0 and 2 of dy added).
  EXPECT_EQ(grad[0].toVector<float>(),
            (std::vector<float>{3, 4, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 8, 10}));
  // 2^31 read as unsigned is out of range, not negative.
  EXPECT_THROW(runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in); },
                          {table, HostTensor::fromVector<uint32_t>({1}, {2147483648u})}),
               runtime_error);
}

TEST(GatherOp, EveryAxisBothIndexTypesAndScalarIndex) {
  auto data = iota({3, 4, 5});
  auto i64 = HostTensor::fromVector<int64_t>({3}, {1, -1, 0});
  auto i32 = HostTensor::fromVector<int32_t>({2, 1}, {2, -3});
  auto scalarIdx = HostTensor::fromVector<int64_t>({}, {2});
  for (int64_t axis = -3; axis < 3; ++axis) {
    for (const HostTensor* idx : {&i64, &i32, &scalarIdx}) {
      auto out = runForward(
          [axis](ir::Graph& g, auto in) { return addOp(g, "Gather", in, axisAttr(axis)); },
          {data, *idx});
      EXPECT_TRUE(allClose(out[0], gatherRef(data, *idx, axis), 0, 0))
          << "axis " << axis << " indices " << idx->info().toString();
    }
  }
  auto empty = runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in, axisAttr(1)); },
                          {data, HostTensor(TensorInfo(DataType::INT64, {0}))});
  EXPECT_EQ(empty[0].shape(), (Shape{3, 0, 5}));
}

TEST(GatherOp, CopiesAnyElementType) {
  auto data = HostTensor::fromVector<int64_t>({3, 2}, {1, 2, 3, 4, int64_t{1} << 50, 6});
  auto idx = HostTensor::fromVector<int32_t>({2}, {2, 0});
  auto out = runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in); }, {data, idx});
  EXPECT_EQ(out[0].toVector<int64_t>(), (std::vector<int64_t>{int64_t{1} << 50, 6, 1, 2}));
  // FLOAT16 is moved as raw 16-bit words (a NaN pattern included).
  auto half = HostTensor::fromVector<uint16_t>({2, 2}, {1, 2, 3, 0xFFFF});
  auto out16 = runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in, axisAttr(1)); },
                          {half, HostTensor::fromVector<int32_t>({3}, {1, 0, 1})});
  EXPECT_EQ(out16[0].toVector<uint16_t>(), (std::vector<uint16_t>{2, 1, 2, 0xFFFF, 3, 0xFFFF}));
}

// Repeated indices: their gradients add up (the scatter-add of an embedding table).
TEST(GatherOp, GradientScatterAddsRepeatedIndices) {
  auto table = randomTensor({6, 4}, 1);
  auto ids = HostTensor::fromVector<int64_t>({2, 3}, {1, 5, 1, -1, 0, 1});
  expectGradientsMatch([](ir::Graph& g, auto in) { return addOp(g, "Gather", in); }, {table, ids});
  auto data = randomTensor({2, 3, 4}, 2);
  auto i32 = HostTensor::fromVector<int32_t>({4}, {2, 2, -3, 0});
  for (int64_t axis : {0, 1, -1}) {
    auto idx = axis == 0 ? HostTensor::fromVector<int32_t>({3}, {1, 1, -2}) : i32;
    expectGradientsMatch(
        [axis](ir::Graph& g, auto in) { return addOp(g, "Gather", in, axisAttr(axis)); },
        {data, idx});
  }
}

TEST(GatherOp, GradientValuesAreExactCounts) {
  // GatherGrad of ones = d sum(Gather(table, ids)) / d table = how often each row is looked up.
  auto table = randomTensor({4, 2}, 3);
  auto ids = HostTensor::fromVector<int64_t>({5}, {3, 3, 0, -1, 2});
  auto out = runForward(
      [](ir::Graph& graph, auto in) {
        Attributes a;
        a.set("axis", int64_t{0});
        a.set("shape", std::vector<int64_t>{4, 2});
        HostTensor ones(TensorInfo(DataType::FLOAT, {5, 2}));
        for (auto& v : ones.span<float>()) v = 1;
        graph.addTensor("ones", ones.info(), ir::TensorKind::Const,
                        std::make_shared<HostTensor>(ones));
        return addOp(graph, "GatherGrad", {"ones", in[1]}, a, 1, ir::kXtrainDomain);
      },
      {table, ids});
  EXPECT_EQ(out[0].toVector<float>(), (std::vector<float>{1, 1, 0, 0, 1, 1, 3, 3}));
}

TEST(GatherOp, OutOfRangeIndexIsARuntimeErrorNamingOpAndIndex) {
  auto table = iota({5, 3});
  for (int64_t bad : {int64_t{5}, int64_t{-6}, int64_t{1000}}) {
    auto ids = HostTensor::fromVector<int64_t>({3}, {0, bad, 1});
    try {
      runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in); }, {table, ids});
      ADD_FAILURE() << "expected a runtime error for index " << bad;
    } catch (const runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("Gather 'op_under_test'"), std::string::npos) << what;
      EXPECT_NE(what.find("index " + std::to_string(bad)), std::string::npos) << what;
      EXPECT_NE(what.find("size 5"), std::string::npos) << what;
    }
  }
  // The gradient kernel checks too (INT32 indices).
  try {
    runForward(
        [](ir::Graph& g, auto in) {
          Attributes a;
          a.set("axis", int64_t{1});
          a.set("shape", std::vector<int64_t>{3, 2});
          return addOp(g, "GatherGrad", in, a, 1, ir::kXtrainDomain);
        },
        {iota({3, 2}), HostTensor::fromVector<int32_t>({2}, {0, 2})});
    ADD_FAILURE() << "expected a runtime error";
  } catch (const runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("GatherGrad"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("index 2"), std::string::npos) << e.what();
  }
}

TEST(GatherOp, BuildErrors) {
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in, axisAttr(2)); },
                   {iota({5, 3}), HostTensor::fromVector<int64_t>({1}, {0})});
      },
      {"Gather", "op_under_test", "axis 2", "out of range"});
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in); },
                   {iota({5, 3}), HostTensor::fromVector<float>({1}, {0})});
      },
      {"Gather", "indices", "INT32, INT64 or UINT32"});
  expectError(
      [] {
        runForward([](ir::Graph& g, auto in) { return addOp(g, "Gather", in); },
                   {HostTensor::scalar(1), HostTensor::fromVector<int64_t>({1}, {0})});
      },
      {"Gather", "scalar"});
}

}  // namespace
}  // namespace xtrain::testing
