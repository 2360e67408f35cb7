// Work over independent elements (or rows) split over the kernel threads (OpenMP, as oneDNN's
// primitives): elementwise kernels, optimizer updates, accumulation.
//
// The range is cut into fixed chunks of `grain` items whatever the thread count, so each element is
// computed by the same code on the same neighbours, and a reduction done per chunk and then summed
// in chunk order gives the same bits with 1 thread or 8. A range of one chunk runs on the calling
// thread (no parallel region, no wake-up cost for small tensors).
#pragma once
#pragma GCC visibility push(default)

#include <algorithm>
#include <cstdint>

namespace xtrain::device {

// Elements per chunk: 128 KB of FLOAT, enough work to pay for waking a thread, small enough that a
// [8, 128, 1024] activation or a 1 M-element weight gives every thread several chunks.
inline constexpr int64_t kParallelChunk = int64_t{1} << 15;

inline int64_t chunkCount(int64_t n, int64_t grain = kParallelChunk) {
  return n <= 0 ? 0 : (n + grain - 1) / grain;
}

// Calls f(chunk, begin, end) once per chunk of [0, n), chunks in parallel on the calling thread's
// kernel threads (device/kernels/kernel_threads.hpp). f must not throw.
template <typename F>
void forEachChunk(int64_t n, F&& f, int64_t grain = kParallelChunk) {
  const int64_t chunks = chunkCount(n, grain);
  if (chunks <= 1) {
    if (n > 0) f(int64_t{0}, int64_t{0}, n);
    return;
  }
#ifdef _OPENMP  // the device library's kernels; a test reading kParallelChunk has no OpenMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t c = 0; c < chunks; ++c) {
    f(c, c * grain, std::min(n, (c + 1) * grain));
  }
}

}  // namespace xtrain::device

#pragma GCC visibility pop
