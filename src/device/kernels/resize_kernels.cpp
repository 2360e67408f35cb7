// Kernels for Resize (nearest, N-linear and N-cubic; canonical attributes in
// src/ir/ops/resize_ops.cpp) and its gradient ResizeGrad.
//
// The factory turns the attributes into per-axis tables: for every output index of an axis, the
// input indices it reads (1 for nearest, 2 for linear, 4 for cubic) and their weights. Axes whose
// table is the identity (not resized) are skipped. The run walks the output one row (last axis) at
// a time: the outer axes give a few input rows with weights (the product of their taps), and the
// inner loop gathers from them through the last axis's table. ResizeGrad walks the same way and
// scatters, so it is the exact adjoint of the forward.
//
// The coordinates are computed in FLOAT, as PopART computes them: a nearest index on a rounding
// boundary, and the output size floor(in * scale), depend on it.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "device/kernel.hpp"

namespace xtrain::device {
namespace {

// One axis: output index o reads input idx[o * taps + k] with weight w[o * taps + k].
struct AxisTable {
  int taps = 1;
  std::vector<int64_t> idx;
  std::vector<float> w;
  bool identity = false;  // output index o reads input o with weight 1
};

// The input coordinate of output index o on an axis of input length `in`, for the linear and cubic
// modes and the nearest modes other than "pytorch". `scale` is the model's scale, or out / in when
// the model gave sizes; align_corners and pytorch_half_pixel use in * scale as the output length
// (not the floored output size), as PopART and ONNX's reference do.
float sourceCoordinate(const std::string& ctm, float o, float scale, int64_t in) {
  const float length = static_cast<float>(in) * scale;
  if (ctm == "half_pixel") return (o + 0.5f) / scale - 0.5f;
  if (ctm == "pytorch_half_pixel") return length > 1.0f ? (o + 0.5f) / scale - 0.5f : 0.0f;
  if (ctm == "align_corners") {
    return length == 1.0f ? 0.0f : o * static_cast<float>(in - 1) / (length - 1.0f);
  }
  if (ctm == "tf_half_pixel_for_nn") return (o + 0.5f) / scale;
  return o / scale;  // asymmetric
}

int64_t nearestIndex(const std::string& mode, float x) {
  const float lo = std::floor(x);
  if (mode == "round_prefer_floor") return static_cast<int64_t>(x - lo <= 0.5f ? lo : std::ceil(x));
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(std::round(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  return static_cast<int64_t>(lo);  // floor, pytorch
}

// Keys' cubic convolution weights of the four neighbours floor(x) - 1 .. floor(x) + 2 of a point
// at distance r = x - floor(x) from floor(x), with coefficient a.
std::array<float, 4> cubicWeights(float r, float a) {
  auto near = [a](float t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };       // |t| <= 1
  auto far = [a](float t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };  // 1 < |t| < 2
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

// Drops the taps that no output index uses (a linear axis that samples the input on its grid).
void compact(AxisTable& t, int64_t out) {
  for (int64_t o = 0; o < out; ++o) {
    for (int k = 1; k < t.taps; ++k) {
      if (t.w[static_cast<size_t>(o * t.taps + k)] != 0.0f) return;
    }
  }
  std::vector<int64_t> idx(static_cast<size_t>(out));
  std::vector<float> w(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    idx[static_cast<size_t>(o)] = t.idx[static_cast<size_t>(o * t.taps)];
    w[static_cast<size_t>(o)] = t.w[static_cast<size_t>(o * t.taps)];
  }
  t.idx = std::move(idx);
  t.w = std::move(w);
  t.taps = 1;
}

AxisTable makeAxis(const Attributes& a, size_t axis, int64_t in, int64_t out) {
  const std::string mode = a.getString("mode");
  const std::string ctm = a.getString("coordinate_transformation_mode");
  const std::string nearestMode = a.getString("nearest_mode");
  const float scale = a.has("scales")
                          ? a.getFloats("scales").at(axis)
                          : static_cast<float>(out) / static_cast<float>(std::max<int64_t>(in, 1));
  const bool pytorch = mode == "nearest" && nearestMode == "pytorch";
  AxisTable t;
  t.taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  // PopART leaves an axis alone when its scale is 1 (for "pytorch": when its size is unchanged);
  // any other scale may move values even when the size stays.
  if (pytorch ? in == out : scale == 1.0f) t.taps = 1;
  const float a3 = a.getFloat("cubic_coeff_a", -0.75f);
  const bool excludeOutside = a.getInt("exclude_outside", 0) != 0;
  auto clampIndex = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    const float fo = static_cast<float>(o);
    if ((pytorch && in == out) || (!pytorch && scale == 1.0f)) {
      t.idx.push_back(o);
      t.w.push_back(1.0f);
    } else if (mode == "nearest") {
      const float x = pytorch ? fo / scale : sourceCoordinate(ctm, fo, scale, in);
      t.idx.push_back(clampIndex(nearestIndex(nearestMode, x)));
      t.w.push_back(1.0f);
    } else if (mode == "linear") {
      const float x =
          std::clamp(sourceCoordinate(ctm, fo, scale, in), 0.0f, static_cast<float>(in - 1));
      const int64_t i0 = static_cast<int64_t>(std::floor(x));
      const float w1 = x - static_cast<float>(i0);
      t.idx.insert(t.idx.end(), {i0, clampIndex(i0 + 1)});
      t.w.insert(t.w.end(), {1.0f - w1, w1});
    } else {
      const float x = sourceCoordinate(ctm, fo, scale, in);
      const float lo = std::floor(x);
      std::array<float, 4> w = cubicWeights(x - lo, a3);
      const int64_t base = static_cast<int64_t>(lo) - 1;
      if (excludeOutside) {
        float sum = 0;
        for (int k = 0; k < 4; ++k) {
          if (base + k < 0 || base + k >= in) w[static_cast<size_t>(k)] = 0;
          sum += w[static_cast<size_t>(k)];
        }
        for (float& v : w) v = sum != 0 ? v / sum : 0;
      }
      for (int k = 0; k < 4; ++k) {
        t.idx.push_back(clampIndex(base + k));
        t.w.push_back(w[static_cast<size_t>(k)]);
      }
    }
  }
  if (t.taps > 1) compact(t, out);
  t.identity = t.taps == 1 && in == out;
  for (int64_t o = 0; o < out && t.identity; ++o) {
    t.identity = t.idx[static_cast<size_t>(o)] == o && t.w[static_cast<size_t>(o)] == 1.0f;
  }
  return t;
}

// The resize of `in` to `out` (same rank >= 1) as tables, with the input's strides folded into the
// outer axes' indices.
class ResizePlan {
 public:
  ResizePlan(const KernelSpec& spec, const Shape& in, const Shape& out) : out_(out) {
    const size_t rank = in.size();
    inner_ = makeAxis(spec.attrs, rank - 1, in[rank - 1], out[rank - 1]);
    int64_t stride = in[rank - 1];
    size_t maxRows = 1;
    for (size_t d = rank - 1; d-- > 0;) {
      AxisTable t = makeAxis(spec.attrs, d, in[d], out[d]);
      for (auto& v : t.idx) v *= stride;
      maxRows *= static_cast<size_t>(t.taps);
      outer_.insert(outer_.begin(), std::move(t));
      stride *= in[d];
    }
    maxRows_ = maxRows;
    rows_ = shapeNelms(out) / std::max<int64_t>(out[rank - 1], 1);
  }

  // Calls f(rowIndex, offsets, weights, count) for every output row: the input rows (offsets of
  // their first element) it is interpolated from, with their weights (zero weights left out).
  template <typename F>
  void forEachRow(F&& f) const {
    const size_t nOuter = outer_.size();
    std::vector<int64_t> pos(nOuter, 0);
    std::vector<int64_t> offsets, nextOffsets;
    std::vector<float> weights, nextWeights;
    for (auto* v : {&offsets, &nextOffsets}) v->reserve(maxRows_);
    for (auto* v : {&weights, &nextWeights}) v->reserve(maxRows_);
    for (int64_t r = 0; r < rows_; ++r) {
      offsets.assign(1, 0);
      weights.assign(1, 1.0f);
      for (size_t d = 0; d < nOuter; ++d) {
        const AxisTable& t = outer_[d];
        const size_t base = static_cast<size_t>(pos[d]) * static_cast<size_t>(t.taps);
        nextOffsets.clear();
        nextWeights.clear();
        for (int k = 0; k < t.taps; ++k) {
          const float w = t.w[base + static_cast<size_t>(k)];
          if (w == 0.0f) continue;
          for (size_t j = 0; j < offsets.size(); ++j) {
            nextOffsets.push_back(offsets[j] + t.idx[base + static_cast<size_t>(k)]);
            nextWeights.push_back(weights[j] * w);
          }
        }
        offsets.swap(nextOffsets);
        weights.swap(nextWeights);
      }
      f(r, offsets.data(), weights.data(), offsets.size());
      for (size_t d = nOuter; d-- > 0;) {
        if (++pos[d] < out_[d]) break;
        pos[d] = 0;
      }
    }
  }

  const AxisTable& inner() const { return inner_; }
  int64_t rowLength() const { return out_.back(); }

 private:
  Shape out_;
  AxisTable inner_;
  std::vector<AxisTable> outer_;
  int64_t rows_ = 0;
  size_t maxRows_ = 1;
};

// row[j] (+)= wr * sum_k src[idx[j * taps + k]] * w[j * taps + k], for j < len.
void gatherRow(float* row, const float* src, float wr, const AxisTable& t, int64_t len,
               bool first) {
  const int64_t* idx = t.idx.data();
  const float* w = t.w.data();
  if (t.identity) {
    if (first && wr == 1.0f) {
      std::copy(src, src + len, row);
    } else {
      for (int64_t j = 0; j < len; ++j) row[j] = (first ? 0.0f : row[j]) + wr * src[j];
    }
    return;
  }
  switch (t.taps) {
    case 1:
      for (int64_t j = 0; j < len; ++j) {
        const float v = wr * src[idx[j]] * w[j];
        row[j] = first ? v : row[j] + v;
      }
      break;
    case 2:
      for (int64_t j = 0; j < len; ++j) {
        const float v = wr * (src[idx[2 * j]] * w[2 * j] + src[idx[2 * j + 1]] * w[2 * j + 1]);
        row[j] = first ? v : row[j] + v;
      }
      break;
    default:
      for (int64_t j = 0; j < len; ++j) {
        const int64_t* i = idx + 4 * j;
        const float* c = w + 4 * j;
        const float v =
            wr * (src[i[0]] * c[0] + src[i[1]] * c[1] + src[i[2]] * c[2] + src[i[3]] * c[3]);
        row[j] = first ? v : row[j] + v;
      }
  }
}

// dst[idx[j * taps + k]] += wr * row[j] * w[j * taps + k]: the adjoint of gatherRow.
void scatterRow(float* dst, const float* row, float wr, const AxisTable& t, int64_t len) {
  if (t.identity) {
    for (int64_t j = 0; j < len; ++j) dst[j] += wr * row[j];
    return;
  }
  const size_t taps = static_cast<size_t>(t.taps);
  for (int64_t j = 0; j < len; ++j) {
    const float g = wr * row[j];
    for (size_t k = 0; k < taps; ++k) {
      const size_t e = static_cast<size_t>(j) * taps + k;
      dst[t.idx[e]] += g * t.w[e];
    }
  }
}

// Resize(X) -> Y.
XT_REGISTER_KERNEL("ai.onnx", "Resize", [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
  spec.requireFloatInputs();
  const Shape& in = spec.inputs.at(0).shape();
  const Shape& out = spec.outputs.at(0).shape();
  if (shapeNelms(out) == 0) return makeKernel([](const KernelIO&) {});
  if (in.size() != out.size() || in.empty() || shapeNelms(in) == 0) {
    spec.fail("cannot resize {} to {}", shapeToString(in), shapeToString(out));
  }
  auto plan = std::make_shared<const ResizePlan>(spec, in, out);
  return makeKernel([plan](const KernelIO& io) {
    const float* x = io.in(0).data<float>();
    float* y = io.out(0).data<float>();
    const int64_t len = plan->rowLength();
    const AxisTable& inner = plan->inner();
    plan->forEachRow([&](int64_t r, const int64_t* offsets, const float* weights, size_t n) {
      float* row = y + r * len;
      if (n == 0) std::fill(row, row + len, 0.0f);
      for (size_t k = 0; k < n; ++k) gatherRow(row, x + offsets[k], weights[k], inner, len, k == 0);
    });
  });
});

// ResizeGrad(gY) -> dX (shape in attribute `shape`): every output's gradient added to the inputs
// it was interpolated from, with the same weights.
XT_REGISTER_KERNEL("ai.xtrain", "ResizeGrad",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     spec.requireFloatInputs();
                     const Shape& out = spec.inputs.at(0).shape();
                     const Shape& in = spec.outputs.at(0).shape();
                     if (shapeNelms(in) == 0) return makeKernel([](const KernelIO&) {});
                     if (shapeNelms(out) == 0)
                       return makeKernel([](const KernelIO& io) { io.out(0).fillZero(); });
                     if (in.size() != out.size() || in.empty()) {
                       spec.fail("cannot take the gradient of resizing {} to {}", shapeToString(in),
                                 shapeToString(out));
                     }
                     auto plan = std::make_shared<const ResizePlan>(spec, in, out);
                     return makeKernel([plan](const KernelIO& io) {
                       const float* gy = io.in(0).data<float>();
                       io.out(0).fillZero();
                       float* gx = io.out(0).data<float>();
                       const int64_t len = plan->rowLength();
                       const AxisTable& inner = plan->inner();
                       plan->forEachRow(
                           [&](int64_t r, const int64_t* offsets, const float* weights, size_t n) {
                             for (size_t k = 0; k < n; ++k)
                               scatterRow(gx + offsets[k], gy + r * len, weights[k], inner, len);
                           });
                     });
                   });

}  // namespace
}  // namespace xtrain::device
