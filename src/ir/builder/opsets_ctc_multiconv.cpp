// The Builder methods of PopART's ai.graphcore Ctc (ctcloss, _ctcloss), CtcBeamSearchDecoder and
// MultiConv, with PopART's names, argument order, defaults and argument checks. Semantics: the op
// registry (src/ir/ops/ctc_ops.cpp, multiconv_ops.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/builder/builder_impl.hpp"

namespace xtrain {
namespace {

// ONNX element type of ctcloss's outDataType (0 for UNDEFINED).
int64_t ctcOutType(const std::string& name) {
  if (name == "UNDEFINED") return 0;
  if (name == "FLOAT") return 1;
  if (name == "FLOAT16") return 10;
  throw error("Builder: ctcloss: outDataType '{}' is not one of UNDEFINED, FLOAT, FLOAT16", name);
}

using Lists = std::vector<std::vector<int64_t>>;

// PopART's checks of one convolution's window parameters against its data's rank, where the
// Builder knows that rank (the messages are PopART's).
void checkWindow(BuilderImpl& impl, const TensorId& data, const std::vector<int64_t>& strides,
                 const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations,
                 const std::vector<int64_t>& inDilations) {
  std::optional<size_t> rank;
  try {
    rank = impl.tensorInfo(data).rank();
  } catch (const error&) {
    return;  // shape unknown here: the IR's inference checks it
  }
  if (*rank < 3) {
    throw error("Input tensor has no spatial dimensions (multiconv data '{}' has rank {})", data,
                *rank);
  }
  const size_t nd = *rank - 2;
  auto check = [nd](const std::vector<int64_t>& v, const char* name) {
    if (!v.empty() && v.size() != nd) {
      throw error("Length of {} vector {} != number of spatial dimensions {}", name, v.size(), nd);
    }
  };
  check(strides, "strides");
  if (!pads.empty() && pads.size() != 2 * nd) {
    throw error("Padding vector (length {}) does not have 2 values for each spatial dimension {}",
                pads.size(), nd);
  }
  check(dilations, "dilations");
  check(inDilations, "inDilations");
}

std::vector<int64_t> flatten(const Lists& lists) {
  std::vector<int64_t> flat;
  for (const auto& l : lists) flat.insert(flat.end(), l.begin(), l.end());
  return flat;
}

}  // namespace

std::vector<TensorId> AiGraphcoreOpset1::_ctcloss(const std::vector<TensorId>& args,
                                                  ReductionType reduction, unsigned blank,
                                                  const std::string& outDataType, bool zeroInfinity,
                                                  const std::string& dc) {
  return impl_->node("ctcloss", "Ctc", args, 4, 4, 2,
                     {{"reduction", static_cast<int64_t>(reduction)},
                      {"blank", static_cast<int64_t>(blank)},
                      {"outDataType", ctcOutType(outDataType)},
                      {"zeroInfinity", int64_t{zeroInfinity ? 1 : 0}}},
                     dc, ir::kGraphcoreDomain);
}

TensorId AiGraphcoreOpset1::ctcloss(const std::vector<TensorId>& args, ReductionType reduction,
                                    unsigned blank, const std::string& outDataType,
                                    bool zeroInfinity, const std::string& dc) {
  return _ctcloss(args, reduction, blank, outDataType, zeroInfinity, dc)[0];
}

std::vector<TensorId> AiGraphcoreOpset1::ctcbeamsearchdecoder(const std::vector<TensorId>& args,
                                                              unsigned blank, unsigned beamWidth,
                                                              unsigned topPaths,
                                                              const std::string& dc) {
  if (beamWidth < 1 || topPaths < 1 || topPaths > beamWidth) {
    throw error(
        "Builder: ctcbeamsearchdecoder: beam_width {} and top_paths {}: expected beam_width >= 1 "
        "and 1 <= top_paths <= beam_width",
        beamWidth, topPaths);
  }
  return impl_->node("ctcbeamsearchdecoder", "CtcBeamSearchDecoder", args, 2, 2, 3,
                     {{"blank", static_cast<int64_t>(blank)},
                      {"beam_width", static_cast<int64_t>(beamWidth)},
                      {"top_paths", static_cast<int64_t>(topPaths)}},
                     dc, ir::kGraphcoreDomain);
}

std::vector<TensorId> AiGraphcoreOpset1::multiconv(
    const std::vector<std::vector<TensorId>>& tensors, const Lists& dilations,
    const Lists& inDilations, const Lists& pads, const Lists& outPads, const Lists& strides,
    const std::vector<float>& availableMemoryProportions,
    const std::vector<std::string>& partialsTypes, const std::optional<std::string>& planType,
    std::optional<int> perConvReservedTiles, std::optional<float> cycleBackOff,
    const std::vector<int64_t>& enableConvDithering, const std::string& dc) {
  const size_t n = tensors.size();
  if (n == 0) {
    throw error("MultiConvOp '{}' has no input tensors. Provide at least one set of inputs", dc);
  }
  for (const auto& t : tensors) {
    if (t.size() < 2) {
      throw error(
          "Each convolution of MultiConvOp '{}' got {} inputs, but must have at least two inputs - "
          "data and weights",
          dc, t.size());
    }
    if (t.size() > 3) {
      throw error(
          "Each convolution of MultiConvOp '{}' got {} inputs, but can have at most three inputs - "
          "data, weights, and bias",
          dc, t.size());
    }
  }
  auto checkCount = [n, &dc](size_t count, const char* name) {
    if (count != 0 && count != n) {
      throw error(
          "For MultiConvOp '{}', number of {} parameter sets ({}) does not match the number of "
          "input sets ({})",
          dc, name, count, n);
    }
  };
  checkCount(dilations.size(), "dilations");
  checkCount(inDilations.size(), "inDilations");
  checkCount(pads.size(), "pads");
  checkCount(outPads.size(), "outPads");
  checkCount(strides.size(), "strides");
  checkCount(availableMemoryProportions.size(), "availableMemoryProportions");
  checkCount(partialsTypes.size(), "partialsTypes");
  checkCount(enableConvDithering.size(), "enableConvDithering");
  const Lists none(n);
  std::vector<TensorId> flat;
  for (size_t i = 0; i < n; ++i) {
    checkWindow(*impl_, tensors[i][0], (strides.empty() ? none : strides)[i],
                (pads.empty() ? none : pads)[i], (dilations.empty() ? none : dilations)[i],
                (inDilations.empty() ? none : inDilations)[i]);
    flat.insert(flat.end(), tensors[i].begin(), tensors[i].end());
    if (tensors[i].size() == 2) flat.emplace_back();  // no bias
  }
  using Impl = BuilderImpl;
  return impl_->node(
      "multiconv", "MultiConv", flat, 3 * n, 3 * n, static_cast<unsigned>(n),
      {{"strides", Impl::nonEmpty(flatten(strides))},
       {"pads", Impl::nonEmpty(flatten(pads))},
       {"outPads", Impl::nonEmpty(flatten(outPads))},
       {"dilations", Impl::nonEmpty(flatten(dilations))},
       {"inDilations", Impl::nonEmpty(flatten(inDilations))},
       {"planType", Impl::ifSet(planType)},
       {"perConvReservedTiles", perConvReservedTiles
                                    ? std::optional<Impl::AttrValue>(int64_t{*perConvReservedTiles})
                                    : std::nullopt},
       {"cycleBackOff", Impl::ifSet(cycleBackOff)},
       {"__available_memory", Impl::nonEmpty(availableMemoryProportions)},
       {"__partials_type", Impl::nonEmpty(partialsTypes)},
       {"numConvs", static_cast<int64_t>(n)},
       {"__enable_conv_dithering", Impl::nonEmpty(enableConvDithering)}},
      dc, ir::kGraphcoreDomain);
}

}  // namespace xtrain
