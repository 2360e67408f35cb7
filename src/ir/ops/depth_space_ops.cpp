// DepthToSpace and SpaceToDepth: moving blocksize x blocksize blocks between the channel and the
// spatial dimensions of a rank-4 [N, C, H, W] tensor (any element type; pure data movement).
//
//   ai.onnx DepthToSpace (1, 11, 13) and PopART's ai.graphcore DepthToSpace: attributes blocksize
//   (required, >= 1) and mode, "DCR" (default; the only form before opset 11) or "CRD". Y is
//   [N, C/b^2, H b, W b] with Y[n, c, h b + i, w b + j] = X[n, k, h, w], where k = (i b + j) C/b^2
//   + c for DCR (depth-column-row) and k = c b^2 + i b + j for CRD (column-row-depth: PyTorch's
//   PixelShuffle, which its exporter writes as DepthToSpace CRD).
//   ai.onnx SpaceToDepth (1, 13): attribute blocksize; the inverse of DepthToSpace DCR, Y is
//   [N, C b^2, H/b, W/b].
//   ai.xtrain SpaceToDepth: the same with a mode attribute, the inverse of DepthToSpace in either
//   mode (the gradient of DepthToSpace CRD).
//
// Gradients: each op's gradient is its inverse applied to gy (a permutation's adjoint is its
// inverse).
#include <string>

#include "ir/op_registry.hpp"

namespace xtrain::ir {
namespace {

void checkModeAndBlock(const ShapeContext& ctx, int64_t& b) {
  b = ctx.attrs().getInt("blocksize");
  if (b < 1) ctx.fail("attribute blocksize is {}, expected a positive integer", b);
  const std::string mode = ctx.attrs().getString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") {
    ctx.fail("attribute mode is \"{}\", expected \"DCR\" or \"CRD\"", mode);
  }
  const TensorInfo& x = ctx.input(0);
  if (x.shape().size() != 4) {
    ctx.fail("input is {}, expected a rank-4 [N, C, H, W] tensor", x.toString());
  }
  if (dataTypeSize(x.dataType()) == 0) {
    ctx.fail("input is {}, an element type that cannot be moved", x.toString());
  }
}

void requireBlocksize(Op& op) {
  if (!op.attrs.has("blocksize")) {
    throw error("{}: the attribute blocksize is required", op.describe());
  }
}

OpDef depthToSpace(const std::string& domain) {
  OpDef d{.type = "DepthToSpace", .domain = domain};
  d.canonicalize = [](Op& op, const Graph&) {
    requireBlocksize(op);
    if (!op.attrs.has("mode")) op.attrs.set("mode", std::string("DCR"));
  };
  d.infer = [](const ShapeContext& ctx) {
    int64_t b = 0;
    checkModeAndBlock(ctx, b);
    const TensorInfo& x = ctx.input(0);
    const Shape& s = x.shape();
    if (s[1] % (b * b) != 0) {
      ctx.fail("input is {}: its channels ({}) are not a multiple of blocksize^2 = {}",
               x.toString(), s[1], b * b);
    }
    return std::vector<TensorInfo>{
        TensorInfo(x.dataType(), {s[0], s[1] / (b * b), s[2] * b, s[3] * b})};
  };
  d.grad = [](GradContext& g) {
    Attributes a;
    a.set("blocksize", g.attrs().getInt("blocksize"));
    const std::string mode = g.attrs().getString("mode", "DCR");
    if (mode == "DCR") {
      g.setGradIn(0, g.emit("SpaceToDepth", {g.gradOut(0)}, a, kOnnxDomain));
    } else {
      a.set("mode", mode);
      g.setGradIn(0, g.emit("SpaceToDepth", {g.gradOut(0)}, a, kXtrainDomain));
    }
  };
  return d;
}

OpDef spaceToDepth(const std::string& domain) {
  OpDef d{.type = "SpaceToDepth", .domain = domain};
  d.canonicalize = [domain](Op& op, const Graph&) {
    requireBlocksize(op);
    if (domain == kOnnxDomain && op.attrs.has("mode")) {
      throw error("{}: ai.onnx SpaceToDepth has no attribute mode", op.describe());
    }
  };
  d.infer = [](const ShapeContext& ctx) {
    int64_t b = 0;
    checkModeAndBlock(ctx, b);
    const TensorInfo& x = ctx.input(0);
    const Shape& s = x.shape();
    if (s[2] % b != 0 || s[3] % b != 0) {
      ctx.fail("input is {}: its height and width are not multiples of blocksize {}", x.toString(),
               b);
    }
    return std::vector<TensorInfo>{
        TensorInfo(x.dataType(), {s[0], s[1] * b * b, s[2] / b, s[3] / b})};
  };
  d.grad = [](GradContext& g) {
    Attributes a;
    a.set("blocksize", g.attrs().getInt("blocksize"));
    a.set("mode", g.attrs().getString("mode", "DCR"));
    g.setGradIn(0, g.emit("DepthToSpace", {g.gradOut(0)}, a, kOnnxDomain));
  };
  return d;
}

XT_REGISTER_OP(depthToSpace(kOnnxDomain));
XT_REGISTER_OP(depthToSpace(kGraphcoreDomain));
XT_REGISTER_OP(spaceToDepth(kOnnxDomain));
XT_REGISTER_OP(spaceToDepth(kXtrainDomain));

}  // namespace
}  // namespace xtrain::ir
