// xtrain's error classes (include/xtrain/error.hpp) as Python exceptions, under PopART's names
// (executing-graphs.txt, "Errors") and aliased to xtrain's own:
//
//   popart_exception (= error), a RuntimeError
//     popart_internal_exception (= internal_error)
//     popart_runtime_error (= runtime_error)
//       poplar_system_runtime_error (also a poplar_runtime_error)
//         poplar_recoverable_runtime_error (= recoverable_runtime_error): getRecoveryAction()
//         poplar_unrecoverable_runtime_error (= unrecoverable_runtime_error)
//         poplar_unknown_runtime_error (= unknown_runtime_error)
//       poplar_application_runtime_error (= application_runtime_error: the model's Abort op
//         ran; also a poplar_runtime_error)
//     poplar_exception (= engine_option_error: an unknown engine option, args[0] Poplar's words)
//       (and device_program_error: prepareDevice cannot build a kernel for an op's element type)
//       > poplar_runtime_error (PopART's; xtrain raises only the subclasses above)
//     poplibs_exception (PopART's; xtrain does not raise it)
//     size_overflow_error
//     unknown_tensor_error (also a KeyError): a Builder call naming no tensor of the model
//     OutOfMemoryException: getSummaryReport(), getProfilePath()
//
// A C++ xtrain exception crossing into Python becomes the class of its dynamic type, with its
// message.
#include <pybind11/eval.h>
#include <pybind11/pybind11.h>

#include <string>

#include "bindings.hpp"
#include "xtrain/application_error.hpp"
#include "xtrain/device_program_error.hpp"
#include "xtrain/engine_option_error.hpp"
#include "xtrain/error.hpp"
#include "xtrain/popart_error.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

// The classes are plain Python classes (methods included), made once at import.
constexpr const char* kClasses = R"PY(
class popart_exception(RuntimeError):
    """Base of every error xtrain raises (xtrain::error).

    args[0] is PopART's whole message where PopART's programs compare it exactly (a few faults:
    xtrain::popart_worded_error); str() is then xtrain's message, which names the culprit."""
    xtrainMessage = None

    def __str__(self):
        return self.xtrainMessage if self.xtrainMessage is not None else super().__str__()

class popart_internal_exception(popart_exception):
    """A broken invariant inside xtrain (xtrain::internal_error): please report it."""

class popart_runtime_error(popart_exception):
    """A fault while running: device, collective, I/O (xtrain::runtime_error)."""

class poplibs_exception(popart_exception):
    """PopART's name; xtrain does not raise it."""

class poplar_exception(popart_exception):
    """An error of the engine's options (xtrain::engine_option_error: args[0] ends
    "Unrecognised option '<key>'", as Poplar's does), or a program the device cannot build
    (xtrain::device_program_error: an op's kernel lacks its element type, where Poplar's compile
    fails); the runtime faults are its subclasses."""

class poplar_runtime_error(poplar_exception):
    """PopART's name for a runtime fault reported by the device layer."""

class poplar_application_runtime_error(poplar_runtime_error, popart_runtime_error):
    """The program on the device stopped itself: the model's Abort op ran
    (xtrain::application_runtime_error)."""

class poplar_system_runtime_error(poplar_runtime_error, popart_runtime_error):
    """A system fault of the (simulated) device."""

class poplar_recoverable_runtime_error(poplar_system_runtime_error):
    """A fault that an action (recoveryAction) clears (xtrain::recoverable_runtime_error)."""
    recoveryAction = None

    def getRecoveryAction(self):
        return self.recoveryAction

class poplar_unrecoverable_runtime_error(poplar_system_runtime_error):
    """xtrain::unrecoverable_runtime_error."""

class poplar_unknown_runtime_error(poplar_system_runtime_error):
    """xtrain::unknown_runtime_error."""

class size_overflow_error(popart_exception):
    """A size computed from input does not fit in 64 bits (xtrain::size_overflow_error)."""

class unknown_tensor_error(popart_exception, KeyError):
    """A Builder call names a tensor the model does not have: a popart_exception, as PopART
    raises, and a KeyError."""

class OutOfMemoryException(popart_exception):
    """A simulated IPU does not have the memory its tensors need."""
    summaryReport = ""

    def getSummaryReport(self):
        return self.summaryReport

    def getProfilePath(self):
        return ""
)PY";

// Set once at import; the module (and so these classes) live until the interpreter ends.
struct Classes {
  py::object base, internal, runtime, recoverable, unrecoverable, unknown, overflow, oom,
      application, poplar;
};
Classes* classes = nullptr;

void raise(const py::object& cls, const char* what) {
  PyErr_SetObject(cls.ptr(), cls(what).ptr());
}

// An error with PopART's whole message: that is args[0]; str() gives xtrain's.
void raiseWithPopartMessage(const py::object& cls, const popart_worded_error& e) {
  py::object exc = cls(e.popartMessage());
  exc.attr("xtrainMessage") = e.what();
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

// Throws the C++ exception `kind` names (for the tests' round trip through the translator).
[[noreturn]] void throwForTest(const std::string& kind, const std::string& message,
                               RecoveryAction action, const std::string& popartMessage) {
  if (kind == "error" && !popartMessage.empty()) throw popart_worded_error(popartMessage, message);
  if (kind == "error") throw error(message);
  if (kind == "internal_error") throw internal_error(message);
  if (kind == "runtime_error") throw runtime_error(message);
  if (kind == "recoverable_runtime_error") throw recoverable_runtime_error(action, message);
  if (kind == "unrecoverable_runtime_error") throw unrecoverable_runtime_error(message);
  if (kind == "unknown_runtime_error") throw unknown_runtime_error(message);
  if (kind == "application_runtime_error") throw application_runtime_error(message);
  if (kind == "size_overflow_error") throw size_overflow_error(message);
  if (kind == "OutOfMemoryException") throw OutOfMemoryException(message, "report: " + message);
  throw py::value_error("_throw_error: unknown kind '" + kind +
                        "' (expected error, internal_error, runtime_error, "
                        "recoverable_runtime_error, unrecoverable_runtime_error, "
                        "unknown_runtime_error, application_runtime_error, size_overflow_error or "
                        "OutOfMemoryException)");
}

}  // namespace

void bindErrors(py::module_& m) {
  py::enum_<RecoveryAction>(m, "RecoveryAction")
      .value("IPU_RESET", RecoveryAction::IPU_RESET)
      .value("LINK_RESET", RecoveryAction::LINK_RESET)
      .value("PARTITION_RESET", RecoveryAction::PARTITION_RESET)
      .value("POWER_CYCLE", RecoveryAction::POWER_CYCLE);

  py::dict ns;
  ns["__name__"] = m.attr("__name__");
  py::exec(kClasses, ns);
  const char* names[] = {"popart_exception",
                         "popart_internal_exception",
                         "popart_runtime_error",
                         "poplibs_exception",
                         "poplar_exception",
                         "poplar_runtime_error",
                         "poplar_application_runtime_error",
                         "poplar_system_runtime_error",
                         "poplar_recoverable_runtime_error",
                         "poplar_unrecoverable_runtime_error",
                         "poplar_unknown_runtime_error",
                         "size_overflow_error",
                         "unknown_tensor_error",
                         "OutOfMemoryException"};
  for (const char* name : names) {
    py::object cls = ns[name];
    cls.attr("__module__") = "xtrain";
    m.attr(name) = cls;
  }
  // xtrain's C++ names.
  m.attr("error") = ns["popart_exception"];
  m.attr("internal_error") = ns["popart_internal_exception"];
  m.attr("runtime_error") = ns["popart_runtime_error"];
  m.attr("recoverable_runtime_error") = ns["poplar_recoverable_runtime_error"];
  m.attr("unrecoverable_runtime_error") = ns["poplar_unrecoverable_runtime_error"];
  m.attr("unknown_runtime_error") = ns["poplar_unknown_runtime_error"];
  m.attr("application_runtime_error") = ns["poplar_application_runtime_error"];
  m.attr("engine_option_error") = ns["poplar_exception"];
  m.attr("device_program_error") = ns["poplar_exception"];

  classes = new Classes{ns["popart_exception"],
                        ns["popart_internal_exception"],
                        ns["popart_runtime_error"],
                        ns["poplar_recoverable_runtime_error"],
                        ns["poplar_unrecoverable_runtime_error"],
                        ns["poplar_unknown_runtime_error"],
                        ns["size_overflow_error"],
                        ns["OutOfMemoryException"],
                        ns["poplar_application_runtime_error"],
                        ns["poplar_exception"]};

  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const recoverable_runtime_error& e) {
      py::object exc = classes->recoverable(e.what());
      exc.attr("recoveryAction") = py::cast(e.getRecoveryAction());
      PyErr_SetObject(classes->recoverable.ptr(), exc.ptr());
    } catch (const unrecoverable_runtime_error& e) {
      raise(classes->unrecoverable, e.what());
    } catch (const unknown_runtime_error& e) {
      raise(classes->unknown, e.what());
    } catch (const application_runtime_error& e) {
      raise(classes->application, e.what());
    } catch (const runtime_error& e) {
      raise(classes->runtime, e.what());
    } catch (const internal_error& e) {
      raise(classes->internal, e.what());
    } catch (const size_overflow_error& e) {
      raise(classes->overflow, e.what());
    } catch (const OutOfMemoryException& e) {
      py::object exc = classes->oom(e.what());
      exc.attr("summaryReport") = e.getSummaryReport();
      PyErr_SetObject(classes->oom.ptr(), exc.ptr());
    } catch (const engine_option_error& e) {
      raiseWithPopartMessage(classes->poplar, e);
    } catch (const device_program_error& e) {
      raise(classes->poplar, e.what());
    } catch (const popart_worded_error& e) {
      raiseWithPopartMessage(classes->base, e);
    } catch (const error& e) {
      raise(classes->base, e.what());
    }
  });

  m.def("_throw_error", &throwForTest, py::arg("kind"), py::arg("message"),
        py::arg("action") = RecoveryAction::IPU_RESET, py::arg("popart_message") = "",
        "Throws the C++ xtrain exception `kind` (for tests of the translation).");
}

}  // namespace xtrain::python
