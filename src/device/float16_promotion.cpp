// FLOAT16 tensors for kernels that compute in FLOAT (see the contract in kernel.hpp): the wrapper
// converts FLOAT16 inputs into FLOAT scratch, runs the FLOAT kernel, and rounds its FLOAT16 outputs
// and modified inputs back. The rounding of every stored result is what makes a FLOAT16 model
// behave like one: gradients below FLOAT16's smallest subnormal (6e-8) become zero unless the loss
// is scaled.
#include <algorithm>
#include <cmath>

#include "device/kernel.hpp"
#include "device/program.hpp"

namespace xtrain::device {

uint16_t floatToHalfStochastic(float x, float u) {
  const uint16_t nearest = floatToHalf(x);
  if ((nearest & 0x7c00u) == 0x7c00u) return nearest;  // inf, nan, overflow
  const float a = std::fabs(x);
  const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  const uint16_t n = static_cast<uint16_t>(nearest & 0x7fffu);
  const float nf = halfToFloat(n);
  if (nf == a) return nearest;
  const uint16_t lo = nf < a ? n : static_cast<uint16_t>(n - 1);
  const uint16_t hi = static_cast<uint16_t>(lo + 1);
  if ((hi & 0x7c00u) == 0x7c00u) return nearest;
  const float lof = halfToFloat(lo), hif = halfToFloat(hi);
  const float up = (a - lof) / (hif - lof);
  return static_cast<uint16_t>(sign | (u < up ? hi : lo));
}

namespace {

class Float16Promoted final : public Kernel {
 public:
  Float16Promoted(std::unique_ptr<Kernel> inner, const KernelSpec& spec)
      : inner_(std::move(inner)), stochastic_(spec.attrs.getInt("stochasticRounding", 0) != 0) {
    for (const auto& info : spec.inputs) inputs_.push_back(scratchFor(info));
    for (const auto& info : spec.outputs) outputs_.push_back(scratchFor(info));
    writeBack_.assign(spec.inputs.size(), false);
    for (int k : spec.modifiedInputs) {
      if (k >= 0 && static_cast<size_t>(k) < writeBack_.size())
        writeBack_[static_cast<size_t>(k)] = true;
    }
  }

  void run(const KernelIO& io) override {
    // The FLOAT view of the buffers (members: a kernel runs on one thread at a time, and this is
    // the hot path of every FLOAT16 op).
    std::vector<HostTensor*>& ins = ins_;
    std::vector<HostTensor*>& outs = outs_;
    ins.assign(io.inputs.begin(), io.inputs.end());
    outs.assign(io.outputs.begin(), io.outputs.end());
    for (size_t i = 0; i < ins.size(); ++i) {
      if (inputs_[i] && ins[i] != nullptr) {
        toFloat(*ins[i], *inputs_[i]);
        ins[i] = inputs_[i].get();
      }
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outputs_[i] && outs[i] != nullptr) outs[i] = outputs_[i].get();
    }
    inner_->run(KernelIO{ins, outs, io.seed});
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outputs_[i] && io.hasOut(i)) toHalf(*outputs_[i], io.out(i), false, 0);
    }
    for (size_t i = 0; i < ins.size(); ++i) {
      if (inputs_[i] && writeBack_[i] && io.hasIn(i)) {
        toHalf(*inputs_[i], io.in(i), stochastic_, mixSeed(io.seed + i));
      }
    }
  }

 private:
  static std::unique_ptr<HostTensor> scratchFor(const TensorInfo& info) {
    if (!info.isSet() || info.dataType() != DataType::FLOAT16) return nullptr;
    return std::make_unique<HostTensor>(TensorInfo(DataType::FLOAT, info.shape()));
  }
  static void toFloat(const HostTensor& half, HostTensor& out) {
    const auto* h = reinterpret_cast<const uint16_t*>(half.raw());
    float* f = out.data<float>();
    for (int64_t i = 0; i < out.nelms(); ++i) f[i] = halfToFloat(h[i]);
  }
  // Stochastic bits depend on the op's seed and the element's index only: replicas running the same
  // update with the same seed round the same way.
  static void toHalf(const HostTensor& in, HostTensor& half, bool stochastic, uint64_t seed) {
    const float* f = in.data<float>();
    auto* h = reinterpret_cast<uint16_t*>(half.raw());
    const int64_t n = in.nelms();
    if (!stochastic) {
      for (int64_t i = 0; i < n; ++i) h[i] = floatToHalf(f[i]);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t bits = mixSeed(seed ^ (static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull));
      const float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
      h[i] = floatToHalfStochastic(f[i], u);
    }
  }

  std::unique_ptr<Kernel> inner_;
  bool stochastic_;
  std::vector<std::unique_ptr<HostTensor>> inputs_, outputs_;
  std::vector<bool> writeBack_;
  std::vector<HostTensor*> ins_, outs_;
};

}  // namespace

std::unique_ptr<Kernel> createFloat16Promoted(const KernelSpec& spec,
                                              const KernelFactory& factory) {
  auto isHalf = [](const TensorInfo& t) { return t.isSet() && t.dataType() == DataType::FLOAT16; };
  if (std::none_of(spec.inputs.begin(), spec.inputs.end(), isHalf) &&
      std::none_of(spec.outputs.begin(), spec.outputs.end(), isHalf)) {
    return nullptr;
  }
  KernelSpec asFloat = spec;
  for (auto* infos : {&asFloat.inputs, &asFloat.outputs}) {
    for (auto& t : *infos) {
      if (isHalf(t)) t = TensorInfo(DataType::FLOAT, t.shape());
    }
  }
  // When the FLOAT spec is refused too, its error (the real cause) propagates.
  return std::make_unique<Float16Promoted>(factory(asFloat), spec);
}

}  // namespace xtrain::device
