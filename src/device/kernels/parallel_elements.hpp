// Elementwise work split over the kernel threads (OpenMP, as oneDNN's primitives), for kernels
// whose elements are independent: optimizer updates, accumulation.
//
// The range is cut into fixed chunks of kElementChunk elements, whatever the thread count, so each
// element is computed by the same code on the same neighbours and a reduction done per chunk and
// then summed in chunk order gives the same bits with 1 thread or 8. Ranges of one chunk run on the
// calling thread (no parallel region, no wake-up cost for small tensors).
#pragma once
#pragma GCC visibility push(default)

#include <algorithm>
#include <cstdint>

namespace xtrain::device {

// 64 Ki floats = 256 KiB per operand: large enough that a chunk amortises its scheduling, small
// enough that a 1 M-element weight spreads over 16 chunks.
inline constexpr int64_t kElementChunk = int64_t{1} << 16;

inline int64_t elementChunks(int64_t n) {
  return n <= 0 ? 0 : (n + kElementChunk - 1) / kElementChunk;
}

// Calls f(chunk, begin, end) once per chunk of [0, n), chunks in parallel on the calling thread's
// kernel threads (device/kernels/kernel_threads.hpp).
template <typename F>
void forEachElementChunk(int64_t n, F&& f) {
  const int64_t chunks = elementChunks(n);
  if (chunks <= 1) {
    if (n > 0) f(int64_t{0}, int64_t{0}, n);
    return;
  }
#ifdef _OPENMP  // the device library's kernels; a test reading kElementChunk has no OpenMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t c = 0; c < chunks; ++c) {
    f(c, c * kElementChunk, std::min(n, (c + 1) * kElementChunk));
  }
}

}  // namespace xtrain::device

#pragma GCC visibility pop
