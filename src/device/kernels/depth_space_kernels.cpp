// Kernels of src/ir/ops/depth_space_ops.cpp. Both directions are one copy between the "space"
// tensor [N, C, H b, W b] and the "depth" tensor [N, C b^2, H, W]: space[n, c, h b + i, w b + j] =
// depth[n, k, h, w] with k = (i b + j) C + c (DCR) or c b^2 + i b + j (CRD). The copy runs over
// the space tensor's rows, whose elements come from b interleaved depth planes; elements are moved
// by their size, so every element type is served.
#include <cstdint>
#include <cstring>
#include <string>

#include "device/kernel.hpp"
#include "device/kernels/elementwise.hpp"

namespace xtrain::device {
namespace {

struct DepthSpaceGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0, b = 1;  // the depth side's H and W; the space side's C
  bool dcr = true;
};

// The depth channel holding block offset (i, j) of space channel c.
inline int64_t depthChannel(const DepthSpaceGeometry& g, int64_t c, int64_t i, int64_t j) {
  return g.dcr ? (i * g.b + j) * g.c + c : c * g.b * g.b + i * g.b + j;
}

// ToSpace: space = f(depth) (DepthToSpace); else depth = f(space) (SpaceToDepth).
template <typename T, bool ToSpace>
void moveBlocks(const DepthSpaceGeometry& g, const T* src, T* dst) {
  const int64_t b = g.b, ws = g.w * b, hs = g.h * b;
  const int64_t plane = g.h * g.w;
  const int64_t depthChannels = g.c * b * b;
  forChunks(
      g.n * g.c * hs,
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {  // r: a row (n, c, hs) of the space tensor
          const int64_t y = r % hs, nc = r / hs, c = nc % g.c, n = nc / g.c;
          const int64_t h = y / b, i = y % b;
          for (int64_t j = 0; j < b; ++j) {
            const int64_t k = depthChannel(g, c, i, j);
            const int64_t d0 = (n * depthChannels + k) * plane + h * g.w;
            const int64_t s0 = r * ws + j;
            for (int64_t x = 0; x < g.w; ++x) {
              if constexpr (ToSpace) {
                dst[s0 + x * b] = src[d0 + x];
              } else {
                dst[d0 + x] = src[s0 + x * b];
              }
            }
          }
        }
      },
      rowGrain(ws));
}

template <bool ToSpace>
std::unique_ptr<Kernel> depthSpaceFactory(const KernelSpec& spec) {
  const TensorInfo& space = ToSpace ? spec.outputs.at(0) : spec.inputs.at(0);
  const TensorInfo& depth = ToSpace ? spec.inputs.at(0) : spec.outputs.at(0);
  DepthSpaceGeometry g;
  g.b = spec.attrs.getInt("blocksize");
  g.dcr = spec.attrs.getString("mode", "DCR") == "DCR";
  if (space.shape().size() != 4 || depth.shape().size() != 4 || g.b < 1) {
    spec.fail("expected rank-4 tensors and a positive blocksize, got {} -> {}",
              spec.inputs.at(0).toString(), spec.outputs.at(0).toString());
  }
  g.n = depth.shape()[0];
  g.c = space.shape()[1];
  g.h = depth.shape()[2];
  g.w = depth.shape()[3];
  auto run = [g]<typename T>(const KernelIO& io, T) {
    moveBlocks<T, ToSpace>(g, elems<T>(io.in(0)), elems<T>(io.out(0)));
  };
  switch (dataTypeSize(space.dataType())) {
    case 1: return makeKernel([run](const KernelIO& io) { run(io, uint8_t{}); });
    case 2: return makeKernel([run](const KernelIO& io) { run(io, uint16_t{}); });
    case 4: return makeKernel([run](const KernelIO& io) { run(io, uint32_t{}); });
    case 8: return makeKernel([run](const KernelIO& io) { run(io, uint64_t{}); });
    default: spec.fail("element type {} is not supported", dataTypeName(space.dataType()));
  }
}

XT_REGISTER_KERNEL("ai.onnx", "DepthToSpace", depthSpaceFactory<true>);
XT_REGISTER_KERNEL("ai.graphcore", "DepthToSpace", depthSpaceFactory<true>);
XT_REGISTER_KERNEL("ai.onnx", "SpaceToDepth", depthSpaceFactory<false>);
XT_REGISTER_KERNEL("ai.xtrain", "SpaceToDepth", depthSpaceFactory<false>);

}  // namespace
}  // namespace xtrain::device
