// SessionOptions and its settings (TensorLocationSettings, TensorLocation,
// AutomaticLossScalingSettings), their enums, and the replica groups (CommGroup, CommGroupType,
// ReplicaGrouping, VariableSettings, VariableRetrievalMode), with the names, keyword arguments and
// defaults of PopART's Python module (popart-python-api.txt; docs/python.md "## SessionOptions").
//
// Every member of a settings struct is a read/write property whose setter checks the type of the
// value and raises TypeError (or ValueError for a value out of range) naming the class, the member
// and what was expected; pybind11's own message names only the argument types. No class here has a
// __dict__, so setting an unknown attribute raises AttributeError naming it (as PopART does).
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "bindings.hpp"
#include "py_values.hpp"
#include "xtrain/reductiontype.hpp"
#include "xtrain/replicagrouping.hpp"
#include "xtrain/sessionoptions.hpp"
#include "xtrain/variablesettings.hpp"

namespace py = pybind11;

namespace xtrain::python {
namespace {

template <class T>
struct IsStringVector : std::false_type {};
template <>
struct IsStringVector<std::vector<std::string>> : std::true_type {};

// `what` (e.g. "SessionOptions.replicatedGraphCount") is named in every error.
template <class T>
T fromPython(py::handle v, const std::string& what) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!isBool(v)) throw py::type_error(what + ": expected bool, got " + typeName(v));
    return PyObject_IsTrue(v.ptr()) == 1;
  } else if constexpr (std::is_integral_v<T>) {
    // int, or an integer type such as numpy.int64 (__index__), but not bool.
    if (!PyIndex_Check(v.ptr()) || isBool(v)) {
      throw py::type_error(what + ": expected int, got " + typeName(v));
    }
    auto iv = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
    if (!iv) throw py::error_already_set();
    // Range check in Python's arbitrary precision before narrowing.
    py::int_ lo(static_cast<long long>(std::numeric_limits<T>::min()));
    py::int_ hi(static_cast<unsigned long long>(std::numeric_limits<T>::max()));
    if (iv < lo || iv > hi) {
      throw py::value_error(what + ": " + std::string(py::str(iv)) + " is out of range [" +
                            std::string(py::str(lo)) + ", " + std::string(py::str(hi)) + "]");
    }
    return iv.cast<T>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!isReal(v)) throw py::type_error(what + ": expected float, got " + typeName(v));
    return static_cast<T>(PyFloat_AsDouble(v.ptr()));
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!py::isinstance<py::str>(v)) {
      throw py::type_error(what + ": expected str, got " + typeName(v));
    }
    return v.cast<std::string>();
  } else if constexpr (IsStringVector<T>::value) {
    if (!(py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v))) {
      throw py::type_error(what + ": expected a list of str, got " + typeName(v));
    }
    T out;
    for (py::handle item : v) {
      if (!py::isinstance<py::str>(item)) {
        throw py::type_error(what + ": expected a list of str, got an item of type " +
                             typeName(item));
      }
      out.push_back(item.cast<std::string>());
    }
    return out;
  } else {
    // A bound class or enum: only an instance of it (no implicit conversion from int or str).
    py::object type = py::type::of<T>();
    if (!py::isinstance(v, type)) {
      throw py::type_error(what + ": expected " + std::string(py::str(type.attr("__name__"))) +
                           ", got " + typeName(v));
    }
    return v.cast<T>();
  }
}

// A read/write property for a data member: the getter returns class-type members by reference
// (so `opts.weightTensorLocationSettings.minElementsForOffChip = 4` changes opts, as PopART's
// def_readwrite does), the setter checks the value's type.
template <class C, class T>
void property(py::class_<C>& cls, const char* name, T C::*member, const char* doc = "") {
  const std::string what = std::string(py::str(cls.attr("__name__"))) + "." + name;
  py::cpp_function getter([member](C& self) -> T& { return self.*member; },
                          py::return_value_policy::reference_internal);
  py::cpp_function setter(
      [member, what](C& self, py::handle value) { self.*member = fromPython<T>(value, what); });
  cls.def_property(name, getter, setter, doc);
}

template <class E>
py::enum_<E> enumeration(py::module_& m, const char* name, const char* doc,
                         std::initializer_list<std::pair<const char*, E>> members) {
  py::enum_<E> en(m, name, doc);
  for (const auto& [n, v] : members) en.value(n, v);
  return en;
}

void bindEnums(py::module_& m) {
  enumeration<ReductionType>(m, "ReductionType", "How values are reduced (losses, gradients).",
                             {{"Mean", ReductionType::Mean},
                              {"NoReduction", ReductionType::NoReduction},
                              {"Sum", ReductionType::Sum}});
  enumeration<MeanReductionStrategy>(
      m, "MeanReductionStrategy", "When a Mean accumulation/replication reduction divides.",
      {{"Running", MeanReductionStrategy::Running}, {"Post", MeanReductionStrategy::Post}});
  enumeration<CommGroupType>(m, "CommGroupType", "How replicas are divided into groups.",
                             {{"All", CommGroupType::All},
                              {"Consecutive", CommGroupType::Consecutive},
                              {"Orthogonal", CommGroupType::Orthogonal},
                              {"Ungrouped", CommGroupType::Ungrouped}});
  enumeration<VariableRetrievalMode>(
      m, "VariableRetrievalMode", "How many values of a grouped variable weightsToHost returns.",
      {{"OnePerGroup", VariableRetrievalMode::OnePerGroup},
       {"AllReduceReplicas", VariableRetrievalMode::AllReduceReplicas},
       {"AllReplicas", VariableRetrievalMode::AllReplicas}});
  enumeration<TensorStorage>(
      m, "TensorStorage", "Where a tensor is stored.",
      {{"OnChip", TensorStorage::OnChip}, {"OffChip", TensorStorage::OffChip}});
  enumeration<ReplicatedTensorSharding>(
      m, "ReplicatedTensorSharding", "Whether to shard tensors over replicas.",
      {{"Off", ReplicatedTensorSharding::Off}, {"On", ReplicatedTensorSharding::On}});
  enumeration<SyntheticDataMode>(m, "SyntheticDataMode",
                                 "Where inputs come from when no host data is given.",
                                 {{"Off", SyntheticDataMode::Off},
                                  {"Zeros", SyntheticDataMode::Zeros},
                                  {"RandomNormal", SyntheticDataMode::RandomNormal},
                                  {"RandomUniform", SyntheticDataMode::RandomUniform}});
  enumeration<VirtualGraphMode>(m, "VirtualGraphMode", "How ops are placed on virtual graphs.",
                                {{"Off", VirtualGraphMode::Off},
                                 {"Manual", VirtualGraphMode::Manual},
                                 {"Auto", VirtualGraphMode::Auto},
                                 {"ExecutionPhases", VirtualGraphMode::ExecutionPhases}});
}

void bindReplicaGrouping(py::module_& m) {
  py::class_<ReplicaGrouping> cls(m, "ReplicaGrouping",
                                  "Groups of groupSize replicas, members stride apart.");
  cls.def(py::init<int64_t, int64_t, int64_t>(), py::arg("numReplicas"), py::arg("stride"),
          py::arg("groupSize"));
  cls.def(py::init<int64_t, int64_t>(), py::arg("numReplicas"), py::arg("stride") = 1);
  cls.def_static("fromCommGroup", &ReplicaGrouping::fromCommGroup, py::arg("commGroup"),
                 py::arg("numReplicas"));
  cls.def("toCommGroup", &ReplicaGrouping::toCommGroup,
          "The CommGroup with the same groups, or None when there is none.");
  cls.def("getNumReplicas", &ReplicaGrouping::getNumReplicas);
  cls.def("getStride", &ReplicaGrouping::getStride);
  cls.def("getGroupSize", &ReplicaGrouping::getGroupSize);
  cls.def("getNumGroups", &ReplicaGrouping::getNumGroups);
  cls.def("getGroupAt", &ReplicaGrouping::getGroupAt, py::arg("replica"));
  cls.def("getIndexInGroupAt", &ReplicaGrouping::getIndexInGroupAt, py::arg("replica"));
  cls.def("getReplicaAt", &ReplicaGrouping::getReplicaAt, py::arg("group"), py::arg("index") = 0);
  cls.def("getReplicasAt", &ReplicaGrouping::getReplicasAt, py::arg("group"));
  cls.def("getGroups", &ReplicaGrouping::getGroups);
  cls.def("getTranspose", &ReplicaGrouping::getTranspose);
  cls.def("str", &ReplicaGrouping::str);
  cls.def("__repr__", &ReplicaGrouping::str);
  cls.def(
      "__eq__", [](const ReplicaGrouping& a, const ReplicaGrouping& b) { return a == b; },
      py::is_operator());
  cls.def(
      "__ne__", [](const ReplicaGrouping& a, const ReplicaGrouping& b) { return !(a == b); },
      py::is_operator());
  cls.def("__hash__", [](const ReplicaGrouping& g) {
    return py::hash(py::make_tuple(g.getNumReplicas(), g.getStride(), g.getGroupSize()));
  });
}

void bindCommGroup(py::module_& m) {
  py::class_<CommGroup> cls(m, "CommGroup", "A group of replicas: a type and a group size.");
  cls.def(py::init<>());
  cls.def(py::init([](CommGroupType type, py::handle size) {
            return CommGroup(type, fromPython<unsigned>(size, "CommGroup(replicaGroupSize=...)"));
          }),
          py::arg("type"), py::arg("replicaGroupSize"));
  cls.def(py::init([](const ReplicaGrouping& grouping) {
            std::optional<CommGroup> g = grouping.toCommGroup();
            if (!g) {
              throw py::value_error("CommGroup(grouping): " + grouping.str() +
                                    " has no CommGroup with the same groups");
            }
            return *g;
          }),
          py::arg("grouping"));
  property(cls, "type", &CommGroup::type, "Replica group type.");
  property(cls, "replicaGroupSize", &CommGroup::replicaGroupSize, "Replica group size.");
  cls.def(
      "toReplicaGrouping",
      [](const CommGroup& g, int64_t numReplicas) {
        return ReplicaGrouping::fromCommGroup(g, numReplicas);
      },
      py::arg("numReplicas"));
  cls.def("__repr__", [](const CommGroup& g) { return toString(g); });
  cls.def(
      "__eq__", [](const CommGroup& a, const CommGroup& b) { return a == b; }, py::is_operator());
  cls.def(
      "__ne__", [](const CommGroup& a, const CommGroup& b) { return !(a == b); },
      py::is_operator());
}

void bindVariableSettings(py::module_& m) {
  py::class_<VariableSettings> cls(m, "VariableSettings",
                                   "How a variable is shared among replicas and retrieved.");
  cls.def(py::init<>());
  cls.def(py::init<CommGroup>(), py::arg("sharedVariableDomain_"));
  cls.def(py::init<VariableRetrievalMode>(), py::arg("retrievalMode_"));
  cls.def(py::init<CommGroup, VariableRetrievalMode>(), py::arg("sharedVariableDomain_"),
          py::arg("retrievalMode_"));
  cls.def(py::init<int64_t, int64_t, VariableRetrievalMode>(), py::arg("stride"),
          py::arg("groupSize"), py::arg("mode") = VariableRetrievalMode::OnePerGroup);
  cls.def(py::init<const ReplicaGrouping&, VariableRetrievalMode>(), py::arg("grouping"),
          py::arg("retrievalMode_") = VariableRetrievalMode::OnePerGroup);
  cls.def("isUsingCommGroup", &VariableSettings::isUsingCommGroup);
  cls.def("getSharedVariableDomain", &VariableSettings::getSharedVariableDomain);
  cls.def("getCommGroupType", &VariableSettings::getCommGroupType);
  cls.def("getStride", py::overload_cast<>(&VariableSettings::getStride, py::const_));
  cls.def("getStride", py::overload_cast<int64_t>(&VariableSettings::getStride, py::const_),
          py::arg("replicaCount"));
  cls.def("getGroupSize", &VariableSettings::getGroupSize);
  cls.def("getRetrievalMode", &VariableSettings::getRetrievalMode);
  cls.def("getReplicaGrouping", &VariableSettings::getReplicaGrouping, py::arg("replicaCount"));
  cls.def("groups", &VariableSettings::groups, py::arg("replicaCount"));
  cls.def("getGroupCount", &VariableSettings::getGroupCount, py::arg("replicaCount"));
  cls.def("getRealGroupSize", &VariableSettings::getRealGroupSize, py::arg("replicaCount"));
  cls.def("getGroupRepresentative",
          py::overload_cast<int64_t>(&VariableSettings::getGroupRepresentative, py::const_),
          py::arg("group"));
  cls.def(
      "getGroupRepresentative",
      py::overload_cast<int64_t, int64_t>(&VariableSettings::getGroupRepresentative, py::const_),
      py::arg("group"), py::arg("replicaCount"));
  cls.def("numReplicasReturningVariable", &VariableSettings::numReplicasReturningVariable,
          py::arg("replicaCount"));
  cls.def("shapeOnHost", &VariableSettings::shapeOnHost, py::arg("shape"), py::arg("replicaCount"));
  cls.def("shapeOnReplica", &VariableSettings::shapeOnReplica, py::arg("shape"),
          py::arg("replicaCount"), py::arg("name") = "");
  cls.def("shapeOnHostForRetrieval", &VariableSettings::shapeOnHostForRetrieval, py::arg("shape"),
          py::arg("replicaCount"));
  cls.def("verify", &VariableSettings::verify, py::arg("replicaCount"));
  cls.def("str", &VariableSettings::str);
  cls.def("__repr__", &VariableSettings::str);
  cls.def(
      "__eq__", [](const VariableSettings& a, const VariableSettings& b) { return a == b; },
      py::is_operator());
  cls.def(
      "__ne__", [](const VariableSettings& a, const VariableSettings& b) { return !(a == b); },
      py::is_operator());
}

void bindTensorLocations(py::module_& m) {
  {
    py::class_<TensorLocation> cls(m, "TensorLocation",
                                   "The memory characteristics of one or more tensors.");
    cls.def(py::init<>());
    cls.def(
        py::init([](TensorStorage storage, ReplicatedTensorSharding rts, const CommGroup& domain) {
          TensorLocation l;
          l.storage = storage;
          l.replicatedTensorSharding = rts;
          l.shardingDomain = domain;
          return l;
        }),
        py::arg("storage"), py::arg("replicatedTensorSharding") = ReplicatedTensorSharding::Off,
        py::arg("shardingDomain") = CommGroup());
    property(cls, "storage", &TensorLocation::storage, "The memory location of the tensor(s).");
    property(cls, "replicatedTensorSharding", &TensorLocation::replicatedTensorSharding,
             "Whether to apply replicated tensor sharding (RTS) or not.");
    property(cls, "shardingDomain", &TensorLocation::shardingDomain,
             "The comm groups across which to shard the tensor.");
  }
  {
    py::class_<TensorLocationSettings> cls(m, "TensorLocationSettings");
    cls.def(py::init<>());
    const TensorLocationSettings d;
    cls.def(py::init([](const TensorLocation& location, int minOffChip, int minRts) {
              return TensorLocationSettings{location, minOffChip, minRts};
            }),
            py::arg("location"), py::arg("minElementsForOffChip") = d.minElementsForOffChip,
            py::arg("minElementsForReplicatedTensorSharding") =
                d.minElementsForReplicatedTensorSharding);
    cls.def(py::init([](TensorStorage storage, int minOffChip, int minRts) {
              TensorLocation l;
              l.storage = storage;
              return TensorLocationSettings{l, minOffChip, minRts};
            }),
            py::arg("storage"), py::arg("minElementsForOffChip") = d.minElementsForOffChip,
            py::arg("minElementsForReplicatedTensorSharding") =
                d.minElementsForReplicatedTensorSharding);
    property(cls, "location", &TensorLocationSettings::location,
             "The default tensor location for this tensor type.");
    property(cls, "minElementsForOffChip", &TensorLocationSettings::minElementsForOffChip,
             "The minimum number of elements below which offloading won't be considered.");
    property(cls, "minElementsForReplicatedTensorSharding",
             &TensorLocationSettings::minElementsForReplicatedTensorSharding,
             "The minimum number of elements below which replicated tensor sharding won't be "
             "considered.");
  }
}

void bindAutomaticLossScalingSettings(py::module_& m) {
  using A = AutomaticLossScalingSettings;
  py::class_<A> cls(m, "AutomaticLossScalingSettings",
                    "Automatic loss scaling: xtrain's dynamic rule (docs/optimizers.md 6.2).");
  const A d;
  cls.def(py::init<>());
  cls.def(py::init([](bool enabled, std::optional<std::vector<std::string>> toTrackTensors,
                      float binEdgeLocation, float thresholdUpperCountProportion, int updatePeriod,
                      int64_t growthInterval, float growthFactor, float backoffFactor) {
            A a;
            a.enabled = enabled;
            a.toTrackTensors = toTrackTensors.value_or(std::vector<std::string>{});
            a.binEdgeLocation = binEdgeLocation;
            a.thresholdUpperCountProportion = thresholdUpperCountProportion;
            a.updatePeriod = updatePeriod;
            a.growthInterval = growthInterval;
            a.growthFactor = growthFactor;
            a.backoffFactor = backoffFactor;
            return a;
          }),
          py::arg("enabled") = d.enabled, py::arg("toTrackTensors") = py::none(),
          py::arg("binEdgeLocation") = d.binEdgeLocation,
          py::arg("thresholdUpperCountProportion") = d.thresholdUpperCountProportion,
          py::arg("updatePeriod") = d.updatePeriod, py::kw_only(),
          py::arg("growthInterval") = d.growthInterval, py::arg("growthFactor") = d.growthFactor,
          py::arg("backoffFactor") = d.backoffFactor);
  property(cls, "enabled", &A::enabled);
  property(cls, "toTrackTensors", &A::toTrackTensors, "Accepted, no effect (xtrain's rule).");
  property(cls, "binEdgeLocation", &A::binEdgeLocation, "Accepted, no effect (xtrain's rule).");
  property(cls, "thresholdUpperCountProportion", &A::thresholdUpperCountProportion,
           "Accepted, no effect (xtrain's rule).");
  property(cls, "updatePeriod", &A::updatePeriod, "Accepted, no effect (xtrain's rule).");
  property(cls, "growthInterval", &A::growthInterval,
           "Finite steps in a row after which the scale grows (xtrain).");
  property(cls, "growthFactor", &A::growthFactor, "The scale's growth factor (xtrain).");
  property(cls, "backoffFactor", &A::backoffFactor,
           "The factor applied to the scale after a non-finite step (xtrain).");
}

// PopART's SessionOptions members that xtrain's C++ SessionOptions does not have
// (popart-python-api.txt, and the Poplar option dicts of the "Executing graphs" chapter): reading
// or setting one raises AttributeError saying that it is not implemented, rather than only that the
// attribute does not exist (docs/python.md, "## SessionOptions").
const std::vector<std::string>& popartOnlyOptions() {
  static const std::vector<std::string> names = {
      "accumulateOuterFragmentSettings",
      "aliasZeroCopy",
      "autoRecomputation",
      "autodiffSettings",
      "batchSerializationSettings",
      "cachePath",
      "compileEngine",
      "convolutionOptions",
      "createHostTransferableTensorWithOffset",
      "createImplicitPipeliningFwdOnlyProgram",
      "customCodeletCompileFlags",
      "customCodelets",
      "decomposeGradSum",
      "delayVarUpdates",
      "disableGradAccumulationTensorStreams",
      "disableOptimizerStateTensorStreams",
      "dotChecks",
      "dotOpNames",
      "enableConstantFoldingOfMultipleConsumers",
      "enableEfficientOverlapIOTopoCons",
      "enableEngineCaching",
      "enableExplicitIR",
      "enableFloatingPointChecks",
      "enableFullyConnectedPass",
      "enableLoadAndOffloadRNGState",
      "enableMergeExchange",
      "enableNonStableSoftmax",
      "enableOutliningCopyCostPruning",
      "enableStableNorm",
      "enableSupportedDataTypeCasting",
      "enableVariablesCaching",
      "engineOptions",
      "ensureFp32LossScaleTensor",
      "executionPhaseSettings",
      "experimentalSettings",
      "explicitRecomputation",
      "exportPoplarComputationGraph",
      "exportPoplarVertexGraph",
      "finalDotOp",
      "firstDotOp",
      "gclOptions",
      "groupHostSync",
      "instrumentWithHardwareCycleCounter",
      "kahnTieBreaker",
      "lstmOptions",
      "matmulOptions",
      "mergeVarUpdate",
      "mergeVarUpdateMemThreshold",
      "numIOTiles",
      "opxAliasChecking",
      "opxModifyChecking",
      "outlineSequenceBreakCost",
      "outlineThreshold",
      "partialsTypeMatMuls",
      "rearrangeAnchorsOnHost",
      "rearrangeStreamsOnHost",
      "reportOptions",
      "separateCallOpPdfs",
      "serializedPoprithmsAnnealGraphsDir",
      "serializedPoprithmsShiftGraphsDir",
      "stashAllTensorsInferencePipeline",
      "strictOpVersions",
      "subgraphCopyingStrategy",
      "swapLimitScheduler",
      "tensorLocationSettingsOverride",
      "throwIfLog2ScaleTensorNotInRange",
      "timeLimitScheduler",
      "updatableNamedBuffers",
      "useLoopCandidateCreator",
      "virtualGraphSplitRatios",
  };
  return names;
}

[[noreturn]] void notImplemented(const std::string& name) {
  throw py::attribute_error("SessionOptions." + name +
                            ": PopART's option is not implemented in xtrain (its SessionOptions "
                            "has no such member; see docs/python.md)");
}

bool isPopartOnly(const std::string& name) {
  const auto& n = popartOnlyOptions();
  return std::find(n.begin(), n.end(), name) != n.end();
}

void bindSessionOptions(py::module_& m) {
  using S = SessionOptions;
  py::class_<S> cls(m, "SessionOptions",
                    "PopART's session options that xtrain honours (docs/session-options.md).");
  cls.def(py::init<>());
  // Only for the names above; every other attribute behaves as on any pybind11 class.
  cls.def("__getattr__", [](py::handle /*self*/, const std::string& name) -> py::object {
    if (isPopartOnly(name)) notImplemented(name);
    throw py::attribute_error("'SessionOptions' object has no attribute '" + name + "'");
  });
  cls.def("__setattr__", [](py::handle self, py::str name, py::handle value) {
    if (isPopartOnly(name.cast<std::string>())) notImplemented(name.cast<std::string>());
    if (PyObject_GenericSetAttr(self.ptr(), name.ptr(), value.ptr()) != 0) {
      throw py::error_already_set();
    }
  });
  // PopART options whose False is what xtrain always does, so that False is accepted and read
  // back and True, which xtrain cannot honour, is refused (docs/python.md, "## SessionOptions"):
  // - constantWeights: xtrain never folds an inference session's weights into constants, so
  //   weightsFromHost and writeWeights always reach it (PopART's programs set False for that);
  // - enableExplicitMainLoops, useHostCopyOps: xtrain's main loop and host copies are implicit,
  //   PopART's default (PopART's anchor tests run with both False and True).
  struct FalseOnly {
    const char* name;
    const char* why;
  };
  static const FalseOnly falseOnly[] = {
      {"constantWeights", "its sessions never fold weights into constants"},
      {"enableExplicitMainLoops", "its main loops are implicit"},
      {"useHostCopyOps", "its host copies are implicit"},
  };
  for (const auto& o : falseOnly) {
    const std::string name = o.name;
    const std::string why = o.why;
    cls.def_property(
        o.name, [](const S&) { return false; },
        [name, why](S&, py::handle value) {
          if (!isBool(value)) {
            throw py::type_error("SessionOptions." + name + ": expected bool, got " +
                                 typeName(value));
          }
          if (value.cast<bool>()) {
            throw py::value_error("SessionOptions." + name +
                                  " = True is not implemented in xtrain: " + why +
                                  " (only False is accepted; see docs/python.md)");
          }
        },
        "Always False, what xtrain does; setting True raises ValueError.");
  }
  property(cls, "enableReplicatedGraphs", &S::enableReplicatedGraphs,
           "Enable replication of graphs. Default: False.");
  property(cls, "replicatedGraphCount", &S::replicatedGraphCount,
           "The number of model replications of this instance.");
  property(cls, "enableDistributedReplicatedGraphs", &S::enableDistributedReplicatedGraphs,
           "Enable training with replicated graphs across multiple instances. Default: False.");
  property(cls, "globalReplicationFactor", &S::globalReplicationFactor,
           "The total number of replicas in a multi-instance session.");
  property(cls, "globalReplicaOffset", &S::globalReplicaOffset,
           "The first replica index that this instance is running.");
  property(cls, "enableGradientAccumulation", &S::enableGradientAccumulation,
           "Enable gradient accumulation. Default: False.");
  property(cls, "accumulationFactor", &S::accumulationFactor,
           "The number of micro-batches to accumulate before applying the varUpdate.");
  property(cls, "accumulationAndReplicationReductionType",
           &S::accumulationAndReplicationReductionType,
           "How gradients are reduced over accumulation and replication. Default: Sum.");
  property(cls, "meanAccumulationAndReplicationReductionStrategy",
           &S::meanAccumulationAndReplicationReductionStrategy,
           "When to divide by the mean reduction factor. Default: Post.");
  property(cls, "activationTensorLocationSettings", &S::activationTensorLocationSettings,
           "Tensor location settings for activation/gradient tensors.");
  property(cls, "weightTensorLocationSettings", &S::weightTensorLocationSettings,
           "Tensor location for weight tensors.");
  property(cls, "optimizerStateTensorLocationSettings", &S::optimizerStateTensorLocationSettings,
           "Tensor location for optimizer state tensors.");
  property(cls, "accumulatorTensorLocationSettings", &S::accumulatorTensorLocationSettings,
           "Tensor location for gradient accumulator tensors.");
  property(cls, "syntheticDataMode", &S::syntheticDataMode,
           "Whether to use real or synthetic data for inputs. Default: Off.");
  property(cls, "logDir", &S::logDir, "A directory for reports to be written into.");
  property(cls, "enableStochasticRounding", &S::enableStochasticRounding,
           "Enable stochastic rounding. Default: False.");
  property(cls, "automaticLossScalingSettings", &S::automaticLossScalingSettings,
           "Automatic loss scaling settings.");
  property(cls, "enablePipelining", &S::enablePipelining,
           "Enable pipelining of virtual graphs (refused by xtrain when set).");
  property(cls, "virtualGraphMode", &S::virtualGraphMode,
           "How ops are placed on virtual graphs (only Off is supported).");
  property(cls, "enableOutlining", &S::enableOutlining,
           "Enable outlining (accepted, no effect on a simulated device). Default: True.");
  cls.def("getGlobalReplicationFactor", &S::getGlobalReplicationFactor,
          "globalReplicationFactor when distributed, else the local replication factor.");
  cls.def("getLocalReplicationFactor", &S::getLocalReplicationFactor,
          "replicatedGraphCount when replication is enabled, else 1.");
  cls.def("getAccumulationFactor", &S::getAccumulationFactor,
          "accumulationFactor when gradient accumulation is enabled, else 1.");
}

}  // namespace

void bindOptions(py::module_& m) {
  bindEnums(m);
  bindReplicaGrouping(m);
  bindCommGroup(m);
  bindVariableSettings(m);
  bindTensorLocations(m);
  bindAutomaticLossScalingSettings(m);
  bindSessionOptions(m);
}

}  // namespace xtrain::python
