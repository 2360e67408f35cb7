// Logging with PopART's Python names (executing-graphs.txt, "Logging"):
//
//   xtrain.getLogger().setLevel("DEBUG")            # every module
//   xtrain.getLogger("session").setLevel("OFF")     # one module
//
// getLogger(name="all") returns a Logger for "all" (every module), "popart"/"xtrain" (the default
// module; "python" and "none" too) or one of xtrain::logging's module names; an unknown name raises
// naming it and the valid ones. Levels are "TRACE", "DEBUG", "INFO", "WARN", "ERR", "CRITICAL",
// "OFF" (case-insensitive, "WARNING" and "ERROR" accepted), or the LogLevel enum.
#include "xtrain/logging.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <variant>

#include "bindings.hpp"

namespace py = pybind11;

namespace xtrain::python {

namespace {

using logging::Level;
using logging::Module;

class Logger {
 public:
  explicit Logger(const std::string& name) : name_(name) {
    // PopART's "python" (the Python module) and "none" (unidentified) have no module of their own
    // in xtrain: their messages are the default module's.
    if (name == "popart" || name == "python" || name == "none") {
      module_ = Module::xtrain;
    } else if (name != "all") {
      module_ = logging::moduleFromString(name);
    }
  }
  const std::string& name() const { return name_; }

  void setLevel(const std::variant<Level, std::string>& level) {
    const Level l = toLevel(level);
    if (module_) {
      logging::setLevel(*module_, l);
      return;
    }
    // "all": every module, and the level of modules configured later.
    logging::setDefaultLevel(l);
    for (Module m : logging::allModules) logging::setLevel(m, l);
  }
  // "all" reports the default module's level.
  std::string getLevel() const { return logging::toString(logging::getLevel(module())); }
  bool isEnabledFor(const std::variant<Level, std::string>& level) const {
    return logging::shouldLog(module(), toLevel(level));
  }
  void log(Level level, const std::string& message) const {
    logging::log(module(), level, message);
  }

 private:
  static Level toLevel(const std::variant<Level, std::string>& level) {
    if (const auto* l = std::get_if<Level>(&level)) return *l;
    return logging::levelFromString(std::get<std::string>(level));
  }
  Module module() const { return module_.value_or(Module::xtrain); }

  std::string name_;
  std::optional<Module> module_;  // empty: "all"
};

}  // namespace

void bindLogging(py::module_& m) {
  py::enum_<Level>(m, "LogLevel")
      .value("TRACE", Level::Trace)
      .value("DEBUG", Level::Debug)
      .value("INFO", Level::Info)
      .value("WARN", Level::Warn)
      .value("ERR", Level::Err)
      .value("CRITICAL", Level::Critical)
      .value("OFF", Level::Off);

  py::class_<Logger>(m, "Logger", "A module's logger (getLogger).")
      .def(py::init<const std::string&>(), py::arg("name") = "all")
      .def_property_readonly("name", &Logger::name)
      .def("setLevel", &Logger::setLevel, py::arg("level"),
           "Sets the level: TRACE, DEBUG, INFO, WARN, ERR, CRITICAL or OFF.")
      .def("getLevel", &Logger::getLevel)
      .def("isEnabledFor", &Logger::isEnabledFor, py::arg("level"))
      .def(
          "trace", [](const Logger& l, const std::string& s) { l.log(Level::Trace, s); },
          py::arg("msg"))
      .def(
          "debug", [](const Logger& l, const std::string& s) { l.log(Level::Debug, s); },
          py::arg("msg"))
      .def(
          "info", [](const Logger& l, const std::string& s) { l.log(Level::Info, s); },
          py::arg("msg"))
      .def(
          "warn", [](const Logger& l, const std::string& s) { l.log(Level::Warn, s); },
          py::arg("msg"))
      .def(
          "warning", [](const Logger& l, const std::string& s) { l.log(Level::Warn, s); },
          py::arg("msg"))
      .def(
          "error", [](const Logger& l, const std::string& s) { l.log(Level::Err, s); },
          py::arg("msg"))
      .def(
          "critical", [](const Logger& l, const std::string& s) { l.log(Level::Critical, s); },
          py::arg("msg"))
      .def("__repr__",
           [](const Logger& l) { return "<xtrain.Logger " + l.name() + " " + l.getLevel() + ">"; });

  m.def(
      "getLogger", [](const std::string& name) { return Logger(name); }, py::arg("name") = "all",
      "The logger of a module: 'all' (every module), 'popart' or 'xtrain' (the default module), "
      "'session', 'ir', 'devicex', ... (xtrain::logging's modules).");
  m.def(
      "setLogLevel",
      [](const std::string& name, const std::variant<Level, std::string>& level) {
        Logger(name).setLevel(level);
      },
      py::arg("module"), py::arg("level"), "getLogger(module).setLevel(level).");
  m.def("configureLoggingFromEnvironment", &logging::configureFromEnvironment,
        "Rereads XTRAIN_LOG_LEVEL, XTRAIN_LOG_DEST and XTRAIN_LOG_CONFIG.");
  m.def("flushLogs", &logging::flush, "Writes buffered log lines to the destination.");
}

}  // namespace xtrain::python
