// SessionOptions' values as text, for the debug lines of options with no effect and the errors of
// refused ones: "true", "1.5", "\"greedy\"", "[a,b]", "{k: v}", the enums by their C++ names.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "xtrain/format.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain::session {

const char* enumName(RecomputationType v);
const char* enumName(MergeVarUpdateType v);
const char* enumName(SubgraphCopyingStrategy v);
const char* enumName(Instrumentation v);
const char* enumName(GradientTensorTrackingMethod v);
const char* enumName(TileSet v);
const char* enumName(BatchSerializationBatchSchedule v);
const char* enumName(BatchSerializationTransformContext v);
const char* enumName(BatchSerializationMethod v);
const char* enumName(ExecutionPhaseIOSchedule v);
const char* enumName(ExecutionPhaseSchedule v);
const char* enumName(AccumulateOuterFragmentSchedule v);
const char* enumName(AutodiffStitchStrategy v);
const char* enumName(VirtualGraphMode v);
const char* enumName(SyntheticDataMode v);
const char* enumName(TensorStorage v);
const char* enumName(ReplicatedTensorSharding v);
const char* enumName(ReductionType v);
const char* enumName(MeanReductionStrategy v);

std::string showValue(const BatchSerializationSettings& v);
std::string showValue(const ExecutionPhaseSettings& v);
std::string showValue(const AccumulateOuterFragmentSettings& v);
std::string showValue(const AutodiffSettings& v);
std::string showValue(const ReplicatedCollectivesSettings& v);
std::string showValue(const ExperimentalSettings& v);
std::string showValue(const DeveloperSettings& v);
std::string showValue(const TensorLocation& v);
std::string showValue(const TensorLocationSettings& v);
std::string showValue(const AutomaticLossScalingSettings& v);
std::string showValue(const std::function<void(int, int)>& v);
std::string showValue(const std::string& v);

template <class T>
std::string showValue(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_enum_v<T>) {
    return enumName(v);
  } else if constexpr (std::is_arithmetic_v<T>) {
    return ::xtrain::format("{}", v);
  } else {
    // A container: a vector or set ("[a,b]") or a map ("{k: v, ...}").
    std::string out;
    bool first = true;
    for (const auto& item : v) {
      out += first ? "" : ", ";
      first = false;
      if constexpr (requires {
                      item.first;
                      item.second;
                    }) {
        out += showValue(item.first) + ": " + showValue(item.second);
      } else {
        out += showValue(item);
      }
    }
    if constexpr (requires { typename T::mapped_type; }) return "{" + out + "}";
    return "[" + out + "]";
  }
}

}  // namespace xtrain::session

#pragma GCC visibility pop
