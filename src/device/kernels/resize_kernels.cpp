// Kernels for Resize (nearest and N-linear, canonical attributes in src/ir/ops/resize_ops.cpp) and
// its gradient ResizeGrad.
//
// The factory turns the attributes into per-axis tables: for every output index of an axis, the one
// or two input indices it reads and their weights. Axes whose table is the identity (not resized)
// are skipped. The run walks the output one row (last axis) at a time: the outer axes give a few
// input rows with weights (one for nearest, two per linearly resized outer axis), and the inner
// loop gathers from them through the last axis's table. ResizeGrad walks the same way and scatters.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "device/kernel.hpp"

namespace xtrain::device {
namespace {

// One axis: output index o reads input idx0[o] with weight w0[o] and idx1[o] with w1[o] (w1 is 0
// for nearest, and idx1 == idx0 then).
struct AxisTable {
  std::vector<int64_t> idx0, idx1;
  std::vector<float> w0, w1;
  bool twoTaps = false;   // some w1 is not 0
  bool identity = false;  // output index o reads input o with weight 1
};

// The input coordinate output index o maps to on an axis of input length `in` and output length
// `out`, with `scale` the model's scale (or out / in).
double sourceCoordinate(const std::string& ctm, int64_t o, int64_t in, int64_t out, double scale) {
  const double x = static_cast<double>(o);
  if (ctm == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (ctm == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (ctm == "align_corners") {
    return out > 1 ? x * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  }
  if (ctm == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  return x / scale;  // asymmetric
}

int64_t nearestIndex(const std::string& mode, double x, double scale) {
  if (mode == "round_prefer_floor") return static_cast<int64_t>(std::ceil(x - 0.5));
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(std::floor(x + 0.5));
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  return static_cast<int64_t>(scale >= 1 ? std::floor(x) : std::ceil(x));  // simple
}

AxisTable makeAxis(const Attributes& a, size_t axis, int64_t in, int64_t out) {
  const std::string mode = a.getString("mode");
  const std::string ctm = a.getString("coordinate_transformation_mode");
  const std::string nearestMode = a.getString("nearest_mode");
  const double scale =
      a.has("scales") ? static_cast<double>(a.getFloats("scales").at(axis))
                      : static_cast<double>(out) / static_cast<double>(std::max<int64_t>(in, 1));
  AxisTable t;
  t.identity = in == out;
  for (int64_t o = 0; o < out; ++o) {
    const double x = sourceCoordinate(ctm, o, in, out, scale);
    int64_t i0, i1;
    float w1;
    if (mode == "nearest") {
      i0 = std::clamp<int64_t>(nearestIndex(nearestMode, x, scale), 0, in - 1);
      i1 = i0;
      w1 = 0.0f;
    } else {
      const double c = std::clamp(x, 0.0, static_cast<double>(in - 1));
      i0 = static_cast<int64_t>(std::floor(c));
      i1 = std::min(i0 + 1, in - 1);
      w1 = static_cast<float>(c - static_cast<double>(i0));
      if (i1 == i0) w1 = 0.0f;
    }
    t.idx0.push_back(i0);
    t.idx1.push_back(i1);
    t.w0.push_back(1.0f - w1);
    t.w1.push_back(w1);
    t.twoTaps = t.twoTaps || w1 != 0.0f;
    t.identity = t.identity && i0 == o && w1 == 0.0f;
  }
  return t;
}

// The resize of `in` to `out` (same rank >= 1) as tables, with the input's strides folded into the
// outer axes' indices.
class ResizePlan {
 public:
  ResizePlan(const KernelSpec& spec, const Shape& in, const Shape& out) : in_(in), out_(out) {
    const size_t rank = in.size();
    inner_ = makeAxis(spec.attrs, rank - 1, in[rank - 1], out[rank - 1]);
    int64_t stride = in[rank - 1];
    for (size_t d = rank - 1; d-- > 0;) {
      AxisTable t = makeAxis(spec.attrs, d, in[d], out[d]);
      for (auto& v : t.idx0) v *= stride;
      for (auto& v : t.idx1) v *= stride;
      outer_.insert(outer_.begin(), std::move(t));
      stride *= in[d];
    }
    rows_ = shapeNelms(out) / std::max<int64_t>(out[rank - 1], 1);
  }

  // Calls f(rowIndex, offsets, weights, count) for every output row: the input rows (offsets of
  // their first element) it is interpolated from, with their weights.
  template <typename F>
  void forEachRow(F&& f) const {
    const size_t nOuter = outer_.size();
    std::vector<int64_t> pos(nOuter, 0);
    const size_t maxRows = size_t{1} << std::min<size_t>(nOuter, 20);
    std::vector<int64_t> offsets;
    std::vector<float> weights;
    offsets.reserve(maxRows);
    weights.reserve(maxRows);
    for (int64_t r = 0; r < rows_; ++r) {
      offsets.assign(1, 0);
      weights.assign(1, 1.0f);
      for (size_t d = 0; d < nOuter; ++d) {
        const AxisTable& t = outer_[d];
        const size_t o = static_cast<size_t>(pos[d]);
        const size_t n = offsets.size();
        if (t.w1[o] != 0.0f) {
          for (size_t k = 0; k < n; ++k) {
            offsets.push_back(offsets[k] + t.idx1[o]);
            weights.push_back(weights[k] * t.w1[o]);
          }
        }
        for (size_t k = 0; k < n; ++k) {
          offsets[k] += t.idx0[o];
          weights[k] *= t.w0[o];
        }
      }
      f(r, offsets.data(), weights.data(), offsets.size());
      for (size_t d = nOuter; d-- > 0;) {
        if (++pos[d] < out_[d]) break;
        pos[d] = 0;
      }
    }
  }

  // The last axis's table as raw pointers, for the inner loops.
  struct Taps {
    int64_t len;  // output row length
    const int64_t *i0, *i1;
    const float *w0, *w1;
    bool twoTaps, identity;
  };
  Taps taps() const {
    return {out_.back(),      inner_.idx0.data(), inner_.idx1.data(), inner_.w0.data(),
            inner_.w1.data(), inner_.twoTaps,     inner_.identity};
  }
  int64_t inRowLength() const { return in_.back(); }

 private:
  Shape in_, out_;
  AxisTable inner_;
  std::vector<AxisTable> outer_;
  int64_t rows_ = 0;
};

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
    const ResizePlan::Taps t = plan->taps();
    const int64_t len = t.len;
    const int64_t *i0 = t.i0, *i1 = t.i1;
    const float *w0 = t.w0, *w1 = t.w1;
    plan->forEachRow([&](int64_t r, const int64_t* offsets, const float* weights, size_t n) {
      float* row = y + r * len;
      for (size_t k = 0; k < n; ++k) {
        const float* src = x + offsets[k];
        const float wr = weights[k];
        if (t.twoTaps) {
          if (k == 0) {
            for (int64_t j = 0; j < len; ++j)
              row[j] = wr * (src[i0[j]] * w0[j] + src[i1[j]] * w1[j]);
          } else {
            for (int64_t j = 0; j < len; ++j)
              row[j] += wr * (src[i0[j]] * w0[j] + src[i1[j]] * w1[j]);
          }
        } else if (k == 0 && n == 1) {
          if (t.identity) {
            for (int64_t j = 0; j < len; ++j) row[j] = src[j];
          } else {
            for (int64_t j = 0; j < len; ++j) row[j] = src[i0[j]];
          }
        } else if (k == 0) {
          for (int64_t j = 0; j < len; ++j) row[j] = wr * src[i0[j]];
        } else {
          for (int64_t j = 0; j < len; ++j) row[j] += wr * src[i0[j]];
        }
      }
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
                       const ResizePlan::Taps t = plan->taps();
                       const int64_t len = t.len;
                       const int64_t *i0 = t.i0, *i1 = t.i1;
                       const float *w0 = t.w0, *w1 = t.w1;
                       plan->forEachRow(
                           [&](int64_t r, const int64_t* offsets, const float* weights, size_t n) {
                             const float* row = gy + r * len;
                             for (size_t k = 0; k < n; ++k) {
                               float* dst = gx + offsets[k];
                               const float wr = weights[k];
                               if (t.twoTaps) {
                                 for (int64_t j = 0; j < len; ++j) {
                                   const float g = wr * row[j];
                                   dst[i0[j]] += g * w0[j];
                                   dst[i1[j]] += g * w1[j];
                                 }
                               } else if (t.identity) {
                                 for (int64_t j = 0; j < len; ++j) dst[j] += wr * row[j];
                               } else {
                                 for (int64_t j = 0; j < len; ++j) dst[i0[j]] += wr * row[j];
                               }
                             }
                           });
                     });
                   });

}  // namespace
}  // namespace xtrain::device
