// The optimizers: OptimizerValue, OptimizerValueMap, Optimizer, SGD, ConstSGD, Adam, Adaptive,
// ClipNormSettings and their enums, with the names, keyword arguments and defaults of PopART's
// Python module (popart-python-api.txt and PopART's own bindings; docs/python.md "## Optimizers").
//
// The hyperparameter dicts ({"defaultLearningRate": (0.1, False), ...}) are checked here before
// the C++ constructors see them, so that a wrong key raises ValueError naming it and listing the
// accepted keys, and a wrong value raises TypeError naming its key.
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "py_values.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/optimizer.hpp"

namespace py = pybind11;

namespace xtrain::python {
namespace {

using ValueMap = std::map<std::string, std::pair<float, bool>>;

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The shortest decimal form that reads back as the same float32 ("0.1", not "0.10000000149").
std::string shortFloat(float f) {
  char buf[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

float toFloat(py::handle v) {
  const double d = PyFloat_AsDouble(v.ptr());
  if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return static_cast<float>(d);
}

// An OptimizerValue from an OptimizerValue, a number (constant) or a (number, bool) tuple.
OptimizerValue toOptimizerValue(py::handle v, const std::string& what) {
  if (py::isinstance<OptimizerValue>(v)) return v.cast<OptimizerValue>();
  if (isReal(v)) return OptimizerValue(toFloat(v), true);
  if (py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v)) {
    py::sequence s = py::reinterpret_borrow<py::sequence>(v);
    if (s.size() == 2 && isReal(s[0]) && isBool(s[1])) {
      return OptimizerValue(toFloat(s[0]), PyObject_IsTrue(s[1].ptr()) == 1);
    }
  }
  throw py::type_error(what +
                       ": expected a tuple (float, bool), a float or an OptimizerValue, got " +
                       std::string(py::repr(v)));
}

// A flag hyperparameter (SGD's nesterov): what toOptimizerValue takes, or a bool, or a
// (bool, bool) tuple as PopART programs write it; true is 1.
OptimizerValue toFlagValue(py::handle v, const std::string& what) {
  if (isBool(v)) return OptimizerValue(PyObject_IsTrue(v.ptr()) == 1 ? 1.0f : 0.0f, true);
  if (py::isinstance<py::tuple>(v) || py::isinstance<py::list>(v)) {
    py::sequence s = py::reinterpret_borrow<py::sequence>(v);
    if (s.size() == 2 && isBool(s[0]) && isBool(s[1])) {
      return OptimizerValue(PyObject_IsTrue(s[0].ptr()) == 1 ? 1.0f : 0.0f,
                            PyObject_IsTrue(s[1].ptr()) == 1);
    }
  }
  return toOptimizerValue(v, what);
}

// PopART's dict of (value, isConst) tuples, with its keys checked against `accepted`.
ValueMap toValueMap(py::handle d, const std::string& what,
                    const std::vector<std::string>& accepted) {
  if (!py::isinstance<py::dict>(d)) {
    throw py::type_error(what + ": expected a dict {name: (float, bool)}, got " + typeName(d));
  }
  ValueMap out;
  for (auto [k, v] : py::reinterpret_borrow<py::dict>(d)) {
    if (!py::isinstance<py::str>(k)) {
      throw py::type_error(what + ": a key must be a str, got " + std::string(py::repr(k)));
    }
    const auto key = k.cast<std::string>();
    if (std::find(accepted.begin(), accepted.end(), key) == accepted.end()) {
      throw py::value_error(what + ": unknown hyperparameter '" + key +
                            "' (accepted: " + joined(accepted) + ")");
    }
    // nesterov is a flag: PopART programs give it as (bool, bool) too.
    const OptimizerValue ov = key == "nesterov" ? toFlagValue(v, what + "['nesterov']")
                                                : toOptimizerValue(v, what + "['" + key + "']");
    out[key] = {ov.val(), ov.isConst()};
  }
  return out;
}

// A DataType argument: a DataType (bound by tensors.cpp) or its name ("FLOAT"); None is `dflt`.
DataType toDataType(py::handle v, const char* what, DataType dflt) {
  if (v.is_none()) return dflt;
  if (py::isinstance<py::str>(v)) {
    const auto name = v.cast<std::string>();
    try {
      return dataTypeFromName(name);
    } catch (const std::exception&) {
      throw py::value_error(std::string(what) + ": unknown data type '" + name + "'");
    }
  }
  try {
    return v.cast<DataType>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(what) + ": expected a DataType, got " + typeName(v));
  }
}

// The default of a DataType keyword argument: DataType.<name> when DataType is bound (it is, on
// the merged module, by tensors.cpp before this file), else None (meaning the same).
py::object dataTypeDefault(py::module_& m, const char* name) {
  if (py::hasattr(m, "DataType")) return m.attr("DataType").attr(name);
  return py::none();
}

// The keys of PopART's map constructor: the C++ class's own list.
template <class O>
std::vector<std::string> mapKeys() {
  return O::hyperParameterNames();
}

// PopART's OptimizerValueMap: the default of one hyperparameter and its per-weight values, a
// snapshot of the optimizer when the getter (learningRates(), ...) was called.
class OptimizerValueMap {
 public:
  OptimizerValueMap(const Optimizer& opt, std::string key)
      : opt_(opt.clone()), key_(std::move(key)) {}

  OptimizerValue getDefault() const {
    if (const auto* sgd = dynamic_cast<const SGD*>(opt_.get())) {
      const SGD::Values& d = sgd->defaults();
      if (key_ == "learningRate") return d.learningRate;
      if (key_ == "weightDecay") return d.weightDecay;
      if (key_ == "momentum") return d.momentum;
      if (key_ == "dampening") return d.dampening;
      if (key_ == "nesterov") return d.nesterov;
      return d.velocityScaling;
    }
    const auto& d = dynamic_cast<const KeyedOptimizer&>(*opt_).defaults();
    auto it = d.find(key_);
    if (it == d.end()) throw py::key_error(key_);
    return it->second;
  }
  OptimizerValue get(const TensorId& id) const { return opt_->valuesOf(id).at(key_); }
  bool hasSpecific(const TensorId& id) const {
    if (const auto* sgd = dynamic_cast<const SGD*>(opt_.get())) return sgd->hasSpecific(id);
    return dynamic_cast<const KeyedOptimizer&>(*opt_).hasSpecific(id);
  }
  const std::string& key() const { return key_; }

 private:
  std::shared_ptr<const Optimizer> opt_;
  std::string key_;
};

std::vector<ClipNormSettings> toClipNorms(py::handle v, const std::string& what) {
  if (v.is_none()) return {};
  if (py::isinstance<ClipNormSettings>(v)) return {v.cast<ClipNormSettings>()};
  if (!(py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v))) {
    throw py::type_error(what + ": expected a list of ClipNormSettings, got " + typeName(v));
  }
  std::vector<ClipNormSettings> out;
  for (py::handle item : v) {
    if (!py::isinstance<ClipNormSettings>(item)) {
      throw py::type_error(what + ": expected a list of ClipNormSettings, got an item of type " +
                           typeName(item));
    }
    out.push_back(item.cast<ClipNormSettings>());
  }
  return out;
}

bool toBool(py::handle v, const std::string& what) {
  if (!isBool(v)) throw py::type_error(what + ": expected bool, got " + typeName(v));
  return PyObject_IsTrue(v.ptr()) == 1;
}

void bindValues(py::module_& m) {
  py::class_<OptimizerValue> ov(m, "OptimizerValue",
                                "A hyperparameter value and whether it is constant.");
  ov.def(py::init<>());
  ov.def(py::init<float, bool>(), py::arg("val"), py::arg("isConst"));
  ov.def(py::init<float>(), py::arg("val"));
  ov.def(py::init([](std::pair<float, bool> p) { return OptimizerValue(p); }));
  ov.def("val", &OptimizerValue::val);
  ov.def("isConst", &OptimizerValue::isConst);
  ov.def(
      "__eq__", [](const OptimizerValue& a, const OptimizerValue& b) { return a == b; },
      py::is_operator());
  ov.def(
      "__ne__", [](const OptimizerValue& a, const OptimizerValue& b) { return !(a == b); },
      py::is_operator());
  ov.def("__repr__", [](const OptimizerValue& v) {
    return "OptimizerValue(" + shortFloat(v.val()) + ", " + (v.isConst() ? "True" : "False") + ")";
  });

  py::class_<OptimizerValueMap> map(
      m, "OptimizerValueMap", "One hyperparameter's default and per-weight values (a snapshot).");
  map.def("getDefault", &OptimizerValueMap::getDefault);
  map.def("get", &OptimizerValueMap::get, py::arg("id"),
          "The value for one weight: its insertSpecific value, else the default.");
  map.def("hasSpecific", &OptimizerValueMap::hasSpecific, py::arg("id"));
  map.def("__repr__", [](const OptimizerValueMap& v) {
    return "OptimizerValueMap(" + v.key() +
           ", default=" + std::string(py::repr(py::cast(v.getDefault()))) + ")";
  });

  py::enum_<WeightDecayMode>(m, "WeightDecayMode")
      .value("Decay", WeightDecayMode::Decay)
      .value("L2Regularization", WeightDecayMode::L2Regularization);
  py::enum_<SGDAccumulatorAndMomentum>(m, "SGDAccumulatorAndMomentum")
      .value("Combined", SGDAccumulatorAndMomentum::Combined)
      .value("Separate", SGDAccumulatorAndMomentum::Separate);
  py::enum_<AdamMode>(m, "AdamMode")
      .value("Adam", AdamMode::Adam)
      .value("AdamNoBias", AdamMode::AdamNoBias)
      .value("Lamb", AdamMode::Lamb)
      .value("LambNoBias", AdamMode::LambNoBias)
      .value("AdaMax", AdamMode::AdaMax);
  py::enum_<AdaptiveMode>(m, "AdaptiveMode")
      .value("AdaGrad", AdaptiveMode::AdaGrad)
      .value("RMSProp", AdaptiveMode::RMSProp)
      .value("CenteredRMSProp", AdaptiveMode::CenteredRMSProp)
      .value("AdaDelta", AdaptiveMode::AdaDelta);
}

void bindClipNormSettings(py::module_& m) {
  py::class_<ClipNormSettings> cls(m, "ClipNormSettings",
                                   "Gradient clipping by global norm for a group of weights.");
  py::enum_<ClipNormSettings::Mode>(cls, "Mode")
      .value("ClipSpecifiedWeights", ClipNormSettings::Mode::ClipSpecifiedWeights)
      .value("ClipAllWeights", ClipNormSettings::Mode::ClipAllWeights);
  cls.def(py::init(&ClipNormSettings::clipWeights), py::arg("weightIds"), py::arg("maxNorm"));
  cls.def_static("clipWeights", &ClipNormSettings::clipWeights, py::arg("weightIds"),
                 py::arg("maxNorm"));
  cls.def_static("clipAllWeights", &ClipNormSettings::clipAllWeights, py::arg("maxNorm"));
  cls.def_property_readonly("weightIds", &ClipNormSettings::getWeightIds);
  cls.def_property_readonly("maxNorm", &ClipNormSettings::getMaxNorm);
  cls.def("getWeightIds", &ClipNormSettings::getWeightIds);
  cls.def("getMaxNorm", &ClipNormSettings::getMaxNorm);
  cls.def("getMode", &ClipNormSettings::getMode);
  cls.def(
      "__eq__", [](const ClipNormSettings& a, const ClipNormSettings& b) { return a == b; },
      py::is_operator());
  cls.def("__repr__", [](const ClipNormSettings& c) {
    if (c.getMode() == ClipNormSettings::Mode::ClipAllWeights) {
      return "ClipNormSettings.clipAllWeights(" + shortFloat(c.getMaxNorm()) + ")";
    }
    return "ClipNormSettings.clipWeights(" + std::string(py::repr(py::cast(c.getWeightIds()))) +
           ", " + shortFloat(c.getMaxNorm()) + ")";
  });
}

template <class O>
void valueMapGetter(py::class_<O, Optimizer>& cls, const char* name, const char* key) {
  const std::string k = key;
  cls.def(name, [k](const O& self) { return OptimizerValueMap(self, k); });
}

void bindSGD(py::module_& m, py::class_<Optimizer>& base) {
  py::class_<SGD, Optimizer> sgd(m, "SGD", "Stochastic Gradient Descent (SGD) optimizer.");
  // PopART's form: a dict (a non-dict first argument goes on to the next form).
  sgd.def(py::init([](const py::dict& pyd, py::handle clipNorms, SGDAccumulatorAndMomentum accMm,
                      py::handle accumType, py::handle accl1Type, py::handle /*debugContext*/) {
            const ValueMap values = toValueMap(pyd, "SGD", mapKeys<SGD>());
            auto clips = toClipNorms(clipNorms, "SGD(clip_norm_settings=...)");
            return SGD(values, clips, accMm,
                       toDataType(accumType, "SGD(accumType=...)", DataType::UNDEFINED),
                       toDataType(accl1Type, "SGD(accl1Type=...)", DataType::UNDEFINED));
          }),
          py::arg("pyd"), py::arg("clip_norm_settings") = py::list(),
          py::arg("accumulatorAndMomentum") = SGDAccumulatorAndMomentum::Combined,
          py::arg("accumType") = dataTypeDefault(m, "UNDEFINED"),
          py::arg("accl1Type") = dataTypeDefault(m, "UNDEFINED"), py::arg("debugContext") = "sgd");
  // C++'s constructor, in its argument order (a tuple is (value, isConst)): SGD(0.01) as in the
  // "Executing graphs" chapter, SGD(defaultMomentum=0.9). A number is constant, except the learning
  // rate: the chapter changes it between steps with updateOptimizerFromHost(popart.SGD(stepLr)),
  // which only a non-constant rate allows (ConstSGD is the constant form).
  const SGD d;
  sgd.def(
      py::init([](py::handle lr, py::handle wd, py::handle mm, py::handle dm, py::handle vs,
                  py::handle ls, py::handle nesterov, py::handle clipNorms) {
        if (py::isinstance<py::dict>(lr)) {
          // The dict form did not match because of a keyword the dict form does not take.
          throw py::type_error(
              "SGD: the dict form takes every hyperparameter inside the dict (e.g. {\"nesterov\": "
              "(1.0, True)}) and then only clip_norm_settings, accumulatorAndMomentum, accumType, "
              "accl1Type and debugContext as keywords");
        }
        if (!(py::isinstance<OptimizerValue>(lr) || isReal(lr) || py::isinstance<py::tuple>(lr))) {
          throw py::type_error(
              "SGD: expected a dict {name: (float, bool)} or a learning rate (a float, a "
              "tuple (float, bool) or an OptimizerValue) as the first argument, got " +
              typeName(lr));
        }
        return SGD(isReal(lr) ? OptimizerValue(toFloat(lr), false)
                              : toOptimizerValue(lr, "SGD(defaultLearningRate=...)"),
                   toOptimizerValue(wd, "SGD(defaultWeightDecay=...)"),
                   toOptimizerValue(mm, "SGD(defaultMomentum=...)"),
                   toOptimizerValue(dm, "SGD(defaultDampening=...)"),
                   toOptimizerValue(vs, "SGD(defaultVelocityScaling=...)"),
                   toOptimizerValue(ls, "SGD(lossScaling=...)"),
                   toFlagValue(nesterov, "SGD(nesterov=...)"),
                   toClipNorms(clipNorms, "SGD(clip_norm_settings=...)"));
      }),
      py::arg("defaultLearningRate") = d.defaults().learningRate,
      py::arg("defaultWeightDecay") = d.defaults().weightDecay,
      py::arg("defaultMomentum") = d.defaults().momentum,
      py::arg("defaultDampening") = d.defaults().dampening,
      py::arg("defaultVelocityScaling") = d.defaults().velocityScaling,
      py::arg("lossScaling") = d.lossScaling(), py::arg("nesterov") = false,
      py::arg("clip_norm_settings") = py::list());
  sgd.def(
      "insertSpecific",
      [](SGD& self, const TensorId& id, py::handle pyd) {
        self.insertSpecific(
            id, toValueMap(pyd, "SGD.insertSpecific('" + id + "')", self.specificKeys()));
      },
      py::arg("tensorId"), py::arg("values"));
  sgd.def("hasSpecific", &SGD::hasSpecific, py::arg("tensorId"));
  valueMapGetter(sgd, "learningRates", "learningRate");
  valueMapGetter(sgd, "weightDecays", "weightDecay");
  valueMapGetter(sgd, "momentums", "momentum");
  valueMapGetter(sgd, "dampenings", "dampening");
  valueMapGetter(sgd, "velocityScalings", "velocityScaling");
  valueMapGetter(sgd, "nesterov", "nesterov");
  sgd.def("requiresVelocity", &SGD::requiresVelocity);

  // PopART's ConstSGD: every value constant. The clip groups go through a local subclass, since
  // C++'s ConstSGD constructor has none.
  struct ConstSGDWithClips : ConstSGD {
    ConstSGDWithClips(float lr, float wd, float ls, std::vector<ClipNormSettings> clips)
        : ConstSGD(lr, wd, 0.0f, 0.0f, 1.0f, ls) {
      setClipNormSettings(std::move(clips));
    }
  };
  py::class_<ConstSGD, SGD> cs(m, "ConstSGD", "SGD whose every value is constant.");
  cs.def(py::init([](py::handle lr, py::handle wd, py::handle ls, py::handle clipNorms) {
           auto num = [](py::handle v, const char* what) {
             if (!isReal(v))
               throw py::type_error(std::string(what) + ": expected float, got " + typeName(v));
             return toFloat(v);
           };
           ConstSGD c = ConstSGDWithClips(
               num(lr, "ConstSGD(learning_rate=...)"), num(wd, "ConstSGD(weight_decay=...)"),
               num(ls, "ConstSGD(loss_scaling=...)"),
               toClipNorms(clipNorms, "ConstSGD(clip_norm_settings=...)"));
           return c;
         }),
         py::arg("learning_rate"), py::arg("weight_decay") = 0.0f, py::arg("loss_scaling") = 1.0f,
         py::arg("clip_norm_settings") = py::list());
}

template <class O>
void bindKeyedCommon(py::class_<O, Optimizer>& cls, const char* name) {
  const std::string n = name;
  cls.def(
      "insertSpecific",
      [n](O& self, const TensorId& id, py::handle pyd) {
        self.insertSpecific(
            id, toValueMap(pyd, n + ".insertSpecific('" + id + "')", self.specificKeys()));
      },
      py::arg("tensorId"), py::arg("values"));
  cls.def("hasSpecific", &O::hasSpecific, py::arg("tensorId"));
  cls.def("getWeightDecayMode", &O::getWeightDecayMode);
  cls.def("getMode", &O::getMode);
  cls.def("getAccumType", &O::getAccumType);
  cls.def("getAccl1Type", &O::getAccl1Type);
  cls.def("getAccl2Type", &O::getAccl2Type);
  valueMapGetter(cls, "learningRates", "learningRate");
  valueMapGetter(cls, "weightDecays", "weightDecay");
  valueMapGetter(cls, "epss", "eps");
}

void bindAdam(py::module_& m, py::class_<Optimizer>& base) {
  py::class_<Adam, Optimizer> adam(m, "Adam", "AdamW, Lamb and AdaMax optimizer.");
  adam.def(py::init([](py::handle values, AdamMode mode, WeightDecayMode wdMode,
                       py::handle accumType, py::handle accl1Type, py::handle accl2Type,
                       py::handle clipNorms, py::handle scaled, py::handle /*debugContext*/) {
             return Adam(toValueMap(values, "Adam", mapKeys<Adam>()), mode, wdMode,
                         toDataType(accumType, "Adam(accum_type=...)", DataType::UNDEFINED),
                         toDataType(accl1Type, "Adam(accl1_type=...)", DataType::FLOAT),
                         toDataType(accl2Type, "Adam(accl2_type=...)", DataType::FLOAT),
                         toClipNorms(clipNorms, "Adam(clip_norm_settings=...)"),
                         toBool(scaled, "Adam(scaled_optimizer_state=...)"));
           }),
           py::arg("values"), py::arg("mode") = AdamMode::Adam,
           py::arg("weight_decay_mode") = WeightDecayMode::Decay,
           py::arg("accum_type") = dataTypeDefault(m, "UNDEFINED"),
           py::arg("accl1_type") = dataTypeDefault(m, "FLOAT"),
           py::arg("accl2_type") = dataTypeDefault(m, "FLOAT"),
           py::arg("clip_norm_settings") = py::list(), py::arg("scaled_optimizer_state") = false,
           py::arg("debugContext") = "adam");
  bindKeyedCommon(adam, "Adam");
  valueMapGetter(adam, "beta1s", "beta1");
  valueMapGetter(adam, "beta2s", "beta2");
  valueMapGetter(adam, "maxWeightNorms", "maxWeightNorm");
  adam.def("isLamb", &Adam::isLamb);
}

void bindAdaptive(py::module_& m, py::class_<Optimizer>& base) {
  py::class_<Adaptive, Optimizer> ad(m, "Adaptive",
                                     "AdaGrad, RMSProp, CenteredRMSProp and AdaDelta optimizer.");
  ad.def(py::init([](py::handle values, AdaptiveMode mode, WeightDecayMode wdMode,
                     py::handle accumType, py::handle accl1Type, py::handle accl2Type,
                     py::handle accl3Type, py::handle tfVariant, py::handle /*debugContext*/,
                     py::handle clipNorms) {
           return Adaptive(toValueMap(values, "Adaptive", mapKeys<Adaptive>()), mode, wdMode,
                           toDataType(accumType, "Adaptive(accum_type=...)", DataType::UNDEFINED),
                           toDataType(accl1Type, "Adaptive(accl1_type=...)", DataType::FLOAT),
                           toDataType(accl2Type, "Adaptive(accl2_type=...)", DataType::FLOAT),
                           toDataType(accl3Type, "Adaptive(accl3_type=...)", DataType::UNDEFINED),
                           toBool(tfVariant, "Adaptive(rmsprop_tf_variant=...)"),
                           toClipNorms(clipNorms, "Adaptive(clip_norm_settings=...)"));
         }),
         py::arg("values"), py::arg("mode") = AdaptiveMode::RMSProp,
         py::arg("weight_decay_mode") = WeightDecayMode::Decay,
         py::arg("accum_type") = dataTypeDefault(m, "UNDEFINED"),
         py::arg("accl1_type") = dataTypeDefault(m, "FLOAT"),
         py::arg("accl2_type") = dataTypeDefault(m, "FLOAT"),
         py::arg("accl3_type") = dataTypeDefault(m, "UNDEFINED"),
         py::arg("rmsprop_tf_variant") = false, py::arg("debugContext") = "adaptive",
         py::arg("clip_norm_settings") = py::list());
  bindKeyedCommon(ad, "Adaptive");
  valueMapGetter(ad, "alphas", "alpha");
  valueMapGetter(ad, "momentums", "momentum");
  ad.def("getAccl3Type", &Adaptive::getAccl3Type);
  ad.def("requiresMomentum", &Adaptive::requiresMomentum);
}

}  // namespace

void bindOptimizers(py::module_& m) {
  bindValues(m);
  bindClipNormSettings(m);

  py::class_<Optimizer> base(m, "Optimizer", "The base class of the optimizers.");
  base.def("getLossScalingVal", &Optimizer::getLossScalingVal);
  base.def("lossScaling", &Optimizer::lossScaling);
  base.def("getClipNormSettings", &Optimizer::getClipNormSettings);
  base.def("type_s", &Optimizer::type_s);
  base.def("specificKeys", &Optimizer::specificKeys);
  base.def("valuesOf", &Optimizer::valuesOf, py::arg("tensorId"),
           "The values in force for one weight, by insertSpecific key.");

  bindSGD(m, base);
  bindAdam(m, base);
  bindAdaptive(m, base);
}

}  // namespace xtrain::python
