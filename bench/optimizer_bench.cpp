#include "optimizer_bench.hpp"

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <iostream>
#include <map>
#include <random>
#include <utility>

#include "bench_args.hpp"
#include "common/optimizer_hyper.hpp"
#include "device/kernel.hpp"

namespace xbench {
namespace {

using xtrain::DataType;
using xtrain::HostTensor;
using xtrain::TensorInfo;

// One optimizer as the transform lowers it: the update op, its attributes, its hyper tensor and
// its state tensors (docs/optimizers.md; common/optimizer_hyper.hpp names the hyper layouts).
struct Update {
  std::string op;
  std::map<std::string, std::string> attrs;
  std::vector<float> hyper;  // {gradScale, clip, the rule's values}
  int states = 0;            // per-element state tensors after the hyper tensor
  bool step = false;         // Adam's step count follows them
  int streams = 0;           // floats read + written per element (for GB/s)
};

// A hyper tensor with gradScale = clip = 1 and the rule's values set by name.
template <class Slot>
std::vector<float> hyperOf(std::initializer_list<std::pair<Slot, float>> values) {
  xtrain::HyperValues<Slot> h;
  h.set(Slot::GradScale, 1.0f);
  h.set(Slot::ClipFactor, 1.0f);
  for (const auto& [slot, value] : values) h.set(slot, value);
  return h.values();
}

Update updateOf(const std::string& name) {
  if (name == "sgd") {
    using H = xtrain::SgdHyper;
    return {"SGDUpdate",
            {},
            hyperOf<H>({{H::LearningRate, 0.01f},
                        {H::WeightDecay, 0},
                        {H::Momentum, 0.9f},
                        {H::Dampening, 0},
                        {H::VelocityScaling, 1}}),
            1,
            false,
            5};
  }
  if (name == "adam" || name == "adamw" || name == "lamb" || name == "adamax") {
    using H = xtrain::AdamHyper;
    const std::string mode = name == "lamb" ? "Lamb" : name == "adamax" ? "AdaMax" : "Adam";
    return {"AdamUpdate",
            {{"mode", mode}, {"weightDecayMode", name == "adam" ? "l2" : "decay"}},
            hyperOf<H>({{H::LearningRate, 0.001f},
                        {H::WeightDecay, 0.01f},
                        {H::Beta1, 0.9f},
                        {H::Beta2, 0.999f},
                        {H::Eps, 1e-6f},
                        {H::MaxWeightNorm, 10}}),
            2,
            true,
            name == "lamb" ? 10 : 7};
  }
  const std::map<std::string, std::pair<std::string, int>> adaptive = {
      {"adagrad", {"AdaGrad", 1}},
      {"rmsprop", {"RMSProp", 1}},
      {"centered-rmsprop", {"CenteredRMSProp", 2}},
      {"adadelta", {"AdaDelta", 2}}};
  auto it = adaptive.find(name);
  if (it == adaptive.end()) {
    throw xtrain::error("xbench optimizer: unknown --optimizer '{}'", name);
  }
  using H = xtrain::AdaptiveHyper;
  return {"AdaptiveUpdate",
          {{"mode", it->second.first}, {"weightDecayMode", "l2"}},
          hyperOf<H>({{H::LearningRate, 0.01f},
                      {H::WeightDecay, 0.01f},
                      {H::Alpha, 0.99f},
                      {H::Momentum, 0},
                      {H::Eps, 1e-6f}}),
          it->second.second,
          false,
          3 + 2 * it->second.second};
}

}  // namespace

const char* optimizerUsage() {
  return "xbench optimizer [--optimizer sgd|adam|adamw|lamb|adamax|adagrad|rmsprop|"
         "centered-rmsprop|adadelta] [--elements 16M] [--reps 20]";
}

int benchOptimizer(const std::vector<std::string>& args) {
  const std::string name = stringFlag(args, {"--optimizer"}, "adam");
  const auto n = static_cast<int64_t>(sizeFlag(args, {"--elements"}, size_t{16} << 20));
  const auto reps = static_cast<int>(sizeFlag(args, {"--reps"}, 20));
  const Update u = updateOf(name);
  const TensorInfo info(DataType::FLOAT, {n});
  std::vector<HostTensor> tensors;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  auto filled = [&](float scale) {
    HostTensor t(info);
    for (auto& v : t.span<float>()) v = normal(rng) * scale;
    return t;
  };
  tensors.push_back(filled(1.0f));   // weight
  tensors.push_back(filled(0.01f));  // gradient
  tensors.push_back(HostTensor::fromVector<float>({static_cast<int64_t>(u.hyper.size())}, u.hyper));
  for (int k = 0; k < u.states; ++k) {
    HostTensor s(info);
    s.fillZero();
    tensors.push_back(std::move(s));
  }
  if (u.step) tensors.push_back(HostTensor(TensorInfo(DataType::FLOAT, {})));
  xtrain::device::KernelSpec spec;
  spec.type = u.op;
  spec.domain = "ai.xtrain";
  spec.description = u.op + " (xbench)";
  for (const auto& [k, v] : u.attrs) spec.attrs.set(k, v);
  for (const auto& t : tensors) spec.inputs.push_back(t.info());
  if (u.op == "AdaptiveUpdate" && u.states == 1) {
    spec.inputs.push_back(TensorInfo());  // no v2
    tensors.emplace_back();
  }
  auto kernel = xtrain::device::KernelRegistry::instance().create(spec);
  std::vector<HostTensor*> ins;
  for (size_t i = 0; i < tensors.size(); ++i) {
    ins.push_back(spec.inputs[i].isSet() ? &tensors[i] : nullptr);
  }
  const xtrain::device::KernelIO io{ins, {}, 0};
  kernel->run(io);  // warm up: pages touched, caches primed
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    kernel->run(io);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const double bytes = static_cast<double>(n) * u.streams * sizeof(float);
  std::cout << "xtrain-optimizer optimizer=" << name << " elements=" << n << " reps=" << reps
            << " ms_per_update=" << median * 1e3 << " ns_per_element=" << median * 1e9 / n
            << " effective_GBps=" << bytes / median / 1e9 << "\n";
  return 0;
}

}  // namespace xbench
