// Kernel of CtcBeamSearchDecoder (src/ir/ops/ctc_ops.cpp): CTC prefix beam search. Each prefix (a
// label sequence) carries two log-probabilities: of the paths so far that end in a blank (pb) and
// of those that end in its last label (pnb). Candidates of a step are ranked by log(e^pb + e^pnb);
// equal scores keep the order in which the candidates were first reached, so the result does not
// depend on hashing. FLOAT log-probabilities (FLOAT16 runs promoted), computed in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/kernel.hpp"
#include "device/kernels/log_space.hpp"

namespace xtrain::device {
namespace {

struct Beam {
  std::vector<uint32_t> prefix;
  double pb = kLogZero, pnb = kLogZero;
  double score() const { return logAdd(pb, pnb); }
};

struct PrefixHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    size_t h = v.size();
    for (uint32_t x : v) h = h * 1000003u ^ x;
    return h;
  }
};

// The candidates of one time step, in the order they were first reached.
class Candidates {
 public:
  Beam& at(const std::vector<uint32_t>& prefix) {
    auto [it, added] = index_.try_emplace(prefix, beams_.size());
    if (added) beams_.push_back(Beam{prefix});
    return beams_[it->second];
  }
  // The `width` best, best first.
  std::vector<Beam> best(size_t width) {
    std::stable_sort(beams_.begin(), beams_.end(),
                     [](const Beam& a, const Beam& b) { return a.score() > b.score(); });
    if (beams_.size() > width) beams_.resize(width);
    return std::move(beams_);
  }

 private:
  std::vector<Beam> beams_;
  std::unordered_map<std::vector<uint32_t>, size_t, PrefixHash> index_;
};

struct DecoderConfig {
  int64_t t = 0, n = 0, c = 0;
  uint32_t blank = 0;
  size_t width = 1, top = 1;
  std::string description;
};

// One step of the search: every beam extended by every class.
std::vector<Beam> step(const DecoderConfig& cfg, const std::vector<Beam>& beams, const float* lp) {
  Candidates next;
  for (int64_t s = 0; s < cfg.c; ++s) {
    const double p = lp[s];
    const auto label = static_cast<uint32_t>(s);
    for (const Beam& b : beams) {
      if (label == cfg.blank) {
        Beam& same = next.at(b.prefix);
        same.pb = logAdd(same.pb, logAdd(b.pb + p, b.pnb + p));
        continue;
      }
      const bool repeat = !b.prefix.empty() && b.prefix.back() == label;
      std::vector<uint32_t> extended = b.prefix;
      extended.push_back(label);
      Beam& ext = next.at(extended);
      // A repeated label extends the prefix only across a blank.
      ext.pnb = logAdd(ext.pnb, repeat ? b.pb + p : logAdd(b.pb + p, b.pnb + p));
      if (repeat) {
        Beam& same = next.at(b.prefix);
        same.pnb = logAdd(same.pnb, b.pnb + p);
      }
    }
  }
  return next.best(cfg.width);
}

void decode(const DecoderConfig& cfg, const KernelIO& io) {
  const float* lp = io.in(0).data<float>();
  const uint32_t* lengths = io.in(1).data<uint32_t>();
  float* probs = io.out(0).data<float>();
  uint32_t* labelLengths = io.out(1).data<uint32_t>();
  HostTensor& decodedOut = io.out(2);
  decodedOut.fillZero();
  uint32_t* decoded = decodedOut.data<uint32_t>();
  for (int64_t n = 0; n < cfg.n; ++n) {
    if (lengths[n] > cfg.t) {
      throw runtime_error("{}: dataLengths[{}] = {} exceeds the {} time steps of logProbs",
                          cfg.description, n, lengths[n], cfg.t);
    }
    std::vector<Beam> beams{Beam{{}, 0.0, kLogZero}};
    for (int64_t t = 0; t < lengths[n]; ++t) {
      beams = step(cfg, beams, lp + (t * cfg.n + n) * cfg.c);
    }
    for (size_t k = 0; k < cfg.top; ++k) {
      const int64_t o = n * static_cast<int64_t>(cfg.top) + static_cast<int64_t>(k);
      if (k >= beams.size()) {  // fewer distinct prefixes than paths asked for
        probs[o] = -std::numeric_limits<float>::infinity();
        labelLengths[o] = 0;
        continue;
      }
      probs[o] = static_cast<float>(beams[k].score());
      labelLengths[o] = static_cast<uint32_t>(beams[k].prefix.size());
      std::copy(beams[k].prefix.begin(), beams[k].prefix.end(), decoded + o * cfg.t);
    }
  }
}

XT_REGISTER_KERNEL("ai.graphcore", "CtcBeamSearchDecoder",
                   [](const KernelSpec& spec) -> std::unique_ptr<Kernel> {
                     if (spec.inputs.at(0).dataType() != DataType::FLOAT ||
                         spec.outputs.at(0).dataType() != DataType::FLOAT) {
                       spec.fail("logProbs is {}; only FLOAT is supported",
                                 spec.inputs[0].toString());
                     }
                     DecoderConfig cfg;
                     const Shape& sh = spec.inputs[0].shape();
                     cfg.t = sh.at(0);
                     cfg.n = sh.at(1);
                     cfg.c = sh.at(2);
                     cfg.blank = static_cast<uint32_t>(spec.attrs.getInt("blank"));
                     cfg.width = static_cast<size_t>(spec.attrs.getInt("beam_width"));
                     cfg.top = static_cast<size_t>(spec.attrs.getInt("top_paths"));
                     cfg.description = spec.description;
                     return makeKernel([cfg](const KernelIO& io) { decode(cfg, io); });
                   });

}  // namespace
}  // namespace xtrain::device
