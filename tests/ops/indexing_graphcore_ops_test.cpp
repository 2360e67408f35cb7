// PopART's ai.graphcore Slice, Subsample, GroupedGather, SequenceSlice and NormalizeImage: forward
// against index-loop references, gradients against finite differences, error messages.
#include <gtest/gtest.h>

#include <cstdint>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

BuildFn graphcore(const std::string& type, Attributes a = {}) {
  return
      [type, a](ir::Graph& g, auto in) { return addOp(g, type, in, a, 1, ir::kGraphcoreDomain); };
}

// ---- Slice

TEST(GraphcoreSliceOp, MatchesOnnxSliceOneWithNegativeAndClampedBounds) {
  const HostTensor x = randomTensor({5, 4}, 1);
  // rows -4..-1 = 1..3, columns 1..(clamped 4).
  auto y = runForward(graphcore("Slice", attrs({{"starts", std::vector<int64_t>{-4, 1}},
                                                {"ends", std::vector<int64_t>{-1, 100}},
                                                {"axes", std::vector<int64_t>{0, 1}}})),
                      {x})[0];
  ASSERT_EQ(y.shape(), (Shape{3, 3}));
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 3; ++c) {
      EXPECT_EQ(y.getAsDouble(r * 3 + c), x.getAsDouble((r + 1) * 4 + c + 1));
    }
  }
  // axes absent: 0..n-1.
  auto z = runForward(graphcore("Slice", attrs({{"starts", std::vector<int64_t>{2}},
                                                {"ends", std::vector<int64_t>{4}}})),
                      {x})[0];
  ASSERT_EQ(z.shape(), (Shape{2, 4}));
  EXPECT_EQ(z.getAsDouble(0), x.getAsDouble(8));
}

TEST(GraphcoreSliceOp, GradientMatchesFiniteDifferencesAndBadAxesAreNamed) {
  const Attributes a = attrs({{"starts", std::vector<int64_t>{1}},
                              {"ends", std::vector<int64_t>{3}},
                              {"axes", std::vector<int64_t>{1}}});
  expectGradientsMatch(graphcore("Slice", a), {randomTensor({2, 4}, 3)});
  const Attributes bad = attrs({{"starts", std::vector<int64_t>{0}},
                                {"ends", std::vector<int64_t>{1}},
                                {"axes", std::vector<int64_t>{2}}});
  expectError(
      [&] {
        runForward(graphcore("Slice", bad), {randomTensor({2, 4}, 3)});
      },
      {"Slice", "ai.graphcore", "axis 2"});
}

// ---- Subsample

BuildFn subsample(std::vector<int64_t> strides) {
  return graphcore("Subsample", attrs({{"strides", std::move(strides)}}));
}

TEST(SubsampleOp, TakesEveryStrideThElementRoundingTheSizeUp) {
  const HostTensor x = randomTensor({5, 7, 3}, 2);
  const HostTensor y = runForward(subsample({2, 3, 1}), {x})[0];
  ASSERT_EQ(y.shape(), (Shape{3, 3, 3}));  // ceil(5/2), ceil(7/3), 3
  for (int64_t a = 0; a < 3; ++a) {
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t c = 0; c < 3; ++c) {
        EXPECT_EQ(y.getAsDouble((a * 3 + b) * 3 + c), x.getAsDouble(((2 * a) * 7 + 3 * b) * 3 + c));
      }
    }
  }
  // Any element type: the kernel copies.
  auto i = HostTensor::fromVector<int64_t>({5}, {10, 11, 12, 13, 14});
  EXPECT_EQ(runForward(subsample({4}), {i})[0].toVector<int64_t>(), (std::vector<int64_t>{10, 14}));
}

TEST(SubsampleOp, GradientMatchesFiniteDifferences) {
  expectGradientsMatch(subsample({2, 3}), {randomTensor({5, 7}, 4)});
}

TEST(SubsampleOp, RefusesZeroStridesAndWrongCounts) {
  const HostTensor x = randomTensor({4, 4}, 1);
  expectError(
      [&] {
        runForward(subsample({2, 0}), {x});
      },
      {"Subsample", "stride 0 at index 1", "positive"});
  expectError([&] { runForward(subsample({2}), {x}); },
              {"Subsample", "strides [2]", "FLOAT[4,4]", "one stride per axis"});
}

// ---- GroupedGather

BuildFn groupedGather(int64_t axis, int64_t groups) {
  return graphcore("GroupedGather", attrs({{"axis", axis}, {"group_size", groups}}));
}

TEST(GroupedGatherOp, GathersEachGroupAtItsOwnIndices) {
  // data [G=2, 3, 4], indices [2, 2] along axis 2: out [2, 3, 2].
  const HostTensor data = randomTensor({2, 3, 4}, 5);
  auto idx = HostTensor::fromVector<int32_t>({2, 2}, {3, 0, -1, 1});
  const HostTensor out = runForward(groupedGather(2, 2), {data, idx})[0];
  ASSERT_EQ(out.shape(), (Shape{2, 3, 2}));
  const int64_t want[2][2] = {{3, 0}, {3, 1}};  // -1 counts from the end
  for (int64_t g = 0; g < 2; ++g) {
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t k = 0; k < 2; ++k) {
        EXPECT_EQ(out.getAsDouble((g * 3 + r) * 2 + k),
                  data.getAsDouble((g * 3 + r) * 4 + want[g][k]));
      }
    }
  }
  // Axis 1 with [G, 2, 2] indices: out [G, 2, 2, 4].
  auto idx2 = HostTensor::fromVector<int64_t>({2, 2, 2}, {0, 1, 2, 2, 1, 1, 0, 2});
  const HostTensor out2 = runForward(groupedGather(1, 2), {data, idx2})[0];
  ASSERT_EQ(out2.shape(), (Shape{2, 2, 2, 4}));
  for (int64_t g = 0; g < 2; ++g) {
    for (int64_t k = 0; k < 4; ++k) {
      const auto row = static_cast<int64_t>(idx2.getAsDouble(g * 4 + k));
      for (int64_t c = 0; c < 4; ++c) {
        EXPECT_EQ(out2.getAsDouble((g * 4 + k) * 4 + c), data.getAsDouble((g * 3 + row) * 4 + c));
      }
    }
  }
}

TEST(GroupedGatherOp, GroupSizeOneIsOnnxGather) {
  const HostTensor data = randomTensor({3, 4}, 6);
  auto idx = HostTensor::fromVector<int32_t>({2}, {2, 0});
  const HostTensor grouped = runForward(groupedGather(0, 1), {data, idx})[0];
  const HostTensor plain = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Gather", in, attrs({{"axis", int64_t{0}}}));
      },
      {data, idx})[0];
  EXPECT_TRUE(allClose(grouped, plain, 0, 0));
}

TEST(GroupedGatherOp, GradientMatchesFiniteDifferencesWithRepeatedIndices) {
  auto idx = HostTensor::fromVector<int32_t>({2, 3}, {1, 1, 0, 2, 0, 2});
  GradCheckOptions o;
  o.wrt = {0};
  expectGradientsMatch(groupedGather(1, 2), {randomTensor({2, 3, 2}, 7), idx}, o);
}

TEST(GroupedGatherOp, RefusesTheGroupAxisMismatchedGroupsAndOutOfRangeIndices) {
  const HostTensor data = randomTensor({2, 3}, 1);
  auto idx = HostTensor::fromVector<int32_t>({2, 1}, {0, 1});
  expectError(
      [&] {
        runForward(groupedGather(0, 2), {data, idx});
      },
      {"GroupedGather", "axis 0", "groups"});
  auto three = HostTensor::fromVector<int32_t>({3, 1}, {0, 1, 2});
  expectError(
      [&] {
        runForward(groupedGather(1, 2), {data, three});
      },
      {"GroupedGather", "input 1 (indices) INT32[3,1]", "group_size = 2"});
  auto far = HostTensor::fromVector<int32_t>({2, 1}, {0, 3});
  expectError(
      [&] {
        runForward(groupedGather(1, 2), {data, far});
      },
      {"GroupedGather", "index 3", "out of range"});
}

// ---- SequenceSlice

HostTensor u32(std::vector<uint32_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return HostTensor::fromVector<uint32_t>({n}, std::move(v));
}

// The reference: destination's rows, then each entry's copy; rows no entry writes zeroed or kept.
HostTensor sequenceSliceRef(const HostTensor& src, const HostTensor& dst,
                            const std::vector<uint32_t>& n, const std::vector<uint32_t>& so,
                            const std::vector<uint32_t>& d0, bool zeroUnused) {
  HostTensor out(dst.info());
  const int64_t row = dst.nelms() / dst.shape()[0];
  std::vector<bool> written(static_cast<size_t>(dst.shape()[0]), false);
  for (int64_t i = 0; i < dst.nelms(); ++i) out.setFromDouble(i, dst.getAsDouble(i));
  for (size_t e = 0; e < n.size(); ++e) {
    for (uint32_t r = 0; r < n[e]; ++r) {
      written[d0[e] + r] = true;
      for (int64_t c = 0; c < row; ++c) {
        out.setFromDouble((d0[e] + r) * row + c, src.getAsDouble((so[e] + r) * row + c));
      }
    }
  }
  for (size_t r = 0; r < written.size(); ++r) {
    if (zeroUnused && !written[r]) {
      for (int64_t c = 0; c < row; ++c) out.setFromDouble(static_cast<int64_t>(r) * row + c, 0);
    }
  }
  return out;
}

TEST(SequenceSliceOp, CopiesTheEntriesRowsAndZeroesTheRestOnRequest) {
  const HostTensor src = randomTensor({6, 2, 3}, 8);
  const HostTensor dst = randomTensor({4, 6}, 9);  // 6 elements per row, as source's [2, 3]
  const std::vector<uint32_t> n = {1, 2, 0}, so = {0, 3, 5}, d0 = {3, 0, 1};
  for (int64_t zero : {0, 1}) {
    const HostTensor out = runForward(graphcore("SequenceSlice", attrs({{"zeroUnused", zero}})),
                                      {src, dst, u32(n), u32(so), u32(d0)})[0];
    EXPECT_TRUE(allClose(out, sequenceSliceRef(src, dst, n, so, d0, zero != 0), 0, 0))
        << "zeroUnused " << zero;
  }
}

TEST(SequenceSliceOp, RefusesRowsOutsideTheTensorsAndMismatchedInputs) {
  const HostTensor src = randomTensor({3, 2}, 1), dst = randomTensor({2, 2}, 2);
  expectError(
      [&] {
        runForward(graphcore("SequenceSlice"), {src, dst, u32({2}), u32({2}), u32({0})});
      },
      {"SequenceSlice", "entry 0", "source's 3 rows"});
  expectError(
      [&] {
        runForward(graphcore("SequenceSlice"), {src, dst, u32({1, 1}), u32({0}), u32({0})});
      },
      {"SequenceSlice", "input 3 (sourceOffset)", "UINT32[1]", "as long as N"});
  expectError(
      [&] {
        runForward(graphcore("SequenceSlice"),
                   {src, randomTensor({2, 3}, 3), u32({1}), u32({0}), u32({0})});
      },
      {"SequenceSlice", "input 1 (destination) FLOAT[2,3]", "elements per outer row"});
}

// ---- NormalizeImage

TEST(NormalizeImageOp, NormalisesThreeChannelsAndPadsAFourth) {
  const HostTensor img = randomTensor({2, 2, 3}, 4, 0, 255);
  auto offsets = HostTensor::fromVector<float>({3}, {1, 2, 3});
  auto scales = HostTensor::fromVector<float>({3}, {4, 5, 6});
  const float scale = 1.0f / 255;
  const HostTensor out =
      runForward(graphcore("NormalizeImage", attrs({{"scale", scale}})), {img, offsets, scales})[0];
  ASSERT_EQ(out.shape(), (Shape{2, 2, 4}));
  HostTensor want(out.info());
  for (int64_t p = 0; p < 4; ++p) {
    for (int64_t c = 0; c < 3; ++c) {
      want.setFromDouble(p * 4 + c, (img.getAsDouble(p * 3 + c) * scale - (c + 1)) * (c + 4));
    }
    want.setFromDouble(p * 4 + 3, 0);
  }
  EXPECT_TRUE(allClose(out, want, 1e-5, 1e-5));
}

TEST(NormalizeImageOp, AUint8ImageGivesFloat16) {
  auto img = HostTensor::fromVector<uint8_t>({1, 2, 3}, {0, 128, 255, 10, 20, 30});
  HostTensor offsets(TensorInfo(DataType::FLOAT16, {3})), scales(offsets.info());
  for (int64_t c = 0; c < 3; ++c) {
    offsets.setFromDouble(c, 0.5);
    scales.setFromDouble(c, 2.0);
  }
  const HostTensor out =
      runForward(graphcore("NormalizeImage", attrs({{"scale", 0.01f}})), {img, offsets, scales})[0];
  ASSERT_EQ(out.dataType(), DataType::FLOAT16);
  ASSERT_EQ(out.shape(), (Shape{1, 2, 4}));
  const double want[8] = {-1, 1.56, 4.1, 0, -0.8, -0.6, -0.4, 0};
  for (int64_t i = 0; i < 8; ++i) EXPECT_NEAR(out.getAsDouble(i), want[i], 4e-3) << i;
}

TEST(NormalizeImageOp, RefusesFourChannelsAndMistypedScales) {
  auto offsets = HostTensor::fromVector<float>({3}, {1, 2, 3});
  expectError(
      [&] {
        runForward(graphcore("NormalizeImage"), {randomTensor({2, 4}, 1), offsets, offsets});
      },
      {"NormalizeImage", "input 0 (image) is FLOAT[2,4]", "inner dimension to be 3"});
  auto wide = HostTensor::fromVector<float>({4}, {1, 2, 3, 4});
  expectError(
      [&] {
        runForward(graphcore("NormalizeImage"), {randomTensor({2, 3}, 1), offsets, wide});
      },
      {"NormalizeImage", "input 2 (scales) is FLOAT[4]", "FLOAT[3]"});
}

}  // namespace
}  // namespace xtrain::testing
