// reduceInto's vectorised FLOAT Add/Mean kernels against the scalar loop, bit for bit: every
// kernel the CPU has, with and without streaming stores, misaligned and aliased destinations,
// counts around the vector widths.
#include "comm/reduce.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace xtrain::comm {
namespace {

using Op = CollectiveOperator;

// Restores the process-wide kernel choice when a test ends.
struct KernelGuard {
  ReduceKernel saved = reduceKernel();
  ~KernelGuard() { setReduceKernel(saved); }
};

std::vector<ReduceKernel> kernelsOfThisCpu() {
  KernelGuard guard;
  std::vector<ReduceKernel> out{ReduceKernel::Scalar};
  for (auto k : {ReduceKernel::Avx2, ReduceKernel::Avx512}) {
    try {
      setReduceKernel(k);
      out.push_back(k);
    } catch (const std::exception&) {
      break;
    }
  }
  return out;
}

// The reference: element by element, sources in order, as the contract says.
float naive(const std::vector<std::vector<float>>& s, size_t off, size_t i, size_t ns, bool mean) {
  float a = s[0][off + i];
  for (size_t p = 1; p < ns; ++p) a = a + s[p][off + i];
  return mean ? a / static_cast<float>(ns) : a;
}

TEST(ReduceInto, FloatKernelsAreBitIdenticalToTheScalarLoop) {
  KernelGuard guard;
  std::mt19937 rng(7);
  // Magnitudes over many binades, so that any change of order or of rounding shows.
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-20, 20);
  constexpr size_t kMax = 4099 + 64;
  std::vector<std::vector<float>> base(9, std::vector<float>(kMax));
  for (auto& v : base)
    for (auto& x : v) x = std::ldexp(mant(rng), expo(rng));

  for (ReduceKernel kernel : kernelsOfThisCpu()) {
    setReduceKernel(kernel);
    for (Op op : {Op::Add, Op::Mean}) {
      for (size_t ns : {1, 2, 3, 8, 9}) {
        for (size_t count : {0, 1, 7, 15, 16, 17, 31, 32, 33, 100, 4099}) {
          for (size_t off : {0, 1, 5}) {  // source and destination misalignment (elements)
            for (bool streaming : {false, true}) {
              for (size_t nd : {1, 2, 3}) {
                SCOPED_TRACE(testing::Message()
                             << "kernel " << static_cast<int>(kernel) << " op "
                             << static_cast<int>(op) << " sources " << ns << " count " << count
                             << " offset " << off << " streaming " << streaming << " dsts " << nd);
                const bool mean = op == Op::Mean;
                std::vector<const void*> srcs;
                for (size_t p = 0; p < ns; ++p) srcs.push_back(base[p].data() + off);
                // Destination q sits at offset off + q (q > 0: a different alignment than
                // destination 0, which disables streaming stores for that call).
                std::vector<std::vector<float>> out(nd, std::vector<float>(kMax, -7.0f));
                std::vector<void*> dsts;
                for (size_t q = 0; q < nd; ++q) dsts.push_back(out[q].data() + off + q);
                reduceInto(DataType::FLOAT, op, srcs.data(), ns, dsts.data(), nd, count, streaming);
                for (size_t q = 0; q < nd; ++q) {
                  for (size_t i = 0; i < count; ++i) {
                    const float want = naive(base, off, i, ns, mean);
                    const float got = out[q][off + q + i];
                    ASSERT_EQ(std::memcmp(&want, &got, sizeof want), 0)
                        << "dst " << q << " element " << i << ": " << got << " != " << want;
                  }
                  // Nothing written outside the destination.
                  for (size_t i = 0; i < off + q; ++i) ASSERT_EQ(out[q][i], -7.0f);
                  for (size_t i = off + q + count; i < kMax; ++i) ASSERT_EQ(out[q][i], -7.0f);
                }
              }
            }
          }
        }
      }
    }
  }
}

// A destination may be one of the sources (in place), and several destinations may share
// alignment (the streaming path then runs).
TEST(ReduceInto, FloatKernelsReduceInPlaceAndStreamToEqualAlignedDestinations) {
  KernelGuard guard;
  constexpr size_t kCount = 10000;
  for (ReduceKernel kernel : kernelsOfThisCpu()) {
    setReduceKernel(kernel);
    for (bool streaming : {false, true}) {
      std::vector<std::vector<float>> in(4, std::vector<float>(kCount + 32));
      for (size_t p = 0; p < in.size(); ++p)
        for (size_t i = 0; i < in[p].size(); ++i)
          in[p][i] = 0.1f * static_cast<float>(i) + 1e-3f * static_cast<float>(p);
      std::vector<float> want(kCount);
      for (size_t i = 0; i < kCount; ++i)
        want[i] = ((in[0][i + 3] + in[1][i + 3]) + in[2][i + 3]) + in[3][i + 3];
      // 64 floats apart: the same alignment, so streaming applies (16 floats = 64 bytes).
      std::vector<float> other(kCount + 128);
      const void* srcs[4] = {in[0].data() + 3, in[1].data() + 3, in[2].data() + 3,
                             in[3].data() + 3};
      void* dsts[2] = {in[1].data() + 3, other.data() + 3};
      if ((reinterpret_cast<uintptr_t>(dsts[0]) - reinterpret_cast<uintptr_t>(dsts[1])) % 64 != 0)
        dsts[1] =
            other.data() + 3 +
            ((reinterpret_cast<uintptr_t>(dsts[0]) - reinterpret_cast<uintptr_t>(dsts[1])) % 64) /
                sizeof(float);
      reduceInto(DataType::FLOAT, Op::Add, srcs, 4, dsts, 2, kCount, streaming);
      const auto* d0 = static_cast<const float*>(dsts[0]);
      const auto* d1 = static_cast<const float*>(dsts[1]);
      for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(std::memcmp(&d0[i], &want[i], sizeof(float)), 0) << "in place, element " << i;
        ASSERT_EQ(std::memcmp(&d1[i], &want[i], sizeof(float)), 0) << "second dst, element " << i;
      }
    }
  }
}

TEST(ReduceInto, AKernelTheCpuLacksIsRefusedByNumber) {
  KernelGuard guard;
  try {
    setReduceKernel(static_cast<ReduceKernel>(7));
    FAIL() << "kernel 7 was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 7 (0 scalar, 1 AVX2, 2 AVX-512)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(reduceKernel(), guard.saved);
}

TEST(ReduceInto, TheDefaultKernelIsTheBestThisCpuHas) {
  EXPECT_EQ(reduceKernel(), kernelsOfThisCpu().back());
}

}  // namespace
}  // namespace xtrain::comm
