// SessionOptions with every member of PopART's, its nested settings (TensorLocationSettings,
// TensorLocation, AutomaticLossScalingSettings, BatchSerializationSettings, ExecutionPhaseSettings,
// AccumulateOuterFragmentSettings, AutodiffSettings, ReplicatedCollectivesSettings,
// ExperimentalSettings, DeveloperSettings), their enums, and the replica groups (CommGroup,
// CommGroupType, ReplicaGrouping, VariableSettings, VariableRetrievalMode), with the names, keyword
// arguments and defaults of PopART's Python module (popart-python-api.txt; docs/python.md "##
// SessionOptions"; what each member does: docs/session-options.md).
//
// Every member of a settings struct is a read/write property whose setter checks the type of the
// value and raises TypeError (or ValueError for a value out of range) naming the class, the member
// and what was expected; pybind11's own message names only the argument types. No class here has a
// __dict__, so setting an unknown attribute raises AttributeError naming it (as PopART does).
#include <pybind11/eval.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "bindings.hpp"
#include "py_values.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/reductiontype.hpp"
#include "xtrain/replicagrouping.hpp"
#include "xtrain/sessionoptions.hpp"
#include "xtrain/sessionoptions_members.hpp"
#include "xtrain/sessionoptions_settings.hpp"
#include "xtrain/variablesettings.hpp"

namespace py = pybind11;

namespace xtrain::python {
namespace {

// The containers a member can be: a vector or a set (from a list, tuple or set), a map (from a dict
// with str keys).
template <class T>
struct Container {
  static constexpr int kind = 0;
};
template <class E>
struct Container<std::vector<E>> {
  static constexpr int kind = 1;
  using Element = E;
};
template <class E>
struct Container<std::set<E>> {
  static constexpr int kind = 2;
  using Element = E;
};
template <class K, class V>
struct Container<std::map<K, V>> {
  static constexpr int kind = 3;
  using Key = K;
  using Value = V;
};

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
  } else if constexpr (Container<T>::kind == 1 || Container<T>::kind == 2) {
    using E = typename Container<T>::Element;
    const bool isSet = py::isinstance<py::set>(v) || py::isinstance<py::frozenset>(v);
    if (!(py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v) || isSet)) {
      throw py::type_error(what + ": expected a list, got " + typeName(v));
    }
    T out;
    for (py::handle item : v) {
      E e = fromPython<E>(item, what + " item");
      if constexpr (Container<T>::kind == 1) {
        out.push_back(std::move(e));
      } else {
        out.insert(std::move(e));
      }
    }
    return out;
  } else if constexpr (Container<T>::kind == 3) {
    if (!py::isinstance<py::dict>(v)) {
      throw py::type_error(what + ": expected a dict, got " + typeName(v));
    }
    T out;
    for (auto [key, value] : py::reinterpret_borrow<py::dict>(v)) {
      auto k = fromPython<typename Container<T>::Key>(key, what + " key");
      out[k] = fromPython<typename Container<T>::Value>(
          value, what + "[" + std::string(py::str(key)) + "]");
    }
    return out;
  } else if constexpr (std::is_same_v<T, std::function<void(int, int)>>) {
    if (v.is_none()) return {};
    if (!PyCallable_Check(v.ptr())) {
      throw py::type_error(what + ": expected a callable (progress, total) or None, got " +
                           typeName(v));
    }
    return v.cast<T>();
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
    static constexpr auto make = [](TensorStorage storage, TileSet load, TileSet store,
                                    ReplicatedTensorSharding rts, const CommGroup& domain) {
      TensorLocation l;
      l.storage = storage;
      l.loadTileSet = load;
      l.storageTileSet = store;
      l.replicatedTensorSharding = rts;
      l.shardingDomain = domain;
      return l;
    };
    cls.def(
        py::init([](TensorStorage storage, ReplicatedTensorSharding rts, const CommGroup& domain) {
          return make(storage, TileSet::Compute, TileSet::Compute, rts, domain);
        }),
        py::arg("storage"), py::arg("replicatedTensorSharding") = ReplicatedTensorSharding::Off,
        py::arg("shardingDomain") = CommGroup());
    // PopART's form with the tile sets, which come before the sharding (all keywords optional
    // after storageTileSet, as in PopART's overloads).
    cls.def(py::init(make), py::arg("storage"), py::arg("loadTileSet"), py::arg("storageTileSet"),
            py::arg("replicatedTensorSharding") = ReplicatedTensorSharding::Off,
            py::arg("shardingDomain") = CommGroup());
    property(cls, "storage", &TensorLocation::storage, "The memory location of the tensor(s).");
    property(cls, "replicatedTensorSharding", &TensorLocation::replicatedTensorSharding,
             "Whether to apply replicated tensor sharding (RTS) or not.");
    property(cls, "shardingDomain", &TensorLocation::shardingDomain,
             "The comm groups across which to shard the tensor.");
    property(cls, "loadTileSet", &TensorLocation::loadTileSet,
             "The tiles through which the tensor(s) are loaded onto the chip.");
    property(cls, "storageTileSet", &TensorLocation::storageTileSet,
             "The tiles on which the tensor(s) are stored.");
    cls.def(
        "__eq__", [](const TensorLocation& a, const TensorLocation& b) { return a == b; },
        py::is_operator());
    cls.def(
        "__ne__", [](const TensorLocation& a, const TensorLocation& b) { return !(a == b); },
        py::is_operator());
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
                    "Automatic loss scaling: PopART's histogram rule, or xtrain's GradScaler "
                    "method (docs/optimizers.md 6.2).");
  const A d;
  cls.def(py::init<>());
  cls.def(py::init([](bool enabled, std::optional<std::vector<std::string>> toTrackTensors,
                      float binEdgeLocation, float thresholdUpperCountProportion, int updatePeriod,
                      GradientTensorTrackingMethod tracking, AutomaticLossScalingMethod method,
                      int64_t growthInterval, float growthFactor, float backoffFactor) {
            A a;
            a.enabled = enabled;
            a.toTrackTensors = std::move(toTrackTensors);
            a.binEdgeLocation = binEdgeLocation;
            a.thresholdUpperCountProportion = thresholdUpperCountProportion;
            a.updatePeriod = updatePeriod;
            a.gradientTensorTrackingMethod = tracking;
            a.method = method;
            a.growthInterval = growthInterval;
            a.growthFactor = growthFactor;
            a.backoffFactor = backoffFactor;
            return a;
          }),
          py::arg("enabled") = d.enabled, py::arg("toTrackTensors") = py::none(),
          py::arg("binEdgeLocation") = d.binEdgeLocation,
          py::arg("thresholdUpperCountProportion") = d.thresholdUpperCountProportion,
          py::arg("updatePeriod") = d.updatePeriod,
          py::arg("gradientTensorTrackingMethod") = d.gradientTensorTrackingMethod, py::kw_only(),
          py::arg("method") = d.method, py::arg("growthInterval") = d.growthInterval,
          py::arg("growthFactor") = d.growthFactor, py::arg("backoffFactor") = d.backoffFactor);
  property(cls, "enabled", &A::enabled);
  // PopART's optional list: None (unset) or a list of tensor names.
  cls.def_property(
      "toTrackTensors",
      [](const A& self) -> py::object {
        if (!self.toTrackTensors) return py::none();
        return py::cast(*self.toTrackTensors);
      },
      [](A& self, py::handle value) {
        if (value.is_none()) {
          self.toTrackTensors.reset();
        } else {
          self.toTrackTensors = fromPython<std::vector<std::string>>(
              value, "AutomaticLossScalingSettings.toTrackTensors");
        }
      },
      "The forward tensors whose gradients GradientsOfUserSpecifiedTensors tracks, or None.");
  property(cls, "binEdgeLocation", &A::binEdgeLocation,
           "The histogram's bin edge as a proportion of FLOAT16's maximum, in [0, 1].");
  property(cls, "thresholdUpperCountProportion", &A::thresholdUpperCountProportion,
           "The upper bin's proportion above which the scale halves, in [0, 1].");
  property(cls, "updatePeriod", &A::updatePeriod, "Steps between two updates of the scale.");
  property(cls, "gradientTensorTrackingMethod", &A::gradientTensorTrackingMethod,
           "Which gradients the histograms count.");
  property(cls, "method", &A::method,
           "xtrain: Histogram (PopART's rule, the default) or GradScaler.");
  property(cls, "growthInterval", &A::growthInterval,
           "GradScaler: finite steps in a row after which the scale grows.");
  property(cls, "growthFactor", &A::growthFactor, "GradScaler: the scale's growth factor.");
  property(cls, "backoffFactor", &A::backoffFactor,
           "GradScaler: the factor applied to the scale after a non-finite step.");
}

// PopART's DictWrapper: a dict whose every change is written back to the member it came from, so
// that `opts.engineOptions["autoReport.all"] = "true"` changes opts (pybind11 returns a copy of a
// std::map). Defined once, in Python, on the module.
const char* const kOptionsDictSource = R"(
class _OptionsDict(dict):
    """A dict of a SessionOptions member: changing it changes the member."""

    def __init__(self, update, *args, **kwargs):
        dict.__init__(self, *args, **kwargs)
        self._update = update

    def _changed(self):
        self._update(dict(self))

    def __setitem__(self, key, value):
        dict.__setitem__(self, key, value)
        self._changed()

    def __delitem__(self, key):
        dict.__delitem__(self, key)
        self._changed()

    def update(self, *args, **kwargs):
        dict.update(self, *args, **kwargs)
        self._changed()

    def clear(self):
        dict.clear(self)
        self._changed()

    def pop(self, *args):
        value = dict.pop(self, *args)
        self._changed()
        return value

    def popitem(self):
        item = dict.popitem(self)
        self._changed()
        return item

    def setdefault(self, key, default=None):
        value = dict.setdefault(self, key, default)
        self._changed()
        return value
)";

// A read/write dict property for a std::map member (see kOptionsDictSource).
template <class C, class T>
void dictProperty(py::class_<C>& cls, py::object dictClass, const char* name, T C::*member,
                  const char* doc) {
  const std::string what = std::string(py::str(cls.attr("__name__"))) + "." + name;
  py::cpp_function getter([member, dictClass, what](py::object self) -> py::object {
    C& c = self.cast<C&>();
    py::cpp_function update([self, member, what](py::handle value) {
      self.cast<C&>().*member = fromPython<T>(value, what);
    });
    return dictClass(update, py::cast(c.*member));
  });
  py::cpp_function setter(
      [member, what](C& self, py::handle value) { self.*member = fromPython<T>(value, what); });
  cls.def_property(name, getter, setter, doc);
}

void bindSettingsEnums(py::module_& m) {
  enumeration<RecomputationType>(m, "RecomputationType",
                                 "Which ops auto-recomputation recomputes in the backward pass.",
                                 {{"NoRecompute", RecomputationType::None},
                                  {"Standard", RecomputationType::Standard},
                                  {"NormOnly", RecomputationType::NormOnly},
                                  {"RecomputeAll", RecomputationType::RecomputeAll},
                                  {"Pipeline", RecomputationType::Pipeline}});
  enumeration<RecomputeType>(m, "RecomputeType",
                             "One op's recomputation (Builder.recomputeOutputInBackwardPass).",
                             {{"Undefined", RecomputeType::Undefined},
                              {"Checkpoint", RecomputeType::Checkpoint},
                              {"Recompute", RecomputeType::Recompute},
                              {"Recomputed", RecomputeType::Recomputed}});
  enumeration<MergeVarUpdateType>(m, "MergeVarUpdateType", "Which VarUpdate ops are merged.",
                                  {{"Off", MergeVarUpdateType::None},
                                   {"All", MergeVarUpdateType::All},
                                   {"AutoTight", MergeVarUpdateType::AutoTight},
                                   {"AutoLoose", MergeVarUpdateType::AutoLoose}});
  enumeration<SubgraphCopyingStrategy>(m, "SubgraphCopyingStrategy",
                                       "How the inputs and outputs of subgraphs are copied.",
                                       {{"OnEnterAndExit", SubgraphCopyingStrategy::OnEnterAndExit},
                                        {"JustInTime", SubgraphCopyingStrategy::JustInTime}});
  enumeration<Instrumentation>(
      m, "Instrumentation", "What the cycle counter counts.",
      {{"Outer", Instrumentation::Outer}, {"Inner", Instrumentation::Inner}});
  enumeration<IrSerializationFormat>(m, "IrSerializationFormat", "A serialization format.",
                                     {{"JSON", IrSerializationFormat::JSON}});
  enumeration<GradientTensorTrackingMethod>(
      m, "GradientTensorTrackingMethod", "Which gradients automatic loss scaling tracks.",
      {{"ConvAndMatmulGradients", GradientTensorTrackingMethod::ConvAndMatmulGradients},
       {"AllNonViewChangingGradientTensors",
        GradientTensorTrackingMethod::AllNonViewChangingGradientTensors},
       {"GradientsOfUserSpecifiedTensors",
        GradientTensorTrackingMethod::GradientsOfUserSpecifiedTensors}});
  enumeration<AutomaticLossScalingMethod>(m, "AutomaticLossScalingMethod",
                                          "xtrain: which automatic loss scaling rule.",
                                          {{"Histogram", AutomaticLossScalingMethod::Histogram},
                                           {"GradScaler", AutomaticLossScalingMethod::GradScaler}});
  enumeration<TileSet>(m, "TileSet", "A set of tiles.",
                       {{"Compute", TileSet::Compute}, {"IO", TileSet::IO}});
  enumeration<BatchSerializationBatchSchedule>(
      m, "BatchSerializationBatchSchedule", "How batch-serialized subgraphs are scheduled.",
      {{"Scheduler", BatchSerializationBatchSchedule::Scheduler},
       {"Isomorphic", BatchSerializationBatchSchedule::Isomorphic},
       {"OverlapOnIo", BatchSerializationBatchSchedule::OverlapOnIo},
       {"OverlapOnCompute", BatchSerializationBatchSchedule::OverlapOnCompute}});
  enumeration<BatchSerializationTransformContext>(
      m, "BatchSerializationTransformContext", "When batch serialization is applied.",
      {{"Fwd", BatchSerializationTransformContext::Fwd},
       {"Bwd", BatchSerializationTransformContext::Bwd},
       {"Forward", BatchSerializationTransformContext::Fwd},
       {"Backward", BatchSerializationTransformContext::Bwd}});
  enumeration<BatchSerializationMethod>(m, "BatchSerializationMethod",
                                        "How batch serialization is applied.",
                                        {{"UnrollDynamic", BatchSerializationMethod::UnrollDynamic},
                                         {"UnrollStatic", BatchSerializationMethod::UnrollStatic},
                                         {"Loop", BatchSerializationMethod::Loop}});
  enumeration<ExecutionPhaseIOSchedule>(m, "ExecutionPhaseIOSchedule", "When tensors are loaded.",
                                        {{"Preload", ExecutionPhaseIOSchedule::Preload},
                                         {"OnDemand", ExecutionPhaseIOSchedule::OnDemand}});
  enumeration<ExecutionPhaseSchedule>(
      m, "ExecutionPhaseSchedule", "The order of the optimizer steps of one execution phase.",
      {{"Interleaving", ExecutionPhaseSchedule::Interleaving},
       {"Batch", ExecutionPhaseSchedule::Batch},
       {"BatchClusteredIO", ExecutionPhaseSchedule::BatchClusteredIO}});
  enumeration<AccumulateOuterFragmentSchedule>(
      m, "AccumulateOuterFragmentSchedule", "How the accumulate outer fragment is scheduled.",
      {{"Scheduler", AccumulateOuterFragmentSchedule::Scheduler},
       {"Serial", AccumulateOuterFragmentSchedule::Serial},
       {"OverlapCycleOptimized", AccumulateOuterFragmentSchedule::OverlapCycleOptimized},
       {"OverlapMemoryOptimized", AccumulateOuterFragmentSchedule::OverlapMemoryOptimized}});
  enumeration<AutodiffStitchStrategy>(
      m, "AutodiffStitchStrategy", "How autodiff stitches subgraphs.",
      {{"RecomputeMinimal", AutodiffStitchStrategy::RecomputeMinimal},
       {"RecomputeAllNonInputs", AutodiffStitchStrategy::RecomputeAllNonInputs},
       {"AddFwdOutputs", AutodiffStitchStrategy::AddFwdOutputs},
       {"SafeAddFwdOutputs", AutodiffStitchStrategy::SafeAddFwdOutputs}});
}

void bindSettingsStructs(py::module_& m) {
  {
    using B = BatchSerializationSettings;
    const B d;
    py::class_<B> cls(m, "BatchSerializationSettings", "Batch serialization settings.");
    cls.def(py::init([](int factor, bool vg, bool phase, bool stage,
                        BatchSerializationTransformContext context, BatchSerializationMethod method,
                        BatchSerializationBatchSchedule schedule) {
              return B{factor, vg, phase, stage, context, method, schedule};
            }),
            py::arg("factor") = d.factor,
            py::arg("concatOnVirtualGraphChange") = d.concatOnVirtualGraphChange,
            py::arg("concatOnExecutionPhaseChange") = d.concatOnExecutionPhaseChange,
            py::arg("concatOnPipelineStageChange") = d.concatOnPipelineStageChange,
            py::arg("transformContext") = d.transformContext, py::arg("method") = d.method,
            py::arg("batchSchedule") = d.batchSchedule);
    property(cls, "factor", &B::factor, "The number of compute batches to split operations into.");
    property(cls, "concatOnVirtualGraphChange", &B::concatOnVirtualGraphChange);
    property(cls, "concatOnExecutionPhaseChange", &B::concatOnExecutionPhaseChange);
    property(cls, "concatOnPipelineStageChange", &B::concatOnPipelineStageChange);
    property(cls, "transformContext", &B::transformContext);
    property(cls, "method", &B::method);
    property(cls, "batchSchedule", &B::batchSchedule);
  }
  {
    using E = ExecutionPhaseSettings;
    const E d;
    py::class_<E> cls(m, "ExecutionPhaseSettings", "Execution phase settings.");
    cls.def(py::init([](int phases, int stages, ExecutionPhaseIOSchedule weights,
                        ExecutionPhaseIOSchedule activations, ExecutionPhaseIOSchedule state,
                        ExecutionPhaseIOSchedule accumulators, ExecutionPhaseSchedule schedule) {
              return E{phases, stages, weights, activations, state, accumulators, schedule};
            }),
            py::arg("phases") = d.phases, py::arg("stages") = d.stages,
            py::arg("weightIOSchedule") = d.weightIOSchedule,
            py::arg("activationIOSchedule") = d.activationIOSchedule,
            py::arg("optimizerStateIOSchedule") = d.optimizerStateIOSchedule,
            py::arg("accumulatorIOSchedule") = d.accumulatorIOSchedule,
            py::arg("schedule") = d.schedule);
    property(cls, "phases", &E::phases, "Number of ExecutionPhases for the whole model.");
    property(cls, "stages", &E::stages, "Number of overlapping stages.");
    property(cls, "weightIOSchedule", &E::weightIOSchedule);
    property(cls, "activationIOSchedule", &E::activationIOSchedule);
    property(cls, "optimizerStateIOSchedule", &E::optimizerStateIOSchedule);
    property(cls, "accumulatorIOSchedule", &E::accumulatorIOSchedule);
    property(cls, "schedule", &E::schedule);
  }
  {
    using A = AccumulateOuterFragmentSettings;
    py::class_<A> cls(m, "AccumulateOuterFragmentSettings",
                      "Settings of the accumulate outer fragment.");
    cls.def(py::init([](AccumulateOuterFragmentSchedule schedule, std::vector<int> excluded) {
              return A{schedule, std::move(excluded)};
            }),
            py::arg("schedule") = A().schedule,
            py::arg("excludedVirtualGraphs") = std::vector<int>{});
    property(cls, "schedule", &A::schedule);
    property(cls, "excludedVirtualGraphs", &A::excludedVirtualGraphs);
  }
  {
    py::class_<AutodiffSettings> cls(m, "AutodiffSettings", "Autodiff settings.");
    cls.def(py::init([](AutodiffStitchStrategy s) { return AutodiffSettings{s}; }),
            py::arg("stitchStrategy") = AutodiffSettings().stitchStrategy);
    property(cls, "stitchStrategy", &AutodiffSettings::stitchStrategy);
  }
  {
    using R = ReplicatedCollectivesSettings;
    py::class_<R> cls(m, "ReplicatedCollectivesSettings", "Merging of replicated collectives.");
    cls.def(py::init([](bool prepare, bool allReduce, bool reduceScatter, bool allGather) {
              return R{prepare, allReduce, reduceScatter, allGather};
            }),
            py::arg("prepareScheduleForMergingCollectives") = false,
            py::arg("mergeAllReduceCollectives") = false,
            py::arg("mergeReduceScatterCollectives") = false,
            py::arg("mergeAllGatherCollectives") = false);
    property(cls, "prepareScheduleForMergingCollectives", &R::prepareScheduleForMergingCollectives);
    property(cls, "mergeAllReduceCollectives", &R::mergeAllReduceCollectives);
    property(cls, "mergeReduceScatterCollectives", &R::mergeReduceScatterCollectives);
    property(cls, "mergeAllGatherCollectives", &R::mergeAllGatherCollectives);
  }
  {
    py::class_<ExperimentalSettings> cls(m, "ExperimentalSettings", "Experimental settings.");
    cls.def(py::init<>());
    property(cls, "customTransformApplierSettings",
             &ExperimentalSettings::customTransformApplierSettings);
    property(cls, "createHostTransferableTensorWithOffset",
             &ExperimentalSettings::createHostTransferableTensorWithOffset);
  }
  {
    py::class_<DeveloperSettings> cls(m, "DeveloperSettings", "Developer settings.");
    cls.def(py::init<>());
    property(cls, "timePartitionLoggerThresholdPercentage",
             &DeveloperSettings::timePartitionLoggerThresholdPercentage);
  }
}

// PopART's deprecated aliases: setting `alias` warns that it is deprecated and sets `target` too,
// so the option in force is the one named now; reading `alias` reads `target`, as PopART's does.
void deprecatedAlias(py::class_<SessionOptions>& cls, const char* alias, const char* target) {
  py::object aliasProp = cls.attr(alias);
  py::object aliasSet = aliasProp.attr("fset");
  py::object targetSet = cls.attr(target).attr("fset");
  const std::string a = alias, t = target;
  py::cpp_function setter([aliasSet, targetSet, a, t](py::object self, py::object value) {
    aliasSet(self, value);
    targetSet(self, value);
    logging::warn("SessionOptions.{} has been deprecated and will be removed in a future release: "
                  "set {} instead (set now to the same value)",
                  a, t);
  });
  cls.attr(alias) = py::module_::import("builtins")
                        .attr("property")(cls.attr(target).attr("fget"), setter, py::none(),
                                          aliasProp.attr("__doc__"));
}

// Every member and method of the list next to the struct
// (include/xtrain/sessionoptions_members.hpp), in its order: the std::map members as write-back
// dicts (kOptionsDictSource), the others as type-checked properties.
void bindSessionOptions(py::module_& m) {
  using S = SessionOptions;
  py::exec(kOptionsDictSource, m.attr("__dict__"));
  py::object dictClass = m.attr("_OptionsDict");
  py::class_<S> cls(m, "SessionOptions",
                    "PopART's session options; what each does on a simulated IPU: "
                    "docs/session-options.md.");
  cls.def(py::init<>());
  forEachSessionOptionMember([&cls, &dictClass](const auto& member) {
    using M = std::decay_t<decltype(member)>;
    if constexpr (std::is_same_v<M, SessionOptionMethod>) {
      cls.def(member.name, member.method, py::arg(member.argName), member.doc);
    } else if constexpr (Container<typename M::Type>::kind == 3) {
      dictProperty(cls, dictClass, member.name, member.member, member.doc);
    } else {
      property(cls, member.name, member.member, member.doc);
    }
  });
  deprecatedAlias(cls, "defaultPrefetchBufferingDepth", "defaultBufferingDepth");
  deprecatedAlias(cls, "prefetchBufferingDepthMap", "bufferingDepthMap");
  cls.def("getGlobalReplicationFactor", &S::getGlobalReplicationFactor,
          "globalReplicationFactor when distributed, else the local replication factor.");
  cls.def("getLocalReplicationFactor", &S::getLocalReplicationFactor,
          "replicatedGraphCount when replication is enabled, else 1.");
  cls.def("getAccumulationFactor", &S::getAccumulationFactor,
          "accumulationFactor when gradient accumulation is enabled, else 1.");
  cls.def("autoRecomputationEnabled", &S::autoRecomputationEnabled);
  cls.def("explicitPipeliningEnabled", &S::explicitPipeliningEnabled);
  cls.def("implicitPipeliningEnabled", &S::implicitPipeliningEnabled);
}

}  // namespace

void bindOptions(py::module_& m) {
  bindEnums(m);
  bindSettingsEnums(m);
  bindReplicaGrouping(m);
  bindCommGroup(m);
  bindVariableSettings(m);
  bindTensorLocations(m);
  bindAutomaticLossScalingSettings(m);
  bindSettingsStructs(m);
  bindSessionOptions(m);
}

}  // namespace xtrain::python
