// TrainingSession, InferenceSession, PyStepIO, PyStepIOCallback and PyWeightsIO with PopART's
// names, keyword arguments and defaults (popart-python-api.txt, "Sessions" and "Data input and
// output"), over include/xtrain/session.hpp. docs/python.md, "Sessions".
//
// Buffers: PyStepIO and PyWeightsIO keep references to the user's NumPy arrays and hand their
// memory to the session (no copy) when they are C-contiguous; inputs that are not (or are not
// arrays) are copied once, at construction. Anchor and weight-reading arrays must be writable,
// C-contiguous NumPy arrays (the session writes into them). Before each run the arrays' dtypes and
// shapes are checked against the model: a mismatch raises naming the tensor, the expected and the
// given dtype or shape.
//
// The GIL: run(), prepareDevice(), weightsFromHost/ToHost(), the checkpoint calls and the like
// release it, so several Python threads can drive several sessions. A session is used by one
// thread at a time: a second thread calling into a busy session gets an error rather than a wait.
// Ctrl-C: a SIGINT during run() is seen when the step ends (PyStepIO) or at the next micro-batch
// (PyStepIOCallback, whose callbacks take the GIL) and raises KeyboardInterrupt.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "numpy_types.hpp"
#include "py_values.hpp"
#include "xtrain/checkpoint.hpp"
#include "xtrain/dataflow.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"
#include "xtrain/ndarraywrapper.hpp"
#include "xtrain/optimizer.hpp"
#include "xtrain/session.hpp"
#include "xtrain/sessionoptions.hpp"
#include "xtrain/stepio.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

// ---- NumPy <-> xtrain types ----

// "float32", or ">f4" for a byte order other than the native one.
std::string dtypeName(const py::dtype& d) {
  return py::str(static_cast<const py::handle&>(d)).cast<std::string>();
}

// NumPy <-> DataType is numpy_types.hpp's mapping; these add the tensor's name to its errors.
py::dtype numpyDtypeOrThrow(DataType t, const TensorId& id) {
  auto d = tryNumpyDtypeOf(t);
  if (!d) {
    throw error("tensor '{}' has type {}, which has no NumPy dtype in xtrain's Python API", id,
                dataTypeName(t));
  }
  return *d;
}

// The xtrain type of a NumPy array; throws naming the tensor when it has none.
DataType dataTypeOfArray(const py::array& a, const TensorId& id, const char* what) {
  if (auto t = tryDataTypeFromNumpy(a.dtype())) return *t;
  throw py::type_error(std::string(what) + " '" + id + "': NumPy dtype " + dtypeName(a.dtype()) +
                       " has no xtrain type (expected one of " + kNumpyDtypeNames + ")");
}

Shape shapeOf(const py::array& a) {
  Shape s;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s.push_back(static_cast<int64_t>(a.shape(i)));
  return s;
}

std::string shapeString(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string keyOf(const py::handle& key, const char* what) {
  if (!py::isinstance<py::str>(key)) {
    throw py::type_error(std::string(what) + ": keys must be tensor ids (str), got " +
                         typeName(key) + " " + py::repr(key).cast<std::string>());
  }
  return key.cast<std::string>();
}

bool isCContiguous(const py::array& a) {
  return (a.flags() & py::array::c_style) != 0;
}

// An input: the user's array when C-contiguous, else a contiguous copy made once.
py::array inputArray(const py::handle& value, const TensorId& id, const char* what) {
  if (py::isinstance<py::array>(value)) {
    auto a = py::reinterpret_borrow<py::array>(value);
    if (isCContiguous(a)) return a;
  }
  py::module_ np = py::module_::import("numpy");
  try {
    return np.attr("ascontiguousarray")(value).cast<py::array>();
  } catch (py::error_already_set& e) {
    throw py::type_error(std::string(what) + " '" + id + "': expected a NumPy array, got " +
                         typeName(value) + " (" + e.what() + ")");
  }
}

// A buffer the session writes: must be a writable, C-contiguous NumPy array.
py::array outputArray(const py::handle& value, const TensorId& id, const char* what) {
  if (!py::isinstance<py::array>(value)) {
    throw py::type_error(std::string(what) + " '" + id + "': expected a NumPy array, got " +
                         typeName(value));
  }
  auto a = py::reinterpret_borrow<py::array>(value);
  if (!isCContiguous(a)) {
    // PopART's exception, with the words its programs look for ("it is not c-contiguous").
    throw error(
        "{} '{}': the session writes into the array, but it is not c-contiguous; use "
        "numpy.ascontiguousarray or initAnchorArrays()",
        what, id);
  }
  if (!a.writeable()) {
    throw py::value_error(std::string(what) + " '" + id +
                          "': the array is read-only (the session writes into it)");
  }
  return a;
}

// An IArray over a NumPy array's memory (the array is kept alive by its owner).
class ArrayView : public IArray {
 public:
  ArrayView(py::array& a, DataType type)
      : data_(a.mutable_data()), type_(type), shape_(shapeOf(a)) {}
  ArrayView(const py::array& a, DataType type)
      : data_(const_cast<void*>(a.data())), type_(type), shape_(shapeOf(a)) {}
  void* data() override { return data_; }
  DataType dataType() const override { return type_; }
  size_t rank() const override { return shape_.size(); }
  int64_t dim(size_t index) const override { return shape_.at(index); }
  size_t nelms() const override { return static_cast<size_t>(shapeNelms(shape_)); }
  const Shape shape() const override { return shape_; }

 private:
  void* data_;
  DataType type_;
  Shape shape_;
};

// ---- PyStepIO ----

class PyStepIO {
 public:
  PyStepIO(const py::dict& inputs, const py::dict& outputs) {
    for (auto item : inputs) {
      const TensorId id = keyOf(item.first, "PyStepIO inputs");
      py::array a = inputArray(item.second, id, "PyStepIO input");
      const DataType t = dataTypeOfArray(a, id, "PyStepIO input");
      inputs_.emplace(id, Entry{a, ArrayView(static_cast<const py::array&>(a), t)});
    }
    for (auto item : outputs) {
      const TensorId id = keyOf(item.first, "PyStepIO outputs");
      py::array a = outputArray(item.second, id, "PyStepIO output");
      const DataType t = dataTypeOfArray(a, id, "PyStepIO output");
      outputs_.emplace(id, Entry{a, ArrayView(a, t)});
    }
  }

  struct Entry {
    py::array array;  // keeps the memory alive
    ArrayView view;
  };

  void enableRuntimeAsserts(bool on) { runtimeAsserts_ = on; }
  bool runtimeAsserts() const { return runtimeAsserts_; }
  std::map<TensorId, Entry>& inputs() { return inputs_; }
  std::map<TensorId, Entry>& outputs() { return outputs_; }

 private:
  std::map<TensorId, Entry> inputs_;
  std::map<TensorId, Entry> outputs_;
  bool runtimeAsserts_ = true;
};

// ---- PyStepIOCallback ----

// Raised through the session's C++ frames when a Python callback failed; the Python error stays
// set on this thread and is raised when run() returns.
struct PythonCallbackFailed : std::exception {
  const char* what() const noexcept override { return "a PyStepIOCallback callback raised"; }
};

// Runs a callback with the GIL; Ctrl-C and Python errors stop the run (PythonCallbackFailed).
template <typename F>
auto guarded(F&& f) {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw PythonCallbackFailed();
  try {
    return f();
  } catch (py::error_already_set& e) {
    e.restore();
    throw PythonCallbackFailed();
  } catch (py::builtin_exception& e) {
    e.set_error();
    throw PythonCallbackFailed();
  }
}

class PyStepIOCallback {
 public:
  PyStepIOCallback(py::function inputCallback, py::function inputCompleteCallback,
                   py::function outputCallback, py::function outputCompleteCallback)
      : state_(std::make_shared<State>()) {
    state_->in = std::move(inputCallback);
    state_->inComplete = std::move(inputCompleteCallback);
    state_->out = std::move(outputCallback);
    state_->outComplete = std::move(outputCompleteCallback);
    std::shared_ptr<State> s = state_;
    io_ = std::make_unique<StepIOCallback>(
        [s](TensorId id, bool prefetch) {
          return guarded([&] {
            py::object r = s->in(id, prefetch);
            py::array a = inputArray(r, id, "PyStepIOCallback input");
            const DataType t = dataTypeOfArray(a, id, "PyStepIOCallback input");
            s->heldIn[id].push_back(a);
            return ConstVoidData(a.data(), TensorInfo(t, shapeOf(a)));
          });
        },
        [s](TensorId id) {
          guarded([&] {
            s->inComplete(id);
            auto& q = s->heldIn[id];
            if (!q.empty()) q.pop_front();
            return 0;
          });
        },
        [s](TensorId id) {
          return guarded([&] {
            py::object r = s->out(id);
            py::array a = outputArray(r, id, "PyStepIOCallback output");
            const DataType t = dataTypeOfArray(a, id, "PyStepIOCallback output");
            s->heldOut[id].push_back(a);
            return MutableVoidData(a.mutable_data(), TensorInfo(t, shapeOf(a)));
          });
        },
        [s](TensorId id) {
          guarded([&] {
            s->outComplete(id);
            auto& q = s->heldOut[id];
            if (!q.empty()) q.pop_front();
            return 0;
          });
        });
  }

  ~PyStepIOCallback() {
    // Drops the Python objects with the GIL held (the destructor runs from Python).
    state_.reset();
    io_.reset();
  }

  IStepIO& io() { return *io_; }
  // Arrays still held after a run that stopped early.
  void release() {
    state_->heldIn.clear();
    state_->heldOut.clear();
  }

 private:
  struct State {
    py::function in, inComplete, out, outComplete;
    std::map<TensorId, std::deque<py::array>> heldIn, heldOut;
  };

  std::shared_ptr<State> state_;
  std::unique_ptr<StepIOCallback> io_;
};

// ---- PyWeightsIO ----

class PyWeightsIO {
 public:
  explicit PyWeightsIO(const py::dict& weights) {
    for (auto item : weights) {
      const TensorId id = keyOf(item.first, "PyWeightsIO");
      if (!py::isinstance<py::array>(item.second)) {
        throw py::type_error("PyWeightsIO '" + id + "': expected a NumPy array, got " +
                             typeName(item.second));
      }
      auto a = py::reinterpret_borrow<py::array>(item.second);
      if (!isCContiguous(a)) {
        throw error(
            "PyWeightsIO '{}': the session reads and writes the array in place, but it is not "
            "c-contiguous; use numpy.ascontiguousarray",
            id);
      }
      const DataType t = dataTypeOfArray(a, id, "PyWeightsIO");
      arrays_.emplace(id, a);
      io_.insert(id, MutableVoidData(const_cast<void*>(a.data()), TensorInfo(t, shapeOf(a))));
    }
  }
  const WeightsIO& io() const { return io_; }
  // readWeights writes into the arrays.
  void checkWritable() const {
    for (const auto& [id, a] : arrays_) {
      if (!a.writeable()) {
        throw py::value_error("PyWeightsIO '" + id +
                              "': the array is read-only (readWeights writes into it)");
      }
    }
  }
  const std::map<TensorId, py::array>& arrays() const { return arrays_; }

 private:
  std::map<TensorId, py::array> arrays_;
  WeightsIO io_;
};

// ---- Sessions ----

// fnModel: a file name (str or os.PathLike), the model's bytes, or an onnx.ModelProto.
std::string modelArg(const py::object& fnModel) {
  if (py::isinstance<py::bytes>(fnModel)) return fnModel.cast<std::string>();
  if (py::isinstance<py::str>(fnModel)) return fnModel.cast<std::string>();
  if (py::hasattr(fnModel, "SerializeToString")) {
    return fnModel.attr("SerializeToString")().cast<std::string>();
  }
  if (py::hasattr(fnModel, "__fspath__")) {
    return py::module_::import("os").attr("fspath")(fnModel).cast<std::string>();
  }
  throw py::type_error("fnModel: expected an ONNX file name (str) or the model's bytes, got " +
                       typeName(fnModel));
}

// The session's pattern set: PopART's default for None.
Patterns patternsArg(const py::object& patterns) {
  if (patterns.is_none()) return Patterns();
  if (py::isinstance<Patterns>(patterns)) return patterns.cast<Patterns>();
  throw py::type_error("patterns: expected a popart.Patterns or None, got " + typeName(patterns));
}

template <typename S>
struct PySession {
  std::unique_ptr<S> session;
  DataFlow dataFlow;
  std::string name;
  std::mutex busy;

  // The session, locked for the calling thread (released when the returned lock goes).
  std::unique_lock<std::mutex> lock() {
    std::unique_lock<std::mutex> l(busy, std::try_to_lock);
    if (!l.owns_lock()) {
      throw error(
          "session '{}' is in use (by another thread, or by a callback of its own run): a "
          "session is used by one thread at a time",
          name);
    }
    return l;
  }
};

// Calls f(session) with the GIL released and the session locked.
template <typename S, typename F>
auto callReleased(PySession<S>& s, F&& f) {
  auto l = s.lock();
  py::gil_scoped_release release;
  return f(*s.session);
}

// After a run: a pending Python error (from a callback) or signal (Ctrl-C) is raised.
void raisePending() {
  if (PyErr_Occurred() != nullptr) throw py::error_already_set();
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

// True when `given` lays out the same row-major elements as `expected` with adjacent dimensions
// merged or split (and dimensions of size 1 added or dropped): [20,32,784] for [20,2,16,784],
// [1,32,784] for [32,784]. PopART checks only the element count, and its programs rely on this
// (the MNIST tutorial passes [bps, replicas * batch, 784]); a transposed or wrongly split shape
// ([4,2] for [2,4], [4,16,784] for [2,32,784]) is still refused. Shapes regroup each other when
// the products of their trailing dimensions of one are among those of the other.
bool regroups(const Shape& given, const Shape& expected) {
  auto suffixProducts = [](const Shape& shape) {
    std::vector<int64_t> out;
    int64_t p = 1;
    for (auto it = shape.rbegin(); it != shape.rend(); ++it) {
      p *= *it;
      if (out.empty() || out.back() != p) out.push_back(p);
    }
    return out;
  };
  if (shapeNelms(given) != shapeNelms(expected) || shapeNelms(given) == 0) return false;
  const auto g = suffixProducts(given);
  const auto e = suffixProducts(expected);
  auto subset = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    return std::includes(b.begin(), b.end(), a.begin(), a.end());
  };
  return subset(g, e) || subset(e, g);
}

void checkStepIO(Session& s, PyStepIO& io) {
  auto check = [&](const TensorId& id, const PyStepIO::Entry& e, bool input) {
    const char* what = input ? "input" : "anchor";
    // Left to the session's run: an input the session does not know (a model input it removed as
    // unused is ignored there, any other name refused), a weight's buffer (passed over with a
    // warning, as PopART streams only inputs), any input with synthetic data (none is read).
    if (input && (!s.hasInfo(id) || s.isWeight(id) ||
                  s.getSessionOptions().syntheticDataMode != SyntheticDataMode::Off)) {
      return;
    }
    if (!s.hasInfo(id)) throw error("PyStepIO {} '{}' is not a tensor of the model", what, id);
    const TensorInfo info = s.getInfo(id);
    // An INT32 input may be fed INT64 data (NumPy's default integer): the run converts it.
    const bool int64ForInt32 =
        input && e.view.dataType() == DataType::INT64 && info.dataType() == DataType::INT32;
    if (e.view.dataType() != info.dataType() && !int64ForInt32) {
      auto expected = tryNumpyDtypeOf(info.dataType());
      throw error("PyStepIO {} '{}': expected dtype {} ({}), got {}", what, id,
                  expected ? dtypeName(*expected) : std::string("-"), dataTypeName(info.dataType()),
                  dtypeName(e.array.dtype()));
    }
    const Shape expected = input ? s.expectedInputBufferShape(id) : s.expectedAnchorBufferShape(id);
    const Shape given = e.view.shape();
    if (io.runtimeAsserts() ? given != expected && !regroups(given, expected)
                            : shapeNelms(given) != shapeNelms(expected)) {
      throw error("PyStepIO {} '{}': expected shape {}, got shape {}", what, id,
                  shapeString(expected), shapeString(given));
    }
  };
  for (auto& [id, e] : io.inputs()) check(id, e, true);
  for (auto& [id, e] : io.outputs()) check(id, e, false);
}

template <typename S>
void runStepIO(PySession<S>& s, PyStepIO& io, const std::string& debugName) {
  auto l = s.lock();
  checkStepIO(*s.session, io);
  std::map<TensorId, IArray&> in, out;
  for (auto& [id, e] : io.inputs()) in.emplace(id, e.view);
  for (auto& [id, e] : io.outputs()) out.emplace(id, e.view);
  StepIO stepio(std::move(in), std::move(out));
  {
    py::gil_scoped_release release;
    s.session->run(stepio, debugName);
  }
  raisePending();
}

template <typename S>
void runCallback(PySession<S>& s, PyStepIOCallback& io, const std::string& debugName) {
  auto l = s.lock();
  try {
    py::gil_scoped_release release;
    s.session->run(io.io(), debugName);
  } catch (...) {
    io.release();
    // A callback's Python error (or KeyboardInterrupt) wins over whatever the session made of it.
    if (PyErr_Occurred() != nullptr) throw py::error_already_set();
    throw;
  }
  io.release();
  raisePending();
}

py::dict anchorArrays(const Session& s) {
  py::dict out;
  for (const auto& [id, arr] : s.initAnchorArrays()) {
    const py::dtype d = numpyDtypeOrThrow(arr->dataType(), id);
    const Shape dims = arr->shape();  // by value: one copy
    std::vector<py::ssize_t> shape(dims.begin(), dims.end());
    py::array a(d, shape);
    std::memset(a.mutable_data(), 0, static_cast<size_t>(a.nbytes()));
    out[py::str(id)] = a;
  }
  return out;
}

[[noreturn]] void notImplemented(const std::string& what, const std::string& why) {
  throw error("{} is not implemented in xtrain: {}", what, why);
}

// Running, weights and the model: what a session does.
template <typename S, typename Cls>
void bindRunAndWeights(Cls& cls) {
  using P = PySession<S>;
  cls.def(
         "prepareDevice",
         [](P& s, bool loadEngine) { callReleased(s, [&](S& x) { x.prepareDevice(loadEngine); }); },
         py::arg("loadEngine") = true)
      .def("loadEngineAndConnectStreams",
           [](P& s) { callReleased(s, [](S& x) { x.loadEngineAndConnectStreams(); }); })
      .def("weightsFromHost", [](P& s) { callReleased(s, [](S& x) { x.weightsFromHost(); }); })
      .def("weightsToHost", [](P& s) { callReleased(s, [](S& x) { x.weightsToHost(); }); })
      .def(
          "readWeights",
          [](P& s, const PyWeightsIO& w) {
            w.checkWritable();
            callReleased(s, [&](S& x) { x.readWeights(w.io()); });
          },
          py::arg("weightsIo"))
      .def(
          "writeWeights",
          [](P& s, const PyWeightsIO& w) {
            callReleased(s, [&](S& x) { x.writeWeights(w.io()); });
          },
          py::arg("weightsIo"))
      .def(
          "run",
          [](P& s, PyStepIO& io, const std::string& debugName) { runStepIO(s, io, debugName); },
          py::arg("stepio"), py::arg("debugName") = "")
      .def(
          "run",
          [](P& s, PyStepIOCallback& io, const std::string& debugName) {
            runCallback(s, io, debugName);
          },
          py::arg("stepio"), py::arg("debugName") = "")
      .def(
          "run",
          [](P&, const std::string& programHandle, const py::object&, const std::string&) {
            notImplemented("run(programHandle, ...)", "there are no custom programs ('" +
                                                          programHandle + "'); use run(stepio)");
          },
          py::arg("programHandle"), py::arg("stepio"), py::arg("debugName") = "")
      .def("initAnchorArrays", [](P& s) { return anchorArrays(*s.session); })
      .def(
          "modelToHost",
          [](P& s, const std::string& fn) { callReleased(s, [&](S& x) { x.modelToHost(fn); }); },
          py::arg("fn"))
      .def(
          "modelToHost",
          [](P& s, const std::string& fn, bool withOptimizerState) {
            callReleased(s, [&](S& x) { x.modelToHost(fn, withOptimizerState); });
          },
          py::arg("fn"), py::arg("withOptimizerState"))
      .def(
          "updateExternallySavedTensorLocations",
          [](P& s, const std::string& from, const std::string& to) {
            s.session->updateExternallySavedTensorLocations(from, to);
          },
          py::arg("fromLocation"), py::arg("toLocation"))
      .def(
          "resetHostWeights",
          [](P& s, const py::object& model, bool ignore) {
            const std::string m = modelArg(model);
            callReleased(s, [&](S& x) { x.resetHostWeights(m, ignore); });
          },
          py::arg("modelProtoOrFilename"),
          py::arg("ignoreWeightsInModelWithoutCorrespondingHostWeight") = false)
      .def(
          "broadcastWeights",
          [](P& s, int rootRank) { callReleased(s, [&](S& x) { x.broadcastWeights(rootRank); }); },
          py::arg("rootRank") = 0);
}

// What a session knows of its tensors.
template <typename S, typename Cls>
void bindTensorQueries(Cls& cls) {
  using P = PySession<S>;
  cls.def(
         "getInfo", [](P& s, const TensorId& id) { return s.session->getInfo(id); },
         py::arg("TensorId"))
      .def(
          "hasInfo", [](P& s, const TensorId& id) { return s.session->hasInfo(id); },
          py::arg("TensorId"))
      .def("getTensorIds",
           [](P& s) {
             const auto ids = s.session->getTensorIds();
             return std::set<TensorId>(ids.begin(), ids.end());
           })
      .def("getAllTensorIds", [](P& s) {
        const auto ids = s.session->getAllTensorIds();
        return std::set<TensorId>(ids.begin(), ids.end());
      });
}

// Reports, random state, buffer shapes, and what needs Poplar (refused).
template <typename S, typename Cls>
void bindReportsAndState(Cls& cls) {
  using P = PySession<S>;
  cls.def(
         "getSummaryReport",
         [](P& s, bool resetProfile) { return s.session->getSummaryReport(resetProfile); },
         py::arg("resetProfile") = true)
      .def(
          "setRandomSeed", [](P& s, uint64_t seed) { s.session->setRandomSeed(seed); },
          py::arg("seedValue"))
      .def("getRandomSeed", [](P& s) { return s.session->getRandomSeed(); })
      .def("getRNGState", [](P& s) { return s.session->getRNGState(); })
      .def(
          "setRNGState",
          [](P& s, const std::vector<uint32_t>& state) { s.session->setRNGState(state); },
          py::arg("rngValue"))
      .def(
          "expectedInputBufferShape",
          [](P& s, const TensorId& id) { return s.session->expectedInputBufferShape(id); },
          py::arg("id"))
      .def(
          "expectedAnchorBufferShape",
          [](P& s, const TensorId& id) { return s.session->expectedAnchorBufferShape(id); },
          py::arg("id"))
      .def("getDevice", [](P& s) { return s.session->getDevice(); })
      .def(
          "_hostInfo",
          [](P& s, const TensorId& id) {
            const TensorInfo info = s.session->getInfo(id);
            return py::make_tuple(numpyDtypeOrThrow(info.dataType(), id), info.shape());
          },
          py::arg("id"), "(NumPy dtype, shape) of a tensor (for xtrain.Session).")
      .def_property_readonly("dataFlow", [](P& s) { return s.dataFlow; })
      .def_property_readonly("name", [](P& s) { return s.name; })
      .def_property_readonly(
          "replicationFactor",
          [](P& s) { return s.session->getSessionOptions().getLocalReplicationFactor(); })
      .def_property_readonly(
          "accumulationFactor",
          [](P& s) { return s.session->getSessionOptions().getAccumulationFactor(); })
      .def(
          "getCycleCount", [](P& s, const std::string& id) { return s.session->getCycleCount(id); },
          py::arg("id") = "",
          "The simulated clock's cycles of the last run() (needs "
          "SessionOptions.instrumentWithHardwareCycleCounter).")
      .def(
          "getReport", [](P& s) { return s.session->getReport(); },
          "The execution and memory report as a JSON string (docs/reports.md).")
      .def(
          "getSerializedGraph", [](P& s) { return py::bytes(s.session->getSerializedGraph()); },
          "The lowered programs as JSON (bytes).")
      .def(
          "_serializeIr",
          [](P& s, IrSerializationFormat format) { return s.session->serializeIr(format); },
          py::arg("format"), "The IR as PopART's serializeIr writes it (JSON).")
      .def("getIr", [](P&) { notImplemented("getIr", "the IR is not part of the API"); })
      .def("connectStreamToCallback", [](P&, const py::args&) {
        notImplemented("connectStreamToCallback", "there are no Poplar streams");
      });
  for (const char* name : {"compileAndExport", "saveExecutable", "loadExecutable"}) {
    cls.def(name, [name](P&, const py::args&, const py::kwargs&) {
      notImplemented(name, "there is no Poplar executable to export, save or load");
    });
  }
}

// Everything TrainingSession and InferenceSession share.
template <typename S, typename Cls>
void bindCommon(Cls& cls) {
  bindRunAndWeights<S>(cls);
  bindTensorQueries<S>(cls);
  bindReportsAndState<S>(cls);
}

// The buffers and records that run(), readWeights() and loadCheckpoint() take or give.
void bindStepIO(py::module_& m) {
  py::class_<PyStepIO>(m, "PyStepIO",
                       "Whole-step input and anchor buffers: dicts of tensor id -> NumPy array.")
      .def(py::init<const py::dict&, const py::dict&>(), py::arg("inputs"), py::arg("outputs"))
      .def("enableRuntimeAsserts", &PyStepIO::enableRuntimeAsserts, py::arg("arg0"),
           "On (default): each array's shape must be the expected buffer shape; off: only its "
           "element count must match. Dtypes are always checked.");

  py::class_<PyStepIOCallback>(m, "PyStepIOCallback",
                               "Per-micro-batch callbacks: input_callback(id, prefetch) -> array, "
                               "input_complete_callback(id), output_callback(id) -> array, "
                               "output_complete_callback(id).")
      .def(py::init<py::function, py::function, py::function, py::function>(),
           py::arg("input_callback"), py::arg("input_complete_callback"),
           py::arg("output_callback"), py::arg("output_complete_callback"));

  py::class_<PyWeightsIO>(m, "PyWeightsIO", "Weight buffers: dict of tensor id -> NumPy array.")
      .def(py::init<const py::dict&>(), py::arg("weights"));

  py::class_<CheckpointInfo>(m, "CheckpointInfo", "What loadCheckpoint found.")
      .def_readonly("path", &CheckpointInfo::path)
      .def_readonly("step", &CheckpointInfo::step)
      .def_readonly("epoch", &CheckpointInfo::epoch)
      .def_readonly("samplesSeen", &CheckpointInfo::samplesSeen)
      .def_readonly("dataPosition", &CheckpointInfo::dataPosition)
      .def_readonly("globalReplicationFactor", &CheckpointInfo::globalReplicationFactor)
      .def_readonly("instances", &CheckpointInfo::instances)
      .def("__repr__", [](const CheckpointInfo& c) {
        return "<CheckpointInfo " + c.path + " step " + std::to_string(c.step) + ">";
      });

  py::class_<TrainingSession::StepTimes>(m, "StepTimes",
                                         "Time of the steps run so far (getStepTimes).")
      .def_readonly("steps", &TrainingSession::StepTimes::steps)
      .def_readonly("runSeconds", &TrainingSession::StepTimes::runSeconds)
      .def_readonly("reductionSeconds", &TrainingSession::StepTimes::reductionSeconds);
}

void bindTrainingSession(py::module_& m) {
  using PT = PySession<TrainingSession>;
  py::class_<PT> training(m, "TrainingSession", "Session for training (PopART's TrainingSession).");
  training.def(
      py::init([](const py::object& fnModel, const DataFlow& dataFlow, const TensorId& loss,
                  const Optimizer& optimizer, std::shared_ptr<DeviceInfo> deviceInfo,
                  const InputShapeInfo& inputShapeInfo, const py::object& patterns,
                  const SessionOptions& userOptions, const std::string& name) {
        if (!deviceInfo) throw py::type_error("TrainingSession: deviceInfo must be a DeviceInfo");
        const Patterns patternSet = patternsArg(patterns);
        const std::string model = modelArg(fnModel);
        auto s = std::make_unique<PT>();
        s->dataFlow = dataFlow;
        s->name = name;
        py::gil_scoped_release release;
        s->session = TrainingSession::createFromOnnxModel(model, dataFlow, loss, optimizer,
                                                          std::move(deviceInfo), inputShapeInfo,
                                                          userOptions, patternSet);
        return s;
      }),
      py::arg("fnModel"), py::arg("dataFlow"), py::arg("loss"), py::arg("optimizer"),
      py::arg("deviceInfo"), py::arg("inputShapeInfo") = InputShapeInfo(),
      py::arg("patterns") = py::none(), py::arg("userOptions") = SessionOptions(),
      py::arg("name") = "training");
  bindCommon<TrainingSession>(training);
  training
      .def(
          "updateOptimizerFromHost",
          [](PT& s, const Optimizer& optimizer) {
            callReleased(s, [&](TrainingSession& x) { x.updateOptimizerFromHost(&optimizer); });
          },
          py::arg("optimizer"))
      .def("getLossScaling", [](PT& s) { return s.session->getLossScaling(); })
      .def("getSkippedSteps", [](PT& s) { return s.session->getSkippedSteps(); })
      .def("getGlobalGradientNorms", [](PT& s) { return s.session->getGlobalGradientNorms(); })
      .def("getStepTimes", [](PT& s) { return s.session->getStepTimes(); })
      .def(
          "saveCheckpoint",
          [](PT& s, const std::string& path, int64_t epoch, int64_t samplesSeen,
             const std::vector<int64_t>& dataPosition, bool asynchronous) {
            CheckpointOptions o;
            o.epoch = epoch;
            o.samplesSeen = samplesSeen;
            o.dataPosition = dataPosition;
            o.asynchronous = asynchronous;
            callReleased(s, [&](TrainingSession& x) { x.saveCheckpoint(path, o); });
          },
          py::arg("path"), py::arg("epoch") = 0, py::arg("samplesSeen") = 0,
          py::arg("dataPosition") = std::vector<int64_t>{}, py::arg("asynchronous") = false)
      .def(
          "loadCheckpoint",
          [](PT& s, const std::string& path) {
            return callReleased(s, [&](TrainingSession& x) { return x.loadCheckpoint(path); });
          },
          py::arg("path"))
      .def(
          "loadLatestCheckpoint",
          [](PT& s, const std::string& directory) {
            return callReleased(
                s, [&](TrainingSession& x) { return x.loadLatestCheckpoint(directory); });
          },
          py::arg("directory"))
      .def("waitForCheckpoint",
           [](PT& s) { callReleased(s, [](TrainingSession& x) { x.waitForCheckpoint(); }); });
}

void bindInferenceSession(py::module_& m) {
  using PI = PySession<InferenceSession>;
  py::class_<PI> inference(m, "InferenceSession",
                           "Session for inference (PopART's InferenceSession).");
  inference.def(py::init([](const py::object& fnModel, const DataFlow& dataFlow,
                            std::shared_ptr<DeviceInfo> deviceInfo,
                            const InputShapeInfo& inputShapeInfo, const py::object& patterns,
                            const SessionOptions& userOptions, const std::string& name) {
                  if (!deviceInfo)
                    throw py::type_error("InferenceSession: deviceInfo must be a DeviceInfo");
                  const Patterns patternSet = patternsArg(patterns);
                  const std::string model = modelArg(fnModel);
                  auto s = std::make_unique<PI>();
                  s->dataFlow = dataFlow;
                  s->name = name;
                  py::gil_scoped_release release;
                  s->session = InferenceSession::createFromOnnxModel(
                      model, dataFlow, std::move(deviceInfo), inputShapeInfo, userOptions,
                      patternSet);
                  return s;
                }),
                py::arg("fnModel"), py::arg("dataFlow"), py::arg("deviceInfo"),
                py::arg("inputShapeInfo") = InputShapeInfo(), py::arg("patterns") = py::none(),
                py::arg("userOptions") = SessionOptions(), py::arg("name") = "inference");
  bindCommon<InferenceSession>(inference);
}

}  // namespace

void bindSessions(py::module_& m) {
  bindStepIO(m);
  bindTrainingSession(m);
  bindInferenceSession(m);
}

}  // namespace xtrain::python
